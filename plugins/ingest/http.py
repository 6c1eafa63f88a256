"""HttpSource: log events POSTed over HTTP, answered 200 only once the log has every one of them.

A request body is one of:

- one JSON object (one event; it may span lines), as Log4j 2's HttpAppender sends it;
- NDJSON: one JSON object per line (blank lines skipped), as Fluent Bit's ``http`` output sends with
  ``Format json_lines`` and as ``connect.appender.HeadraceHandler`` sends;
- a JSON array of objects (Fluent Bit's ``Format json``), or Flume's HTTP source format, an array of
  ``{"headers": {...}, "body": "..."}`` (the body becomes ``message``, the headers fields of the event).

Each object becomes one record of the log event schema (``connect.api.log_event``). A request is all or
nothing: one bad line refuses the whole request with 400 naming it, so the sender can fix and resend.

Answers: 200 ``{"accepted": n}`` once the log acknowledged every record of the request (the runtime's
``commit_batch`` for the polled batch holding them); 503 with ``Retry-After`` when more than ``max.pending.events`` wait for the log, or
when the log did not acknowledge within ``http.ack.timeout.ms`` (the records may still arrive: a resend
can duplicate, so delivery is at least once); 400 for bad input; 413 above ``max.request.bytes``; 401
without the configured basic-auth credentials. ``GET /health`` answers 200 while the task runs.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import select
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson
from cheroot import wsgi
from cheroot.ssl.builtin import BuiltinSSLAdapter

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectException,
    FilePath,
    Importance,
    Range,
    Struct,
)
from connect.api.log_event import LogEventError, from_mapping, iso_timestamp
from plugins.ingest._common import (
    LISTENERS_CONFIG,
    IngestConnector,
    Listener,
    QueueingSourceTask,
    RateLimitedLog,
    Ticket,
    base_config,
    parse_listeners,
)

__all__ = ["HttpSourceConnector", "HttpSourceTask", "BadInput", "parse_events"]

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES_CONFIG = "max.request.bytes"
ACK_TIMEOUT_CONFIG = "http.ack.timeout.ms"
RETRY_AFTER_CONFIG = "http.retry.after.seconds"
THREADS_CONFIG = "http.threads"
IDLE_TIMEOUT_CONFIG = "http.idle.timeout.ms"
AUTH_USER_CONFIG = "http.basic.auth.user"
AUTH_PASSWORD_CONFIG = "http.basic.auth.password"
CERT_CONFIG = "http.ssl.certfile"
KEY_CONFIG = "http.ssl.keyfile"

CONFIG_DEF = (
    ConfigDef(base_config(("http", "https"), "http://127.0.0.1:8070", "POSTs of log events"))
    .define(MAX_REQUEST_BYTES_CONFIG, ConfigType.INT, 16 << 20, Range.between(1024, 1 << 30),
            importance=Importance.MEDIUM,
            documentation="The largest request body, in bytes (after gzip decoding); larger ones get 413.")
    .define(ACK_TIMEOUT_CONFIG, ConfigType.INT, 30_000, Range.at_least(1), importance=Importance.LOW,
            documentation="How long a request waits for the log to acknowledge its events before 503.")
    .define(RETRY_AFTER_CONFIG, ConfigType.INT, 1, Range.at_least(0), importance=Importance.LOW,
            documentation="The Retry-After seconds of a 503.")
    .define(THREADS_CONFIG, ConfigType.INT, 16, Range.between(1, 1000), importance=Importance.LOW,
            documentation="Requests served at once; further ones wait for a thread.")
    .define(IDLE_TIMEOUT_CONFIG, ConfigType.INT, 10_000, Range.at_least(100), importance=Importance.LOW,
            documentation="A connection that sends nothing for this long is closed.")
    .define(AUTH_USER_CONFIG, ConfigType.STRING, "", importance=Importance.MEDIUM,
            documentation="With a password, every request needs these HTTP basic-auth credentials.")
    .define(AUTH_PASSWORD_CONFIG, ConfigType.PASSWORD, "", importance=Importance.MEDIUM,
            documentation="The basic-auth password (use a config provider, ${file:...}, to keep it out of the config).")
    .define(CERT_CONFIG, ConfigType.STRING, "", FilePath(mode="read"), importance=Importance.MEDIUM,
            documentation="PEM certificate chain for https:// listeners.")
    .define(KEY_CONFIG, ConfigType.STRING, "", FilePath(mode="read"), importance=Importance.MEDIUM,
            documentation="PEM private key for https:// listeners.")
)


class BadInput(ValueError):
    """A request body that is not log events; the message names the line or element."""


class TooLarge(BadInput):
    """A request body above ``max.request.bytes``."""


def _utf8_problem(line: bytes) -> str | None:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start}"
    return None


def _event(obj: Any, where: str, received: Callable[[], str]) -> Struct:
    try:
        return from_mapping(obj, received=received)
    except LogEventError as exc:
        raise BadInput(f"{where}: {exc}") from None


def _flume(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """Flume's JSONHandler event ``{"headers": {...}, "body": "..."}`` as fields of an event, else None."""
    if "body" not in obj or not set(obj) <= {"headers", "body"}:
        return None
    headers = obj.get("headers") or {}
    if not isinstance(headers, Mapping):
        raise LogEventError("Flume 'headers' must be an object")
    fields = {str(k): v for k, v in headers.items()}
    fields["message"] = obj["body"] if isinstance(obj["body"], str) else json.dumps(obj["body"])
    return fields


