"""The log event schema: one Connect Struct, close to ECS, shared by the log appender and the ingestion sources.

It lives in the SDK because both sides need it and the layer rules let both import only the SDK: the
ingestion sources in ``plugins/ingest`` import nothing but ``connect.api``, and the Python appender
(``connect.appender``) is a client library that must not depend on a plugin package. One module here keeps
the field names, their types and the mapping of foreign JSON shapes in one place.

The value, as JsonConverter writes it without schemas (ECS's nested form)::

    {"@timestamp": "2026-01-02T03:04:05.678901Z",      ISO 8601, UTC
     "message": "...",
     "log": {"level": "ERROR", "logger": "app.db",
             "origin": {"file": {"name": "db.py", "line": 42}, "function": "connect"},
             "file": {"path": "/var/log/app.log"},             TailDirSource: the file it was read from
             "syslog": {"priority": 11, "facility": {"code": 1, "name": "user"},
                        "severity": {"code": 3, "name": "err"}, "hostname": "h", "appname": "app",
                        "procid": "77", "msgid": "ID1", "version": 1,
                        "structured_data": {"sd@1": {"k": "v"}}}},
     "error": {"type": "ValueError", "message": "...", "stack_trace": "Traceback ..."},
     "process": {"pid": 1234, "name": "MainProcess", "thread": {"name": "worker-1", "id": 1400}},
     "host": {"hostname": "web-1"},
     "service": {"name": "shop"},
     "event": {"sequence": 17, "original": "<raw text, kept when it could not be parsed>", "dataset": "..."},
     "labels": {"user": "ada", ...},          every other field of the input, values as text (JSON for non-text)
     "context": {"request_id": "r-1", ...}}   the appender's contextvars context

Every field is optional except ``@timestamp`` (the receive time when the input has none). ``from_mapping``
turns what real senders emit into this Struct: the schema's own nested or dotted form (ECS, as Log4j's
``EcsLayout.json`` writes it), GELF 1.1, Logstash's JSON event v1 and Log4j's ``JsonLayout``.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from connect.api.schema import Schema
from connect.api.schema_builder import SchemaBuilder
from connect.api.struct import Struct

__all__ = [
    "LOG_EVENT_SCHEMA",
    "LOG_EVENT_SCHEMA_NAME",
    "SEVERITY_NAMES",
    "FACILITY_NAMES",
    "LogEventError",
    "from_mapping",
    "iso_timestamp",
    "level_for_severity",
]

LOG_EVENT_SCHEMA_NAME = "headrace.LogEvent"


class LogEventError(ValueError):
    """The input cannot become a log event (not a JSON object, a field of the wrong shape)."""


def _s() -> SchemaBuilder:
    return SchemaBuilder.string().optional()


_FILE = SchemaBuilder.struct().optional().field("name", _s()).field("line", SchemaBuilder.int32().optional()).build()
_ORIGIN = SchemaBuilder.struct().optional().field("file", _FILE).field("function", _s()).build()
_CODE_NAME = SchemaBuilder.struct().optional().field("code", SchemaBuilder.int32().optional()).field("name", _s()).build()
_STRING_MAP = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).optional().build()
_SYSLOG = (
    SchemaBuilder.struct().optional()
    .field("priority", SchemaBuilder.int32().optional())
    .field("facility", _CODE_NAME)
    .field("severity", _CODE_NAME)
    .field("hostname", _s())
    .field("appname", _s())
    .field("procid", _s())
    .field("msgid", _s())
    .field("version", SchemaBuilder.int32().optional())
    .field("structured_data", SchemaBuilder.map(Schema.STRING_SCHEMA, _STRING_MAP).optional())
    .build()
)
_LOG_FILE = SchemaBuilder.struct().optional().field("path", _s()).build()
_LOG = (
    SchemaBuilder.struct().optional()
    .field("level", _s()).field("logger", _s()).field("origin", _ORIGIN).field("syslog", _SYSLOG)
    .field("file", _LOG_FILE).build()
)
_ERROR = SchemaBuilder.struct().optional().field("type", _s()).field("message", _s()).field("stack_trace", _s()).build()
_THREAD = SchemaBuilder.struct().optional().field("name", _s()).field("id", SchemaBuilder.int64().optional()).build()
_PROCESS = (
    SchemaBuilder.struct().optional()
    .field("pid", SchemaBuilder.int32().optional()).field("name", _s()).field("thread", _THREAD).build()
)
_HOST = SchemaBuilder.struct().optional().field("hostname", _s()).build()
_SERVICE = SchemaBuilder.struct().optional().field("name", _s()).build()
_EVENT = (
    SchemaBuilder.struct().optional()
    .field("sequence", SchemaBuilder.int64().optional()).field("original", _s()).field("dataset", _s()).build()
)

LOG_EVENT_SCHEMA: Schema = (
    SchemaBuilder.struct()
    .name(LOG_EVENT_SCHEMA_NAME)
    .version(1)
    .doc("A log event, close to the Elastic Common Schema (ECS)")
    .field("@timestamp", SchemaBuilder.string())
    .field("message", _s())
    .field("log", _LOG)
    .field("error", _ERROR)
    .field("process", _PROCESS)
    .field("host", _HOST)
    .field("service", _SERVICE)
    .field("event", _EVENT)
    .field("labels", _STRING_MAP)
    .field("context", _STRING_MAP)
    .build()
)

# RFC 5424 section 6.2.1, as ECS's log.syslog.*.name spells them
SEVERITY_NAMES = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
FACILITY_NAMES = (
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp",
    "ntp", "security", "console", "solaris-cron", "local0", "local1", "local2", "local3", "local4", "local5",
    "local6", "local7",
)
_LEVEL_FOR_SEVERITY = ("FATAL", "FATAL", "FATAL", "ERROR", "WARN", "INFO", "INFO", "DEBUG")


def level_for_severity(severity: int) -> str:
    """The logging level a syslog severity (0-7) stands for, as Log4j maps them."""
    return _LEVEL_FOR_SEVERITY[severity] if 0 <= severity < 8 else str(severity)


def iso_timestamp(seconds: float) -> str:
    """Epoch seconds as ISO 8601 in UTC with microseconds: ``2026-01-02T03:04:05.678901Z``."""
    return _dt.datetime.fromtimestamp(seconds, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _text(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return value
    if kind is int:
        return str(value)  # JSON's text of an int, without the encoder's cost
    if kind is bool:
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _int(value: Any, name: str, bits: int = 32) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise LogEventError(f"field '{name}' must be an integer, got {value!r}")
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise LogEventError(f"field '{name}' must be an integer, got {value!r}") from None
    if not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
        raise LogEventError(f"field '{name}' is out of range: {number}")
    return number


def _timestamp(value: Any) -> str:
    """ISO text as given; epoch numbers (seconds, or milliseconds when that large) as ISO text."""
    if isinstance(value, str):
        if not (value.isascii() and value.isdigit()):
            return value
        value = int(value)  # epoch text, as Flume's timestamp header
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000.0 if abs(value) > 1e11 else float(value)
        try:
            return iso_timestamp(seconds)
        except (OverflowError, OSError, ValueError):
            raise LogEventError(f"field '@timestamp' is not a usable epoch time: {value!r}") from None
    if isinstance(value, Mapping) and "epochSecond" in value:  # Log4j JsonLayout's "instant"
        seconds = _int(value.get("epochSecond"), "instant.epochSecond", 64) or 0
        nanos = _int(value.get("nanoOfSecond"), "instant.nanoOfSecond", 64) or 0
        return iso_timestamp(seconds + nanos / 1e9)
    raise LogEventError(f"field '@timestamp' must be text or a number, got {value!r}")


def _string_map(value: Any, name: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise LogEventError(f"field '{name}' must be an object, got {_text(value)[:80]}")
    return {str(k): _text(v) for k, v in value.items()}


def _flatten(obj: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name not in _MAP_FIELDS:
            if value:
                _flatten(value, name + ".", out)
            else:
                out[name] = value
        else:
            out[name] = value


# fields whose object value is kept whole (a map), not flattened into dotted names
_MAP_FIELDS = frozenset({"labels", "context", "log.syslog.structured_data", "mdc", "contextMap", "instant"})

# GELF numeric levels are syslog severities
_GELF_LEVEL = "__gelf_level"

# dotted input name -> the schema's dotted name; several senders' spellings of the same thing
_ALIASES: dict[str, str] = {
    # ECS and this schema
    "@timestamp": "@timestamp", "message": "message", "log.level": "log.level", "log.logger": "log.logger",
    "log.origin.file.name": "log.origin.file.name", "log.origin.file.line": "log.origin.file.line",
    "log.origin.function": "log.origin.function", "log.file.path": "log.file.path",
    "error.type": "error.type", "error.message": "error.message", "error.stack_trace": "error.stack_trace",
    "process.pid": "process.pid", "process.name": "process.name", "process.thread.name": "process.thread.name",
    "process.thread.id": "process.thread.id", "host.hostname": "host.hostname", "host.name": "host.hostname",
    "service.name": "service.name", "event.sequence": "event.sequence", "event.original": "event.original",
    "event.dataset": "event.dataset", "labels": "labels", "context": "context",
    # GELF 1.1 (Log4j's GelfLayout.json adds _logger and _thread)
    "short_message": "message", "full_message": "error.stack_trace", "host": "host.hostname",
    "timestamp": "@timestamp", "level": _GELF_LEVEL, "_logger": "log.logger", "_thread": "process.thread.name",
    # Logstash JSON event v1
    "logger_name": "log.logger", "thread_name": "process.thread.name", "source_host": "host.hostname",
    "exception.exception_class": "error.type", "exception.exception_message": "error.message",
    "exception.stacktrace": "error.stack_trace", "mdc": "labels",
    # Log4j's JsonLayout
    "timeMillis": "@timestamp", "instant": "@timestamp", "thread": "process.thread.name",
    "threadId": "process.thread.id", "loggerName": "log.logger", "thrown.name": "error.type",
    "thrown.message": "error.message", "thrown.extendedStackTrace": "error.stack_trace", "contextMap": "labels",
}
# sender bookkeeping that carries no information about the event
_IGNORED = frozenset({"ecs.version", "version", "@version", "level_value", "endOfBatch", "loggerFqcn",
                      "threadPriority"})


def _struct(schema: Schema, values: list[Any]) -> Struct | None:
    """A Struct of already-checked values, or None when every value is None (the field is left out)."""
    for v in values:
        if v is not None:
            s = _new(Struct)  # _made, inline: this runs for every part of every event
            s.schema = schema
            s._values = values
            return s
    return None


_new = object.__new__


def _made(schema: Schema, values: list[Any]) -> Struct:
    """A Struct of ``schema`` holding ``values`` (checked by the callers here), without Struct's checks and
    its list of nulls: an event is several Structs, and those cost more than the rest of its parsing."""
    s = _new(Struct)
    s.schema = schema
    s._values = values
    return s


def from_mapping(obj: Any, *, received: Callable[[], str] | None = None) -> Struct:
    """The log event Struct of one decoded JSON value; raises LogEventError when it cannot be one.

    Known fields (above) go to their place in the schema; every other field becomes a label, its value as
    text (JSON text when it is not a string), so nothing the sender wrote is lost. ``received`` gives the
    timestamp when the input has none (default: now).
    """
    if obj.__class__ is dict and obj.keys() <= _ECS_TOP:
        try:
            event = _from_ecs(obj, received)
        except LogEventError:
            event = None  # the general path below says what is wrong, as it always has
        if event is not None:
            return event
    return _from_any(obj, received)


def _from_any(obj: Any, received: Callable[[], str] | None) -> Struct:
    """``from_mapping`` for every shape: flatten to dotted names, map each sender's spelling, then build."""
    if not isinstance(obj, Mapping):
        kind = "an array" if isinstance(obj, list) else "null" if obj is None else type(obj).__name__
        raise LogEventError(f"a log event must be a JSON object, got {kind}")
    flat: dict[str, Any] = {}
    _flatten(obj, "", flat)
    fields: dict[str, Any] = {}
    labels: dict[str, str] = {}
    for key, value in flat.items():
        target = _ALIASES.get(key)
        if target is None:
            if key in _IGNORED or value is None:
                continue
            if key.startswith("labels."):
                labels[key[7:]] = _text(value)
            elif key.startswith("_"):  # GELF additional fields
                labels[key[1:]] = _text(value)
            else:
                labels[key] = _text(value)
            continue
        if target == "labels":
            labels.update(_string_map(value, key))
            continue
        if target not in fields or fields[target] is None:
            fields[target] = value
    level = fields.pop(_GELF_LEVEL, None)
    if level is not None:
        if isinstance(level, int) and not isinstance(level, bool):
            level = level_for_severity(level)
        if fields.get("log.level") is None:
            fields["log.level"] = level
    return _build(fields, labels, received)


