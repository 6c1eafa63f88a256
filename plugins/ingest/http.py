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
can duplicate, so delivery is at least once); 400 for bad input; 413 above ``max.request.bytes``, and 413
naming each event whose converted record is larger than the log takes (its other events are in the log:
``accepted`` says how many, ``refused`` which); 401
without the configured basic-auth credentials. ``GET /health`` answers 200 while the task runs.

Bounds, each checked while the body is read, decoded and parsed, so that a hostile request is refused after
at most the limit's worth of work: a body over ``max.request.bytes`` on the wire or once decoded, and a
request of more than ``max.request.events`` (or ``max.pending.events``) events, get 413. All requests of the
source together hold at most ``max.inflight.bytes`` of memory: the bodies being read, decoded and parsed,
and the events made of them (their estimated in-memory size, far above their JSON for small events) until the
log has them; a request that would go over it gets 503 with ``Retry-After``, one that alone needs more 413.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import re
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson
from cheroot.server import ChunkedRFile
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
from connect.api.http_listener import GuardedServer, ListenerLimits, warn_if_descriptors_short
from connect.api.log_event import LogEventError, from_mapping, iso_timestamp
from plugins.ingest._common import (
    LISTENERS_CONFIG,
    MAX_PENDING_CONFIG,
    IngestConnector,
    Listener,
    QueueingSourceTask,
    RateLimitedLog,
    Ticket,
    base_config,
    parse_listeners,
)

__all__ = ["HttpSourceConnector", "HttpSourceTask", "BadInput", "TooLarge", "TooManyEvents", "EventParser",
           "parse_events", "events_bytes", "json_tree_bytes"]

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES_CONFIG = "max.request.bytes"
MAX_REQUEST_EVENTS_CONFIG = "max.request.events"
MAX_INFLIGHT_BYTES_CONFIG = "max.inflight.bytes"
ACK_TIMEOUT_CONFIG = "http.ack.timeout.ms"
RETRY_AFTER_CONFIG = "http.retry.after.seconds"
THREADS_CONFIG = "http.threads"
IDLE_TIMEOUT_CONFIG = "http.idle.timeout.ms"
HEADER_TIMEOUT_CONFIG = "http.header.timeout.ms"
BODY_TIMEOUT_CONFIG = "http.body.timeout.ms"
MAX_CONNECTIONS_CONFIG = "http.max.connections"
AUTH_USER_CONFIG = "http.basic.auth.user"
AUTH_PASSWORD_CONFIG = "http.basic.auth.password"
CERT_CONFIG = "http.ssl.certfile"
KEY_CONFIG = "http.ssl.keyfile"

