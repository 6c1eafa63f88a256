"""The embedded log's consumer: positions, fetching into column batches, groups and commits.

``poll`` reads each assigned partition from where it stands, hands back at
most ``max_records`` records as one FetchedBatch per partition, and when
nothing is there waits for new data: it is woken at once by appends from
this process and otherwise looks again every few milliseconds (appends by
other processes are only seen that way).

With ``subscribe`` the consumer is a member of an in-process group (see
coordinator.py); partition changes reach the RebalanceListener from inside
``poll`` on the caller's thread. Settings follow Kafka's names and defaults:
``auto.offset.reset`` (latest), ``enable.auto.commit`` (true, with a group),
``auto.commit.interval.ms`` (5000), ``max.partition.fetch.bytes`` (1 MiB).

A position past the log end that came from the group's committed offset or
from this consumer's own reading means the log lost records the consumer
already had: ``poll`` raises OffsetBeyondLogEndError instead of resetting
(a reset would silently re-deliver or skip). A position set by ``seek``
follows ``auto.offset.reset`` as in Kafka. Reading across a recorded gap
skips it and logs it once as an ERROR.
"""

from __future__ import annotations

import collections
import itertools
import logging
import re
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.topic_partition import TopicPartition
from connect.log.api import (
    ClientStats,
    Consumer,
    FetchedBatch,
    LogError,
    OffsetBeyondLogEndError,
    RebalanceListener,
    UnknownTopicError,
    read_committed_of,
)
from connect.log.embedded.codec import DecodedBatch
from connect.log.embedded.config import client_bool, client_int
from connect.log.embedded.coordinator import GroupMembership, membership_for
from connect.log.embedded.groups import GroupOffsetStore
from connect.log.embedded.partition import OffsetOutOfRange, PartitionLog
from connect.log.embedded.reader import PartitionReader
from connect.log.embedded.signals import DirSignals
from connect.log.embedded.topics import TopicStore
from connect.log.embedded.txn_filter import TransactionFilter

log = logging.getLogger(__name__)
_client_ids = itertools.count(1)

# A waiting poll is woken by appends to the topics it reads (see signals.py). In a process that does not
# own the directory, appends of the owner come unannounced: there it looks again after a pause that grows
# while the log stays idle, from 2 ms up to 25 ms.
_MIN_IDLE_WAIT_S = 0.002
_MAX_IDLE_WAIT_S = 0.025


class _Partition:
    __slots__ = ("buffer", "log", "origin", "paused", "position", "reader", "taken", "tp", "txn")

    def __init__(self, tp: TopicPartition, committed_only: bool = False) -> None:
        self.tp = tp
        self.log: PartitionLog | None = None
        self.reader: PartitionReader | None = None
        self.position: int | None = None  # None: decide from the committed offset or the reset policy
        # where ``position`` came from: "committed", "seek", "reset" or "read" (advanced by fetching)
        self.origin = "reset"
        self.paused = False
        self.buffer: collections.deque[DecodedBatch] = collections.deque()
        # how many records of buffer[0] were handed out already: a batch is cut where each poll ends without
        # copying what is left of it (10,000 records taken 500 at a time copied 95,000 list items)
        self.taken = 0
        self.txn = TransactionFilter(committed_only)

    def clear(self) -> None:
        """Drop what was read ahead (the position moved)."""
        self.buffer.clear()
        self.taken = 0
        self.txn.reset()


def _piece(batch: DecodedBatch, start: int, end: int) -> DecodedBatch:
    """Records ``start`` to ``end`` (exclusive) of a batch; the last piece keeps the batch's last offset (which
    compaction may have left past its last record)."""
    if start == 0 and end == len(batch.offsets):
        return batch
    hdrs = batch.headers
    return batch._replace(
        offsets=batch.offsets[start:end], timestamps=batch.timestamps[start:end], keys=batch.keys[start:end],
        values=batch.values[start:end], headers=hdrs[start:end] if hdrs is not None else None,
        last_offset=batch.offsets[end - 1] if end < len(batch.offsets) else batch.last_offset,
    )


