"""FlumeAvroSource: Flume's Avro RPC server, for Flume agents' Avro sinks, Flume's RpcClient and Log4j 2's
FlumeAppender.

Each event becomes one record: its headers become the record's headers (strings), its body the value
(bytes; a worker or connector with ``value.converter=ByteArrayConverter`` keeps it byte for byte), and a
``timestamp`` header of epoch milliseconds, when there is one, the record's timestamp.

A call is answered ``OK`` only once the log acknowledged every event of it (the runtime's ``commit_record``
for each record: its records carry Flume's headers, which a SourceRecordBatch cannot hold); ``FAILED`` when more than ``max.pending.events`` already wait for the log, when the log
does not acknowledge within ``ack.timeout.ms`` or fails, or when the source stops. Flume's clients resend
a failed batch, so delivery is at least once: a batch the log took but could not confirm in time comes
again. A request that is not Flume's protocol is answered with an Avro error naming what is wrong; bytes
that are not Netty frames close the connection, logged with the reason.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import Mapping
from typing import Any

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectHeaders,
    Importance,
    Range,
    Schema,
    SourceRecord,
    ValidString,
)
from plugins.flume.avro_ipc import (
    STATUS_FAILED,
    STATUS_OK,
    AvroCallError,
    AvroRequest,
    AvroSession,
    FrameError,
    KnownProtocols,
    NettyFrameDecoder,
    encode_frame,
)
from plugins.ingest._common import AcknowledgesRecords, AsyncTicket, IngestConnector, base_config
from plugins.ingest._stream import Framer, StreamSourceTask, stream_config

__all__ = ["FlumeAvroSourceConnector", "FlumeAvroSourceTask"]

log = logging.getLogger(__name__)

COMPRESSION_TYPE_CONFIG = "compression.type"
COMPRESSION_LEVEL_CONFIG = "compression.level"
MAX_FRAME_BYTES_CONFIG = "max.frame.bytes"
ACK_TIMEOUT_CONFIG = "ack.timeout.ms"

_READ = 1 << 16

CONFIG_DEF = (
    ConfigDef(stream_config(base_config(("tcp",), "tcp://127.0.0.1:41414", "Flume Avro RPC clients")))
    .define(COMPRESSION_TYPE_CONFIG, ConfigType.STRING, "none", ValidString.in_("none", "deflate"),
            importance=Importance.MEDIUM,
            documentation="none, or deflate: the whole connection is a zlib stream, as Flume's avro source and "
                          "sink set with compression-type; it must match what the clients send.")
    .define(COMPRESSION_LEVEL_CONFIG, ConfigType.INT, 6, Range.between(1, 9), importance=Importance.LOW,
            documentation="The zlib level of the answers with compression.type=deflate.")
    .define(MAX_FRAME_BYTES_CONFIG, ConfigType.INT, 64 << 20, Range.between(1024, 1 << 30), importance=Importance.LOW,
            documentation="The largest request (one append or appendBatch), in bytes; a larger frame closes the "
                          "connection, logged.")
    .define(ACK_TIMEOUT_CONFIG, ConfigType.INT, 15_000, Range.at_least(1), importance=Importance.LOW,
            documentation="How long a call waits for the log to acknowledge its events before it is answered "
                          "FAILED (Flume's clients wait 20 s by default: keep it below their request-timeout).")
)


class _Inflater:
    """The zlib stream of a deflate connection, inflated in bounded steps (a small frame cannot become a
    huge allocation before the frame decoder's limit applies)."""

    STEP = 1 << 20

    def __init__(self) -> None:
        self._z = zlib.decompressobj()

    def chunks(self, data: bytes) -> list[bytes]:
        out = [self._z.decompress(data, self.STEP)]
        while self._z.unconsumed_tail:
            out.append(self._z.decompress(self._z.unconsumed_tail, self.STEP))
        return out


class FlumeAvroSourceTask(AcknowledgesRecords, StreamSourceTask):
    KIND = "FlumeAvroSource"
    SCHEMES = ("tcp",)
    CONFIG = CONFIG_DEF

    def __init__(self) -> None:
        super().__init__()
        self._deflate = False
        self._level = 6
        self._max_frame = 64 << 20
        self._ack_timeout = 15.0
        self._known = KnownProtocols()

    def configure(self, config: AbstractConfig) -> None:
        self._deflate = config.get_string(COMPRESSION_TYPE_CONFIG) == "deflate"
        self._level = int(config.get_int(COMPRESSION_LEVEL_CONFIG) or 6)
        self._max_frame = int(config.get_int(MAX_FRAME_BYTES_CONFIG) or 0)
        self._ack_timeout = int(config.get_int(ACK_TIMEOUT_CONFIG) or 0) / 1000.0

    def framer(self) -> Framer:  # the connection handler below frames by itself
        raise NotImplementedError

    def records(self, frame: bytes, peer: str) -> list[SourceRecord]:
        raise NotImplementedError

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = self.admit(writer)
        if peer is None:
            return
        decoder = NettyFrameDecoder(self._max_frame)
        session = AvroSession(self._known)
        inflater = _Inflater() if self._deflate else None
        deflater = zlib.compressobj(self._level) if self._deflate else None
        try:
            while not self.stopping:
                try:
                    data = await asyncio.wait_for(reader.read(_READ), self.idle_timeout)
                except TimeoutError:
                    self.counters.add("idle_connections_closed")
                    break
                if not data:
                    if decoder.pending:
                        self.counters.add("truncated_frames")
                        self.warn.warning("%s: %s closed the connection inside a frame (%d bytes of it received)",
                                          self.name, peer, decoder.pending)
                    break
                try:
                    frames = [f for chunk in inflater.chunks(data) for f in decoder.feed(chunk)] if inflater \
                        else decoder.feed(data)
                except zlib.error as exc:
                    self.counters.add("refused_connections_bad_frames")
                    self.warn.warning("%s closed the connection from %s: not a deflate stream (%s); is the client's "
                                      "compression-type deflate?", self.name, peer, exc)
                    break
                except FrameError as exc:
                    self.counters.add("refused_connections_bad_frames")
                    self.warn.warning("%s closed the connection from %s: %s", self.name, peer, exc)
                    break
                for serial, payload in frames:
                    answer = encode_frame(serial, await self._call(session, payload, peer))
                    if deflater is not None:
                        answer = deflater.compress(answer) + deflater.flush(zlib.Z_SYNC_FLUSH)
                    writer.write(answer)
                    await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self.connections.discard(writer)
            writer.close()

    async def _call(self, session: AvroSession, payload: bytes, peer: str) -> bytes:
        try:
            request = session.read(payload)
        except AvroCallError as exc:
            self.counters.add("refused_calls")
            self.warn.warning("%s refused a call from %s: %s", self.name, peer, exc)
            return AvroSession.error_reply(exc.handshake, str(exc))
        if request.message is None:
            return AvroSession.reply(request, STATUS_OK)
        return AvroSession.reply(request, await self._append(request, peer))

    async def _append(self, request: AvroRequest, peer: str) -> int:
        records = self._records(request.events, peer)
        if records is None:
            return STATUS_FAILED
        ticket = AsyncTicket(len(records), asyncio.get_running_loop())
        if not self.offer(records, ticket):
            self.counters.add("failed_busy" if not self.stopping else "failed_stopping")
            self.warn.warning("%s answered FAILED to %s: %s", self.name, peer,
                              "the source is stopping" if self.stopping
                              else "more than max.pending.events events wait for the log")
            return STATUS_FAILED
        try:
            await asyncio.wait_for(asyncio.shield(ticket.future), self._ack_timeout)
        except TimeoutError:
            ticket.failed = ticket.failed or f"the log did not acknowledge within {self._ack_timeout:g} s"
        if ticket.failed:
            self.counters.add("failed_unacknowledged", len(records))
            self.warn.warning("%s answered FAILED to %s: %s", self.name, peer, ticket.failed)
            return STATUS_FAILED
        self.counters.add("received", len(records))
        return STATUS_OK

    def _records(self, events: list[dict[str, Any]], peer: str) -> list[SourceRecord] | None:
        now = int(time.time() * 1000)
        topic = self.topic
        limit = self.max_event_bytes
        bytes_schema = Schema.BYTES_SCHEMA
        string_schema = Schema.OPTIONAL_STRING_SCHEMA
        out = []
        for i, event in enumerate(events):
            body = event["body"]
            if len(body) > limit:
                self.counters.add("refused_oversized")
                self.warn.warning("%s answered FAILED to %s: event %d of the call has a %d-byte body, more than "
                                  "max.event.bytes=%d", self.name, peer, i, len(body), limit)
                return None
            fields = event["headers"]
            headers = ConnectHeaders()
            for k, v in fields.items():
                headers.add(k, v, string_schema)
            stamp = fields.get("timestamp")
            timestamp = int(stamp) if stamp and stamp.isascii() and stamp.isdigit() and len(stamp) < 19 else now
            out.append(SourceRecord(None, None, topic, None, None, None, bytes_schema, body, timestamp, headers))
        return out

    def start(self, props: Mapping[str, str]) -> None:
        super().start(props)
        log.info("%s speaks Flume's Avro RPC (compression %s, ack timeout %g s)", self.name,
                 "deflate" if self._deflate else "none", self._ack_timeout)


class FlumeAvroSourceConnector(IngestConnector):
    """Flume's Avro RPC (Flume agents' avro sinks, RpcClient, Log4j 2's FlumeAppender) into a topic."""

    CONFIG = CONFIG_DEF
    TASK = FlumeAvroSourceTask
