"""The embedded log's LogReader: partition offsets and bounded reads straight from the partition files.

It opens the files the way another process sharing the log does; opened on
its own (``EmbeddedLogReader.open``) it starts no cleaner thread and opens a
partition only when asked about it, so it is cheap enough for a Spark task
that reads one range.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import re
from collections.abc import Sequence

from connect.api.topic_partition import TopicPartition
from connect.log.api import FetchedBatch, LogReader, RecordRange, UnknownTopicError
from connect.log.embedded.codec import TXN_COMMIT, DecodedBatch
from connect.log.embedded.partition import OffsetOutOfRange
from connect.log.embedded.reader import PartitionReader
from connect.log.embedded.topics import TopicStore, is_internal, topic_partition_counts

__all__ = ["EmbeddedLogReader"]

log = logging.getLogger(__name__)


def _nothing() -> None:
    pass


class EmbeddedLogReader(LogReader):
    def __init__(self, store: TopicStore, owns_store: bool = False) -> None:
        self._store = store
        self._owns_store = owns_store
        # one cursor per partition: a range read in pieces goes on where the last piece stopped
        self._cursors: dict[TopicPartition, PartitionReader] = {}

    @classmethod
    def open(cls, log_dir: str) -> EmbeddedLogReader:
        """A reader of the log under ``log_dir`` with a catalogue of its own (no worker needed)."""
        return cls(TopicStore(os.path.abspath(log_dir), {}, _nothing, _nothing, read_only=True), owns_store=True)

    def partition_offsets(self, topics: Sequence[str] = (), pattern: str | None = None
                          ) -> dict[TopicPartition, tuple[int, int]]:
        try:
            counts = topic_partition_counts(self._store.root)
        except FileNotFoundError:
            return {}
        names = [t for t in topics if t in counts]
        if pattern:
            rx = re.compile(pattern)
            names += [t for t in counts if rx.fullmatch(t) and not is_internal(t) and t not in names]
        out: dict[TopicPartition, tuple[int, int]] = {}
        for topic in names:
            for p in range(counts[topic]):
                with contextlib.suppress(UnknownTopicError):  # deleted meanwhile
                    plog = self._store.partition_log(topic, p)
                    out[TopicPartition(topic, p)] = (plog.start_offset(), plog.end_offset())
        return out

    def read(self, topic: str, partition: int, start: int, end: int, max_bytes: int = 4 << 20) -> RecordRange:
        tp = TopicPartition(topic, partition)
        plog = self._store.partition_log(topic, partition)
        cursor = self._cursors.get(tp)
        if cursor is None or cursor.log is not plog:
            cursor = self._cursors[tp] = PartitionReader(plog)
        offset = start
        first = plog.start_offset()
        if offset < first:
            log.warning("%s: offsets %d..%d were deleted by retention; reading from %d", tp, offset, first - 1, first)
            offset = first
        if offset >= end:
            return RecordRange([], max(offset, start))
        try:
            decoded = cursor.read(offset, max_bytes)
        except OffsetOutOfRange:
            if offset >= plog.end_offset():  # beyond the end: the log was truncated or re-created
                return RecordRange([], offset)
            # retention moved the log start since we looked
            return self.read(topic, partition, plog.start_offset(), end, max_bytes)
        batches: list[FetchedBatch] = []
        for b in decoded:
            if b.txn >= TXN_COMMIT:
                continue  # a transaction marker: never a record of the application's
            fetched = _within(tp, b, end)
            if fetched is None:
                return RecordRange(batches, end)
            batches.append(fetched)
            if fetched.offsets[-1] + 1 >= end:
                return RecordRange(batches, end)
        return RecordRange(batches, min(end, max(offset, cursor.next_offset)))

    def close(self) -> None:
        self._cursors.clear()
        if self._owns_store:
            self._store.close()


def _within(tp: TopicPartition, b: DecodedBatch, end: int) -> FetchedBatch | None:
    """The records of ``b`` below ``end`` as a FetchedBatch (None when there are none)."""
    n = bisect.bisect_left(b.offsets, end)
    if n == 0:
        return None
    if n == len(b.offsets):
        return FetchedBatch(tp.topic, tp.partition, b.offsets, b.timestamps, b.keys, b.values, b.headers,
                            b.timestamp_type)
    return FetchedBatch(tp.topic, tp.partition, b.offsets[:n], b.timestamps[:n], b.keys[:n], b.values[:n],
                        b.headers[:n] if b.headers is not None else None, b.timestamp_type)
