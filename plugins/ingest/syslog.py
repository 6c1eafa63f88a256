"""SyslogSource: RFC 5424 and RFC 3164 (BSD) syslog over UDP and TCP into log events.

UDP: one message per datagram. TCP (RFC 6587): each message either octet-counted (``<length> <message>``)
or ended by a newline (non-transparent framing), detected per message, so rsyslog, syslog-ng, util-linux
``logger`` (with or without ``--octet-count``) and Log4j 2's SyslogAppender all work.

Parsed into the log event schema's ``log.syslog`` (priority, facility and severity with their names,
hostname, appname, procid, msgid, version, structured data) plus ``message``, ``@timestamp`` (RFC 5424's
as sent; RFC 3164's, which has neither year nor zone, read in the worker's zone and the current year),
``host.hostname`` and ``log.level`` (from the severity). A message that is neither format is kept, not
dropped: its text is ``message`` and ``event.original``, and the record carries a ``headrace.parse.error``
header saying what was wrong.

Delivery is at most once: syslog over UDP or TCP has no acknowledgement (see ``plugins/ingest/_stream.py``).
"""

from __future__ import annotations

import datetime as _dt
import re
import time

from connect.api import ConnectHeaders, SourceRecord, Struct
from connect.api.log_event import LOG_EVENT_SCHEMA, iso_timestamp, syslog_event
from plugins.ingest._common import IngestConnector, base_config
from plugins.ingest._stream import Framer, StreamSourceTask, stream_config
from plugins.ingest.tcp_json import PARSE_ERROR_HEADER

__all__ = ["SyslogSourceConnector", "SyslogSourceTask", "SyslogError", "parse_syslog", "SyslogFramer"]

CONFIG_DEF = stream_config(base_config(("udp", "tcp"), "udp://127.0.0.1:5514,tcp://127.0.0.1:5514", "syslog messages"))


class SyslogError(ValueError):
    pass


_PRI = re.compile(r"<(\d{1,3})>")
_HEADER_5424 = re.compile(r"(\d{1,2}) (\S+) (\S+) (\S+) (\S+) (\S+) ")
_TIME_5424 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)$")
_TIME_3164 = re.compile(r"([A-Z][a-z]{2}) ([ \d]\d) (\d\d:\d\d:\d\d) ")
_TAG = re.compile(r"([^:\[\s]{1,48})(?:\[([^\]\s]{0,128})\])?:")
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                       "Dec"), 1)}


def _nil(value: str) -> str | None:
    return None if value == "-" else value


def _structured_data(text: str, i: int) -> tuple[dict[str, dict[str, str]], int]:
    """RFC 5424 STRUCTURED-DATA from ``text[i:]``: the elements and the index just after them."""
    if text.startswith("-", i):
        return {}, i + 1
    if not text.startswith("[", i):
        raise SyslogError(f"structured data must be '-' or start with '[' at column {i + 1}")
    elements: dict[str, dict[str, str]] = {}
    n = len(text)
    while i < n and text[i] == "[":
        j = i + 1
        while j < n and text[j] not in " ]=\"":
            j += 1
        sd_id = text[i + 1:j]
        if not sd_id:
            raise SyslogError(f"an SD-ID is missing at column {i + 2}")
        params: dict[str, str] = {}
        i = j
        while True:
            if i >= n:
                raise SyslogError(f"structured data element [{sd_id} is not closed")
            if text[i] == "]":
                i += 1
                break
            if text[i] != " ":
                raise SyslogError(f"unexpected {text[i]!r} in structured data at column {i + 1}")
            eq = text.find("=", i + 1)
            if eq < 0 or not text.startswith('"', eq + 1):
                raise SyslogError(f"a parameter of [{sd_id} needs name=\"value\" at column {i + 2}")
            name = text[i + 1:eq]
            value: list[str] = []
            k = eq + 2
            while True:
                if k >= n:
                    raise SyslogError(f"the value of {sd_id}.{name} is not closed")
                c = text[k]
                if c == "\\" and k + 1 < n and text[k + 1] in '"\\]':
                    value.append(text[k + 1])
                    k += 2
                    continue
                if c == '"':
                    break
                value.append(c)
                k += 1
            params[name] = "".join(value)
            i = k + 1
        elements[sd_id] = params
    return elements, i


