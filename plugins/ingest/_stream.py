"""TCP and UDP listeners on one asyncio loop in a thread of the task, for the fire-and-forget log protocols.

Neither syslog nor a JSON stream over TCP acknowledges anything to the sender, so the delivery guarantee is
at most once: what a sender wrote into a connection that breaks, and what the worker received but had not
yet handed to the log when it died, is lost. What the sources add is that they never drop silently:
when the task falls behind, TCP connections stop being read (the sender's socket buffer fills and it
blocks or drops by its own policy), UDP datagrams are dropped and counted, and every refused frame is
counted and logged (rate-limited).

Frames larger than ``max.event.bytes`` are skipped up to the next delimiter and counted. An event under it
whose converted record is still larger than the log takes one record (``refuse_record``) is counted as
``refused_too_large_for_log`` and as a failed record of the task, logged by the runtime and sent to the
connector's dead-letter queue if it has one; the task goes on whatever ``errors.tolerance`` says. Connections are
limited to ``max.connections`` (more are closed at once, counted) and closed after ``idle.timeout.ms``
without data.

A connection costs no thread and no task: asyncio calls ``_FramedConnection`` with each piece of data, so a
slow client delays nobody and an idle one holds its socket, its transport and a small object (about 2 KB of
memory). Sources that answer their clients (Flume's Avro RPC, netcat) serve each connection with asyncio
streams instead, by overriding ``_serve_connection``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectException,
    Importance,
    Range,
    SourceRecord,
)
from connect.api.http_listener import warn_if_descriptors_short
from plugins.ingest._common import (
    LISTENERS_CONFIG,
    Listener,
    QueueingSourceTask,
    RateLimitedLog,
    parse_listeners,
)

log = logging.getLogger(__name__)

MAX_CONNECTIONS_CONFIG = "max.connections"
IDLE_TIMEOUT_CONFIG = "idle.timeout.ms"

_READ = 1 << 16


def stream_config(base: ConfigDef) -> ConfigDef:
    return (
        ConfigDef(base)
        .define(MAX_CONNECTIONS_CONFIG, ConfigType.INT, 10_000, Range.between(1, 100_000), importance=Importance.LOW,
                documentation="The most TCP connections open at once; further ones are closed at once. An idle "
                "connection costs about 2 KB and no thread.")
        .define(IDLE_TIMEOUT_CONFIG, ConfigType.INT, 600_000, Range.at_least(100), importance=Importance.LOW,
                documentation="A TCP connection that sends nothing for this long is closed.")
    )


class Framer:
    """Splits one TCP connection's bytes into frames; ``feed`` returns the complete ones (and size errors)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    def feed(self, data: bytes) -> list[bytes | Exception]:
        raise NotImplementedError

    def end(self) -> list[bytes | Exception]:
        return []