# --- the fast path: the schema's own nested form (ECS), as the appender, Log4j's EcsLayout and Fluent Bit's
# ECS records send it. Every key is one the schema has, in its place; the Struct is built straight from the
# nested objects, with no flattening into dotted names. Anything else (another sender's spelling, a field
# of an unexpected shape, a value that is wrong) returns None or raises, and the general path decides, so
# both give the same event or the same error.

_ECS_TOP = frozenset({"@timestamp", "message", "log", "error", "process", "host", "service", "event", "labels",
                      "context"})
_ECS_LOG = frozenset({"level", "logger", "origin", "file"})
_ECS_ORIGIN = frozenset({"file", "function"})
_ECS_ORIGIN_FILE = frozenset({"name", "line"})
_ECS_LOG_FILE = frozenset({"path"})
_ECS_ERROR = frozenset({"type", "message", "stack_trace"})
_ECS_PROCESS = frozenset({"pid", "name", "thread"})
_ECS_THREAD = frozenset({"name", "id"})
_ECS_HOST = frozenset({"hostname"})
_ECS_SERVICE = frozenset({"name"})
_ECS_EVENT = frozenset({"sequence", "original", "dataset"})


class _NotEcs(LogEventError):
    """The fast path's way of saying: leave this event to the general path."""