def _year_for(month: int, day: int, now: _dt.datetime) -> int:
    """RFC 3164 leaves the year out: this year, unless that would be well in the future (December's in January)."""
    try:
        candidate = now.replace(month=month, day=day)
    except ValueError:  # 29 February of another year
        return now.year
    return now.year - 1 if candidate - now > _dt.timedelta(days=2) else now.year


def parse_syslog(frame: bytes, received: float | None = None) -> Struct:
    """The log event of one syslog message; raises SyslogError saying what is wrong with a malformed one."""
    text = frame.decode("utf-8", "replace").rstrip("\r\n\x00")
    now = time.time() if received is None else received
    pri = _PRI.match(text)
    if pri is None:
        raise SyslogError("no <PRI> at the start")
    priority = int(pri.group(1))
    if priority > 191:
        raise SyslogError(f"<{priority}> is not a priority (0-191)")
    rest = pri.end()
    header = _HEADER_5424.match(text, rest)
    if header is not None:
        version, stamp, hostname, appname, procid, msgid = header.groups()
        if stamp != "-" and not _TIME_5424.match(stamp):
            raise SyslogError(f"RFC 5424 timestamp {stamp[:40]!r} is not RFC 3339")
        sd, i = _structured_data(text, header.end())
        if i < len(text) and text[i] != " ":
            raise SyslogError(f"expected a space after the structured data at column {i + 1}")
        message = text[i + 1:] if i < len(text) else None
        if message is not None and message.startswith("\ufeff"):
            message = message[1:]
        return syslog_event(timestamp=stamp if stamp != "-" else iso_timestamp(now), message=message,
                            priority=priority, version=int(version), hostname=_nil(hostname),
                            appname=_nil(appname), procid=_nil(procid), msgid=_nil(msgid), structured_data=sd)
    if text[rest:rest + 1].isdigit() and text[rest:rest + 3].rstrip().isdigit() and " " in text[rest:rest + 3]:
        raise SyslogError("an RFC 5424 header needs VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID")
    # RFC 3164: <PRI>Mmm dd hh:mm:ss HOSTNAME TAG[PID]: MSG, every part after PRI optional in practice
    stamp_iso = iso_timestamp(now)
    bsd = _TIME_3164.match(text, rest)
    hostname = None
    if bsd is not None:
        month, day, clock = bsd.group(1), int(bsd.group(2)), bsd.group(3)
        if month not in _MONTHS:
            raise SyslogError(f"RFC 3164 timestamp has no month {month!r}")
        local_now = _dt.datetime.fromtimestamp(now).astimezone()
        year = _year_for(_MONTHS[month], day, local_now)
        try:
            when = _dt.datetime.strptime(f"{year}-{_MONTHS[month]}-{day} {clock}", "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise SyslogError(f"RFC 3164 timestamp {text[rest:bsd.end()].strip()!r} is not a date") from None
        stamp_iso = iso_timestamp(when.astimezone().timestamp())
        rest = bsd.end()
        first = text[rest:].split(" ", 1)[0]
        if first and not first.endswith(":") and "[" not in first:
            hostname = first
            rest += len(first) + 1
    tag = _TAG.match(text, rest)
    appname = procid = None
    if tag is not None:
        appname, procid = tag.group(1), tag.group(2)
        rest = tag.end()
        if text.startswith(" ", rest):
            rest += 1
    return syslog_event(timestamp=stamp_iso, message=text[rest:], priority=priority, version=None,
                        hostname=hostname, appname=appname, procid=procid, msgid=None, structured_data=None)


_SEPARATORS = frozenset(b"\r\n\x00")


class SyslogFramer(Framer):
    """RFC 6587 over TCP: octet-counted (``123 <...``) or newline-ended messages, decided per message."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(max_bytes)
        # what has come and is not framed yet; bytes arriving one at a time from a slow client are appended,
        # never the whole pending message copied again for each, and a newline is looked for only past
        # where the last look stopped (``_scanned``), so a trickled message costs its length once
        self._buf = bytearray()
        self._scanned = 0
        self._skip = 0  # bytes still to drop of an oversized octet-counted message
        self._skip_line = False  # dropping an oversized newline-ended message up to its newline

    def feed(self, data: bytes) -> list[bytes | Exception]:
        buf = self._buf
        buf += data
        out: list[bytes | Exception] = []
        limit = self.max_bytes
        pos = 0  # where the unframed part of buf starts
        end = len(buf)
        while pos < end:
            if self._skip:
                dropped = min(self._skip, end - pos)
                self._skip -= dropped
                pos += dropped
                continue
            if self._skip_line:
                nl = buf.find(b"\n", pos + self._scanned)
                if nl < 0:
                    pos = end
                    break
                pos = nl + 1
                self._scanned = 0
                self._skip_line = False
                continue
            while pos < end and buf[pos] in _SEPARATORS:
                pos += 1
            if pos == end:
                break
            if 0x30 <= buf[pos] <= 0x39:
                space = buf.find(b" ", pos, pos + 11)
                if space < 0 and end - pos < 11 and bytes(buf[pos:end]).isdigit():
                    break  # the length is still coming
                if space > 0 and bytes(buf[pos:space]).isdigit():
                    length = int(buf[pos:space])
                    if length > limit:
                        out.append(ValueError(f"an octet-counted message of {length} bytes, more than "
                                              f"max.event.bytes={limit}"))
                        self._skip = length
                        pos = space + 1
                        continue
                    if end - space - 1 < length:
                        break  # the rest of the message is still coming
                    out.append(bytes(buf[space + 1:space + 1 + length]))
                    pos = space + 1 + length
                    self._scanned = 0
                    continue
            nl = buf.find(b"\n", pos + self._scanned)
            if nl < 0:
                if end - pos > limit:
                    out.append(ValueError(f"a message of more than max.event.bytes={limit} bytes"))
                    self._skip_line = True
                    pos = end
                else:
                    self._scanned = end - pos
                break
            if nl - pos > limit:
                out.append(ValueError(f"a message of {nl - pos} bytes, more than max.event.bytes={limit}"))
            else:
                out.append(bytes(buf[pos:nl]))
            pos = nl + 1
            self._scanned = 0
        if self._skip_line:
            self._scanned = 0  # nothing is kept while a line is dropped: the next look starts at what comes
        del buf[:pos]
        return out

    def end(self) -> list[bytes | Exception]:
        tail = bytes(self._buf)
        self._buf = bytearray()
        self._scanned = 0
        return [tail] if tail.strip(b"\r\n\x00 ") and not (self._skip or self._skip_line) else []


class SyslogSourceTask(StreamSourceTask):
    KIND = "SyslogSource"
    SCHEMES = ("udp", "tcp")
    CONFIG = CONFIG_DEF

    def framer(self) -> Framer:
        return SyslogFramer(self.max_event_bytes)

    def records(self, frame: bytes, peer: str) -> list[SourceRecord]:
        now = time.time()
        if not frame.strip(b"\r\n\x00 "):
            return []
        try:
            event = parse_syslog(frame, now)
            headers: ConnectHeaders | None = None
        except SyslogError as exc:
            text = frame.decode("utf-8", "replace").rstrip("\r\n\x00")
            event = syslog_event(timestamp=iso_timestamp(now), message=text, priority=None, version=None,
                                 hostname=None, appname=None, procid=None, msgid=None, structured_data=None,
                                 original=text)
            headers = ConnectHeaders().add_string(PARSE_ERROR_HEADER, str(exc))
            self.counters.add("kept_unparsed")
            self.warn.warning("%s kept a message from %s it could not parse (%s) with header %s", self.name, peer,
                              exc, PARSE_ERROR_HEADER)
        return [SourceRecord(None, None, self.topic, None, None, None, LOG_EVENT_SCHEMA, event, int(now * 1000),
                             headers)]


class SyslogSourceConnector(IngestConnector):
    """RFC 5424 and RFC 3164 syslog over UDP and TCP into a topic."""

    CONFIG = CONFIG_DEF
    TASK = SyslogSourceTask