def _to_fetched(tp: TopicPartition, pieces: list[DecodedBatch]) -> list[FetchedBatch]:
    """Join consecutive decoded batches of one partition into as few FetchedBatches as possible."""
    out = []
    for ts_type, run_iter in itertools.groupby(pieces, key=lambda b: b.timestamp_type):
        run = list(run_iter)
        if len(run) == 1:
            b = run[0]
            out.append(FetchedBatch(tp.topic, tp.partition, b.offsets, b.timestamps, b.keys, b.values,
                                    b.headers, ts_type))
            continue
        offsets: Sequence[int]
        contiguous = all(isinstance(b.offsets, range) for b in run) and all(
            prev.offsets[-1] + 1 == nxt.offsets[0] for prev, nxt in itertools.pairwise(run)
        )
        if contiguous:
            offsets = range(run[0].offsets[0], run[-1].offsets[-1] + 1)
        else:
            offsets = list(itertools.chain.from_iterable(b.offsets for b in run))
        timestamps = list(itertools.chain.from_iterable(b.timestamps for b in run))
        keys = list(itertools.chain.from_iterable(b.keys for b in run))
        values = list(itertools.chain.from_iterable(b.values for b in run))
        headers = None
        if any(b.headers is not None for b in run):
            headers = list(itertools.chain.from_iterable(
                b.headers if b.headers is not None else [()] * len(b.offsets) for b in run
            ))
        out.append(FetchedBatch(tp.topic, tp.partition, offsets, timestamps, keys, values, headers, ts_type))
    return out


