"""A WSGI server for listeners that face the network: cheroot, with requests read off its request threads.

cheroot gives a connection to a request thread as soon as it has a byte to read, and that thread then reads
the request with a timeout on each ``recv``: a client that sends one byte every few seconds holds the thread
for as long as it likes, and a few dozen such clients hold them all. Its accept loop also does the TLS
handshake of each new connection, blocking every other connection meanwhile.

Here one selector thread does all of that on non-blocking sockets: it accepts, shakes hands, and reads each
request — its line, its headers and its body — into memory, and a request thread takes the connection only
once the request is complete. Each request has deadlines: its headers must have arrived ``header_timeout``
after its first byte, and its body ``body_timeout`` after its headers; a request that misses one is answered
408 and its connection closed. A connection silent for ``idle_timeout`` between requests is closed. At most
``max_connections`` are open at once; a new one beyond is answered 503 and closed at once.

Memory: a connection waiting for a request holds a socket and a few small objects (about a kilobyte). A
request being read holds what has come of it: up to ``FREE_READ_BYTES`` on its own, more while the bytes the
listener's connections hold beyond that stay within ``buffer_bytes`` (shared). When they would not, the
request goes to a request thread as it is, which reads the rest under the same deadlines; so the listener
holds at most ``max_connections`` times ``FREE_READ_BYTES`` plus ``buffer_bytes`` of requests being read. A
body announced above ``max_body_bytes`` is not read at all: the application refuses it (413) unread.
"""

from __future__ import annotations

import errno
import heapq
import logging
import resource
import selectors
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import attrs
from cheroot import connections as cheroot_connections
from cheroot import makefile as cheroot_makefile
from cheroot import server as cheroot_server
from cheroot import wsgi

__all__ = ["FREE_READ_BYTES", "GuardedConnection", "GuardedServer", "ListenerLimits", "RequestTimedOut",
           "warn_if_descriptors_short"]

log = logging.getLogger(__name__)

# what one connection may read ahead whatever the shared budget says: a whole usual request
FREE_READ_BYTES = 16 * 1024
_RECV_BYTES = 64 * 1024
# a request line or a chunk-size line longer than this is malformed: cheroot answers it
_MAX_LINE = 64 * 1024
_ACCEPTS_PER_WAKE = 64  # then the connections already open get their turn
_ACCEPT_PAUSE_S = 0.5  # out of file descriptors: stop accepting this long, instead of spinning on accept()
_WARN_EVERY_S = 5.0
_LISTEN_BACKLOG = 1024
_SPARE_DESCRIPTORS = 64  # the process's own files and sockets beside a listener's connections


def warn_if_descriptors_short(name: str, max_connections: int, key: str) -> None:
    """A WARNING when the process may open fewer files than ``max_connections`` needs (``ulimit -n``): the
    system then refuses connections before the limit does."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < max_connections + _SPARE_DESCRIPTORS:
        log.warning("%s may hold %s=%d connections, but this process may open only %d files (ulimit -n): "
                    "connections beyond that are refused by the system first", name, key, max_connections, soft)


class RequestTimedOut(TimeoutError):
    """A request (or its answer) missed its deadline. ``args[0]`` is what cheroot looks for to answer 408."""

    def __init__(self) -> None:
        super().__init__("timed out")


@attrs.frozen
class ListenerLimits:
    """The bounds of one listener. ``keys`` names the setting behind each bound (``header_timeout``,
    ``body_timeout``, ``max_connections``) for the messages that cite it."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    idle_timeout: float = 30.0
    max_connections: int = 1000
    max_header_bytes: int = 64 * 1024
    max_body_bytes: int = 0  # 0: no limit known to the server
    buffer_bytes: int = 64 * 1024 * 1024
    keys: dict[str, str] = attrs.field(factory=dict)

    def key(self, bound: str) -> str:
        return self.keys.get(bound, bound)