CONFIG_DEF = (
    ConfigDef(base_config(("http", "https"), "http://127.0.0.1:8070", "POSTs of log events"))
    .define(MAX_REQUEST_BYTES_CONFIG, ConfigType.INT, 16 << 20, Range.between(1024, 1 << 30),
            importance=Importance.MEDIUM,
            documentation="The largest request body, in bytes (after gzip decoding); larger ones get 413.")
    .define(MAX_REQUEST_EVENTS_CONFIG, ConfigType.INT, 10_000, Range.at_least(1), importance=Importance.MEDIUM,
            documentation="The most events one request may carry; a request with more gets 413, counted while "
            "it is parsed, before any of its events is queued. max.pending.events caps it too: a request with "
            "more events than may ever wait for the log could never be taken.")
    .define(MAX_INFLIGHT_BYTES_CONFIG, ConfigType.LONG, 256 << 20, Range.between(1 << 20, 1 << 40),
            importance=Importance.MEDIUM,
            documentation="The memory all requests of the source may hold at once, across its listeners: the "
            "bodies being read, decoded and parsed, and the events made of them (their estimated in-memory "
            "size) until the log acknowledged them. A request that would go over it gets 503 with Retry-After; "
            "one that needs more on its own gets 413.")
    .define(ACK_TIMEOUT_CONFIG, ConfigType.INT, 30_000, Range.at_least(1), importance=Importance.LOW,
            documentation="How long a request waits for the log to acknowledge its events before 503.")
    .define(RETRY_AFTER_CONFIG, ConfigType.INT, 1, Range.at_least(0), importance=Importance.LOW,
            documentation="The Retry-After seconds of a 503.")
    .define(THREADS_CONFIG, ConfigType.INT, 16, Range.between(1, 1000), importance=Importance.LOW,
            documentation="Requests served at once; further ones wait for a thread.")
    .define(IDLE_TIMEOUT_CONFIG, ConfigType.INT, 10_000, Range.at_least(100), importance=Importance.LOW,
            documentation="A connection that sends nothing for this long is closed (answered 408 if it was "
            "sending a request).")
    .define(HEADER_TIMEOUT_CONFIG, ConfigType.INT, 10_000, Range.at_least(100), importance=Importance.LOW,
            documentation="A request's line and headers must have arrived this long after its first byte; else "
            "it is answered 408 and its connection closed. Requests are read off the request threads, so a slow "
            "client holds none of them meanwhile.")
    .define(BODY_TIMEOUT_CONFIG, ConfigType.INT, 30_000, Range.at_least(100), importance=Importance.LOW,
            documentation="A request's body must have arrived this long after its headers (and an answer been "
            "taken by the client this long after its first byte); else 408 and the connection is closed.")
    .define(MAX_CONNECTIONS_CONFIG, ConfigType.INT, 10_000, Range.between(1, 1_000_000), importance=Importance.LOW,
            documentation="The most connections each listener holds open at once; a new one beyond gets 503 and "
            "is closed. A connection waiting for a request costs about a kilobyte and no thread.")
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
    """A request over one of its limits (bytes, events, memory): 413."""


class TooManyEvents(TooLarge):
    """A request of more than ``limit`` events; the task names the setting that limits it."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request has more than {limit} events")
        self.limit = limit


class Busy(Exception):
    """The source's requests hold all of ``max.inflight.bytes`` now: 503, to be tried again later."""


# Estimated in-memory size of parsed JSON and of the log events made of it, from counts over the JSON text
# (measured with tracemalloc on CPython 3.11 over event shapes from "{}" to a hundred labels, rounded up): a
# Struct per event costs ~300 bytes however small the event, and every key-value pair ~150 more, so the bytes
# on the wire understate the memory of small events twentyfold.
_EVENT_BYTES = 320
_PAIR_BYTES = 160
# orjson.loads of a whole body (a JSON array): per object or array, per key and per element
_TREE_CONTAINER_BYTES = 150
_TREE_KEY_BYTES = 60
_TREE_ELEMENT_BYTES = 20
# and per byte of the body: the decoded strings (2), plus the document orjson >= 3.10 builds first (its yyjson
# parser; measured ~12x the body at the peak, tracemalloc, orjson 3.13: a 10 MB array of strings peaks at 128 MiB)
_TREE_BODY_FACTOR = 14


def events_bytes(count: int, body: bytes, start: int = 0, end: int | None = None) -> int:
    """The estimated memory ``count`` events parsed from ``body[start:end]`` hold until the log has them."""
    stop = len(body) if end is None else end
    return count * _EVENT_BYTES + 2 * (stop - start) + _PAIR_BYTES * body.count(b":", start, stop)


def json_tree_bytes(body: bytes) -> int:
    """The estimated memory of ``orjson.loads(body)``: every object, array and value of it at once, and the
    parser's own document while it works (see _TREE_BODY_FACTOR)."""
    return (_TREE_BODY_FACTOR * len(body) + _TREE_KEY_BYTES * body.count(b":")
            + _TREE_ELEMENT_BYTES * body.count(b",")
            + _TREE_CONTAINER_BYTES * (body.count(b"{") + body.count(b"[")))


class InflightBudget:
    """The memory the requests of one source may hold at once (``max.inflight.bytes``). Each request claims what
    it reads, decodes and parses as it goes, and keeps its events' share until the log acknowledged them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0  # the most used at once
        self.lock = threading.Lock()

    def claim(self) -> Claim:
        return Claim(self)


class Claim:
    """The share of an InflightBudget one request holds."""

    __slots__ = ("_budget", "held")

    def __init__(self, budget: InflightBudget) -> None:
        self._budget = budget
        self.held = 0

    def take(self, n: int) -> None:
        """Hold ``n`` more bytes: TooLarge when the request alone would need more than the whole budget, Busy
        when the other requests hold too much of it now."""
        budget = self._budget
        with budget.lock:
            if self.held + n > budget.limit:
                raise TooLarge(f"the request needs more memory than max.inflight.bytes={budget.limit} "
                               f"(about {self.held + n} bytes for its body and events)")
            if budget.used + n > budget.limit:
                raise Busy(f"the requests in hand hold {budget.used} of max.inflight.bytes={budget.limit} "
                           "bytes; try again later")
            budget.used += n
            self.held += n
            if budget.used > budget.peak:
                budget.peak = budget.used

    def give(self, n: int) -> None:
        """Give back ``n`` of the bytes held (what a body or piece that is gone took)."""
        self.keep(self.held - n)

    def keep(self, n: int) -> None:
        """Give back all but ``n`` of the bytes held."""
        budget = self._budget
        with budget.lock:
            n = max(0, min(n, self.held))
            budget.used -= self.held - n
            self.held = n

    def release(self) -> None:
        self.keep(0)


class ClaimedTicket(Ticket):
    """A request's Ticket that gives its memory back once the log has every event of it, or they failed: not
    when the request stops waiting (a 503 after ``http.ack.timeout.ms``), since its queued events still take
    that memory."""

    __slots__ = ("_claim",)

    def __init__(self, count: int, claim: Claim) -> None:
        self._claim = claim
        super().__init__(count)

    def ack(self, n: int = 1) -> None:
        super().ack(n)
        if self.remaining <= 0:
            self._claim.release()

    def fail(self, reason: str) -> None:
        super().fail(reason)
        self._claim.release()


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


# Parsing checks the event limit and claims the memory of the events made so far at least every this many events.
_BLOCK = 1024
# A line longer than this claims its memory before it is parsed: one line may hold ~20 times its size.
_BIG_LINE = 64 << 10


class EventParser:
    """The log events of a request body fed a piece at a time; raises BadInput naming the first bad line or
    element.

    NDJSON is parsed line by line as the pieces arrive, so a request holds a piece, a line and the events made
    so far, and parsing stops with TooManyEvents as soon as the count passes ``max_events`` (0: no limit). A
    JSON array, and one object written over several lines, are parsed once the body is whole: their pieces
    are kept until then (``retained``). ``reserve`` is called with the estimated memory of what parsing makes,
    before or soon after it is made (in blocks of events), and may raise to stop it; ``reserved`` is the sum.
    """

    def __init__(self, max_event_bytes: int, received: Callable[[], str] | None = None, *, max_events: int = 0,
                 reserve: Callable[[int], None] | None = None) -> None:
        self.events: list[Struct] = []
        self.reserved = 0
        self._max_event_bytes = max_event_bytes
        self._stamp = received or (lambda: iso_timestamp(time.time()))
        self._max_events = max_events
        self._reserve = reserve
        self._stop_at = max_events + 1 if max_events else 1 << 62  # the first count that is too many
        self._check_at = min(_BLOCK, self._stop_at)  # the count at which the next block is checked
        self._claimed_events = 0  # events whose memory is reserved
        self._started = False  # a byte other than whitespace came: the body's shape is known
        self._partial = b""  # the start of the line the next piece goes on with (or leading whitespace)
        self._lines = 0  # complete lines parsed
        self._whole: list[bytes] | None = None  # the pieces of a body parsed whole
        self._whole_size = 0
        self._first_line_error: BadInput | None = None  # set while the body may be one object over several lines

    @property
    def retained(self) -> int:
        """Bytes of the body the parser holds between pieces."""
        return len(self._partial) + self._whole_size

    def feed(self, piece: bytes) -> None:
        if not piece:
            return
        if self._whole is not None:
            self._keep(piece)
            return
        data = self._partial + piece if self._partial else piece
        if not self._started:
            head = data.lstrip()
            if not head:  # whitespace so far: its shape comes with the first other byte
                self._partial = data
                return
            self._started = True
            if head[:1] == b"[":
                self._partial = b""
                self._whole = []
                self._keep(data)
                return
        end = data.rfind(b"\n") + 1
        if not end and len(data) > self._max_event_bytes + _PIECE and data.strip():
            # a line that has not ended a piece past its limit is refused without waiting for its end
            raise BadInput(f"line {self._lines + 1}: the event is at least {len(data)} bytes, more than "
                           f"max.event.bytes={self._max_event_bytes}")
        if end and not self._parse_lines(data, end):
            self._partial = b""  # the body is parsed whole: _parse_lines kept all of data
            return
        self._partial = data[end:] if end < len(data) else b""

    def finish(self) -> list[Struct]:
        """The events, once the whole body was fed."""
        if self._whole is None and self._partial and self._started:
            last, self._partial = self._partial, b""
            self._parse_lines(last, len(last))  # the last line, which no newline ends
        if self._whole is not None:
            body = self._whole[0] if len(self._whole) == 1 else b"".join(self._whole)
            self._whole = None
            if self._first_line_error is None:
                return self._parse_array(body)
            self._take(json_tree_bytes(body))
            single = _single_object(body)  # one object written over several lines
            if single is None:
                raise self._first_line_error
            self._take(events_bytes(1, body))
            self.events = [_event(single, "line 1", self._stamp)]
        if not self.events:
            raise BadInput("line 1: the body has no events" if self._started else "line 1: the body is empty")
        return self.events

    def _take(self, n: int) -> None:
        if self._reserve is not None:
            self._reserve(n)
            self.reserved += n

    def _keep(self, piece: bytes) -> None:
        assert self._whole is not None
        self._whole.append(piece)
        self._whole_size += len(piece)
        if self._first_line_error is not None and self._whole_size > self._max_event_bytes:
            raise self._first_line_error  # too long to be one event written over several lines

    def _parse_lines(self, data: bytes, stop: int) -> bool:
        """Parse the lines of ``data[:stop]``; False when the first line turned out to need the whole body (one
        object over several lines), which then holds all of ``data``."""
        # the hot loop of HttpSource: nothing per line but the parse and the event, unless something is wrong or
        # a block of events is complete
        events = self.events
        append = events.append
        loads = orjson.loads
        event = from_mapping
        stamp = self._stamp
        find = data.find
        max_bytes = self._max_event_bytes
        small = min(max_bytes, _BIG_LINE)
        check_at = self._check_at
        claimed_to = 0  # data whose events are reserved
        number = self._lines
        pos = 0
        while pos < stop:
            end = find(b"\n", pos, stop)
            if end < 0:
                end = stop
            line = data[pos:end]
            number += 1
            pos = end + 1
            if len(line) > small:
                if len(line) > max_bytes and line.strip():
                    raise BadInput(f"line {number}: the event is {len(line)} bytes, more than "
                                   f"max.event.bytes={max_bytes}")
                # a big line: its event is claimed, with the rest of its block, before its JSON is made
                upto = min(pos, stop)
                self._claim(data, claimed_to, upto, len(events) + 1)
                claimed_to = upto
            try:
                obj = loads(line)
            except orjson.JSONDecodeError as exc:
                if not line.strip():
                    continue  # blank lines are skipped
                problem = _utf8_problem(line)
                error = BadInput(f"line {number}: {problem or f'not JSON ({exc.msg} at column {exc.colno})'}")
                if number == 1 and not events and len(data) <= max_bytes:
                    # perhaps one object written over several lines: parsed once the body is whole
                    self._first_line_error = error
                    self._whole = []
                    self._keep(data)
                    return False
                raise error from None
            try:
                append(event(obj, received=stamp))
            except LogEventError as exc:
                raise BadInput(f"line {number}: {exc}") from None
            if len(events) >= check_at:
                if len(events) >= self._stop_at:
                    raise TooManyEvents(self._max_events)
                upto = min(pos, stop)
                self._claim(data, claimed_to, upto, len(events))
                claimed_to = upto
                check_at = min(len(events) + _BLOCK, self._stop_at)
        self._lines = number
        self._check_at = check_at
        self._claim(data, claimed_to, stop, len(events))  # the rest of the data's events, before it goes
        return True

    def _claim(self, data: bytes, start: int, end: int, events: int) -> None:
        """Reserve the memory of the events up to ``events`` made from ``data[start:end]``."""
        if self._reserve is not None and events > self._claimed_events:
            self._take(events_bytes(events - self._claimed_events, data, start, end))
            self._claimed_events = events

    def _parse_array(self, body: bytes) -> list[Struct]:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            line_number = body.count(b"\n", 0, exc.start) + 1
            raise BadInput(f"line {line_number}: invalid UTF-8 at byte {exc.start} of the body") from None
        self._take(json_tree_bytes(body))
        try:
            items = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadInput(f"line {exc.lineno}: not JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(items, list):
            raise BadInput("line 1: not JSON")
        if not items:
            raise BadInput("line 1: the array has no events")
        if self._max_events and len(items) > self._max_events:
            raise TooManyEvents(self._max_events)
        self._take(events_bytes(len(items), body))
        self.events = _array(items, self._max_event_bytes, self._stamp)
        return self.events


def parse_events(body: bytes, max_event_bytes: int, received: Callable[[], str] | None = None, *,
                 max_events: int = 0, reserve: Callable[[int], None] | None = None) -> list[Struct]:
    """The log events of a whole request body (see EventParser); raises BadInput naming the first bad line or
    element."""
    parser = EventParser(max_event_bytes, received, max_events=max_events, reserve=reserve)
    parser.feed(body)
    return parser.finish()


def _single_object(body: bytes) -> Any:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


class _Server(GuardedServer):
    """The guarded cheroot server (requests read off the request threads, under deadlines), its own errors to
    logging rather than stderr, and the refusals it makes itself (408, 503) in the source's JSON."""

    def error_log(self, msg: str = "", level: int = logging.INFO, traceback: bool = False) -> None:
        log.log(logging.DEBUG if level < logging.WARNING else level, "HTTP server: %s", msg, exc_info=traceback)

    def refusal(self, status: int, message: str) -> tuple[str, bytes]:
        return "application/json", orjson.dumps({"error": message})


_JSON = [("Content-Type", "application/json")]
# A body is read, and decoded, in pieces of at most this: what a request holds beyond its claim.
_PIECE = 1 << 20
_DISCARD_PIECE = 64 << 10
_CHUNK_LINE_BYTES = 1024  # a chunk-size line with its extensions; cheroot's header lines are longer
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,15}")
_CHUNKED_BODY_KEY = "headrace.chunked_body"