_NOT_ECS = _NotEcs()


def _nested(value: Any, keys: frozenset[str]) -> dict[str, Any]:
    """A present nested object that has only ``keys``; anything else is for the general path."""
    if value.__class__ is not dict or not value or not value.keys() <= keys:
        raise _NOT_ECS  # text, an empty object or a foreign key: the general path flattens it into labels
    return value


def _leaf(value: Any) -> str | None:
    cls = value.__class__
    if cls is str:
        return value
    if value is None:
        return None
    if cls is dict:
        raise _NOT_ECS
    return _text(value)


def _leaf_int(value: Any, bits: int) -> int | None:
    if value.__class__ is int and -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        return value
    if value is None:
        return None
    raise _NOT_ECS


def _text_map(value: Any) -> dict[str, str]:
    if value.__class__ is not dict:
        raise _NOT_ECS  # null or not an object: the general path names the error
    # a value is text as it is, an int its digits, anything else _text's
    return {k if k.__class__ is str else str(k): v if v.__class__ is str else str(v) if v.__class__ is int
            else _text(v) for k, v in value.items()}


def _from_ecs(obj: dict[str, Any], received: Callable[[], str] | None) -> Struct:
    # This runs for every event HttpSource and TcpJsonSource take, so the common cases are inline: a text
    # field that is a str is taken as it is (``_leaf`` decides the rest), and a part with a value is made
    # without ``_struct``'s scan. Absent parts cost one dict lookup each: most events have four or five.
    log = error = process = host = service = event = labels = context = None
    get = obj.get
    part = get("log")
    if part is not None:
        if part.__class__ is not dict or not part or not part.keys() <= _ECS_LOG:
            raise _NOT_ECS
        level = part.get("level")
        if level.__class__ is not str:
            level = _leaf(level)
        logger = part.get("logger")
        if logger.__class__ is not str:
            logger = _leaf(logger)
        origin = part.get("origin")
        if origin is not None:
            origin = _nested(origin, _ECS_ORIGIN)
            file = origin.get("file")
            if file is not None:
                file = _nested(file, _ECS_ORIGIN_FILE)
                file = _struct(_FILE, [_leaf(file.get("name")), _leaf_int(file.get("line"), 32)])
            origin = _struct(_ORIGIN, [file, _leaf(origin.get("function"))])
        log_file = part.get("file")
        if log_file is not None:
            log_file = _struct(_LOG_FILE, [_leaf(_nested(log_file, _ECS_LOG_FILE).get("path"))])
        if level is not None or logger is not None or origin is not None or log_file is not None:
            log = _new(Struct)
            log.schema = _LOG
            log._values = [level, logger, origin, None, log_file]
    part = get("error")
    if part is not None:
        part = _nested(part, _ECS_ERROR)
        error = _struct(_ERROR, [_leaf(part.get("type")), _leaf(part.get("message")), _leaf(part.get("stack_trace"))])
    part = get("process")
    if part is not None:
        if part.__class__ is not dict or not part or not part.keys() <= _ECS_PROCESS:
            raise _NOT_ECS
        thread = part.get("thread")
        if thread is not None:
            if thread.__class__ is not dict or not thread or not thread.keys() <= _ECS_THREAD:
                raise _NOT_ECS
            name = thread.get("name")
            if name.__class__ is not str:
                name = _leaf(name)
            thread = _struct(_THREAD, [name, _leaf_int(thread.get("id"), 64)])
        name = part.get("name")
        if name.__class__ is not str:
            name = _leaf(name)
        process = _struct(_PROCESS, [_leaf_int(part.get("pid"), 32), name, thread])
    part = get("host")
    if part is not None:
        host = _struct(_HOST, [_leaf(_nested(part, _ECS_HOST).get("hostname"))])
    part = get("service")
    if part is not None:
        service = _struct(_SERVICE, [_leaf(_nested(part, _ECS_SERVICE).get("name"))])
    part = get("event")
    if part is not None:
        part = _nested(part, _ECS_EVENT)
        event = _struct(_EVENT, [_leaf_int(part.get("sequence"), 64), _leaf(part.get("original")),
                                 _leaf(part.get("dataset"))])
    if "labels" in obj:
        labels = _text_map(obj["labels"]) or None
    part = get("context")
    if part is not None:
        context = _text_map(part)
    ts = get("@timestamp")
    if ts is None:
        timestamp = received() if received else iso_timestamp(_now())
    elif ts.__class__ is str and not (ts.isascii() and ts.isdigit()):
        timestamp = ts
    elif ts.__class__ is dict:
        raise _NOT_ECS
    else:
        timestamp = _timestamp(ts)
    message = get("message")
    if message.__class__ is not str:
        message = _leaf(message)
    made = _new(Struct)
    made.schema = LOG_EVENT_SCHEMA
    made._values = [timestamp, message, log, error, process, host, service, event, labels, context]
    return made


