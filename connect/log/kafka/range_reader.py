"""The Kafka LogReader: partition offsets from the admin client, bounded reads with a group-less consumer."""

from __future__ import annotations

import bisect
import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from connect.api.topic_partition import TopicPartition
from connect.log.api import (
    FetchedBatch,
    LogReader,
    RecordRange,
    RetriableLogError,
    UnknownTopicError,
)
from connect.log.kafka.admin import KafkaAdmin
from connect.log.kafka.consumer import KafkaConsumer

__all__ = ["KafkaLogReader"]

log = logging.getLogger("connect.log.kafka")

_MAX_RECORDS_PER_POLL = 10000


class KafkaClients(Protocol):
    """What the reader uses of a KafkaBackend (which makes readers itself, so it is named by its use here)."""

    def admin(self, config: Mapping[str, Any] | None = None) -> KafkaAdmin: ...

    def consumer(self, group_id: str | None = None, config: Mapping[str, Any] | None = None) -> KafkaConsumer: ...

    def close(self) -> None: ...


class KafkaLogReader(LogReader):
    """Reads with a consumer of no group (nothing joined, nothing committed); ``read_timeout`` bounds how long
    a read waits for records the log end says are there."""

    def __init__(self, backend: KafkaClients, owns_backend: bool = False, read_timeout: float = 30.0,
                 read_committed: bool = False) -> None:
        self._backend = backend
        self._owns_backend = owns_backend
        self.read_committed = read_committed
        self._admin = backend.admin()
        self._consumer = backend.consumer(None, {
            "auto.offset.reset": "earliest", "enable.auto.commit": "false",
            "isolation.level": "read_committed" if read_committed else "read_uncommitted"})
        self._timeout = read_timeout
        # where the consumer stands after the last read: a range read in pieces needs no seek between them
        self._next: tuple[TopicPartition, int] | None = None

    def partition_offsets(self, topics: Sequence[str] = (), pattern: str | None = None
                          ) -> dict[TopicPartition, tuple[int, int]]:
        names = list(topics)
        if pattern:
            rx = re.compile(pattern)
            names += [t for t in self._admin.list_topics() if rx.fullmatch(t)]
        return self._admin.partition_offsets(names)

    def stable_offsets(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        topics = sorted({tp.topic for tp in positions})
        ends = self._admin.partition_offsets(topics, read_committed=self.read_committed)
        return {tp: bounds[1] for tp, bounds in ends.items() if tp in positions}

    def _seek(self, tp: TopicPartition, start: int) -> int:
        bounds = self._admin.partition_offsets([tp.topic]).get(tp)
        if bounds is None:
            raise UnknownTopicError(f"Unknown topic partition {tp}")
        first = bounds[0]
        if start < first:
            log.warning("%s: offsets %d..%d were deleted by retention; reading from %d", tp, start, first - 1, first)
            start = first
        if tp not in self._consumer.assignment():
            self._consumer.assign([tp])
        self._consumer.seek(tp, start)
        return start

    def read(self, topic: str, partition: int, start: int, end: int, max_bytes: int = 4 << 20) -> RecordRange:
        tp = TopicPartition(topic, partition)
        if self._next != (tp, start):
            start = self._seek(tp, start)
        position = start
        batches: list[FetchedBatch] = []
        size = 0
        deadline = time.monotonic() + self._timeout
        while position < end and size < max_bytes:
            got = [b for b in self._consumer.poll(0.1 if batches else 0.5, _MAX_RECORDS_PER_POLL)
                   if b.topic == topic and b.partition == partition]
            for b in got:
                # Records already passed come again when a fetch begun at the assignment outran the seek
                # (librdkafka applies both asynchronously): only what lies ahead of ``position`` counts.
                lo, hi = bisect.bisect_left(b.offsets, position), bisect.bisect_left(b.offsets, end)
                position = max(position, b.next_offset)
                if lo < hi:
                    kept = b if (lo, hi) == (0, len(b)) else FetchedBatch(
                        topic, partition, b.offsets[lo:hi], b.timestamps[lo:hi], b.keys[lo:hi], b.values[lo:hi],
                        b.headers[lo:hi] if b.headers is not None else None, b.timestamp_type)
                    batches.append(kept)
                    size += sum(len(v) for v in kept.values if v) + sum(len(k) for k in kept.keys if k)
            if got:
                continue
            position = max(position, self._consumer.position(tp))  # transaction markers move it too
            if batches or position >= end:
                break
            log_end = self._consumer.end_offsets([tp])[tp]
            if position >= log_end:
                break  # the log ends before the range does (for now)
            if time.monotonic() > deadline:
                raise RetriableLogError(f"no records of {tp} at offset {position} within {self._timeout:g}s "
                                        f"although the log ends at {log_end}")
        self._next = (tp, position)
        return RecordRange(batches, min(position, end))

    def close(self) -> None:
        self._next = None
        try:
            self._consumer.close()
            self._admin.close()
        finally:
            if self._owns_backend:
                self._backend.close()