def _array(items: list[Any], max_event_bytes: int, received: Callable[[], str]) -> list[Struct]:
    out = []
    for i, item in enumerate(items):
        where = f"element {i}"
        if isinstance(item, Mapping):
            size = len(orjson.dumps(item))
            if size > max_event_bytes:
                raise BadInput(f"{where}: the event is {size} bytes, more than max.event.bytes={max_event_bytes}")
            try:
                flume = _flume(item)
            except LogEventError as exc:
                raise BadInput(f"{where}: {exc}") from None
            out.append(_event(flume if flume is not None else item, where, received))
        else:
            out.append(_event(item, where, received))
    return out


def parse_events(body: bytes, max_event_bytes: int, received: Callable[[], str] | None = None) -> list[Struct]:
    """The log events of a request body; raises BadInput naming the first bad line or element."""
    stamp = received or (lambda: iso_timestamp(time.time()))
    start = body[:64].lstrip()
    if not start:
        raise BadInput("line 1: the body is empty")
    if start[:1] == b"[":
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = body.count(b"\n", 0, exc.start) + 1
            raise BadInput(f"line {line}: invalid UTF-8 at byte {exc.start} of the body") from None
        try:
            items = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadInput(f"line {exc.lineno}: not JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(items, list):
            raise BadInput("line 1: not JSON")
        if not items:
            raise BadInput("line 1: the array has no events")
        return _array(items, max_event_bytes, stamp)
    # the hot loop of HttpSource: nothing per line but the parse and the event, unless something is wrong
    events: list[Struct] = []
    append = events.append
    loads = orjson.loads
    event = from_mapping
    for number, line in enumerate(body.split(b"\n"), 1):
        if len(line) > max_event_bytes and line.strip():
            raise BadInput(f"line {number}: the event is {len(line)} bytes, more than max.event.bytes={max_event_bytes}")
        try:
            obj = loads(line)
        except orjson.JSONDecodeError as exc:
            if not line.strip():
                continue  # blank lines are skipped
            if not events and number == 1 and len(body) <= max_event_bytes:
                single = _single_object(body)  # one object written over several lines
                if single is not None:
                    return [_event(single, "line 1", stamp)]
            problem = _utf8_problem(line)
            raise BadInput(f"line {number}: {problem or f'not JSON ({exc.msg} at column {exc.colno})'}") from None
        try:
            append(event(obj, received=stamp))
        except LogEventError as exc:
            raise BadInput(f"line {number}: {exc}") from None
    if not events:
        raise BadInput("line 1: the body has no events")
    return events


def _single_object(body: bytes) -> Any:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


class _Server(wsgi.Server):
    """cheroot's WSGI server, its own errors to logging rather than stderr, and idle connections kept off the
    worker threads.

    cheroot hands every newly accepted connection straight to a worker thread, which then waits for the
    request line: a few hundred clients that connect and send nothing would hold every thread for the idle
    timeout each. Here a connection with nothing to read yet goes to cheroot's selector instead (as a
    kept-alive connection does) and reaches a thread only once it sends something; the selector closes
    it after the idle timeout.
    """

    def process_conn(self, conn: Any) -> None:
        if conn.rfile.has_data() or _readable(conn.socket):
            super().process_conn(conn)
        else:
            self._connections.put(conn)

    def error_log(self, msg: str = "", level: int = logging.INFO, traceback: bool = False) -> None:
        log.log(logging.DEBUG if level < logging.WARNING else level, "HTTP server: %s", msg, exc_info=traceback)


def _readable(sock: Any) -> bool:
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):  # closed meanwhile: let a thread find out and clean up
        return True