def _opt_text(fields: Mapping[str, Any], name: str) -> str | None:
    value = fields.get(name)
    return None if value is None else _text(value)


def _build(f: dict[str, Any], labels: dict[str, str], received: Callable[[], str] | None) -> Struct:
    ts = f.get("@timestamp")
    timestamp = _timestamp(ts) if ts is not None else (received() if received else iso_timestamp(_now()))
    context = f.get("context")
    origin = _struct(_ORIGIN, [
        _struct(_FILE, [_opt_text(f, "log.origin.file.name"), _int(f.get("log.origin.file.line"),
                                                                    "log.origin.file.line")]),
        _opt_text(f, "log.origin.function"),
    ])
    values = [
        timestamp,
        _opt_text(f, "message"),
        _struct(_LOG, [_opt_text(f, "log.level"), _opt_text(f, "log.logger"), origin, None,
                       _struct(_LOG_FILE, [_opt_text(f, "log.file.path")])]),
        _struct(_ERROR, [_opt_text(f, "error.type"), _opt_text(f, "error.message"), _opt_text(f, "error.stack_trace")]),
        _struct(_PROCESS, [
            _int(f.get("process.pid"), "process.pid"), _opt_text(f, "process.name"),
            _struct(_THREAD, [_opt_text(f, "process.thread.name"), _int(f.get("process.thread.id"),
                                                                        "process.thread.id", 64)]),
        ]),
        _struct(_HOST, [_opt_text(f, "host.hostname")]),
        _struct(_SERVICE, [_opt_text(f, "service.name")]),
        _struct(_EVENT, [_int(f.get("event.sequence"), "event.sequence", 64), _opt_text(f, "event.original"),
                         _opt_text(f, "event.dataset")]),
        labels or None,
        _string_map(context, "context") if context is not None else None,
    ]
    event = Struct(LOG_EVENT_SCHEMA)
    event._values = values
    return event


