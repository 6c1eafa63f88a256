"""FlumeAvroSource: Flume's Avro RPC server, for Flume agents' Avro sinks, Flume's RpcClient and Log4j 2's
FlumeAppender.

Each event becomes one record: its headers become the record's headers (strings), its body the value
(bytes; a worker or connector with ``value.converter=ByteArrayConverter`` keeps it byte for byte), and a
``timestamp`` header of epoch milliseconds, when there is one, the record's timestamp.

A call is answered ``OK`` only once the log acknowledged every event of it (the runtime's ``commit_record``
for each record: its records carry Flume's headers, which a SourceRecordBatch cannot hold); ``FAILED`` when more than ``max.pending.events`` already wait for the log, when the log
does not acknowledge within ``ack.timeout.ms`` or fails, or when the source stops. Flume's clients resend
a failed batch, so delivery is at least once: a batch the log took but could not confirm in time comes
again. A call with an event whose converted record is larger than the log takes one record is answered with
an Avro error naming that event, its size and the limit; the call's other events are in the log (a resent
batch duplicates them). A request that is not Flume's protocol is answered with an Avro error naming what is wrong; bytes
that are not Netty frames close the connection, logged with the reason.

What hostile clients can make the source hold is bounded: a frame by ``max.frame.bytes``, the frames of all
connections together by ``max.buffered.bytes`` (the connection whose frame would pass it is closed, logged with
its address), the time a frame may take to arrive by ``frame.timeout.ms``, and a deflate stream is inflated a
step at a time as the frame decoder takes it, so a small compressed input cannot become a huge allocation.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import Iterator, Mapping

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
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
    BufferBudget,
    BufferBudgetExceeded,
    FlumeEvent,
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
MAX_BUFFERED_BYTES_CONFIG = "max.buffered.bytes"
FRAME_TIMEOUT_CONFIG = "frame.timeout.ms"
ACK_TIMEOUT_CONFIG = "ack.timeout.ms"

_READ = 1 << 16
# What each connection may hold of its frames outside max.buffered.bytes: a normal call (Flume's batch of 100
# events) is then never refused because large frames of other connections fill the budget. It costs at most
# max.connections times this, the same order as the connections' read buffers.
_UNBUDGETED_BYTES = 1 << 16

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
    .define(MAX_BUFFERED_BYTES_CONFIG, ConfigType.LONG, 256 << 20, Range.between(1 << 20, 1 << 40),
            importance=Importance.LOW,
            documentation="The most bytes of requests, unfinished or not yet answered, that all connections of the "
                          "source hold together (each connection's first 64 KiB aside); a frame that would pass it "
                          "closes its connection, logged with the client's address, and the other connections go "
                          "on. At least max.frame.bytes.")
    .define(FRAME_TIMEOUT_CONFIG, ConfigType.INT, 30_000, Range.between(100, 3_600_000), importance=Importance.LOW,
            documentation="How long a request may take to arrive, from its first byte to its last; a connection "
                          "whose request is not complete by then is closed, logged (Flume's clients give up on a "
                          "call after their request-timeout, 20 s by default).")
    .define(ACK_TIMEOUT_CONFIG, ConfigType.INT, 15_000, Range.at_least(1), importance=Importance.LOW,
            documentation="How long a call waits for the log to acknowledge its events before it is answered "
                          "FAILED (Flume's clients wait 20 s by default: keep it below their request-timeout).")
)


class _Inflater:
    """The zlib stream of a deflate connection, inflated a bounded step at a time: each step is handed to the
    frame decoder before the next is made, so a deflate bomb is refused once the decoder's limits are reached,
    having produced at most one step more."""

    STEP = 1 << 18

    def __init__(self) -> None:
        self._z = zlib.decompressobj()

    def steps(self, data: bytes) -> Iterator[bytes]:
        z = self._z
        if z.eof:
            raise zlib.error("data after the end of the deflate stream")
        pending = data
        while True:
            out = z.decompress(pending, self.STEP)
            pending = z.unconsumed_tail
            if out:
                yield out
            if z.eof and z.unused_data:
                raise zlib.error("data after the end of the deflate stream")
            # a full step may leave output inside zlib with no input left: ask again until a step is short
            if not pending and len(out) < self.STEP:
                return


def _answer_deflater(level: int) -> zlib._Compress:
    """The deflate stream of a connection's answers. Answers are a few dozen bytes, so a 512-byte window and the
    smallest memory level lose nothing, and keep an idle connection's compressor at ~9 KiB instead of ~260 KiB;
    any zlib reader (Netty's ZlibDecoder, a 32 KiB window) reads a stream with a smaller window."""
    return zlib.compressobj(level, zlib.DEFLATED, 9, 1)


class FlumeAvroSourceTask(AcknowledgesRecords, StreamSourceTask):
    KIND = "FlumeAvroSource"
    SCHEMES = ("tcp",)
    CONFIG = CONFIG_DEF

    def __init__(self) -> None:
        super().__init__()
        self._deflate = False
        self._level = 6
        self._max_frame = 64 << 20
        self._frame_timeout = 30.0
        self._ack_timeout = 15.0
        self._known = KnownProtocols()
        self.buffer_budget = BufferBudget(256 << 20)

    def configure(self, config: AbstractConfig) -> None:
        self._deflate = config.get_string(COMPRESSION_TYPE_CONFIG) == "deflate"
        self._level = int(config.get_int(COMPRESSION_LEVEL_CONFIG) or 6)
        self._max_frame = int(config.get_int(MAX_FRAME_BYTES_CONFIG) or 0)
        self._ack_timeout = int(config.get_int(ACK_TIMEOUT_CONFIG) or 0) / 1000.0
        self._frame_timeout = int(config.get_int(FRAME_TIMEOUT_CONFIG) or 0) / 1000.0
        problem = _budget_problem(config)
        if problem:
            raise ConfigException(MAX_BUFFERED_BYTES_CONFIG, config.get(MAX_BUFFERED_BYTES_CONFIG), problem)
        self.buffer_budget = BufferBudget(int(config.get_long(MAX_BUFFERED_BYTES_CONFIG) or 0))

    def framer(self) -> Framer:  # the connection handler below frames by itself
        raise NotImplementedError

    def records(self, frame: bytes, peer: str) -> list[SourceRecord]:
        raise NotImplementedError

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = self.admit(writer)
        if peer is None:
            return
        decoder = NettyFrameDecoder(self._max_frame, self.buffer_budget, _UNBUDGETED_BYTES)
        session = AvroSession(self._known)
        inflater = _Inflater() if self._deflate else None
        deflater = _answer_deflater(self._level) if self._deflate else None
        frame_started: float | None = None  # when the frame now arriving began, or the source last answered
        try:
            while not self.stopping:
                wait = self.idle_timeout
                if frame_started is not None:
                    wait = min(wait, max(0.0, frame_started + self._frame_timeout - time.monotonic()))
                try:
                    data = await asyncio.wait_for(reader.read(_READ), wait)
                except TimeoutError:
                    if frame_started is None:
                        self.counters.add("idle_connections_closed")
                    else:
                        self.counters.add("timed_out_frames")
                        self.warn.warning("%s closed the connection from %s: its request did not complete within "
                                          "frame.timeout.ms=%d (%d bytes of it received)", self.name, peer,
                                          round(self._frame_timeout * 1000), decoder.pending)
                    break
                if not data:
                    if decoder.in_frame:
                        self.counters.add("truncated_frames")
                        self.warn.warning("%s: %s closed the connection inside a frame (%d bytes of it received)",
                                          self.name, peer, decoder.pending)
                    break
                try:
                    answered = False
                    for chunk in inflater.steps(data) if inflater is not None else (data,):
                        frames = decoder.feed(chunk)
                        frames.reverse()
                        while frames:
                            serial, payload = frames.pop()
                            size = len(payload)
                            answer = encode_frame(serial, await self._call(session, payload, peer))
                            del payload  # its events are records now: the frame's bytes are not kept while answering
                            decoder.release(size)
                            if deflater is not None:
                                answer = deflater.compress(answer) + deflater.flush(zlib.Z_SYNC_FLUSH)
                            writer.write(answer)
                            await writer.drain()
                            answered = True
                        if inflater is not None:
                            await asyncio.sleep(0)  # one connection's inflating does not hold up the others
                except zlib.error as exc:
                    self.counters.add("refused_connections_bad_frames")
                    self.warn.warning("%s closed the connection from %s: not a deflate stream (%s); is the client's "
                                      "compression-type deflate?", self.name, peer, exc)
                    break
                except BufferBudgetExceeded as exc:
                    self.counters.add("refused_connections_over_budget")
                    self.warn.warning("%s closed the connection from %s: %s", self.name, peer, exc)
                    break
                except FrameError as exc:
                    self.counters.add("refused_connections_bad_frames")
                    self.warn.warning("%s closed the connection from %s: %s", self.name, peer, exc)
                    break
                # the clock of a frame runs while the client sends it, not while the source answers
                if not decoder.in_frame:
                    frame_started = None
                elif frame_started is None or answered:
                    frame_started = time.monotonic()
        except (ConnectionError, OSError):
            pass
        finally:
            decoder.close()
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
        status = await self._append(request, peer)
        if isinstance(status, str):
            return AvroSession.error_reply(request.handshake, status)
        return AvroSession.reply(request, status)

    async def _append(self, request: AvroRequest, peer: str) -> int | str:
        """The call's Status, or the error to answer naming the events the log refused (for their converted
        size: the call's other events are in the log, and Status has no way to say which)."""
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
        self.counters.add("received", len(records) - len(ticket.refused))
        if ticket.refused:
            error = "; ".join(f"event {i} of the call (counted from 0): {reason}" for i, reason in sorted(ticket.refused))
            self.warn.warning("%s answered an error to %s: %s", self.name, peer, error)
            return error
        return STATUS_OK

    def _records(self, events: list[FlumeEvent], peer: str) -> list[SourceRecord] | None:
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


def _budget_problem(config: AbstractConfig) -> str | None:
    frame = int(config.get_int(MAX_FRAME_BYTES_CONFIG) or 0)
    if int(config.get_long(MAX_BUFFERED_BYTES_CONFIG) or 0) < frame:
        return (f"it must be at least {MAX_FRAME_BYTES_CONFIG}={frame}: a request of that size could never be "
                "buffered")
    return None


class FlumeAvroSourceConnector(IngestConnector):
    """Flume's Avro RPC (Flume agents' avro sinks, RpcClient, Log4j 2's FlumeAppender) into a topic."""

    CONFIG = CONFIG_DEF
    TASK = FlumeAvroSourceTask

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        values = self.config().validate(connector_configs)
        if any(cv.errors for cv in values.values()):
            return values
        problem = _budget_problem(AbstractConfig(CONFIG_DEF, connector_configs))
        if problem:
            values[MAX_BUFFERED_BYTES_CONFIG].add_error(problem)
        return values

    def start(self, props: Mapping[str, str]) -> None:
        super().start(props)
        problem = _budget_problem(AbstractConfig(CONFIG_DEF, props))
        if problem:
            raise ConfigException(MAX_BUFFERED_BYTES_CONFIG, props.get(MAX_BUFFERED_BYTES_CONFIG), problem)
