"""The embedded log's LogReader: partition offsets and bounded reads straight from the partition files.

It opens the files the way another process sharing the log does; opened on
its own (``EmbeddedLogReader.open``) it starts no cleaner thread and opens a
partition only when asked about it, so it is cheap enough for a Spark task
that reads one range.

Read ``read_committed``, it knows transactions only from the batches it reads
(as the consumer does, txn_filter.py): a range's data is handed out once the
marker of its transaction is found, which may lie after the range's end, so a
read goes on past the end until everything below it is settled. The last
stable offset is found the same way, by reading on from where the caller's
reads stand; each partition keeps its scan, so each call reads only what was
appended since the last.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import re
from collections.abc import Mapping, Sequence

from connect.api.topic_partition import TopicPartition
from connect.log.api import FetchedBatch, LogReader, RecordRange, UnknownTopicError
from connect.log.embedded.codec import TXN_COMMIT, DecodedBatch
from connect.log.embedded.partition import OffsetOutOfRange, PartitionLog
from connect.log.embedded.reader import PartitionReader, trim
from connect.log.embedded.topics import TopicStore, is_internal, topic_partition_counts
from connect.log.embedded.txn_filter import TransactionFilter

__all__ = ["EmbeddedLogReader"]

log = logging.getLogger(__name__)


def _nothing(*_: object) -> None:
    pass


class EmbeddedLogReader(LogReader):
    def __init__(self, store: TopicStore, owns_store: bool = False, read_committed: bool = False) -> None:
        self._store = store
        self._owns_store = owns_store
        self.read_committed = read_committed
        # one cursor per partition: a range read in pieces goes on where the last piece stopped
        self._cursors: dict[TopicPartition, PartitionReader] = {}
        # read_committed: the filter of a range read in pieces, with the offset its next piece starts at
        self._pieces: dict[TopicPartition, tuple[int, TransactionFilter]] = {}
        self._scans: dict[TopicPartition, _StableScan] = {}

    @classmethod
    def open(cls, log_dir: str, read_committed: bool = False) -> EmbeddedLogReader:
        """A reader of the log under ``log_dir`` with a catalogue of its own (no worker needed)."""
        return cls(TopicStore(os.path.abspath(log_dir), {}, _nothing, _nothing, read_only=True), owns_store=True,
                   read_committed=read_committed)

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

    def stable_offsets(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for tp, position in positions.items():
            try:
                plog = self._store.partition_log(tp.topic, tp.partition)
            except UnknownTopicError:
                continue
            if not self.read_committed:
                out[tp] = plog.end_offset()
                continue
            scan = self._scans.get(tp)
            if scan is None or scan.log is not plog or position < scan.origin:
                scan = self._scans[tp] = _StableScan(plog, max(position, plog.start_offset()))
            out[tp] = scan.advance()
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
        if self.read_committed:
            return self._read_committed(tp, plog, cursor, offset, end, max_bytes)
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

    def _read_committed(self, tp: TopicPartition, plog: PartitionLog, cursor: PartitionReader, start: int,
                        end: int, max_bytes: int) -> RecordRange:
        piece = self._pieces.pop(tp, None)
        if piece is not None and piece[0] == start:
            filt = piece[1]
            at = filt.read_to
        else:
            filt, at = TransactionFilter(True), start
        batches: list[FetchedBatch] = []
        size = 0
        while not filt.settled_below(end) and size < max_bytes:
            try:
                decoded = cursor.read(at, max_bytes)
            except OffsetOutOfRange:
                if at >= plog.end_offset():  # the log was truncated or re-created
                    return RecordRange(batches, start)
                return self._read_committed(tp, plog, cursor, plog.start_offset(), end, max_bytes)
            if not decoded:
                break  # the log's end for now: what is still held waits for its transaction's end
            for b in filt.feed(decoded):
                kept = trim(b, start)
                fetched = _within(tp, kept, end) if kept is not None else None
                if fetched is not None:
                    batches.append(fetched)
                    size += sum(map(len, filter(None, fetched.values)))
            at = filt.read_to
        next_offset = min(end, max(start, filt.resolved))
        if next_offset < end:
            self._pieces[tp] = (next_offset, filt)
        return RecordRange(batches, next_offset)

    def close(self) -> None:
        self._cursors.clear()
        self._pieces.clear()
        self._scans.clear()
        if self._owns_store:
            self._store.close()


class _StableScan:
    """Finds one partition's last stable offset by reading on from ``origin``, before which all is settled.

    Only what the filter needs of a batch (its offsets and transaction fields) is kept while it is held,
    so an open transaction costs no memory for its records.
    """

    def __init__(self, plog: PartitionLog, origin: int) -> None:
        self.log = plog
        self.origin = origin
        self._cursor = PartitionReader(plog)
        self._filter = TransactionFilter(True)

    def advance(self) -> int:
        filt = self._filter
        at = filt.read_to if filt.read_to >= 0 else self.origin
        while True:
            try:
                decoded = self._cursor.read(at, 1 << 20)
            except OffsetOutOfRange:
                break  # truncated or re-created under us: what was found so far stands
            if not decoded:
                break
            filt.feed([b._replace(offsets=range(0), timestamps=[], keys=[], values=[], headers=None)
                       for b in decoded])
            at = filt.read_to
        return max(self.origin, filt.resolved)


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