def _joined(pieces: list[bytes], size: int, claim: Claim) -> bytes:
    """The pieces as one bytes, claiming the copy while it exists beside them."""
    if len(pieces) == 1:
        return pieces.pop()
    claim.take(size)
    data = b"".join(pieces)
    pieces.clear()
    claim.give(size)
    return data


class _ChunkedBody:
    """A chunked request body read chunk by chunk from the connection, not through cheroot's ChunkedRFile, which
    reads a chunk of any announced size at once and copies its buffer for every piece taken. The chunks'
    framing counts towards the limit (a body of 1-byte chunks is six times its payload on the wire), and a
    chunk announced larger than what is left is refused before it is read. One per request (kept in its
    environ), so that a body left half read can be read on to its end and dropped."""

    def __init__(self, stream: ChunkedRFile, limit: int) -> None:
        self._stream = stream
        self._source = stream.rfile
        self._limit = limit
        self._wire = 0
        self._left = 0  # of the current chunk
        self.done = bool(stream.closed)

    def read(self, most: int) -> bytes:
        """Up to ``most`` bytes of the body (fewer at a chunk's end); b"" at its end."""
        if self.done:
            return b""
        if not self._left:
            self._next_chunk()
            if self.done:
                return b""
        step = min(most, self._left)
        piece = self._source.read(step)
        if len(piece) < step:
            raise BadInput("the body ended inside a chunk")
        self._left -= step
        self._wire += step
        if not self._left:
            if self._source.read(2) != b"\r\n":
                raise BadInput("bad chunked encoding: a chunk does not end with CRLF")
            self._wire += 2
        return piece

    def _next_chunk(self) -> None:
        line = self._line()
        size_text = line.split(b";", 1)[0].strip()
        if not line.endswith(b"\n") or not _CHUNK_SIZE.fullmatch(size_text):
            raise BadInput(f"bad chunked encoding: chunk size line {line[:40]!r}")
        size = int(size_text, 16)
        if size == 0:
            while self._line() not in (b"\r\n", b"\n"):  # trailer fields, up to the empty line ending the request
                pass
            self.done = True
            self._stream.closed = True  # read to its end: cheroot's reader must not look for more
            return
        if self._wire + size + 2 > self._limit:
            raise TooLarge(f"the body is more than {MAX_REQUEST_BYTES_CONFIG}={self._limit}")
        self._left = size

    def _line(self) -> bytes:
        line = self._source.readline(_CHUNK_LINE_BYTES + 1)
        self._wire += len(line)
        if not line.endswith(b"\n"):
            raise BadInput(f"bad chunked encoding: an unended line {line[:40]!r}")
        if self._wire > self._limit:
            raise TooLarge(f"the body is more than {MAX_REQUEST_BYTES_CONFIG}={self._limit}")
        return line


