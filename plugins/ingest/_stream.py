"""TCP and UDP listeners on one asyncio loop in a thread of the task, for the fire-and-forget log protocols.

Neither syslog nor a JSON stream over TCP acknowledges anything to the sender, so the delivery guarantee is
at most once: what a sender wrote into a connection that breaks, and what the worker received but had not
yet handed to the log when it died, is lost. What the sources add is that they never drop silently:
when the task falls behind, TCP connections stop being read (the sender's socket buffer fills and it
blocks or drops by its own policy), UDP datagrams are dropped and counted, and every refused frame is
counted and logged (rate-limited).

Frames larger than ``max.event.bytes`` are skipped up to the next delimiter and counted. Connections are
limited to ``max.connections`` (more are closed at once, counted) and closed after ``idle.timeout.ms``
without data.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
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
        .define(MAX_CONNECTIONS_CONFIG, ConfigType.INT, 1000, Range.between(1, 100_000), importance=Importance.LOW,
                documentation="The most TCP connections open at once; further ones are closed at once.")
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
        self._connections: set[asyncio.StreamWriter] = set()
        self._max_connections = 1000
        self._idle = 600.0
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
            else:
                server = await asyncio.start_server(self._serve_connection, listener.host, listener.port,
                                                    limit=_READ, backlog=1024)
                self._servers.append(server)
                self.bound.append(server.sockets[0].getsockname()[:2])

    async def _close_all(self) -> None:
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
        peer = self.admit(writer)
        if peer is None:
            return
        framer = self.framer()
        try:
            while not self.stopping:
                try:
                    data = await asyncio.wait_for(reader.read(_READ), self._idle)
                except TimeoutError:
                    self.counters.add("idle_connections_closed")
                    break
                frames = framer.feed(data) if data else framer.end()
                await self._deliver(frames, peer)
                if not data:
                    break
        except (ConnectionError, OSError):
            pass
        finally:
            self._connections.discard(writer)
            writer.close()

    def admit(self, writer: asyncio.StreamWriter) -> str | None:
        """The peer's address once a new connection is admitted; None (closed) beyond ``max.connections``.
        An admitted connection's handler discards its writer from ``connections`` when it ends."""
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
    def connections(self) -> set[asyncio.StreamWriter]:
        return self._connections

    @property
    def idle_timeout(self) -> float:
        return self._idle

    async def _deliver(self, frames: list[bytes | Exception], peer: str) -> None:
        records: list[SourceRecord] = []
        for frame in frames:
            if isinstance(frame, Exception):
                self.counters.add("refused_oversized")
                self.warn.warning("%s skipped a frame from %s: %s", self.name, peer, frame)
            else:
                records.extend(self.records(frame, peer))
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
        self._tail = b""
        self._skipping = False  # inside an oversized frame: drop up to its end

    def feed(self, data: bytes) -> list[bytes | Exception]:
        parts = self._split(self._tail + data if self._tail else data)
        self._tail = parts.pop()
        out: list[bytes | Exception] = []
        if parts and self._skipping:
            parts[0] = b""  # the end of the oversized frame
            self._skipping = False
        limit = self.max_bytes
        for part in parts:
            if len(part) > limit:
                out.append(ValueError(f"a frame of {len(part)} bytes, more than max.event.bytes={limit}"))
            elif part:
                out.append(part)
        if len(self._tail) > limit:
            if not self._skipping:
                out.append(ValueError(f"a frame of more than max.event.bytes={limit} bytes"))
            self._skipping = True
            self._tail = b""
        return out

    def end(self) -> list[bytes | Exception]:
        tail, self._tail = self._tail, b""
        return [tail] if tail.strip() and not self._skipping else []