_JSON = [("Content-Type", "application/json")]


class HttpSourceTask(QueueingSourceTask):
    KIND = "HttpSource"

    def __init__(self) -> None:
        super().__init__()
        self._servers: list[_Server] = []
        self._threads: list[threading.Thread] = []
        self._max_request = 16 << 20
        self._ack_timeout = 30.0
        self._retry_after = "1"
        self._auth: tuple[bytes, bytes] | None = None
        self._warn = RateLimitedLog(log)
        self.bound: list[tuple[str, int]] = []

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(CONFIG_DEF, props)
        self.configure_common(config, props)
        self._max_request = int(config.get_int(MAX_REQUEST_BYTES_CONFIG) or 0)
        self._ack_timeout = int(config.get_int(ACK_TIMEOUT_CONFIG) or 0) / 1000.0
        self._retry_after = str(config.get_int(RETRY_AFTER_CONFIG))
        user = str(config.get_string(AUTH_USER_CONFIG) or "")
        password = config.get_password(AUTH_PASSWORD_CONFIG)
        secret = password.value() if password is not None else ""
        if bool(user) != bool(secret):
            raise ConnectException(f"{AUTH_USER_CONFIG} and {AUTH_PASSWORD_CONFIG} go together: set both or neither")
        self._auth = (user.encode(), secret.encode()) if user else None
        listeners = parse_listeners(config.get_list(LISTENERS_CONFIG), ("http", "https"))
        adapter = self._ssl_adapter(config, listeners)
        threads = int(config.get_int(THREADS_CONFIG) or 1)
        idle = int(config.get_int(IDLE_TIMEOUT_CONFIG) or 0) / 1000.0
        try:
            for listener in listeners:
                server = _Server((listener.host, listener.port), self._app, numthreads=threads,
                                 server_name="headrace-http-source", timeout=idle, shutdown_timeout=2)
                server.expiration_interval = 0.1
                server.request_queue_size = 1024  # the listen backlog: many senders connect at once
                server.max_request_header_size = 64 << 10
                server.max_request_body_size = 0  # checked by _read_body, which answers in JSON
                if listener.scheme == "https":
                    server.ssl_adapter = adapter
                try:
                    server.prepare()
                except OSError as exc:
                    raise ConnectException(f"{self.name} cannot listen on {listener}: {exc}") from exc
                self._servers.append(server)
                self.bound.append(server.bind_addr[:2])
        except BaseException:
            self._stop_servers()
            raise
        for i, server in enumerate(self._servers):
            thread = threading.Thread(target=server.serve, name=f"http-source-{props.get('name', '')}-{i}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)
        urls = ", ".join(f"{listener.scheme}://{host}:{port}" for listener, (host, port) in zip(listeners, self.bound,
                                                                                              strict=True))
        log.info("%s listening on %s, writing to topic %s%s", self.name, urls, self.topic,
                 " with basic authentication" if self._auth else "")

    def _ssl_adapter(self, config: AbstractConfig, listeners: list[Listener]) -> BuiltinSSLAdapter | None:
        if not any(listener.scheme == "https" for listener in listeners):
            return None
        cert, key = config.get_string(CERT_CONFIG), config.get_string(KEY_CONFIG)
        if not cert or not key:
            raise ConnectException(f"https:// listeners need {CERT_CONFIG} and {KEY_CONFIG}")
        adapter = BuiltinSSLAdapter(cert, key)
        adapter.context.minimum_version = ssl.TLSVersion.TLSv1_2
        return adapter

    def stop(self) -> None:
        self.stop_queue()
        self._stop_servers()
        log.info("%s stopped; %s", self.name, self.counters.text())

    def _stop_servers(self) -> None:
        for server in self._servers:
            try:
                server.stop()
            except Exception:  # stopping must go on for the other listeners
                log.exception("%s error stopping a listener", self.name)
        self._servers = []

    # --- requests ----------------------------------------------------------------------------------------

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "")
        if method == "GET" and environ.get("PATH_INFO") == "/health":
            return self._answer(start_response, "200 OK", {"status": "stopping" if self.stopping else "running"})
        if method != "POST":
            return self._answer(start_response, "405 Method Not Allowed", {"error": "POST log events here"},
                                [("Allow", "POST")])
        if self._auth is not None and not self._authorized(environ.get("HTTP_AUTHORIZATION", "")):
            self.counters.add("rejected_unauthorized")
            return self._answer(start_response, "401 Unauthorized", {"error": "basic authentication required"},
                                [("WWW-Authenticate", 'Basic realm="headrace-http-source"')])
        peer = environ.get("REMOTE_ADDR", "?")
        try:
            events = self.parse(self._read_body(environ))
        except TooLarge as exc:
            self.counters.add("rejected_too_large")
            self._warn.warning("%s refused a request from %s: %s", self.name, peer, exc)
            return self._answer(start_response, "413 Content Too Large", {"error": str(exc)})
        except BadInput as exc:
            self.counters.add("rejected_requests")
            if "max.event.bytes" in str(exc):
                self.counters.add("rejected_oversized_events")
            self._warn.warning("%s refused a request from %s: %s", self.name, peer, exc)
            return self._answer(start_response, "400 Bad Request", {"error": str(exc)})
        ticket = Ticket(len(events))
        if not self.enqueue(events, ticket):
            self.counters.add("rejected_busy")
            return self._busy(start_response, "too many events waiting for the log" if not self.stopping
                              else "the source is stopping")
        if not ticket.done.wait(self._ack_timeout) or ticket.failed:
            self.counters.add("unacknowledged_requests")
            reason = ticket.failed or f"the log did not acknowledge within {self._ack_timeout:g} s"
            return self._busy(start_response, reason + "; the events may or may not be in the log")
        self.counters.add("accepted_events", len(events))
        return self._answer(start_response, "200 OK", {"accepted": len(events)})

    def parse(self, body: bytes) -> list[Any]:
        """The events of a request body (raises BadInput naming the bad line); a subclass may read others."""
        return parse_events(body, self.max_event_bytes)

    def enqueue(self, events: list[Any], ticket: Ticket) -> bool:
        """Queue what ``parse`` returned for the log; False when the queue is full or the source stops."""
        return self.offer_events(events, ticket)

    def _authorized(self, header: str) -> bool:
        assert self._auth is not None
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, _, password = base64.b64decode(encoded.strip(), validate=True).partition(b":")
        except (binascii.Error, ValueError):
            return False
        # both compared, whatever the first says: the time taken tells nothing
        return hmac.compare_digest(user, self._auth[0]) & hmac.compare_digest(password, self._auth[1])

    def _read_body(self, environ: dict[str, Any]) -> bytes:
        stream = environ["wsgi.input"]
        length_text = environ.get("CONTENT_LENGTH") or ""
        if length_text:
            try:
                length = int(length_text)
            except ValueError:
                raise BadInput(f"bad Content-Length {length_text[:40]!r}") from None
            if length > self._max_request:
                raise TooLarge(f"the body is {length} bytes, more than max.request.bytes={self._max_request}")
            body = stream.read(length)
        else:  # chunked
            body = stream.read(self._max_request + 1)
            if len(body) > self._max_request:
                raise TooLarge(f"the body is more than max.request.bytes={self._max_request}")
        encoding = environ.get("HTTP_CONTENT_ENCODING", "").strip().lower()
        if encoding in ("gzip", "deflate"):
            inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
            try:
                body = inflater.decompress(body, self._max_request + 1)
            except zlib.error as exc:
                raise BadInput(f"the {encoding} body cannot be decoded: {exc}") from None
            if len(body) > self._max_request or inflater.unconsumed_tail:
                raise TooLarge(f"the decoded body is more than max.request.bytes={self._max_request}")
        elif encoding not in ("", "identity"):
            raise BadInput(f"Content-Encoding {encoding[:40]!r} is not supported (gzip, deflate)")
        return body

    def _busy(self, start_response: Callable[..., Any], reason: str) -> list[bytes]:
        return self._answer(start_response, "503 Service Unavailable", {"error": reason},
                            [("Retry-After", self._retry_after)])

    @staticmethod
    def _answer(start_response: Callable[..., Any], status: str, body: Mapping[str, Any],
                headers: list[tuple[str, str]] | None = None) -> list[bytes]:
        data = orjson.dumps(body)
        start_response(status, [*_JSON, ("Content-Length", str(len(data))), *(headers or [])])
        return [data]


class HttpSourceConnector(IngestConnector):
    """Log events over HTTP (one JSON event, NDJSON, JSON arrays, Flume's HTTP format) into a topic."""

    CONFIG = CONFIG_DEF
    TASK = HttpSourceTask