class HttpSourceTask(QueueingSourceTask):
    KIND = "HttpSource"

    def __init__(self) -> None:
        super().__init__()
        self._servers: list[_Server] = []
        self._threads: list[threading.Thread] = []
        self._max_request = 16 << 20
        # the events one request may carry: max.request.events, or max.pending.events when that is smaller
        self.max_request_events = 10_000
        self._events_limit = f"{MAX_REQUEST_EVENTS_CONFIG}=10000"
        self._inflight = InflightBudget(256 << 20)
        self._ack_timeout = 30.0
        self._retry_after = "1"
        self._auth: tuple[bytes, bytes] | None = None
        self._warn = RateLimitedLog(log)
        self.bound: list[tuple[str, int]] = []

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(CONFIG_DEF, props)
        self.configure_common(config, props)
        self._max_request = int(config.get_int(MAX_REQUEST_BYTES_CONFIG) or 0)
        per_request = int(config.get_int(MAX_REQUEST_EVENTS_CONFIG) or 1)
        if per_request <= self._max_pending:
            self.max_request_events = per_request
            self._events_limit = f"{MAX_REQUEST_EVENTS_CONFIG}={per_request}"
        else:
            self.max_request_events = self._max_pending
            self._events_limit = f"{MAX_PENDING_CONFIG}={self._max_pending}, the most that may wait for the log"
        self._inflight = InflightBudget(int(config.get_long(MAX_INFLIGHT_BYTES_CONFIG) or 0))
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
        limits = ListenerLimits(
            header_timeout=int(config.get_int(HEADER_TIMEOUT_CONFIG) or 0) / 1000.0,
            body_timeout=int(config.get_int(BODY_TIMEOUT_CONFIG) or 0) / 1000.0,
            idle_timeout=int(config.get_int(IDLE_TIMEOUT_CONFIG) or 0) / 1000.0,
            max_connections=int(config.get_int(MAX_CONNECTIONS_CONFIG) or 1),
            max_header_bytes=64 << 10,
            # a body announced larger is not read ahead: _read_body answers it 413 in JSON
            max_body_bytes=self._max_request,
            keys={"header_timeout": HEADER_TIMEOUT_CONFIG, "body_timeout": BODY_TIMEOUT_CONFIG,
                  "max_connections": MAX_CONNECTIONS_CONFIG, "idle_timeout": IDLE_TIMEOUT_CONFIG})
        warn_if_descriptors_short(self.name, limits.max_connections * len(listeners), MAX_CONNECTIONS_CONFIG)
        try:
            for listener in listeners:
                server = _Server((listener.host, listener.port), self._app, limits, self.name, numthreads=threads,
                                 server_name="headrace-http-source", shutdown_timeout=2,
                                 on_event=self._listener_event)
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

    def _listener_event(self, kind: str) -> None:
        self.counters.add({"refused_connection": "refused_connections", "request_timed_out": "timed_out_requests",
                           "idle_connection_closed": "idle_connections_closed"}.get(kind, kind))

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
        peer = environ.get("REMOTE_ADDR", "?")
        early: tuple[str, dict[str, Any], list[tuple[str, str]]] | None = None
        if method == "GET" and environ.get("PATH_INFO") == "/health":
            early = ("200 OK", {"status": "stopping" if self.stopping else "running"}, [])
        elif method != "POST":
            early = ("405 Method Not Allowed", {"error": "POST log events here"}, [("Allow", "POST")])
        elif self._auth is not None and not self._authorized(environ.get("HTTP_AUTHORIZATION", "")):
            self.counters.add("rejected_unauthorized")
            early = ("401 Unauthorized", {"error": "basic authentication required"},
                     [("WWW-Authenticate", 'Basic realm="headrace-http-source"')])
        if early is not None:
            if not self._discard_body(environ):
                return self._too_large(start_response, peer, f"the body is more than {MAX_REQUEST_BYTES_CONFIG}="
                                       f"{self._max_request}")
            return self._answer(start_response, *early)
        claim = self._inflight.claim()
        queued = False
        try:
            try:
                events = self._take_events(environ, claim)
            except Busy as exc:
                self._discard_body(environ)  # answered before its body was all read: the connection stays in step
                self.counters.add("rejected_busy")
                self._warn.warning("%s refused a request from %s for now: %s", self.name, peer, exc)
                return self._busy(start_response, str(exc))
            except TooManyEvents as exc:
                return self._too_large(start_response, peer, f"{exc} ({self._events_limit}); send them in several "
                                       "requests")
            except TooLarge as exc:
                return self._too_large(start_response, peer, str(exc))
            except BadInput as exc:
                self._discard_body(environ)
                self.counters.add("rejected_requests")
                if "max.event.bytes" in str(exc):
                    self.counters.add("rejected_oversized_events")
                self._warn.warning("%s refused a request from %s: %s", self.name, peer, exc)
                return self._answer(start_response, "400 Bad Request", {"error": str(exc)})
            ticket = ClaimedTicket(len(events), claim)
            queued = self.enqueue(events, ticket)
        finally:
            if not queued:  # a queued request's ticket gives its memory back once the log has its events
                claim.release()
        if not queued:
            self.counters.add("rejected_busy")
            return self._busy(start_response, "too many events waiting for the log" if not self.stopping
                              else "the source is stopping")
        if not ticket.done.wait(self._ack_timeout) or ticket.failed:
            self.counters.add("unacknowledged_requests")
            reason = ticket.failed or f"the log did not acknowledge within {self._ack_timeout:g} s"
            return self._busy(start_response, reason + "; the events may or may not be in the log")
        if ticket.refused:
            return self._refused(start_response, peer, ticket.refused, len(events))
        self.counters.add("accepted_events", len(events))
        return self._answer(start_response, "200 OK", {"accepted": len(events)})

    def _refused(self, start_response: Callable[..., Any], peer: str, refused: list[tuple[int, str]],
                 count: int) -> list[bytes]:
        """413 for a request with events the log refused for their converted size; the others are in the log
        (``accepted``), so the sender resends only the refused ones, made smaller."""
        refused = sorted(refused)
        accepted = count - len(refused)
        self.counters.add("accepted_events", accepted)
        error = "; ".join(f"event {i} of the request (counted from 0): {reason}" for i, reason in refused)
        self._warn.warning("%s refused %d of %d events of a request from %s: %s", self.name, len(refused), count,
                           peer, error)
        return self._answer(start_response, "413 Content Too Large",
                            {"error": error, "accepted": accepted,
                             "refused": [{"event": i, "error": reason} for i, reason in refused]})

    def parse(self, body: bytes, reserve: Callable[[int], None] | None = None) -> list[Any]:
        """The events of a request body (raises BadInput naming the bad line); a subclass may read others.

        At most ``max_request_events`` (TooManyEvents beyond), and ``reserve`` called with the estimated memory
        of what is made as it is made (see ``parse_events``)."""
        return parse_events(body, self.max_event_bytes, max_events=self.max_request_events, reserve=reserve)

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

    def _take_events(self, environ: dict[str, Any], claim: Claim) -> list[Any]:
        """The events of the request, with the memory they hold claimed (and nothing else of the request's)."""
        if type(self).parse is not HttpSourceTask.parse:  # a subclass's format, parsed from the whole body
            body = self._read_body(environ, claim)
            events = self.parse(body, claim.take)
            kept = events_bytes(len(events), body)
            del body  # the events hold what they need of it
            claim.keep(kept)
            return events
        parser = EventParser(self.max_event_bytes, max_events=self.max_request_events, reserve=claim.take)
        retained = 0
        for piece in self._body_pieces(environ, claim):
            parser.feed(piece)
            # the piece goes; what the parser keeps of it (a line's start, a body parsed whole) stays claimed
            now = parser.retained
            claim.give(retained + len(piece) - now)
            retained = now
        events = parser.finish()
        claim.keep(parser.reserved)
        return events

    def _read_body(self, environ: dict[str, Any], claim: Claim) -> bytes:
        """The whole decoded body, claimed."""
        pieces = list(self._body_pieces(environ, claim))
        return _joined(pieces, sum(len(p) for p in pieces), claim)

    def _body_pieces(self, environ: dict[str, Any], claim: Claim) -> Iterator[bytes]:
        """The request's body, decoded, in pieces of at most _PIECE bytes: at most ``max.request.bytes`` on the
        wire and once decoded. Each piece is claimed before it is read or decoded, and handed over with its
        claim (the caller gives it back when done with the piece): a decompression bomb is refused once its
        output passes the limit, having made no more than that, and an NDJSON body is parsed as it comes."""
        encoding = environ.get("HTTP_CONTENT_ENCODING", "").strip().lower()
        if encoding not in ("", "identity", "gzip", "deflate"):
            raise BadInput(f"Content-Encoding {encoding[:40]!r} is not supported (gzip, deflate)")
        wire = self._wire_pieces(environ, claim)
        if encoding in ("", "identity"):
            yield from wire
            return
        inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
        limit = self._max_request
        size = 0
        try:
            for raw in wire:
                data = raw
                while data and not inflater.eof:
                    step = min(_PIECE, limit + 1 - size)
                    claim.take(step)
                    out = inflater.decompress(data, step)
                    claim.give(step - len(out))
                    size += len(out)
                    if size > limit:
                        raise TooLarge(f"the decoded body is more than {MAX_REQUEST_BYTES_CONFIG}={limit}")
                    data = inflater.unconsumed_tail  # at most the rest of this piece of the wire
                    if out:
                        yield out
                claim.give(len(raw))  # after the stream's end, more input is read and dropped, as before
            while not inflater.eof:  # output zlib holds once every input byte is in
                step = min(_PIECE, limit + 1 - size)
                claim.take(step)
                out = inflater.decompress(b"", step)
                claim.give(step - len(out))
                if not out:
                    break
                size += len(out)
                if size > limit:
                    raise TooLarge(f"the decoded body is more than {MAX_REQUEST_BYTES_CONFIG}={limit}")
                yield out
        except zlib.error as exc:
            raise BadInput(f"the {encoding} body cannot be decoded: {exc}") from None
        if not inflater.eof:
            raise BadInput(f"the {encoding} body is cut short: its compressed stream does not end")

    def _wire_pieces(self, environ: dict[str, Any], claim: Claim) -> Iterator[bytes]:
        """The body as sent, in pieces of at most _PIECE bytes, each claimed before it is read."""
        stream = environ["wsgi.input"]
        limit = self._max_request
        length_text = environ.get("CONTENT_LENGTH") or ""
        if length_text:
            try:
                length = int(length_text)
            except ValueError:
                raise BadInput(f"bad Content-Length {length_text[:40]!r}") from None
            if length > limit:
                raise TooLarge(f"the body is {length} bytes, more than {MAX_REQUEST_BYTES_CONFIG}={limit}")
            got = 0
            while got < length:
                step = min(_PIECE, length - got)
                claim.take(step)
                piece = stream.read(step)
                claim.give(step - len(piece))
                if not piece:
                    raise BadInput(f"the body ended after {got} of its {length} bytes")
                got += len(piece)
                yield piece
        elif isinstance(stream, ChunkedRFile):
            body = self._chunked_body(environ)
            buffer = bytearray()  # small chunks joined into pieces
            while True:
                piece = body.read(_PIECE - len(buffer))
                claim.take(len(piece))  # after it is read: a piece is at most _PIECE, and the body stays in step
                buffer += piece
                if buffer and (len(buffer) >= _PIECE or not piece):
                    yield bytes(buffer)
                    buffer.clear()
                if not piece:
                    return
        else:  # another server's stream, which ends where the body does
            got = 0
            while True:
                claim.take(_PIECE)
                piece = stream.read(_PIECE)
                claim.give(_PIECE - len(piece))
                if not piece:
                    return
                got += len(piece)
                if got > limit:
                    raise TooLarge(f"the body is more than {MAX_REQUEST_BYTES_CONFIG}={limit}")
                yield piece

    def _chunked_body(self, environ: dict[str, Any]) -> _ChunkedBody:
        body = environ.get(_CHUNKED_BODY_KEY)
        if body is None:
            body = environ[_CHUNKED_BODY_KEY] = _ChunkedBody(environ["wsgi.input"], self._max_request)
        return body

    def _discard_body(self, environ: dict[str, Any]) -> bool:
        """Read and drop the rest of the body of a request answered without it, a piece at a time: left to
        cheroot, a body of known length would be read in one piece of any size, and a chunked one taken for
        the next request on the connection. False when the body is over ``max.request.bytes``: the answer is
        then 413, after which cheroot closes the connection instead."""
        stream: Any = environ.get("wsgi.input")
        if isinstance(stream, ChunkedRFile):
            body = self._chunked_body(environ)
            try:
                while body.read(_DISCARD_PIECE):
                    pass
            except TooLarge:
                return False
            except BadInput:
                return True  # cheroot finds the rest is not a request either
            return True
        remaining = getattr(stream, "remaining", 0)  # cheroot's KnownLengthRFile
        if remaining > self._max_request:
            return False
        while remaining > 0:
            if not stream.read(min(remaining, _DISCARD_PIECE)):
                break
            remaining = stream.remaining
        return True

    def _too_large(self, start_response: Callable[..., Any], peer: str, reason: str) -> list[bytes]:
        self.counters.add("rejected_too_large")
        self._warn.warning("%s refused a request from %s: %s", self.name, peer, reason)
        return self._answer(start_response, "413 Content Too Large", {"error": reason})

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