class _DeadlineReader(socket.SocketIO):
    """The socket as a request thread reads it: first what the selector thread already read, then the socket
    itself, each ``recv`` bounded by the request's deadline."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock, "rb")
        self.sock = sock
        self.ahead = memoryview(b"")
        self.deadline: float | None = None
        self.idle_timeout = 30.0

    def readinto(self, b: Any) -> int | None:
        if self.ahead:
            n = min(len(b), len(self.ahead))
            b[:n] = self.ahead[:n]
            self.ahead = self.ahead[n:]
            return n
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise RequestTimedOut()
            self.sock.settimeout(min(left, self.idle_timeout))
        return super().readinto(b)


class _DeadlineWriter(socket.SocketIO):
    """The socket as a request thread writes its answer: the whole answer within ``write_timeout`` of its
    first byte, so that a client that does not read cannot hold the thread either."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock, "wb")
        self.sock = sock
        self.deadline: float | None = None
        self.write_timeout = 30.0
        self.idle_timeout = 30.0

    def write(self, b: Any) -> int | None:
        now = time.monotonic()
        if self.deadline is None:
            self.deadline = now + self.write_timeout
        left = self.deadline - now
        if left <= 0:
            raise RequestTimedOut()
        self.sock.settimeout(min(left, self.idle_timeout))
        return super().write(b)


class _RequestReader(cheroot_makefile.StreamReader):
    def __init__(self, raw: _DeadlineReader, bufsize: int) -> None:  # noqa: D107
        super(cheroot_makefile.StreamReader, self).__init__(raw, bufsize)  # type: ignore[arg-type]
        self.bytes_read = 0
        self.deadline_raw = raw


class _AnswerWriter(cheroot_makefile.StreamWriter):
    def __init__(self, raw: _DeadlineWriter, bufsize: int) -> None:  # noqa: D107
        super(cheroot_makefile.StreamWriter, self).__init__(raw, bufsize)  # type: ignore[arg-type]
        self.bytes_written = 0
        self.deadline_raw = raw


class GuardedConnection(cheroot_server.HTTPConnection):
    """cheroot's connection, reading and writing through deadlines, counted while open."""

    def __init__(self, server: Any, sock: Any, makefile: Any = cheroot_makefile.MakeFile) -> None:
        super().__init__(server, sock, makefile)
        self.reader_raw = _DeadlineReader(sock)
        self.writer_raw = _DeadlineWriter(sock)
        self.rfile = _RequestReader(self.reader_raw, self.rbufsize)
        self.wfile = _AnswerWriter(self.writer_raw, self.wbufsize)
        self.gate: _Gate | None = None
        self._counted = True

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._counted:
                self._counted = False
                if self.gate is not None:
                    self.gate.connection_closed()


class GuardedServer(wsgi.Server):
    """cheroot's WSGI server with the selector thread of this module instead of cheroot's accept loop.

    ``name`` starts the log lines (e.g. ``HttpSource[logs|task-0]``); ``on_event`` is told each
    ``refused_connection``, ``request_timed_out`` and ``idle_connection_closed``.
    """

    ConnectionClass = GuardedConnection

    def __init__(self, bind_addr: Any, wsgi_app: Any, limits: ListenerLimits, name: str, numthreads: int = 10,
                 server_name: str | None = None, shutdown_timeout: float = 5,
                 on_event: Callable[[str], None] | None = None) -> None:
        super().__init__(bind_addr, wsgi_app, numthreads=numthreads, server_name=server_name)
        # cheroot's stubs say int; it takes seconds as float everywhere
        self.timeout = limits.idle_timeout  # type: ignore[assignment]
        self.shutdown_timeout = shutdown_timeout  # type: ignore[assignment]
        self.limits = limits
        self.name = name
        self.on_event = on_event
        self.max_request_header_size = limits.max_header_bytes
        # the listen backlog (cheroot's default is 5): connections made at once wait here until accepted,
        # instead of retrying their handshake a second or more later
        self.request_queue_size = _LISTEN_BACKLOG
        self._gate: _Gate | None = None

    def prepare(self) -> None:
        super().prepare()
        # cheroot's manager only registered the listening socket: this one takes over
        this: Any = self
        plain = this._connections
        this._connections = self._gate = _Gate(self)
        plain.close()

    @property
    def open_connections(self) -> int:
        return self._gate.open if self._gate is not None else 0

    def refusal(self, status: int, message: str) -> tuple[str, bytes]:
        """The content type and body of an answer the server gives itself (408, 503); override for JSON."""
        return "text/plain; charset=utf-8", message.encode()

    def event(self, kind: str) -> None:
        if self.on_event is not None:
            self.on_event(kind)


