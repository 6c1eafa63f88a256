"""NetcatSource (``netcat`` in a Flume agent config): lines of text over TCP, each line one record, each
answered ``OK`` once the log has it.

Flume's netcat source answers ``OK`` when its channel took the event (a memory channel: not durable); here
the answer waits until the log acknowledged the line (on the embedded log, written to the segment file), so
an ``OK`` survives kill -9 of the worker. The lines of one read are offered and acknowledged together, and
answered in their order. With ``ack.every.event=false`` nothing is answered (the sender learns nothing, as
with Flume's).

A line longer than ``max.line.length`` bytes (the newline included, as Flume counts it) is not taken: it is
answered ``FAILED`` and skipped up to its newline. Bodies are bytes, as Flume's are: the value schema is
BYTES, written as it is by the ByteArrayConverter. No record headers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from connect.api import AbstractConfig, ConfigDef, ConfigType, Importance, Range, Schema, SourceRecord
from plugins.ingest._common import AsyncTicket, IngestConnector, base_config
from plugins.ingest._stream import Framer, StreamSourceTask, stream_config

__all__ = ["NetcatSourceConnector", "NetcatSourceTask"]

log = logging.getLogger(__name__)

MAX_LINE_LENGTH_CONFIG = "max.line.length"
ACK_EVERY_EVENT_CONFIG = "ack.every.event"
ACK_TIMEOUT_CONFIG = "ack.timeout.ms"

BODY_SCHEMA = Schema.BYTES_SCHEMA
_READ = 1 << 16
_OK = b"OK\n"

CONFIG_DEF = (
    ConfigDef(stream_config(base_config(("tcp",), "tcp://127.0.0.1:44444", "lines of text (netcat, telnet)")))
    .define(MAX_LINE_LENGTH_CONFIG, ConfigType.INT, 512, Range.between(2, 1 << 26), importance=Importance.MEDIUM,
            documentation="The longest line taken, in bytes, the newline included (Flume's max-line-length); "
                          "a longer one is answered FAILED and skipped.")
    .define(ACK_EVERY_EVENT_CONFIG, ConfigType.BOOLEAN, True, importance=Importance.MEDIUM,
            documentation="Answer OK for each line once the log has it (Flume's ack-every-event); false: "
                          "answer nothing.")
    .define(ACK_TIMEOUT_CONFIG, ConfigType.INT, 15_000, Range.at_least(1), importance=Importance.LOW,
            documentation="How long lines wait for the log before they are answered FAILED.")
)


class _Lines:
    """Splits a connection's bytes into lines; a line over the limit becomes None (answered FAILED)."""

    def __init__(self, max_body: int) -> None:
        self._max_body = max_body
        self._tail = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes | None]:
        out: list[bytes | None] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._skipping:
                self._skipping = False
            elif len(self._tail) + end - start > self._max_body:
                out.append(None)
            else:
                line = bytes(self._tail + data[start:end]) if self._tail else data[start:end]
                out.append(line[:-1] if line.endswith(b"\r") else line)
            self._tail.clear()
            start = end + 1
        if not self._skipping:
            self._tail += data[start:]
            if len(self._tail) > self._max_body:
                out.append(None)  # answered now: its newline may never come
                self._tail.clear()
                self._skipping = True
        return out

    def end(self) -> list[bytes | None]:
        """What the sender left without a newline when it closed: one last line."""
        tail = bytes(self._tail)
        self._tail.clear()
        return [tail] if tail and not self._skipping else []


class NetcatSourceTask(StreamSourceTask):
    KIND = "NetcatSource"
    SCHEMES = ("tcp",)
    CONFIG = CONFIG_DEF

    def __init__(self) -> None:
        super().__init__()
        self._max_line = 512
        self._ack_every_event = True
        self._ack_timeout = 15.0

    def configure(self, config: AbstractConfig) -> None:
        self._max_line = int(config.get_int(MAX_LINE_LENGTH_CONFIG) or 512)
        self._ack_every_event = bool(config.get_boolean(ACK_EVERY_EVENT_CONFIG))
        self._ack_timeout = int(config.get_int(ACK_TIMEOUT_CONFIG) or 0) / 1000.0

    def framer(self) -> Framer:  # the connection handler below splits lines by itself
        raise NotImplementedError

    def records(self, frame: bytes, peer: str) -> list[SourceRecord]:
        raise NotImplementedError

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = self.admit(writer)
        if peer is None:
            return
        lines = _Lines(self._max_line - 1)
        try:
            while not self.stopping:
                try:
                    data = await asyncio.wait_for(reader.read(_READ), self.idle_timeout)
                except TimeoutError:
                    self.counters.add("idle_connections_closed")
                    break
                got = lines.feed(data) if data else lines.end()
                if got:
                    answer = await self._take(got, peer)
                    if self._ack_every_event:
                        writer.write(answer)
                        await writer.drain()
                if not data:
                    break
        except (ConnectionError, OSError):
            pass
        finally:
            self.connections.discard(writer)
            writer.close()

    async def _take(self, got: list[bytes | None], peer: str) -> bytes:
        """Offer the lines of one read and wait for the log; the answers to them, in order."""
        bodies = [line for line in got if line is not None]
        too_long = len(got) - len(bodies)
        if too_long:
            self.counters.add("refused_oversized", too_long)
            self.warn.warning("%s answered FAILED to %s: a line longer than max.line.length=%d bytes", self.name,
                              peer, self._max_line)
        failed = f"FAILED: Event exceeds the maximum length ({self._max_line} chars, including newline)\n".encode()
        if not bodies:
            return failed * too_long
        reason = await self._offer(bodies)
        if reason is None:
            self.counters.add("received", len(bodies))
            ok = _OK
        else:
            self.counters.add("failed_unacknowledged", len(bodies))
            self.warn.warning("%s answered FAILED to %s: %s", self.name, peer, reason)
            ok = f"FAILED: {reason}\n".encode()
        if not too_long:
            return ok * len(bodies)
        return b"".join(ok if line is not None else failed for line in got)

    async def _offer(self, bodies: list[Any]) -> str | None:
        """None once the log has ``bodies``, else why not."""
        loop = asyncio.get_running_loop()
        ticket = AsyncTicket(len(bodies), loop)
        deadline = loop.time() + self._ack_timeout
        while not self.offer_values(bodies, BODY_SCHEMA, ticket):  # behind: stop reading this connection meanwhile
            if self.stopping:
                return "the source is stopping"
            if loop.time() >= deadline:
                return "more than max.pending.events events wait for the log"
            await asyncio.sleep(0.01)
        try:
            await asyncio.wait_for(asyncio.shield(ticket.future), max(deadline - loop.time(), 0.001))
        except TimeoutError:
            return ticket.failed or f"the log did not acknowledge within {self._ack_timeout:g} s"
        return ticket.failed


class NetcatSourceConnector(IngestConnector):
    """Lines of text over TCP into a topic, each answered OK once in the log (Flume's netcat source)."""

    CONFIG = CONFIG_DEF
    TASK = NetcatSourceTask