class EmbeddedConsumer(Consumer):
    def __init__(
        self,
        store: TopicStore,
        offsets: GroupOffsetStore,
        signals: DirSignals,
        group_id: str | None,
        config: Mapping[str, Any],
    ) -> None:
        self._store = store
        self._offsets = offsets
        self._signals = signals
        self._group = group_id or None
        reset = str(config.get("auto.offset.reset") or "latest").strip().lower()
        if reset not in ("earliest", "latest", "none"):
            raise LogError(f"Invalid value {reset!r} for auto.offset.reset")
        self._reset = reset
        self._committed_only = read_committed_of(config.get("isolation.level"))
        self._fetch_bytes = max(1, client_int(config, "max.partition.fetch.bytes", 1 << 20))
        self._auto_commit = self._group is not None and client_bool(config, "enable.auto.commit", True)
        self._commit_interval = client_int(config, "auto.commit.interval.ms", 5000) / 1000.0
        self._metadata_interval = client_int(config, "metadata.max.age.ms", 5000) / 1000.0
        self._next_auto_commit = time.monotonic() + self._commit_interval
        self._client_id = str(config.get("client.id") or f"embedded-log-consumer-{next(_client_ids)}")
        self._bytes_read = 0  # only the polling thread adds to it
        self._parts: dict[TopicPartition, _Partition] = {}
        self._rotation = 0
        self._idle_wait = _MIN_IDLE_WAIT_S
        self._subscribed = False
        self._coord: GroupMembership | None = None
        self._member_id: int | None = None
        self._leave: weakref.finalize | None = None
        self._listener: RebalanceListener | None = None
        self._closed = False
        self._waiter = signals.waiter()
        self._release_waiter = weakref.finalize(self, signals.release, self._waiter)
        self._woken = False
        self._wanted_topics: frozenset[str] = frozenset()

    # -- assignment ------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise LogError("consumer is closed")

    def subscribe(
        self,
        topics: Sequence[str] | None = None,
        pattern: str | re.Pattern[str] | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        self._check_open()
        if self._group is None:
            raise LogError("subscribe needs a group id")
        if self._parts and not self._subscribed:
            raise LogError("subscribe and assign cannot be mixed; the consumer is already assigned")
        if (topics is None) == (pattern is None):
            raise LogError("subscribe needs either topics or a pattern")
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        self._listener = listener
        coord = self._coordinator()
        if self._member_id is None:
            self._member_id = coord.join(topics, compiled, self._waiter)
            # a consumer dropped without close() must not hold its partitions forever
            self._leave = weakref.finalize(self, coord.leave, self._member_id)
        else:
            coord.resubscribe(self._member_id, topics, compiled)
        self._subscribed = True
        # woken when these topics are created, or any topic is for a pattern
        self._wanted_topics = frozenset(topics or ())
        self._signals.watch(self._waiter, self._wanted_topics | {tp.topic for tp in self._parts}, compiled is not None)

    def _coordinator(self) -> GroupMembership:
        if self._coord is None:
            self._coord = membership_for(self._store.root, self._group or "", self._metadata_interval)
        return self._coord

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self._check_open()
        if self._subscribed:
            raise LogError("subscribe and assign cannot be mixed; the consumer is subscribed")
        wanted = [TopicPartition(*tp) for tp in partitions]
        self._parts = {tp: self._parts.get(tp) or _Partition(tp, self._committed_only) for tp in wanted}

    def assignment(self) -> set[TopicPartition]:
        return set(self._parts)

    def _sync_group(self) -> None:
        """Play this member's part of a rebalance: give up what moved away, take what arrived."""
        if self._member_id is None:
            return
        coord = self._coordinator()
        coord.maybe_refresh()
        revoked = coord.pending_revocations(self._member_id)
        if revoked:
            try:
                if self._auto_commit:
                    self._commit_positions(revoked)
                if self._listener is not None:
                    self._listener.on_partitions_revoked(list(revoked))
            finally:
                for tp in revoked:
                    self._parts.pop(tp, None)
                coord.confirm_revoked(self._member_id, revoked)
        assigned = coord.claim_assignments(self._member_id)
        if assigned:
            for tp in assigned:
                self._parts[tp] = _Partition(tp, self._committed_only)
            if self._listener is not None:
                self._listener.on_partitions_assigned(list(assigned))

    # -- positions -------------------------------------------------------------

    def _state(self, tp: TopicPartition) -> _Partition:
        st = self._parts.get(TopicPartition(*tp))
        if st is None:
            raise LogError(f"{tp} is not assigned to this consumer")
        return st

    def _open(self, st: _Partition) -> PartitionLog:
        """The partition's log, reopened if its topic was deleted (and perhaps re-created) meanwhile."""
        if st.log is None or st.log.deleted:
            if st.log is not None:
                self._store.forget(st.tp.topic)
                st.position = None  # a re-created topic starts over
                st.clear()
            st.log = self._store.partition_log(st.tp.topic, st.tp.partition)
            st.reader = PartitionReader(st.log)
        return st.log

    def _reset_position(self, st: _Partition, why: str) -> None:
        plog = self._open(st)
        if self._reset == "earliest":
            st.position = plog.start_offset()
        elif self._reset == "latest":
            st.position = plog.end_offset()
        else:
            raise LogError(f"{why} for {st.tp} and auto.offset.reset=none")
        st.origin = "reset"
        st.clear()

    def _init_position(self, st: _Partition) -> int:
        if st.position is None:
            committed = self._offsets.read(self._group).get(st.tp) if self._group else None
            if committed is not None:
                st.position = committed
                st.origin = "committed"
            else:
                self._reset_position(st, "no committed offset")
        assert st.position is not None
        return st.position

    def seek(self, partition: TopicPartition, offset: int) -> None:
        st = self._state(partition)
        if offset < 0:
            raise LogError(f"cannot seek {partition} to negative offset {offset}")
        st.position = offset
        st.origin = "seek"
        st.clear()

    def seek_to_beginning(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            st = self._state(tp)
            st.position = self._open(st).start_offset()
            st.origin = "seek"
            st.clear()

    def position(self, partition: TopicPartition) -> int:
        return self._init_position(self._state(partition))

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            self._state(tp).paused = True

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            self._state(tp).paused = False

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return {
            TopicPartition(*tp): self._store.partition_log(tp[0], tp[1]).end_offset() for tp in partitions
        }

    # -- commits ------------------------------------------------------------------

    def commit(self, offsets: Mapping[TopicPartition, int], timeout: float | None = None) -> None:
        # a local file write: nothing remote to wait for, so ``timeout`` never comes into play
        self._check_open()
        if self._group is None:
            raise LogError("commit needs a group id")
        self._offsets.commit(self._group, {TopicPartition(*tp): int(off) for tp, off in offsets.items()})

    def committed(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        stored = self._offsets.read(self._group) if self._group else {}
        return {TopicPartition(*tp): stored.get(TopicPartition(*tp)) for tp in partitions}

    def _commit_positions(self, partitions: Sequence[TopicPartition]) -> None:
        positions = {}
        for tp in partitions:
            st = self._parts.get(tp)
            if st is not None and st.position is not None:
                positions[tp] = st.position
        if positions and self._group is not None:
            self._offsets.commit(self._group, positions)

    def _maybe_auto_commit(self) -> None:
        if self._auto_commit and time.monotonic() >= self._next_auto_commit:
            self._commit_positions(list(self._parts))
            self._next_auto_commit = time.monotonic() + self._commit_interval

    # -- fetching -------------------------------------------------------------------

    def poll(self, timeout: float, max_records: int = 500) -> list[FetchedBatch]:
        self._check_open()
        deadline = time.monotonic() + max(0.0, timeout)
        event = self._waiter.event
        while True:
            event.clear()  # before looking: an append from now on wakes the wait below
            if self._subscribed:
                self._sync_group()
            self._maybe_auto_commit()
            topics = self._wanted_topics.union(tp.topic for tp in self._parts)
            if self._waiter.topics != topics:
                self._signals.watch(self._waiter, topics, self._waiter.any_topic)
            out = self._fetch(max(1, max_records))
            if out:
                self._idle_wait = _MIN_IDLE_WAIT_S
                return out
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._take_wakeup():
                return out
            if self._signals.needs_polling:
                event.wait(min(remaining, self._idle_wait))
                self._idle_wait = min(self._idle_wait * 2, _MAX_IDLE_WAIT_S)
            else:
                event.wait(remaining)
            if self._take_wakeup():
                return []

    def wakeup(self) -> bool:
        """A poll under way (or the next one) returns at once, with no records."""
        self._woken = True
        self._waiter.event.set()
        return True

    def _take_wakeup(self) -> bool:
        if self._woken:
            self._woken = False
            return True
        return False

    def _fetch(self, budget: int) -> list[FetchedBatch]:
        states = [st for st in self._parts.values() if not st.paused]
        if not states:
            return []
        start = self._rotation % len(states)
        self._rotation += 1
        out: list[FetchedBatch] = []
        for st in states[start:] + states[:start]:
            if budget <= 0:
                break
            try:
                pieces = self._fetch_partition(st, budget)
            except LogError:
                if out:
                    break  # hand out what was read; the error comes again with the next poll
                raise
            if pieces:
                budget -= sum(len(p.offsets) for p in pieces)
                out.extend(_to_fetched(st.tp, pieces))
        return out

    def _fetch_partition(self, st: _Partition, budget: int) -> list[DecodedBatch]:
        """Up to ``budget`` records of one partition, reading at most about max.partition.fetch.bytes."""
        pieces: list[DecodedBatch] = []
        buffer = st.buffer
        fetched = 0
        while budget > 0:
            if not buffer:
                if fetched >= self._fetch_bytes:
                    break
                try:
                    if not self._refill(st, self._fetch_bytes - fetched):
                        break
                except LogError:
                    if pieces:
                        break  # hand out what was read; the error comes again with the next poll
                    raise
                assert st.reader is not None
                fetched += st.reader.bytes_read
                self._bytes_read += st.reader.bytes_read
            batch = buffer[0]
            start, size = st.taken, len(batch.offsets)
            if size - start <= budget:
                buffer.popleft()
                st.taken = 0
                pieces.append(_piece(batch, start, size))
                st.position = batch.last_offset + 1
                budget -= size - start
            else:
                head = _piece(batch, start, start + budget)
                st.taken = start + budget
                pieces.append(head)
                st.position = head.last_offset + 1
                budget = 0
        return pieces

    def _refill(self, st: _Partition, max_bytes: int) -> bool:
        """Read the next batches of a partition into its buffer; False when there was nothing new."""
        try:
            self._open(st)
            position = self._init_position(st)
            reader = st.reader
            assert reader is not None
            # while the filter holds an open transaction's batches, reading goes on after them
            start = st.txn.read_to if st.txn.holding else position
            try:
                while True:
                    batches = reader.read(start, max_bytes)
                    st.buffer.extend(st.txn.feed(batches))
                    # held behind an open transaction: read on to its marker now rather than a fetch later
                    if st.buffer or not batches or not st.txn.holding:
                        break
                    start = st.txn.read_to
            except OffsetOutOfRange as e:
                if e.offset > e.end and st.origin in ("committed", "read"):
                    # the log lost what this consumer already had: a reset would re-deliver or skip silently
                    raise OffsetBeyondLogEndError(st.tp.topic, st.tp.partition, e.offset, e.end,
                                                  "committed" if st.origin == "committed" else "current",
                                                  self._group) from None
                log.info("Offset %d is out of range [%d, %d] for %s; resetting to %s",
                         e.offset, e.start, e.end, st.tp, self._reset)
                self._reset_position(st, f"offset {e.offset} out of range")
                return False
        except UnknownTopicError:
            return False
        st.origin = "read"
        if not st.buffer:
            # the reader may have passed batches that compaction emptied, markers or aborted data
            passed = st.txn.resolved if st.txn.holding else reader.next_offset
            if passed > position:
                st.position = passed
            return False
        return True

    # -- shutdown -----------------------------------------------------------------------

    def stats(self) -> ClientStats:
        # bytes read from the partitions' segment files: the embedded log's "incoming bytes"; no network
        return ClientStats(self._client_id, "consumer", 0, self._bytes_read, None)

    def close(self) -> None:
        if self._closed:
            return
        try:
            if self._auto_commit:
                self._commit_positions(list(self._parts))
            if self._member_id is not None:
                owned = sorted(self._parts)
                if owned and self._listener is not None:
                    self._listener.on_partitions_revoked(owned)
        finally:
            if self._leave is not None:
                self._leave()
                self._member_id = None
            self._parts = {}
            self._closed = True
            self._release_waiter()