class _Warnings:
    """One WARNING per kind per 5 s, with how many were left out since."""

    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        self._left_out: dict[str, int] = {}

    def warn(self, kind: str, message: str, *args: Any) -> None:
        now = time.monotonic()
        if now - self._last.get(kind, -_WARN_EVERY_S) < _WARN_EVERY_S:
            self._left_out[kind] = self._left_out.get(kind, 0) + 1
            return
        self._last[kind] = now
        left_out = self._left_out.pop(kind, 0)
        if left_out:
            log.warning(message + " (and %d more like it in the last %.0f s)", *args, left_out, _WARN_EVERY_S)
        else:
            log.warning(message, *args)


# what a connection in the selector is waiting for
_IDLE, _HANDSHAKE, _HEAD, _BODY = range(4)
_END_OF_HEAD = (b"\n\r\n", b"\n\n")


class _Pending:
    """A connection the selector thread holds: accepted, kept alive between requests, or reading one."""

    __slots__ = ("sock", "conn", "peer", "phase", "buffer", "searched", "deadline", "last_seen", "body_start",
                 "body_length", "chunks", "reserved", "tls_env", "events", "watched")

    def __init__(self, sock: socket.socket, peer: str, conn: GuardedConnection | None, now: float) -> None:
        self.sock = sock
        self.conn = conn
        self.peer = peer
        self.phase = _IDLE
        self.buffer = bytearray()
        self.searched = 0  # the head's end is not before this index (less the end mark's length)
        self.deadline = 0.0
        self.last_seen = now
        self.body_start = 0
        self.body_length: int | None = None  # None: chunked
        self.chunks: _ChunkedEnd | None = None
        self.reserved = 0  # bytes of the shared buffer budget this request holds
        self.tls_env: dict[str, Any] | None = None
        self.events = selectors.EVENT_READ
        self.watched = 0.0  # when the earliest check of this connection is due (0: none is)


class _ChunkedEnd:
    """Finds where a chunked body ends in a buffer that grows; positions are indexes of that buffer."""

    _SIZE, _DATA, _TRAILER = range(3)

    def __init__(self, start: int) -> None:
        self.pos = start
        self.state = self._SIZE
        self.left = 0  # bytes left of the current chunk's data and the CRLF after it
        self.data = 0  # data bytes seen so far
        self.declared = 0  # data bytes the chunk size lines seen so far announce

    def end(self, buffer: bytearray) -> int | None:
        """The index just past the body once it is all in ``buffer``, else None; ValueError if malformed."""
        while True:
            if self.state == self._DATA:
                take = min(self.left, len(buffer) - self.pos)
                self.pos += take
                self.left -= take
                self.data += max(0, take - max(0, 2 - self.left))  # the CRLF is not data
                if self.left:
                    return None
                self.state = self._SIZE
                continue
            nl = buffer.find(b"\n", self.pos)
            if nl < 0:
                if len(buffer) - self.pos > _MAX_LINE:
                    raise ValueError("a chunk size or trailer line too long")
                return None
            line = bytes(buffer[self.pos:nl]).strip()
            self.pos = nl + 1
            if self.state == self._TRAILER:
                if not line:
                    return self.pos
                continue
            size = int(line.split(b";", 1)[0].strip(), 16)  # ValueError when malformed
            if size < 0:
                raise ValueError("a negative chunk size")
            self.declared += size
            if size == 0:
                self.state = self._TRAILER
            else:
                self.state = self._DATA
                self.left = size + 2