class StreamSourceTask(QueueingSourceTask):
    """Runs the listeners; subclasses make frames (``framer``) and records (``records``)."""

    SCHEMES: tuple[str, ...] = ("tcp",)
    CONFIG: ConfigDef

    def __init__(self) -> None:
        super().__init__()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: list[Any] = []
        self._connections: set[Any] = set()  # StreamWriters, or _FramedConnections
        self._max_connections = 10_000
        self._idle = 600.0
        self._sweeper: asyncio.TimerHandle | None = None
        self.warn = RateLimitedLog(log)
        self.bound: list[tuple[str, int]] = []

    # --- what a protocol supplies ----------------------------------------------------------------------------

    def framer(self) -> Framer:
        raise NotImplementedError

    def records(self, frame: bytes, peer: str) -> list[SourceRecord]:
        raise NotImplementedError

    # --- lifecycle -------------------------------------------------------------------------------------------

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(self.CONFIG, props)
        self.configure_common(config, props)
        self.configure(config)
        self._max_connections = int(config.get_int(MAX_CONNECTIONS_CONFIG) or 1)
        self._idle = int(config.get_int(IDLE_TIMEOUT_CONFIG) or 0) / 1000.0
        listeners = parse_listeners(config.get_list(LISTENERS_CONFIG), self.SCHEMES)
        if any(listener.scheme == "tcp" for listener in listeners):
            warn_if_descriptors_short(self.name, self._max_connections, MAX_CONNECTIONS_CONFIG)
        loop = asyncio.new_event_loop()
        self._loop = loop
        ready: list[BaseException | None] = []
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._listen(listeners))
                ready.append(None)
            except BaseException as exc:  # handed to start() on the task thread
                ready.append(exc)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self._close_all())
            loop.close()

        self._thread = threading.Thread(target=run, name=f"{self.KIND}-{props.get('name', '')}", daemon=True)
        self._thread.start()
        started.wait(30)
        if not ready or ready[0] is not None:
            error = ready[0] if ready else TimeoutError("the listeners did not start within 30 s")
            self.stop()
            raise ConnectException(f"{self.name} cannot listen: {error}") from error
        urls = ", ".join(f"{listener.scheme}://{host}:{port}"
                         for listener, (host, port) in zip(listeners, self.bound, strict=True))
        log.info("%s listening on %s, writing to topic %s", self.name, urls, self.topic)

    def configure(self, config: AbstractConfig) -> None:
        """Read the protocol's own settings (before any listener opens)."""

    async def _listen(self, listeners: list[Listener]) -> None:
        loop = asyncio.get_running_loop()
        for listener in listeners:
            if listener.scheme == "udp":
                transport, _ = await loop.create_datagram_endpoint(lambda: _Datagrams(self),
                                                                   local_addr=(listener.host, listener.port))
                self._servers.append(transport)
                self.bound.append(transport.get_extra_info("sockname")[:2])
            elif type(self)._serve_connection is not StreamSourceTask._serve_connection:
                server = await asyncio.start_server(self._serve_connection, listener.host, listener.port,
                                                    limit=_READ, backlog=1024)
                self._servers.append(server)
                self.bound.append(server.sockets[0].getsockname()[:2])
            else:
                server = await loop.create_server(lambda: _FramedConnection(self), listener.host, listener.port,
                                                  backlog=1024)
                self._servers.append(server)
                self.bound.append(server.sockets[0].getsockname()[:2])
                if self._sweeper is None:
                    self._sweeper = loop.call_later(self._sweep_interval(), self._sweep)

    async def _close_all(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        for server in self._servers:
            server.close()
        for writer in list(self._connections):
            writer.close()
        await asyncio.sleep(0)

    def stop(self) -> None:
        self.stop_queue()
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
        self._loop = self._thread = None
        log.info("%s stopped; %s", self.name, self.counters.text())

    # --- TCP ---------------------------------------------------------------------------------------------------

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Override to serve each connection with asyncio streams (a source that answers its clients); by default
        a ``_FramedConnection`` reads it, with ``framer`` and ``records``."""
        raise NotImplementedError

    def _sweep_interval(self) -> float:
        return min(1.0, max(0.05, self._idle / 10))

    def _sweep(self) -> None:
        """Close the connections silent for ``idle.timeout.ms`` (one look at all of them, each interval: a timer
        per connection would cost more than the look)."""
        now = time.monotonic()
        for conn in list(self._connections):
            if isinstance(conn, _FramedConnection) and now - conn.last_seen > self._idle and conn.waiting is None:
                self.counters.add("idle_connections_closed")
                conn.close()
        loop = self._loop
        if loop is not None and not self.stopping:
            self._sweeper = loop.call_later(self._sweep_interval(), self._sweep)

    def admit(self, writer: Any) -> str | None:
        """The peer's address once a new connection is admitted; None (closed) beyond ``max.connections``.
        An admitted connection's handler discards its writer (or ``_FramedConnection``) from ``connections``
        when it ends."""
        peername = writer.get_extra_info("peername")
        peer = f"{peername[0]}:{peername[1]}" if peername else "?"
        if len(self._connections) >= self._max_connections:
            self.counters.add("refused_connections")
            self.warn.warning("%s refused a connection from %s: already %d open (max.connections)", self.name,
                              peer, len(self._connections))
            writer.close()
            return None
        self._connections.add(writer)
        return peer

    @property
    def connections(self) -> set[Any]:
        return self._connections

    @property
    def idle_timeout(self) -> float:
        return self._idle

    def records_of(self, frames: list[bytes | Exception], peer: str) -> list[SourceRecord]:
        """The records of ``frames``; a size error among them counted and logged."""
        records: list[SourceRecord] = []
        for frame in frames:
            if isinstance(frame, Exception):
                self.counters.add("refused_oversized")
                self.warn.warning("%s skipped a frame from %s: %s", self.name, peer, frame)
            else:
                records.extend(self.records(frame, peer))
        return records

    async def _deliver(self, frames: list[bytes | Exception], peer: str) -> None:
        records = self.records_of(frames, peer)
        if not records:
            return
        while not self.offer(records):  # the task is behind: stop reading this connection meanwhile
            if self.stopping:
                self.counters.add("lost_at_stop", len(records))
                return
            await asyncio.sleep(0.01)
        self.counters.add("received", len(records))

    # --- UDP -----------------------------------------------------------------------------------------------------

    def datagram(self, data: bytes, addr: Any) -> None:
        peer = f"{addr[0]}:{addr[1]}" if addr else "?"
        if len(data) > self.max_event_bytes:
            self.counters.add("refused_oversized")
            self.warn.warning("%s dropped a %d-byte datagram from %s: more than max.event.bytes=%d", self.name,
                              len(data), peer, self.max_event_bytes)
            return
        records = self.records(data, peer)
        if records and not self.offer(records):
            self.counters.add("dropped_udp_behind", len(records))
            self.warn.warning("%s dropped a datagram from %s: %d events already wait for the log", self.name, peer,
                              self._queued)
            return
        self.counters.add("received", len(records))


class _FramedConnection(asyncio.Protocol):
    """One TCP connection of a source that only reads: its data framed and offered as it comes. While the task
    is behind, the connection is not read (its sender's socket buffer fills) and the records in hand are offered
    again every 10 ms."""

    __slots__ = ("task", "transport", "peer", "framer", "last_seen", "waiting")

    def __init__(self, task: StreamSourceTask) -> None:
        self.task = task
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.framer: Framer | None = None  # made with the first data: an idle connection holds none
        self.last_seen = time.monotonic()
        self.waiting: list[SourceRecord] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = self.task.admit(self)
        if peer is not None:
            self.peer = peer

    def get_extra_info(self, name: str) -> Any:
        return self.transport.get_extra_info(name) if self.transport is not None else None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        self.last_seen = time.monotonic()
        if self.framer is None:
            self.framer = self.task.framer()
        self._take(self.framer.feed(data))

    def eof_received(self) -> bool:
        if self.framer is not None:
            self._take(self.framer.end())
        return False  # closed

    def connection_lost(self, exc: Exception | None) -> None:
        self.task.connections.discard(self)

    def _take(self, frames: list[bytes | Exception]) -> None:
        if frames:
            records = self.task.records_of(frames, self.peer)
            if records:
                self._offer(records)

    def _offer(self, records: list[SourceRecord]) -> None:
        task = self.task
        if task.offer(records):
            task.counters.add("received", len(records))
            if self.waiting is not None:
                self.waiting = None
                if self.transport is not None and not self.transport.is_closing():
                    self.transport.resume_reading()
            return
        if task.stopping:
            task.counters.add("lost_at_stop", len(records))
            return
        if self.waiting is None and self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()
        self.waiting = records
        asyncio.get_running_loop().call_later(0.01, self._retry)

    def _retry(self) -> None:
        records = self.waiting
        if records is not None:
            self._offer(records)


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, task: StreamSourceTask) -> None:
        self.task = task

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.task.datagram(data, addr)


class DelimitedFramer(Framer):
    """Frames end at any of ``delimiters`` (single bytes); empty frames are skipped."""

    def __init__(self, max_bytes: int, delimiters: bytes = b"\n") -> None:
        super().__init__(max_bytes)
        self._split = re.compile(b"[" + re.escape(delimiters) + b"]").split
        # the frame under way, in the pieces it came in: joined once it ends, so that a frame sent a few bytes
        # at a time costs its length once, not its length for every piece (a slow client's CPU)
        self._pieces: list[bytes] = []
        self._held = 0
        self._skipping = False  # inside an oversized frame: drop up to its end

    def feed(self, data: bytes) -> list[bytes | Exception]:
        parts = self._split(data)
        out: list[bytes | Exception] = []
        if len(parts) > 1:  # the frame under way ends in this data
            if self._skipping:
                parts[0] = b""  # the end of the oversized frame
                self._skipping = False
            elif self._pieces:
                self._pieces.append(parts[0])
                parts[0] = b"".join(self._pieces)
            self._pieces, self._held = [], 0
            limit = self.max_bytes
            for part in parts[:-1]:
                if len(part) > limit:
                    out.append(ValueError(f"a frame of {len(part)} bytes, more than max.event.bytes={limit}"))
                elif part:
                    out.append(part)
        tail = parts[-1]
        if tail and not self._skipping:
            self._pieces.append(tail)
            self._held += len(tail)
            if self._held > self.max_bytes:
                out.append(ValueError(f"a frame of more than max.event.bytes={self.max_bytes} bytes"))
                self._skipping = True
                self._pieces, self._held = [], 0
        return out

    def end(self) -> list[bytes | Exception]:
        tail = b"".join(self._pieces)
        self._pieces, self._held = [], 0
        return [tail] if tail.strip() and not self._skipping else []
