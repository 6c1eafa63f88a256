"""A topic log in memory: ``connect.log.api``'s producer, consumer, admin and reader over Python lists.

It behaves as the embedded log does where the runtime depends on it: a
producer's records are acknowledged (appended) at ``flush``, a consumer joins
its group at its first poll and gets every partition of its topics, committed
group offsets are kept per group. Nothing is written to disk and nothing is
shared with another process.

A poll that finds nothing waits for its timeout on the backend's clock: with a
``FakeClock`` (the default) that moves the clock on at once and returns, so a
unit test never sleeps; with ``SYSTEM_CLOCK`` it waits until a record is
appended or the timeout passes, as a real consumer does.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.topic_partition import TopicPartition
from connect.log.api import (
    Admin,
    BatchCountdown,
    BatchDeliveryCallback,
    Consumer,
    DeliveryCallback,
    FetchedBatch,
    LogBackend,
    LogError,
    LogReader,
    NewTopic,
    Producer,
    RebalanceListener,
    RecordLimit,
    RecordMetadata,
    RecordRange,
    TopicDescription,
    UnknownTopicError,
)
from connect.runtime.clock import Clock
from connect.testing.clock import FakeClock

__all__ = ["MemoryAdmin", "MemoryBackend", "MemoryConsumer", "MemoryLog", "MemoryProducer", "MemoryReader",
           "Row"]

# one record as the memory log keeps it: (key, value, timestamp in ms)
Row = tuple[bytes | None, bytes | None, int]


class MemoryLog:
    """Topics as lists of rows per partition, topic configs, and committed offsets per consumer group.

    Every method takes ``lock``; a test may read ``topics`` and ``groups`` directly while holding it.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        # notified on every append, so a consumer polling on the system clock wakes for new records
        self.appended = threading.Condition(self.lock)
        self.appends = 0
        self.topics: dict[str, list[list[Row]]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.groups: dict[str, dict[TopicPartition, int]] = {}

    def create(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> None:
        """Create topic ``name`` unless it exists (an existing topic keeps its partitions and configs)."""
        with self.lock:
            if name not in self.topics:
                self.topics[name] = [[] for _ in range(partitions)]
                self.configs[name] = dict(configs or {})

    def append(self, topic: str, partition: int, rows: Sequence[Row]) -> int:
        """Append ``rows`` to a partition (creating a one-partition topic if needed); the first row's offset."""
        with self.lock:
            self.create(topic)
            log = self.topics[topic][partition]
            base = len(log)
            log.extend(rows)
            self.appends += 1
            self.appended.notify_all()
            return base

    def rows(self, topic: str, partition: int = 0) -> list[Row]:
        """A copy of a partition's rows (empty for a topic that does not exist)."""
        with self.lock:
            partitions = self.topics.get(topic)
            return list(partitions[partition]) if partitions is not None else []

    def values(self, topic: str, partition: int = 0) -> list[str | None]:
        """A partition's values decoded as UTF-8 text."""
        return [None if v is None else v.decode() for _k, v, _t in self.rows(topic, partition)]


class MemoryProducer(Producer):
    """Records wait unacknowledged until ``flush`` appends them; failures and slow acks can be scripted.

    ``fail_flush``: the next flushes raise it. ``unacked_on_flush``: flushes time out with that many records
    unacknowledged. ``max_record_bytes``: a record with a longer key and value is refused, as the embedded
    log refuses it (``send_batch`` raises, ``send`` fails it at flush).
    """

    def __init__(self, log: MemoryLog) -> None:
        self.log = log
        self.buffer: list[tuple[str, int, bytes | None, bytes | None, int, DeliveryCallback | None]] = []
        self.lock = threading.Lock()
        self.flushes = 0
        self.fail_flush: LogError | None = None
        self.unacked_on_flush = 0
        self.batch_callbacks = 0  # send_batch calls that asked for a batch callback
        self.closed = False
        self.max_record_bytes: int | None = None
        self.limit_asked: list[str] = []

    def record_limit(self, topic: str) -> RecordLimit | None:
        self.limit_asked.append(topic)
        return RecordLimit(self.max_record_bytes, 0, "max.request.size") if self.max_record_bytes else None

    def _too_large(self, key: bytes | None, value: bytes | None) -> LogError | None:
        size = len(key or b"") + len(value or b"")
        if self.max_record_bytes is not None and size > self.max_record_bytes:
            return LogError(f"A record of {size} bytes exceeds the {self.max_record_bytes}-byte limit")
        return None

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int | None = None,
             timestamp: int | None = None, headers: Any = None, on_delivery: DeliveryCallback | None = None) -> None:
        if self.closed:
            raise LogError("producer is closed")
        with self.lock:
            self.buffer.append((topic, partition or 0, key, value, timestamp or 0, on_delivery))

    def send_batch(self, topic: str, partition: int | None, values: Sequence[bytes | None],
                   keys: Sequence[bytes | None] | None = None, timestamps: Sequence[int] | None = None,
                   headers: Any = None, on_delivery: BatchDeliveryCallback | None = None) -> None:
        for i, value in enumerate(values):
            err = self._too_large(keys[i] if keys else None, value)
            if err is not None:
                raise err
        callback: DeliveryCallback | None = None
        if on_delivery is not None:
            countdown = BatchCountdown(len(values), on_delivery)
            self.batch_callbacks += 1

            def callback(err: LogError | None, _metadata: RecordMetadata | None) -> None:
                countdown.record_delivered(err)

        for i, value in enumerate(values):
            self.send(topic, value, keys[i] if keys else None, partition,
                      timestamps[i] if timestamps else None, on_delivery=callback)

    def poll(self, timeout: float = 0.0) -> int:
        return 0

    def flush(self, timeout: float | None = None) -> int:
        self.flushes += 1
        if self.fail_flush is not None:
            raise self.fail_flush
        if self.unacked_on_flush:
            return self.unacked_on_flush
        with self.lock:
            sent, self.buffer = self.buffer, []
        for topic, partition, key, value, ts, callback in sent:
            err = self._too_large(key, value)
            if err is not None:
                if callback is None:
                    raise err
                callback(err, None)
                continue
            offset = self.log.append(topic, partition, [(key, value, ts)])
            if callback is not None:
                callback(None, RecordMetadata(topic, partition, offset, ts))
        return 0

    def unacked(self) -> list[str | None]:
        """The values sent and not yet flushed, decoded as UTF-8 text."""
        with self.lock:
            return [None if v is None else v.decode() for _t, _p, _k, v, _ts, _cb in self.buffer]

    def close(self, timeout: float | None = None) -> None:
        self.closed = True


class MemoryConsumer(Consumer):
    """A group member that gets every partition of its topics at its first poll (no rebalances)."""

    def __init__(self, log: MemoryLog, group: str | None, clock: Clock) -> None:
        self.log = log
        self.group = group
        self.clock = clock
        self.topics: list[str] = []
        self.pattern: re.Pattern[str] | None = None
        self.listener: RebalanceListener | None = None
        self._assignment: set[TopicPartition] = set()
        self.positions: dict[TopicPartition, int] = {}
        self.paused: set[TopicPartition] = set()
        self.poll_timeouts: list[float] = []
        self.commits: list[dict[TopicPartition, int]] = []
        self.closed = False

    def subscribe(self, topics: Sequence[str] | None = None, pattern: str | re.Pattern[str] | None = None,
                  listener: RebalanceListener | None = None) -> None:
        self.topics = list(topics or [])
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.listener = listener

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self._assignment = set(partitions)
        for tp in partitions:
            self.positions.setdefault(tp, self._committed(tp) or 0)

    def assignment(self) -> set[TopicPartition]:
        return set(self._assignment)

    def _committed(self, tp: TopicPartition) -> int | None:
        return self.log.groups.get(self.group or "", {}).get(tp)

    def _join(self) -> None:
        with self.log.lock:
            names = [t for t in self.log.topics if t in self.topics or (self.pattern and self.pattern.fullmatch(t))]
            parts = [TopicPartition(t, p) for t in names for p in range(len(self.log.topics[t]))]
        new = [tp for tp in parts if tp not in self._assignment]
        if not new:
            return
        self._assignment.update(new)
        for tp in new:
            self.positions[tp] = self._committed(tp) or 0
        if self.listener is not None:
            self.listener.on_partitions_assigned(new)

    def poll(self, timeout: float, max_records: int = 500) -> list[FetchedBatch]:
        self.poll_timeouts.append(timeout)
        if self.listener is not None or self.topics or self.pattern:
            self._join()
        if isinstance(self.clock, FakeClock):
            out, _ = self._fetch(max_records)
            if not out:
                self.clock.sleep(timeout)  # the poll "waited" its whole timeout, at once
            return out
        deadline = self.clock.monotonic() + timeout
        while True:
            out, appends_seen = self._fetch(max_records)
            remaining = deadline - self.clock.monotonic()
            if out or remaining <= 0:
                return out
            with self.log.appended:
                if self.log.appends == appends_seen:
                    self.log.appended.wait(remaining)

    def _fetch(self, max_records: int) -> tuple[list[FetchedBatch], int]:
        """What the assigned partitions hold past this consumer's positions (moving them on), and the log's
        count of appends when it looked."""
        out: list[FetchedBatch] = []
        budget = max_records
        with self.log.lock:
            for tp in sorted(self._assignment):
                if tp in self.paused or budget <= 0:
                    continue
                rows = self.log.topics.get(tp.topic, [[]] * (tp.partition + 1))[tp.partition]
                start = self.positions.get(tp, 0)
                chunk = rows[start:start + budget]
                if not chunk:
                    continue
                offsets = list(range(start, start + len(chunk)))
                out.append(FetchedBatch(tp.topic, tp.partition, offsets, [r[2] for r in chunk],
                                        [r[0] for r in chunk], [r[1] for r in chunk]))
                self.positions[tp] = start + len(chunk)
                budget -= len(chunk)
            return out, self.log.appends

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self.positions[partition] = offset

    def seek_to_beginning(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            self.positions[tp] = 0

    def position(self, partition: TopicPartition) -> int:
        return self.positions.get(partition, 0)

    def commit(self, offsets: Mapping[TopicPartition, int], timeout: float | None = None) -> None:
        self.commits.append(dict(offsets))
        with self.log.lock:
            self.log.groups.setdefault(self.group or "", {}).update(offsets)

    def committed(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        return {tp: self._committed(tp) for tp in partitions}

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        self.paused.update(partitions)

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        self.paused.difference_update(partitions)

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        with self.log.lock:
            return {tp: len(self.log.topics.get(tp.topic, [[]] * (tp.partition + 1))[tp.partition])
                    for tp in partitions}

    def close(self) -> None:
        self.closed = True


class MemoryAdmin(Admin):
    """Topics and group offsets of a MemoryLog."""

    def __init__(self, log: MemoryLog) -> None:
        self.log = log

    def create_topic(self, topic: NewTopic, exist_ok: bool = False) -> None:
        self.log.create(topic.name, topic.partitions if topic.partitions > 0 else 1, topic.configs)

    def list_topics(self, include_internal: bool = False) -> list[str]:
        with self.log.lock:
            return sorted(self.log.topics)

    def describe_topic(self, name: str) -> TopicDescription:
        with self.log.lock:
            if name not in self.log.topics:
                raise UnknownTopicError(name)
            parts = self.log.topics[name]
            return TopicDescription(name, len(parts), dict(self.log.configs[name]),
                                    {i: (0, len(p)) for i, p in enumerate(parts)})

    def delete_topic(self, name: str) -> None:
        with self.log.lock:
            self.log.topics.pop(name, None)

    def list_group_offsets(self, group: str) -> dict[TopicPartition, int]:
        with self.log.lock:
            return dict(self.log.groups.get(group, {}))

    def alter_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int | None]) -> None:
        with self.log.lock:
            current = self.log.groups.setdefault(group, {})
            for tp, off in offsets.items():
                if off is None:
                    current.pop(tp, None)
                else:
                    current[tp] = off

    def delete_group(self, group: str) -> None:
        with self.log.lock:
            self.log.groups.pop(group, None)

    def cluster_id(self) -> str:
        return "memory"

    def close(self) -> None:
        pass


class MemoryReader(LogReader):
    """Reads ranges of a MemoryLog's partitions (the runtime uses one for sink tasks' lag)."""

    def __init__(self, log: MemoryLog) -> None:
        self.log = log

    def partition_offsets(self, topics: Sequence[str] = (), pattern: str | None = None
                          ) -> dict[TopicPartition, tuple[int, int]]:
        with self.log.lock:
            names = [t for t in self.log.topics if t in topics or (pattern and re.fullmatch(pattern, t))]
            return {TopicPartition(t, p): (0, len(rows)) for t in names for p, rows in enumerate(self.log.topics[t])}

    def stable_offsets(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        ends = self.partition_offsets(sorted({tp.topic for tp in positions}))
        return {tp: ends[tp][1] for tp in positions if tp in ends}

    def read(self, topic: str, partition: int, start: int, end: int, max_bytes: int = 4 << 20) -> RecordRange:
        with self.log.lock:
            partitions = self.log.topics.get(topic)
            if partitions is None or partition >= len(partitions):
                raise UnknownTopicError(f"{topic}-{partition}")
            rows = partitions[partition][start:end]
        if not rows:
            return RecordRange([], start)
        batch = FetchedBatch(topic, partition, list(range(start, start + len(rows))), [r[2] for r in rows],
                             [r[0] for r in rows], [r[1] for r in rows])
        return RecordRange([batch], start + len(rows))


class MemoryBackend(LogBackend):
    """A ``LogBackend`` whose log is a MemoryLog (``log``); every client it made is kept for inspection.

    ``clock`` is what an empty consumer poll waits on: by default a new FakeClock (the poll returns at
    once and moves the clock on); give ``SYSTEM_CLOCK`` when real task threads consume from it.
    """

    name = "memory"

    def __init__(self, clock: Clock | None = None) -> None:
        self.log = MemoryLog()
        self.clock: Clock = clock if clock is not None else FakeClock()
        self.producers: list[MemoryProducer] = []
        self.consumers: list[MemoryConsumer] = []

    def producer(self, config: Mapping[str, Any] | None = None) -> MemoryProducer:
        producer = MemoryProducer(self.log)
        self.producers.append(producer)
        return producer

    def consumer(self, group_id: str | None = None, config: Mapping[str, Any] | None = None) -> MemoryConsumer:
        consumer = MemoryConsumer(self.log, group_id, self.clock)
        self.consumers.append(consumer)
        return consumer

    def admin(self, config: Mapping[str, Any] | None = None) -> MemoryAdmin:
        return MemoryAdmin(self.log)

    def reader(self, isolation_level: str = "read_uncommitted") -> MemoryReader:
        return MemoryReader(self.log)
