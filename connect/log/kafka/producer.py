"""The Kafka producer of the topic layer, on confluent-kafka."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException

from connect.log.api import (
    BatchCountdown,
    BatchDeliveryCallback,
    ClientStats,
    DeliveryCallback,
    Headers,
    LogError,
    Producer,
    RecordLimit,
    RecordMetadata,
    RetriableLogError,
    UnknownTopicError,
)
from connect.log.kafka.client_errors import ClientEvents, to_log_error
from connect.log.kafka.client_stats import LibrdkafkaStatistics
from connect.log.kafka.health import ClusterHealth

# headers as confluent-kafka's produce() takes them
_WireHeaders = list[tuple[str, str | bytes | None]]

__all__ = ["KafkaProducer"]

log = logging.getLogger("connect.log.kafka")

_ANY_PARTITION = -1  # librdkafka's RD_KAFKA_PARTITION_UA: let the partitioner choose
# librdkafka's own default of message.max.bytes (what max.request.size becomes), when neither is set
_LIBRDKAFKA_MESSAGE_MAX_BYTES = 1000000
# A record batch (v2) of one record beyond its key, value and headers: the batch header (61 bytes) and the
# record's length, attributes, timestamp and offset deltas, key and value lengths and header count as varints
_ONE_RECORD_BATCH_OVERHEAD = 61 + 5 + 1 + 10 + 5 + 5 + 5 + 5


def _where(msg: Any) -> str:
    part = msg.partition()
    return f"{msg.topic()}[{part}]" if part is not None and part >= 0 else str(msg.topic())


class KafkaProducer(Producer):
    """An idempotent, batching producer (``acks=all`` unless configured otherwise).

    Records sent with ``send_batch`` (or ``send`` without a callback) that
    fail are reported by the next ``flush``, which raises the first such
    failure: nothing is dropped silently.
    """

    def __init__(self, config: Mapping[str, str], own: Mapping[str, str], name: str = "producer",
                 health: ClusterHealth | None = None) -> None:
        self._events = ClientEvents(name, health)
        self._max_block = float(own.get("max.block.ms", "60000")) / 1000.0
        self._api_timeout = float(own.get("request.timeout.ms", "30000")) / 1000.0
        self._failures = 0
        self._first_failure: LogError | None = None
        # With delivery.report.only.error librdkafka reports failures only: no callback runs for each
        # acknowledged record, which costs a fifth of the producing time; send() then takes no callbacks.
        self._failures_only = str(config.get("delivery.report.only.error", "false")).strip().lower() == "true"
        conf: dict[str, Any] = dict(config)
        try:
            self._message_max_bytes = int(conf.get("message.max.bytes") or _LIBRDKAFKA_MESSAGE_MAX_BYTES)
        except ValueError:  # librdkafka refuses the value below, naming it
            self._message_max_bytes = _LIBRDKAFKA_MESSAGE_MAX_BYTES
        if "delivery.report.only.error" in conf:
            conf["delivery.report.only.error"] = self._failures_only  # the Python client wants a bool
        conf.update(self._events.settings())
        self._statistics = LibrdkafkaStatistics(str(conf.get("client.id") or "rdkafka"), "producer")
        conf.update(self._statistics.settings(conf))
        # Default callback for records queued without one of their own.
        conf["on_delivery"] = self._on_unwatched_delivery
        try:
            self._p = confluent_kafka.Producer(conf)
        except KafkaException as exc:
            raise to_log_error(exc, f"invalid {name} configuration") from None
        self._closed = False

    # -- delivery reports ------------------------------------------------------

    def _on_unwatched_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self._failures += 1
            if self._first_failure is None:
                self._first_failure = to_log_error(err, f"producing to {_where(msg)}")

    @staticmethod
    def _watch(callback: DeliveryCallback) -> Any:
        def on_delivery(err: KafkaError | None, msg: Any) -> None:
            try:
                if err is None:
                    callback(
                        None, RecordMetadata(msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1])
                    )
                else:
                    callback(to_log_error(err, f"producing to {_where(msg)}"), None)
            except Exception:
                # As the Java producer does: a faulty callback must not stop
                # the delivery reports of other records.
                log.exception("delivery callback raised")

        return on_delivery

    # -- sending ---------------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Headers | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> None:
        if on_delivery is not None and self._failures_only:
            raise LogError("this producer was made with delivery.report.only.error=true: it cannot report "
                           "successful deliveries to a callback")
        cb = self._watch(on_delivery) if on_delivery is not None else None
        part = _ANY_PARTITION if partition is None else partition
        hdrs: _WireHeaders | None = list(headers) if headers else None
        try:
            self._p.produce(topic, value, key, part, cb, None, timestamp or 0, hdrs)
        except BufferError:
            self._produce_when_room(topic, value, key, part, cb, timestamp or 0, hdrs)
        except KafkaException as exc:
            raise to_log_error(exc, f"sending to {topic}") from None

    def send_batch(
        self,
        topic: str,
        partition: int | None,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None = None,
        timestamps: Sequence[int] | None = None,
        headers: Sequence[Headers] | None = None,
        on_delivery: BatchDeliveryCallback | None = None,
    ) -> None:
        if partition is None:
            partition = -1  # librdkafka's "unassigned": its partitioner picks per key
        if on_delivery is not None:
            self._send_batch_watched(topic, partition, values, keys, timestamps, headers, on_delivery)
            return
        produce = self._p.produce
        try:
            # The common shapes get a loop with nothing in it but produce();
            # at hundreds of thousands of records a second every attribute
            # lookup and branch shows.
            if timestamps is None and headers is None:
                if keys is None:
                    for v in values:
                        try:
                            produce(topic, v, None, partition)
                        except BufferError:
                            self._produce_when_room(topic, v, None, partition, None, 0, None)
                else:
                    for v, k in zip(values, keys, strict=True):
                        try:
                            produce(topic, v, k, partition)
                        except BufferError:
                            self._produce_when_room(topic, v, k, partition, None, 0, None)
            elif headers is None and keys is None:
                # What FileStreamSource and most sources send: values with timestamps. The timestamp goes
                # in by position (after callback and its alias on_delivery): a keyword argument costs
                # produce() a slower argument parse, a third more time per record.
                for v, ts in zip(values, timestamps, strict=True):  # type: ignore[arg-type]
                    try:
                        produce(topic, v, None, partition, None, None, ts)
                    except BufferError:
                        self._produce_when_room(topic, v, None, partition, None, ts, None)
            else:
                n = len(values)
                for i in range(n):
                    k = keys[i] if keys is not None else None
                    ts = timestamps[i] if timestamps is not None else 0
                    h = headers[i] if headers is not None else None
                    hl: _WireHeaders | None = list(h) if h else None
                    try:
                        produce(topic, values[i], k, partition, None, None, ts, hl)
                    except BufferError:
                        self._produce_when_room(topic, values[i], k, partition, None, ts, hl)
        except KafkaException as exc:
            raise to_log_error(exc, f"sending to {topic}[{partition}]") from None
        # Serve delivery reports now and then, or they pile up in memory
        # until the next flush.
        self._p.poll(0)

    def _send_batch_watched(self, topic: str, partition: int, values: Sequence[bytes | None],
                            keys: Sequence[bytes | None] | None, timestamps: Sequence[int] | None,
                            headers: Sequence[Headers] | None, on_delivery: BatchDeliveryCallback) -> None:
        """``send_batch`` with a callback for the batch: librdkafka reports each record, a countdown joins them."""
        if self._failures_only:
            raise LogError("this producer was made with delivery.report.only.error=true: it cannot report "
                           "successful deliveries to a callback")
        if not values:
            on_delivery(None)
            return
        countdown = BatchCountdown(len(values), on_delivery)

        def delivered(err: KafkaError | None, msg: Any) -> None:
            countdown.record_delivered(None if err is None else to_log_error(err, f"producing to {_where(msg)}"))

        produce = self._p.produce
        try:
            for i, value in enumerate(values):
                k = keys[i] if keys is not None else None
                ts = timestamps[i] if timestamps is not None else 0
                h = headers[i] if headers is not None else None
                hl: _WireHeaders | None = list(h) if h else None
                try:
                    produce(topic, value, k, partition, delivered, None, ts, hl)
                except BufferError:
                    self._produce_when_room(topic, value, k, partition, delivered, ts, hl)
        except KafkaException as exc:
            raise to_log_error(exc, f"sending to {topic}[{partition}]") from None
        self._p.poll(0)

    def _produce_when_room(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int,
        cb: Any,
        timestamp: int,
        headers: _WireHeaders | None,
    ) -> None:
        # The local queue is full: wait for acks to make room, as the Java
        # producer blocks in send(), and give up after max.block.ms.
        deadline = time.monotonic() + self._max_block
        while True:
            self._events.raise_if_fatal("send")
            self._p.poll(0.05)
            try:
                self._p.produce(
                    topic, value, key, partition, on_delivery=cb, timestamp=timestamp, headers=headers
                )
                return
            except BufferError:
                if time.monotonic() > deadline:
                    raise RetriableLogError(
                        f"producer queue still full after max.block.ms={self._max_block * 1000:.0f}; "
                        f"is the Kafka cluster reachable?"
                    ) from None

    # -- acks ---------------------------------------------------------------------------

    def poll(self, timeout: float = 0.0) -> int:
        if self._closed:
            return 0  # closed: nothing left to serve
        try:
            return int(self._p.poll(timeout))
        except RuntimeError:  # closed by another thread meanwhile
            if self._closed:
                return 0
            raise

    def flush(self, timeout: float | None = None) -> int:
        self._events.raise_if_fatal("flush")
        left = int(self._p.flush(-1 if timeout is None else timeout))
        if self._failures:
            count, first = self._failures, self._first_failure
            self._failures, self._first_failure = 0, None
            assert first is not None
            raise type(first)(f"{count} record(s) could not be delivered; first: {first}")
        return left

    def stats(self) -> ClientStats | None:
        return self._statistics.snapshot()

    def record_limit(self, topic: str) -> RecordLimit:
        # the producer's own check (librdkafka refuses a larger message in produce()); the broker's
        # max.message.bytes of the topic is the admin client's to tell
        return RecordLimit(self._message_max_bytes, _ONE_RECORD_BATCH_OVERHEAD, "max.request.size")

    def partitions_for(self, topic: str) -> int:
        try:
            md = self._p.list_topics(topic, timeout=self._api_timeout)
        except KafkaException as exc:
            raise to_log_error(exc, f"metadata for {topic}") from None
        tm = md.topics.get(topic)
        if tm is None or tm.error is not None and tm.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise UnknownTopicError(f"topic {topic} does not exist")
        if tm.error is not None:
            raise to_log_error(tm.error, f"metadata for {topic}")
        return len(tm.partitions)

    def close(self, timeout: float | None = None) -> None:
        if self._closed:
            return
        self._closed = True
        left = int(self._p.flush(-1 if timeout is None else timeout))
        if left:
            log.warning("closing producer with %d record(s) not acknowledged; they are dropped", left)
            # Fail what is left (their callbacks see the purge error) so the
            # close itself cannot block on an unreachable cluster.
            self._p.purge(in_queue=True, in_flight=True)
            self._p.poll(0)
        self._p.close()