def _peer(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return "local"


class _Gate:
    """The selector thread: accepts, reads requests, hands complete ones to cheroot's request threads, and
    takes kept-alive connections back from them. Stands in for cheroot's ``ConnectionManager``."""

    def __init__(self, server: GuardedServer) -> None:
        self.server = server
        self.limits = server.limits
        self._listener = server.socket
        self._listener.setblocking(False)
        self._tls = server.ssl_adapter
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self._selector.register(self._wake_read, selectors.EVENT_READ, self)
        self._pending: dict[int, _Pending] = {}
        self._returned: deque[GuardedConnection] = deque()
        self._deadlines: list[tuple[float, int, int]] = []  # (when, id(pending), fd): checked lazily
        self._open = 0
        self._open_lock = threading.Lock()
        self._buffered = 0  # bytes of the shared budget held by requests being read ahead
        self._accept_paused_until = 0.0
        self._stop = False
        self._serving = False
        self._warnings = _Warnings()
        self.can_add_keepalive_connection = True  # cheroot asks; the limit counts kept-alive ones anyway

    # --- what cheroot calls -----------------------------------------------------------------------------------

    @property
    def open(self) -> int:
        return self._open

    def put(self, conn: GuardedConnection) -> None:
        """A request thread is done with a kept-alive connection: back to the selector, to wait for the next."""
        self._returned.append(conn)
        self._wake()

    def stop(self) -> None:
        self._stop = True
        self._wake()
        while self._serving:
            time.sleep(0.01)

    def close(self) -> None:
        """Close every connection the selector holds (those with a request thread close when it is done)."""
        for pending in list(self._pending.values()):
            self._drop(pending, unregister=False)
        self._pending.clear()
        while self._returned:
            self._returned.popleft().close()
        self._selector.close()
        self._wake_read.close()
        self._wake_write.close()

    def run(self, expiration_interval: float) -> None:
        self._serving = True
        try:
            while not self._stop:
                self._once()
        finally:
            self._serving = False

    def connection_closed(self) -> None:
        with self._open_lock:
            self._open -= 1

    # --- the loop ---------------------------------------------------------------------------------------------

    def _wake(self) -> None:
        try:
            self._wake_write.send(b"\0")
        except OSError:
            pass  # its buffer is full (a wake-up is due anyway) or the gate is closed

    def _once(self) -> None:
        now = time.monotonic()
        timeout: float | None = None
        if self._deadlines:
            timeout = max(0.0, self._deadlines[0][0] - now)
        if self._accept_paused_until:
            pause_left = max(0.0, self._accept_paused_until - now)
            timeout = pause_left if timeout is None else min(timeout, pause_left)
        try:
            ready = self._selector.select(timeout)
        except OSError:
            return
        for key, events in ready:
            if key.data is None:
                self._accept()
            elif key.data is self:
                self._drain_wakes()
            else:
                try:
                    self._serve(key.data, events)
                except Exception:  # one connection's trouble: the others go on
                    log.exception("%s: unexpected error with the connection from %s", self.server.name,
                                  key.data.peer)
                    self._drop(key.data)
        self._take_back()
        now = time.monotonic()
        if self._accept_paused_until and now >= self._accept_paused_until:
            self._accept_paused_until = 0.0
            self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._expire(now)

    def _drain_wakes(self) -> None:
        try:
            while self._wake_read.recv(4096):
                pass
        except OSError:
            pass

    def _watch(self, pending: _Pending, when: float) -> None:
        """Check ``pending`` at ``when`` (or earlier): one entry per connection is enough, as each check
        looks at what is due then and asks for the next."""
        if pending.watched and pending.watched <= when:
            return
        pending.watched = when
        heapq.heappush(self._deadlines, (when, id(pending), pending.sock.fileno()))

    def _expire(self, now: float) -> None:
        while self._deadlines and self._deadlines[0][0] <= now:
            when, ident, fd = heapq.heappop(self._deadlines)
            pending = self._pending.get(fd)
            if pending is None or id(pending) != ident or pending.watched != when:
                continue  # gone, the fd reused by a newer connection, or an earlier check moved it
            pending.watched = 0.0
            if pending.phase == _IDLE:
                due = pending.last_seen + self.limits.idle_timeout
                if due > now:
                    self._watch(pending, due)
                    continue
                self.server.event("idle_connection_closed")
                self._drop(pending)
            elif pending.phase != _HANDSHAKE and pending.deadline > now >= self._silent_until(pending):
                self._warnings.warn("silent", "%s cut off a client %s that sent nothing more of its request for "
                                    "%g s (%s)", self.server.name, pending.peer, self.limits.idle_timeout,
                                    self.limits.key("idle_timeout"))
                self.server.event("request_timed_out")
                self._refuse(pending, 408, "Request Timeout",
                             f"Nothing more of the request arrived for {self.limits.idle_timeout:g} s "
                             f"({self.limits.key('idle_timeout')})")
            elif pending.deadline > now:
                self._watch(pending, self._due(pending))
            elif pending.phase == _HANDSHAKE:
                self._warnings.warn("handshake", "%s closed a connection from %s: no TLS handshake within %g s (%s)",
                                    self.server.name, pending.peer, self.limits.header_timeout,
                                    self.limits.key("header_timeout"))
                self.server.event("request_timed_out")
                self._drop(pending)
            else:
                head = pending.phase == _HEAD
                bound = "header_timeout" if head else "body_timeout"
                seconds = self.limits.header_timeout if head else self.limits.body_timeout
                what = "headers" if head else "body"
                self._warnings.warn(bound, "%s cut off a slow client %s: its request's %s did not arrive "
                                    "within %g s (%s)", self.server.name, pending.peer, what, seconds,
                                    self.limits.key(bound))
                self.server.event("request_timed_out")
                self._refuse(pending, 408, "Request Timeout",
                             f"The request's {what} did not arrive within {seconds:g} s ({self.limits.key(bound)})")

    def _silent_until(self, pending: _Pending) -> float:
        return pending.last_seen + self.limits.idle_timeout

    def _due(self, pending: _Pending) -> float:
        """When a request being read is next to be looked at: its deadline, or sooner if it falls silent."""
        return min(pending.deadline, self._silent_until(pending))

    # --- new connections --------------------------------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(_ACCEPTS_PER_WAKE):
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self._warnings.warn("descriptors", "%s cannot accept connections for now: %s; %d open",
                                        self.server.name, e.strerror or e, self._open)
                    self._selector.unregister(self._listener)
                    self._accept_paused_until = time.monotonic() + _ACCEPT_PAUSE_S
                return  # a connection that broke before it was accepted, or the listener closing
            cheroot_connections.prevent_socket_inheritance(sock)
            sock.setblocking(False)
            peer = _peer(address)
            if self._open >= self.limits.max_connections:
                self._warnings.warn("limit", "%s refused a connection from %s: already %d open (%s=%d)",
                                    self.server.name, peer, self._open, self.limits.key("max_connections"),
                                    self.limits.max_connections)
                self.server.event("refused_connection")
                if self._tls is None:
                    self._send_refusal(sock, 503, "Service Unavailable",
                                       f"Too many connections: {self.limits.max_connections} are open "
                                       f"({self.limits.key('max_connections')}); try again later")
                _close_socket(sock)
                continue
            with self._open_lock:
                self._open += 1
            now = time.monotonic()
            pending = _Pending(sock, peer, None, now)
            if self._tls is not None:
                try:
                    pending.sock = self._tls.context.wrap_socket(sock, server_side=True,
                                                                 do_handshake_on_connect=False)
                except (OSError, ValueError):
                    self._count_closed()
                    _close_socket(sock)
                    continue
                pending.phase = _HANDSHAKE
                pending.deadline = now + self.limits.header_timeout
                self._watch(pending, pending.deadline)
            else:
                self._watch(pending, now + self.limits.idle_timeout)
            self._pending[pending.sock.fileno()] = pending
            self._selector.register(pending.sock, selectors.EVENT_READ, pending)

    def _count_closed(self) -> None:
        with self._open_lock:
            self._open -= 1

    def _take_back(self) -> None:
        while self._returned:
            conn = self._returned.popleft()
            if self._stop:
                conn.close()
                continue
            sock = conn.socket
            try:
                fd = sock.fileno()
                sock.setblocking(False)
            except OSError:
                conn.close()
                continue
            if fd < 0:
                conn.close()
                continue
            pending = _Pending(sock, _peer((conn.remote_addr, conn.remote_port)) if conn.remote_addr else "local",
                               conn, time.monotonic())
            if conn.rfile.has_data():  # the next request (pipelined) already read by the last one's thread
                pending.buffer += conn.rfile.read1(len(conn.rfile._read_buf))  # type: ignore[attr-defined]
            conn.reader_raw.deadline = conn.writer_raw.deadline = None
            self._pending[fd] = pending
            self._selector.register(sock, selectors.EVENT_READ, pending)
            if pending.buffer:
                self._begin_request(pending)
                self._advance(pending)
            else:
                self._watch(pending, pending.last_seen + self.limits.idle_timeout)

    # --- reading ----------------------------------------------------------------------------------------------

    def _serve(self, pending: _Pending, events: int) -> None:
        if pending.phase == _HANDSHAKE:
            self._handshake(pending)
            return
        while True:
            want = self._room(pending)
            if not want:  # the shared budget is spent: a request thread reads the rest
                self._dispatch(pending)
                return
            try:
                data = pending.sock.recv(want)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return
            except OSError:
                self._drop(pending)
                return
            if not data:  # the client closed: with a request half sent, nothing can answer it
                self._drop(pending)
                return
            pending.last_seen = time.monotonic()
            if pending.phase == _IDLE:
                self._begin_request(pending)
            pending.buffer += data
            if not self._advance(pending):
                return  # handed to a request thread, refused or closed
            # TLS may hold decrypted bytes the selector will not announce
            if not (isinstance(pending.sock, ssl.SSLSocket) and pending.sock.pending()):
                return

    def _room(self, pending: _Pending) -> int:
        """How many more bytes ``pending`` may read now: what its request still needs (as far as is known),
        within ``FREE_READ_BYTES`` and what it can reserve of the shared budget; 0 when nothing."""
        held = len(pending.buffer)
        if pending.phase == _BODY and pending.body_length is not None:
            target = pending.body_start + pending.body_length
        else:
            target = held + _RECV_BYTES
        allowed = FREE_READ_BYTES + pending.reserved
        if target > allowed:
            more = target - allowed
            if self._buffered + more <= self.limits.buffer_bytes:
                self._buffered += more
                pending.reserved += more
                allowed = target
        return max(0, min(_RECV_BYTES, target - held, allowed - held))

    def _begin_request(self, pending: _Pending) -> None:
        pending.phase = _HEAD
        pending.deadline = time.monotonic() + self.limits.header_timeout
        self._watch(pending, self._due(pending))

    def _advance(self, pending: _Pending) -> bool:
        """Move the request on with what has been read; False once the selector is done with the connection."""
        if pending.phase == _HEAD:
            end = self._head_end(pending)
            if end is None:
                if len(pending.buffer) > self.limits.max_header_bytes:
                    self._dispatch(pending)  # cheroot answers the oversized head
                    return False
                return True
            if not self._read_head(pending, end):
                return False
        if pending.phase == _BODY:
            if self._body_complete(pending):
                self._dispatch(pending)
                return False
        return True

    def _head_end(self, pending: _Pending) -> int | None:
        buffer = pending.buffer
        lead = 0
        # empty lines before the request line are allowed (RFC 9112 2.2): they do not end a head
        while buffer.startswith(b"\n", lead) or buffer.startswith(b"\r\n", lead):
            lead += 1 if buffer.startswith(b"\n", lead) else 2
        start = max(lead, pending.searched - 2)
        pending.searched = len(buffer)
        ends = [i for i in (buffer.find(mark, start) for mark in _END_OF_HEAD) if i >= 0]
        if not ends:
            return None
        first = min(ends)
        return first + (3 if buffer.startswith(b"\n\r\n", first) else 2)

    def _read_head(self, pending: _Pending, end: int) -> bool:
        """What the head says of the body; False when the request went on (to a thread, or refused)."""
        head = bytes(pending.buffer[:end]).decode("latin-1")
        lines = head.split("\n")
        request_line = next((line.strip() for line in lines if line.strip()), "")
        # as cheroot: a body is chunked only in HTTP/1.1
        http11 = request_line.upper().endswith("HTTP/1.1")
        length = 0
        chunked = False
        expect_line = None
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                continue
            name = name.strip().lower()
            value = value.strip()
            if name == "content-length":
                if not value.isdigit() or len(value) > 18:
                    self._dispatch(pending)  # cheroot answers the malformed length
                    return False
                length = int(value)
            elif name == "transfer-encoding" and http11:
                chunked = "chunked" in value.lower()
            elif name == "expect" and value.lower() == "100-continue":
                expect_line = line
        limit = self.limits.max_body_bytes
        if not chunked and limit and length > limit:
            self._dispatch(pending)  # refused unread by the application
            return False
        if expect_line is not None and (chunked or len(pending.buffer) - end < length):
            # the client waits for this before it sends the body; cheroot would say it only on a request
            # thread, so it is said here, and the header dropped so that cheroot does not say it again
            if not self._send_continue(pending):
                self._dispatch(pending)
                return False
            marked = b"\n" + expect_line.encode("latin-1") + b"\n"
            at = pending.buffer.find(marked, 0, end)
            if at >= 0:
                del pending.buffer[at + 1:at + len(marked)]
                end -= len(marked) - 1
        pending.body_start = end
        pending.body_length = None if chunked else length
        pending.chunks = _ChunkedEnd(end) if chunked else None
        pending.phase = _BODY
        pending.deadline = time.monotonic() + self.limits.body_timeout
        self._watch(pending, self._due(pending))
        return True

    def _body_complete(self, pending: _Pending) -> bool:
        """Whether the body is all read (or is to be refused unread, or is malformed: cheroot says so)."""
        if pending.body_length is not None:
            return len(pending.buffer) - pending.body_start >= pending.body_length
        assert pending.chunks is not None
        try:
            if pending.chunks.end(pending.buffer) is not None:
                return True
        except ValueError:
            return True
        # over the limit, or announced so: the application refuses it without waiting for the rest
        limit = self.limits.max_body_bytes
        return bool(limit) and max(pending.chunks.declared, len(pending.buffer) - pending.body_start) > limit

    def _release(self, pending: _Pending) -> None:
        self._buffered -= pending.reserved
        pending.reserved = 0

    # --- TLS --------------------------------------------------------------------------------------------------

    def _handshake(self, pending: _Pending) -> None:
        sock = pending.sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self._listen_for(pending, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._listen_for(pending, selectors.EVENT_WRITE)
            return
        except ssl.SSLError as e:
            if "http request" in str(e).lower():  # plain HTTP to an https listener
                self._send_plain_refusal(pending)
            log.debug("%s: TLS handshake with %s failed: %s", self.server.name, pending.peer, e)
            self._drop(pending)
            return
        except OSError:
            self._drop(pending)
            return
        self._listen_for(pending, selectors.EVENT_READ)
        try:
            pending.tls_env = self._tls.get_environ(sock)
        except Exception:  # a certificate cheroot cannot describe: the connection is still good
            pending.tls_env = {}
        pending.phase = _IDLE
        pending.last_seen = time.monotonic()
        self._watch(pending, pending.last_seen + self.limits.idle_timeout)
        if sock.pending():
            self._serve(pending, selectors.EVENT_READ)

    def _listen_for(self, pending: _Pending, events: int) -> None:
        if pending.events != events:
            pending.events = events
            self._selector.modify(pending.sock, events, pending)

    def _send_plain_refusal(self, pending: _Pending) -> None:
        message = "The client sent a plain HTTP request, but this server only speaks HTTPS on this port."
        answer = (f"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: {len(message)}\r\n"
                  f"Connection: close\r\n\r\n{message}").encode()
        try:
            socket.socket.send(pending.sock, answer)  # past the TLS layer, in plain text, as the client spoke
        except OSError:
            pass

    # --- handing over, refusing, closing ----------------------------------------------------------------------

    def _dispatch(self, pending: _Pending) -> None:
        """The request (complete, or as much as is read ahead) to a request thread."""
        self._forget(pending)
        self._release(pending)
        conn = pending.conn
        try:
            pending.sock.setblocking(True)
            pending.sock.settimeout(self.limits.idle_timeout)
            if conn is None:
                conn = self._connection(pending)
        except OSError:
            if conn is not None:
                conn.close()
            else:
                self._count_closed()
                _close_socket(pending.sock)
            return
        raw = conn.reader_raw
        raw.ahead = memoryview(bytes(pending.buffer))
        raw.idle_timeout = conn.writer_raw.idle_timeout = self.limits.idle_timeout
        raw.deadline = pending.deadline
        conn.writer_raw.write_timeout = self.limits.body_timeout
        conn.writer_raw.deadline = None
        self.server.process_conn(conn)

    def _connection(self, pending: _Pending) -> GuardedConnection:
        server = self.server
        makefile = server.ssl_adapter.makefile if pending.tls_env is not None else cheroot_makefile.MakeFile
        conn = server.ConnectionClass(server, pending.sock, makefile)
        assert isinstance(conn, GuardedConnection)
        conn.gate = self
        if not isinstance(server.bind_addr, (str, bytes)):
            try:
                address = pending.sock.getpeername()
            except OSError:
                address = ("0.0.0.0", 0)
            conn.remote_addr, conn.remote_port = address[0], address[1]
        conn.ssl_env = pending.tls_env or {}
        return conn

    def _forget(self, pending: _Pending) -> None:
        """Out of the selector (the socket stays open)."""
        try:
            fd = pending.sock.fileno()
        except OSError:
            fd = -1
        if self._pending.get(fd) is pending:
            del self._pending[fd]
        try:
            self._selector.unregister(pending.sock)
        except (KeyError, ValueError, OSError):
            pass

    def _drop(self, pending: _Pending, unregister: bool = True) -> None:
        if unregister:
            self._forget(pending)
        self._release(pending)
        if pending.conn is not None:
            pending.conn.close()
        else:
            self._count_closed()
            _close_socket(pending.sock)

    def _refuse(self, pending: _Pending, status: int, reason: str, message: str) -> None:
        self._send_refusal(pending.sock, status, reason, message)
        self._drop(pending)

    def _send_refusal(self, sock: socket.socket, status: int, reason: str, message: str) -> None:
        """An answer of the server's own, written if the socket takes it at once (it is small), never waited for."""
        content_type, body = self.server.refusal(status, message)
        answer = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                  f"Connection: close\r\n\r\n").encode("latin-1") + body
        try:
            sock.send(answer)
        except (OSError, ValueError):
            pass  # the client is gone, or its buffer full: it is closed without an answer

    def _send_continue(self, pending: _Pending) -> bool:
        message = b"HTTP/1.1 100 Continue\r\n\r\n"
        try:
            return pending.sock.send(message) == len(message)
        except (OSError, ValueError):
            return False


def _close_socket(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