def _now() -> float:
    return time.time()


def syslog_event(*, timestamp: str, message: str | None, priority: int | None, version: int | None,
                 hostname: str | None, appname: str | None, procid: str | None, msgid: str | None,
                 structured_data: Mapping[str, Mapping[str, str]] | None, original: str | None = None) -> Struct:
    """A log event of one syslog message (fields already parsed; ``original`` set for a malformed one)."""
    if priority is not None:
        facility, severity = divmod(priority, 8)
        fac = _struct(_CODE_NAME, [facility, FACILITY_NAMES[facility] if facility < len(FACILITY_NAMES) else None])
        sev = _struct(_CODE_NAME, [severity, SEVERITY_NAMES[severity]])
        level = level_for_severity(severity)
    else:
        fac = sev = None
        level = None
    sd = {str(k): {str(a): str(b) for a, b in v.items()} for k, v in structured_data.items()} if structured_data else None
    syslog = _struct(_SYSLOG, [priority, fac, sev, hostname, appname, procid, msgid, version, sd])
    values = [
        timestamp, message,
        _struct(_LOG, [level, appname, None, syslog, None]),
        None,
        _struct(_PROCESS, [None, appname, None]) if appname else None,
        _struct(_HOST, [hostname]),
        None,
        _struct(_EVENT, [None, original, None]),
        None,
        None,
    ]
    event = Struct(LOG_EVENT_SCHEMA)
    event._values = values
    return event


def file_line_event(path: str, message: str, timestamp: str, hostname: str | None) -> Struct:
    """A log event of lines read from a file (TailDirSource): the text, the file, when it was read."""
    values = [timestamp, message, _struct(_LOG, [None, None, None, None, _struct(_LOG_FILE, [path])]), None, None,
              _struct(_HOST, [hostname]), None, None, None, None]
    event = Struct(LOG_EVENT_SCHEMA)
    event._values = values
    return event


def to_plain(value: Any) -> Any:
    """A Struct (or any value of the schema) as plain dicts, lists and scalars, leaving out null fields."""
    if isinstance(value, Struct):
        return {name: to_plain(v) for name, v in value.items() if v is not None}
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    return value
