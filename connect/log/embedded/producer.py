"""The embedded log's producer: per-partition batching in front of PartitionLog.append.

``send`` collects records per partition and appends them as one batch when
the batch reaches ``batch.size`` bytes, when ``linger.ms`` has passed (a
small background thread watches the deadline, as Kafka's sender thread
does) or on ``flush``. ``send_batch`` is the hot path: it encodes the given
columns and appends them on the caller's thread at once. Either way a
record counts as acknowledged once its batch has been written to the
segment file. Delivery callbacks only ever run inside ``poll``/``flush``,
on the caller's thread.

Defaults differ from the Java client in one place: ``linger.ms`` defaults
to 5 (the Java client's default since Kafka 4.0), because an append here
is a synchronous write and batching saves real work.
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.topic_partition import TopicPartition
from connect.log.api import (
    BatchCountdown,
    BatchDeliveryCallback,
    ClientStats,
    DeliveryCallback,
    LogError,
    Producer,
    RecordLimit,
    RecordMetadata,
    UnknownTopicError,
)
from connect.log.embedded.codec import HEADER_SIZE, TXN_FIELDS_SIZE, EncodedBatch, encode
from connect.log.embedded.config import client_bool, client_int
from connect.log.embedded.partition import now_ms
from connect.log.embedded.partitioner import StickyPartitioner
from connect.log.embedded.topics import TopicStore, validate_topic_name
from connect.log.key_partition import partition_for_key

log = logging.getLogger(__name__)

Headers = tuple[tuple[str, bytes | None], ...]
_ids = itertools.count(1)
# A batch of one record beyond the record's key, value and headers: the batch header, then the record's value and
# key lengths, timestamp, offset delta and header count (codec.py), and a transaction's fields
_ONE_RECORD_BATCH_OVERHEAD = HEADER_SIZE + 4 + 4 + 8 + 4 + 4 + TXN_FIELDS_SIZE


class _Accumulator:
    """Records waiting to become one batch of one partition."""

    __slots__ = ("callbacks", "created", "headers", "keys", "size", "timestamps", "values")

    def __init__(self) -> None:
        self.values: list[bytes | None] = []
        self.keys: list[bytes | None] = []
        self.timestamps: list[int] = []
        self.headers: list[Headers] = []
        self.callbacks: list[tuple[int, DeliveryCallback]] = []
        self.size = 0
        self.created = time.monotonic()


class EmbeddedProducer(Producer):
    def __init__(self, store: TopicStore, config: Mapping[str, Any], worker_config: Mapping[str, Any]) -> None:
        self._store = store
        self._batch_size = client_int(config, "batch.size", 16384)
        self._linger = client_int(config, "linger.ms", 5) / 1000.0
        self._max_request = client_int(config, "max.request.size", 1048576)
        self._num_partitions = client_int(worker_config, "num.partitions", 1)
        self._auto_create = client_bool(
            config, "auto.create.topics.enable", client_bool(worker_config, "auto.create.topics.enable", True)
        )
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._acc: dict[TopicPartition, _Accumulator] = {}
        self._sticky = StickyPartitioner()
        self._done: collections.deque[tuple[DeliveryCallback, LogError | None, RecordMetadata | None]] = (
            collections.deque()
        )
        self._done_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._name = f"embedded-log-producer-{next(_ids)}"
        self._client_id = str(config.get("client.id") or self._name)
        self._bytes_written = 0
        self._count_lock = threading.Lock()  # appends come from the sender's thread and the linger thread
        # records that failed with no delivery callback to tell: how many, and the first failure, for flush to raise
        self._unreported = 0
        self._first_unreported: LogError | None = None

    # -- topics ---------------------------------------------------------------

    def partitions_for(self, topic: str) -> int:
        try:
            return self._store.meta(topic).partitions
        except UnknownTopicError:
            if not self._auto_create:
                raise
        validate_topic_name(topic)
        self._store.create(topic, self._num_partitions, {}, exist_ok=True)
        return self._store.meta(topic).partitions

    def record_limit(self, topic: str) -> RecordLimit:
        self.partitions_for(topic)  # a topic not there yet is made as a send would make it
        topic_max = self._store.partition_log(topic, 0).config.max_message_bytes
        if topic_max < self._max_request:
            return RecordLimit(topic_max, _ONE_RECORD_BATCH_OVERHEAD, f"max.message.bytes of topic {topic}")
        return RecordLimit(self._max_request, _ONE_RECORD_BATCH_OVERHEAD, "max.request.size")

    def _before_append(self, tp: TopicPartition) -> None:
        """Hook: called before each batch is appended to ``tp`` (the transactional producer checks here)."""

    def _transaction_tag(self) -> tuple[int, int, int] | None:
        """Hook: (producer id, epoch, kind) that marks this producer's batches as a transaction's; None: not."""
        return None

    def _append(self, tp: TopicPartition, batch: EncodedBatch) -> int:
        """Append one batch; re-resolves once if another process deleted the topic meanwhile."""
        self._before_append(tp)
        for attempt in (0, 1):
            plog = self._store.partition_log(tp.topic, tp.partition)
            try:
                offset = plog.append(batch)
            except UnknownTopicError:
                self._store.forget(tp.topic)
                if attempt:
                    raise
                self.partitions_for(tp.topic)
                continue
            with self._count_lock:
                self._bytes_written += batch.payload_length
            return offset
        raise AssertionError("unreachable")

    # -- send -----------------------------------------------------------------

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
        if self._closed:
            raise LogError("producer is closed")
        with self._lock:
            n = self.partitions_for(topic)
            if partition is None:
                partition = partition_for_key(key, n) if key is not None else self._sticky.partition(topic, n)
            elif not 0 <= partition < n:
                err = UnknownTopicError(f"Topic {topic!r} has no partition {partition}")
                if on_delivery is not None:
                    self._done.append((on_delivery, err, None))
                    return
                raise err
            tp = TopicPartition(topic, partition)
            acc = self._acc.get(tp)
            if acc is None:
                acc = self._acc[tp] = _Accumulator()
                self._wake.notify()
            if on_delivery is not None:
                acc.callbacks.append((len(acc.values), on_delivery))
            acc.values.append(value)
            acc.keys.append(key)
            acc.timestamps.append(now_ms() if timestamp is None else timestamp)
            acc.headers.append(tuple(headers) if headers else ())
            acc.size += 16 + (len(value) if value is not None else 0) + (len(key) if key is not None else 0)
            if acc.size >= self._batch_size or self._linger <= 0:
                self._drain_locked(tp)
            elif self._thread is None:
                self._thread = threading.Thread(target=self._linger_loop, name=self._name, daemon=True)
                self._thread.start()

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
        if self._closed:
            raise LogError("producer is closed")
        if not values:
            if on_delivery is not None:
                self._report(on_delivery, None)
            return
        if partition is None and keys is not None and any(k is not None for k in keys):
            if self.partitions_for(topic) == 1:
                partition = 0  # every key's partition: the batch stays one batch
            else:
                self._send_keyed(topic, values, keys, timestamps, headers, on_delivery)
                return
        with self._lock:
            n = self.partitions_for(topic)
            sticky = partition is None
            if partition is None:
                partition = self._sticky.partition(topic, n)
            if not 0 <= partition < n:
                raise UnknownTopicError(f"Topic {topic!r} has no partition {partition}")
            tp = TopicPartition(topic, partition)
            if tp in self._acc:
                self._drain_locked(tp)  # earlier send()s of this partition go first
            self._append_columns(tp, values, keys, timestamps, headers, now_ms())
            if sticky:
                self._sticky.batch_sent(topic, partition, n)
        if on_delivery is not None:
            self._report(on_delivery, None)  # written to the segment: acknowledged, served by the next poll

    def _send_keyed(self, topic: str, values: Sequence[bytes | None], keys: Sequence[bytes | None],
                    timestamps: Sequence[int] | None, headers: Sequence[Headers] | None,
                    on_delivery: BatchDeliveryCallback | None) -> None:
        """Keyed records of a topic with several partitions go to their key's partition, one by one."""
        each: DeliveryCallback | None = None
        if on_delivery is not None:
            countdown = BatchCountdown(len(values), on_delivery)

            def each(err: LogError | None, _metadata: RecordMetadata | None) -> None:
                countdown.record_delivered(err)
        for i, value in enumerate(values):
            self.send(topic, value, keys[i], None, timestamps[i] if timestamps is not None else None,
                      headers[i] if headers is not None else None, each)

    def _report(self, callback: BatchDeliveryCallback, err: LogError | None) -> None:
        self._done.append((lambda e, _md: callback(e), err, None))
        self._done_event.set()

    def _append_columns(
        self,
        tp: TopicPartition,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        timestamps: Sequence[int] | None,
        headers: Sequence[Headers] | None,
        default_ts: int,
    ) -> list[tuple[int, int]]:
        """Append columns as one batch, or a few if too large; returns (base offset, count) per batch."""
        plog = self._store.partition_log(tp.topic, tp.partition)
        batch = encode(values, keys, timestamps, headers, default_timestamp=default_ts,
                       log_append_time=plog.config.log_append_time, transaction=self._transaction_tag())
        limit = min(self._max_request, plog.config.max_message_bytes)
        if batch.size <= limit:
            return [(self._append(tp, batch), len(values))]
        if len(values) == 1:
            raise LogError(f"A record of {batch.size} bytes for {tp} exceeds the {limit}-byte limit")
        half = len(values) // 2
        out: list[tuple[int, int]] = []
        for a, b in ((0, half), (half, len(values))):
            out += self._append_columns(
                tp,
                values[a:b],
                keys[a:b] if keys is not None else None,
                timestamps[a:b] if timestamps is not None else None,
                headers[a:b] if headers is not None else None,
                default_ts,
            )
        return out

    def _drain_locked(self, tp: TopicPartition) -> None:
        acc = self._acc.pop(tp, None)
        if acc is None:
            return
        try:
            n = self.partitions_for(tp.topic)
            written = self._append_columns(tp, acc.values, acc.keys, acc.timestamps, acc.headers, now_ms())
            self._sticky.batch_sent(tp.topic, tp.partition, n)
        except Exception as e:
            err = e if isinstance(e, LogError) else LogError(f"Failed to append to {tp}: {e!r}")
            log.error("Failed to append %d record(s) to %s: %s", len(acc.values), tp, err)
            for _, cb in acc.callbacks:
                self._done.append((cb, err, None))
            if len(acc.callbacks) < len(acc.values):
                self._unreported += len(acc.values) - len(acc.callbacks)
                if self._first_unreported is None:
                    self._first_unreported = err
        else:
            if acc.callbacks:
                starts = []
                consumed = 0
                for base, count in written:
                    starts.append((consumed, base))
                    consumed += count
                for i, cb in acc.callbacks:
                    # a split batch has several base offsets; find the piece holding record i
                    j = len(starts) - 1
                    while starts[j][0] > i:
                        j -= 1
                    offset = starts[j][1] + i - starts[j][0]
                    self._done.append((cb, None, RecordMetadata(tp.topic, tp.partition, offset, acc.timestamps[i])))
        if acc.callbacks:
            self._done_event.set()

    def _linger_loop(self) -> None:
        with self._lock:
            while not self._closed:
                if not self._acc:
                    self._wake.wait()
                    continue
                now = time.monotonic()
                due = [tp for tp, acc in self._acc.items() if now - acc.created >= self._linger]
                for tp in due:
                    self._drain_locked(tp)
                if self._acc:
                    oldest = min(acc.created for acc in self._acc.values())
                    self._wake.wait(max(0.0, oldest + self._linger - time.monotonic()))

    # -- acks -------------------------------------------------------------------

    def _serve_callbacks(self) -> int:
        served = 0
        self._done_event.clear()
        while True:
            # the task thread (poll) and the offset committer (flush) may both serve: the deque's emptiness
            # can change between a check and the pop, so the pop itself is the check
            try:
                cb, err, md = self._done.popleft()
            except IndexError:
                break
            served += 1
            try:
                cb(err, md)
            except Exception:
                log.exception("A delivery callback raised")
        return served

    def poll(self, timeout: float = 0.0) -> int:
        served = self._serve_callbacks()
        if served == 0 and timeout > 0 and self._acc:
            self._done_event.wait(timeout)
            served = self._serve_callbacks()
        return served

    def flush(self, timeout: float | None = None) -> int:
        with self._lock:
            for tp in list(self._acc):
                self._drain_locked(tp)
            count, first = self._unreported, self._first_unreported
            self._unreported, self._first_unreported = 0, None
        self._serve_callbacks()
        if first is not None:
            raise type(first)(f"{count} record(s) could not be written; first: {first}")
        return 0

    def stats(self) -> ClientStats:
        # bytes of record batches appended to segment files: the embedded log's "outgoing bytes"; no network
        with self._count_lock:
            written = self._bytes_written
        return ClientStats(self._client_id, "producer", written, 0, None)

    def close(self, timeout: float | None = None) -> None:
        if self._closed:
            return
        try:
            self.flush(timeout)
        except LogError as exc:  # logged as it happened; closing goes on
            log.warning("Closing %s with records that could not be written: %s", self._client_id, exc)
        with self._lock:
            self._closed = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout if timeout is not None else 5.0)
