"""The Kafka consumer of the topic layer, on confluent-kafka.

librdkafka differs from the Java consumer in ways the runtime would trip
over, so this class evens them out:

- a rebalance listener sees newly assigned partitions *after* they are
  assigned (it may seek, pause or ask for positions) and revoked ones
  *before* they go (it may still commit them), as in Java;
- ``seek`` works on a partition that has not started fetching yet (librdkafka
  refuses with "erroneous state"): the partition is re-assigned at the offset;
- ``position`` answers before the first fetch, from the committed offset or
  the reset policy, instead of librdkafka's "invalid offset";
- ``commit`` is bounded, and ``wakeup`` ends it, as Java's ``commitSync(Duration)``;
  librdkafka's synchronous commit has no timeout and, with the coordinator
  unreachable, waits until it answers again (measured: still waiting after 40 s
  of a SIGSTOPped broker). A commit from a listener told of a rebalance by
  ``poll`` runs on the polling thread instead: librdkafka holds a commit made
  on another thread until the rebalance callback returns (measured: it landed
  48 ms after the callback did, never while the callback waited for it).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any, cast

import confluent_kafka
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    TIMESTAMP_LOG_APPEND_TIME,
    KafkaError,
    KafkaException,
    Message,
)
from confluent_kafka import TopicPartition as KTP

from connect.api.topic_partition import TopicPartition
from connect.log.api import (
    ClientStats,
    Consumer,
    FetchedBatch,
    Headers,
    LogError,
    RebalanceListener,
    RetriableLogError,
)
from connect.log.kafka.client_errors import ClientEvents, to_log_error
from connect.log.kafka.client_stats import LibrdkafkaStatistics
from connect.log.kafka.health import ClusterHealth

__all__ = ["KafkaConsumer", "librdkafka_pattern"]

log = logging.getLogger("connect.log.kafka")

_second = itemgetter(1)  # the value of a (timestamp type, timestamp) pair


class _Timestamps(Sequence[int]):
    """The timestamps of a poll's messages, read from them when first asked for: a sink that never looks at
    them (FileStreamSink, most transforms) does not pay a tuple and a lookup per record (about a tenth of the
    consumer's own work per record)."""

    __slots__ = ("_messages", "_values")

    def __init__(self, messages: list[Any]) -> None:
        self._messages = messages
        self._values: list[int] | None = None

    def _list(self) -> list[int]:
        if self._values is None:
            self._values = list(map(_second, map(Message.timestamp, self._messages)))
            self._messages = []
        return self._values

    def __len__(self) -> int:
        return len(self._values) if self._values is not None else len(self._messages)

    def __getitem__(self, index: Any) -> Any:
        return self._list()[index]

    def __iter__(self) -> Any:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        return self._list() == (list(other) if isinstance(other, Sequence) else other)

    def __repr__(self) -> str:
        return repr(self._list())

_IGNORED = frozenset({KafkaError._PARTITION_EOF})
# Kafka reports these for a subscription to a topic that does not exist
# (yet); the Java consumer just waits for it to appear.
_WAIT = frozenset(
    {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION}
)
_STOP = frozenset(
    {
        KafkaError._AUTO_OFFSET_RESET,
        KafkaError.OFFSET_OUT_OF_RANGE,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError._FATAL,
    }
)

_RESET = {
    "earliest": "earliest",
    "smallest": "earliest",
    "beginning": "earliest",
    "latest": "latest",
    "largest": "latest",
    "end": "latest",
    "none": "none",
    "error": "none",
}


# How long close waits when a commit left behind still waits for the coordinator: librdkafka's close waits
# for that commit, which may be until the link is back; past this the close finishes in the background.
# Short: it comes after a commit that already timed out, within a task's graceful stop.
CLOSE_BEHIND_COMMIT_S = 1.0


class _Commit:
    """One librdkafka synchronous commit, run on a helper thread so that its caller can stop waiting."""

    __slots__ = ("ready", "finished", "result", "error", "thread")

    def __init__(self) -> None:
        self.ready = threading.Event()  # set when it finished, and by wakeup
        self.finished = False
        self.result: list[Any] | None = None
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None


def librdkafka_pattern(pattern: str | re.Pattern[str]) -> str:
    """A subscription regex for librdkafka: ``^``-prefixed and, like Java's ``topics.regex``, anchored at both ends."""
    text = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    if text.startswith("^"):
        text = text[1:]
    if text.endswith("$") and not text.endswith("\\$"):
        text = text[:-1]
    return f"^({text})$"


class _Columns:
    __slots__ = ("offsets", "timestamps", "keys", "values", "headers", "timestamp_type")

    def __init__(self, log_append_time: bool) -> None:
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[Headers] | None = None
        self.timestamp_type = 1 if log_append_time else 0


def _tp(k: Any) -> TopicPartition:
    return TopicPartition(k.topic, k.partition)


class KafkaConsumer(Consumer):
    def __init__(
        self,
        config: Mapping[str, str],
        own: Mapping[str, str],
        group_id: str | None,
        name: str = "consumer",
        health: ClusterHealth | None = None,
    ) -> None:
        self._events = ClientEvents(name, health)
        self._group = group_id
        conf: dict[str, Any] = dict(config)
        # librdkafka will not create a consumer without a group.id. A
        # group-less consumer gets a throw-away one that it never joins nor
        # commits to: ``assign`` gives explicit start offsets.
        conf["group.id"] = group_id if group_id is not None else f"headrace-nogroup-{uuid.uuid4().hex}"
        self._reset = _RESET.get(str(conf.get("auto.offset.reset", "latest")).lower(), "latest")
        strategies = [s.strip() for s in str(conf.get("partition.assignment.strategy", "")).split(",")]
        # librdkafka runs the cooperative protocol only if every strategy is.
        self._cooperative = bool(strategies) and all(s == "cooperative-sticky" for s in strategies)
        self._timeout = float(own.get("default.api.timeout.ms", "30000")) / 1000.0
        conf.update(self._events.settings())
        self._statistics = LibrdkafkaStatistics(str(conf.get("client.id") or "rdkafka"), "consumer")
        conf.update(self._statistics.settings(conf))
        try:
            self._c = confluent_kafka.Consumer(conf)
        except KafkaException as exc:
            raise to_log_error(exc, f"invalid {name} configuration") from None
        self._subscribed = False
        self._listener: RebalanceListener | None = None
        self._assigned: set[TopicPartition] = set()
        self._paused: set[TopicPartition] = set()
        # Offsets set by seek that librdkafka's position() does not show until
        # the next record of that partition is returned.
        self._pending: dict[TopicPartition, int] = {}
        # The partitions a listener is being told about in on_assign; seeks
        # and pauses on them wait until they are handed to librdkafka.
        self._assigning: set[TopicPartition] = set()
        self._deferred: LogError | None = None
        self._closed = False
        # The commit on its helper thread, while one runs (kept after its caller stopped waiting for it), and
        # the one a caller waits for now, which wakeup ends.
        self._commit_job: _Commit | None = None
        self._waiting_on: _Commit | None = None
        self._woken = False
        # The polling thread while a listener runs for a rebalance that poll is carrying out
        self._rebalancing_thread: int | None = None

    # -- membership --------------------------------------------------------------

    def subscribe(
        self,
        topics: Sequence[str] | None = None,
        pattern: str | re.Pattern[str] | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        if self._group is None:
            raise LogError("subscribe needs a consumer group; this consumer was made without one")
        if (topics is None) == (pattern is None):
            raise ValueError("subscribe takes either topics or pattern")
        names = list(topics) if topics is not None else [librdkafka_pattern(pattern)]  # type: ignore[arg-type]
        self._listener = listener
        try:
            self._c.subscribe(
                names, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
            )
        except KafkaException as exc:
            raise to_log_error(exc, f"subscribing to {names}") from None
        self._subscribed = True

    def prepare_to_join(self, topics: Sequence[str], timeout: float) -> None:
        # Reading the group's committed offsets goes to its coordinator: once it answered, a subscribe sends
        # JoinGroup at once. Without it, of two consumers made a few ms apart, one could still be finding the
        # coordinator when the other's join completed the generation alone (the broker's
        # group.initial.rebalance.delay.ms is often 0), and its task then waited a heartbeat for a partition.
        if self._group is None or not topics:
            return
        try:
            self._c.committed([KTP(topic, 0) for topic in topics], timeout=timeout)
        except KafkaException as exc:
            log.debug("Group %s: no answer from its coordinator before subscribing: %s", self._group, exc)

    def _on_assign(self, consumer: Any, parts: list[Any]) -> None:
        tps = [_tp(p) for p in parts]
        if not self._cooperative:
            self._assigned.clear()
        self._assigned.update(tps)
        self._assigning = set(tps)
        self._enter_listener()
        try:
            if self._listener is not None:
                self._listener.on_partitions_assigned(tps)
        finally:
            self._rebalancing_thread = None
            self._assigning = set()
            start = [KTP(tp.topic, tp.partition, self._pending.get(tp, OFFSET_INVALID)) for tp in tps]
            if self._cooperative:
                consumer.incremental_assign(start)
            else:
                consumer.assign(start)
            paused = [KTP(tp.topic, tp.partition) for tp in tps if tp in self._paused]
            if paused:
                consumer.pause(paused)

    def _on_revoke(self, consumer: Any, parts: list[Any]) -> None:
        self._drop(consumer, parts, lost=False)

    def _on_lost(self, consumer: Any, parts: list[Any]) -> None:
        self._drop(consumer, parts, lost=True)

    def _drop(self, consumer: Any, parts: list[Any], lost: bool) -> None:
        tps = [_tp(p) for p in parts]
        self._enter_listener()
        try:
            if self._listener is not None and tps:
                if lost:
                    self._listener.on_partitions_lost(tps)
                else:
                    self._listener.on_partitions_revoked(tps)
        finally:
            self._rebalancing_thread = None
            if self._cooperative:
                consumer.incremental_unassign(parts)
            else:
                consumer.unassign()
            for tp in tps:
                self._assigned.discard(tp)
                self._pending.pop(tp, None)
                self._paused.discard(tp)

    def _enter_listener(self) -> None:
        # not for close's own revocation: the runtime commits before it closes, and a commit from there must
        # stay bounded (the broker may be why the task stops)
        if not self._closed:
            self._rebalancing_thread = threading.get_ident()

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        if self._subscribed:
            raise LogError("assign cannot be used on a consumer that subscribed")
        # Without a group there is no committed offset to start from; start
        # where the reset policy says right away.
        if self._group is None:
            start = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}.get(self._reset, OFFSET_INVALID)
        else:
            start = OFFSET_INVALID
        new = set(partitions)
        try:
            self._c.assign([KTP(tp.topic, tp.partition, start) for tp in partitions])
        except KafkaException as exc:
            raise to_log_error(exc, "assigning partitions") from None
        self._assigned = new
        self._pending = {tp: off for tp, off in self._pending.items() if tp in new}
        self._paused &= new

    def assignment(self) -> set[TopicPartition]:
        return set(self._assigned)

    # -- fetching ----------------------------------------------------------------------

    def poll(self, timeout: float, max_records: int = 500) -> list[FetchedBatch]:
        self._events.raise_if_fatal("poll")
        if self._deferred is not None:
            exc, self._deferred = self._deferred, None
            raise exc
        try:
            # Any: a message's accessors return None only for error events, which the stubs cannot express
            msgs: list[Any] = self._c.consume(max_records, timeout)
        except KafkaException as exc:
            raise to_log_error(exc, "polling") from None
        if not msgs:
            return []
        batch = self._one_partition(msgs)
        if batch is not None:
            return [batch]
        # Columns per partition: offsets, timestamps, keys, values, headers
        # (None until a record with headers shows up), timestamp type.
        cols: dict[tuple[str, int], _Columns] = {}
        cur: _Columns | None = None
        cur_key: tuple[str, int] | None = None
        for m in msgs:
            err = m.error()
            if err is not None:
                try:
                    self._on_record_error(err, m)
                except LogError as exc:
                    # Records taken from librdkafka in the same call are
                    # handed out first (dropping them would skip them); the
                    # error is raised once there are none.
                    if self._deferred is None:
                        self._deferred = exc
                continue
            key = (m.topic(), m.partition())
            if key != cur_key:
                cur_key = key
                cur = cols.get(key)
                if cur is None:
                    cur = cols[key] = _Columns(m.timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME)
            assert cur is not None
            cur.offsets.append(m.offset())
            cur.timestamps.append(m.timestamp()[1])
            cur.keys.append(m.key())
            cur.values.append(m.value())
            h = m.headers()
            if h is not None:
                if cur.headers is None:
                    # Earlier records of this batch had none.
                    cur.headers = [()] * (len(cur.offsets) - 1)
                cur.headers.append(tuple(h))
            elif cur.headers is not None:
                cur.headers.append(())
        if not cols and self._deferred is not None:
            deferred, self._deferred = self._deferred, None
            raise deferred
        if self._pending:
            for topic, part in cols:
                self._pending.pop(TopicPartition(topic, part), None)
        return [
            FetchedBatch(t, p, c.offsets, c.timestamps, c.keys, c.values, c.headers, c.timestamp_type)
            for (t, p), c in cols.items()
        ]

    def _one_partition(self, msgs: list[Any]) -> FetchedBatch | None:
        """The common case, all of one partition and none an error, as one batch; else None.

        Columns built by comprehensions cost a third less per record than the general loop.
        """
        first = msgs[0]
        if first.error() is not None:
            return None
        topic, part = first.topic(), first.partition()
        n = len(msgs)
        # map() over the C methods keeps each column one pass in C, with no Python frame per record
        if (list(map(Message.error, msgs)).count(None) != n or list(map(Message.partition, msgs)).count(part) != n
                or list(map(Message.topic, msgs)).count(topic) != n):
            return None
        headers: list[Headers] | None = None
        raw_headers: list[Any] = list(map(Message.headers, msgs))
        if raw_headers.count(None) != n:
            headers = [tuple(h) if h is not None else () for h in raw_headers]
        if self._pending:
            self._pending.pop(TopicPartition(topic, part), None)
        return FetchedBatch(
            topic,
            part,
            cast("list[int]", list(map(Message.offset, msgs))),
            _Timestamps(msgs),
            list(map(Message.key, msgs)),
            list(map(Message.value, msgs)),
            headers,
            1 if first.timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME else 0,
        )

    def _on_record_error(self, err: KafkaError, msg: Any) -> None:
        code = err.code()
        if code in _IGNORED:
            return
        where = f"{msg.topic()}[{msg.partition()}]" if msg.topic() else "consumer"
        if err.fatal() or code in _STOP:
            raise to_log_error(err, f"consuming {where}")
        if code in _WAIT or err.retriable():
            self._events.on_error(err)
            return
        exc = to_log_error(err, f"consuming {where}")
        if exc.retriable:
            self._events.on_error(err)
            return
        raise exc

    # -- positions ---------------------------------------------------------------------

    def _check_assigned(self, tp: TopicPartition, what: str) -> None:
        if tp not in self._assigned:
            raise LogError(f"cannot {what} {tp}: it is not assigned to this consumer")

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self._check_assigned(partition, "seek")
        self._pending[partition] = offset
        if partition in self._assigning:
            return  # applied when the listener returns
        try:
            self._c.seek(KTP(partition.topic, partition.partition, offset))
        except KafkaException as exc:
            kerr = exc.args[0] if exc.args else None
            if isinstance(kerr, KafkaError) and kerr.code() == KafkaError._STATE:
                # Not fetching yet (just assigned or resumed): restart it there.
                self._restart_at(partition, offset)
            else:
                raise to_log_error(exc, f"seeking {partition} to {offset}") from None

    def _restart_at(self, tp: TopicPartition, offset: int) -> None:
        k = KTP(tp.topic, tp.partition)
        try:
            if self._subscribed and not self._cooperative:
                # The eager protocol only takes whole assignments.
                whole = [
                    KTP(t.topic, t.partition, offset if t == tp else self._pending.get(t, OFFSET_INVALID))
                    for t in self._assigned
                ]
                self._c.assign(whole)
                paused = [KTP(t.topic, t.partition) for t in self._paused]
            else:
                self._c.incremental_unassign([k])
                self._c.incremental_assign([KTP(tp.topic, tp.partition, offset)])
                paused = [k] if tp in self._paused else []
            if paused:
                self._c.pause(paused)
        except KafkaException as exc:
            raise to_log_error(exc, f"seeking {tp} to {offset}") from None

    def seek_to_beginning(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            self.seek(tp, OFFSET_BEGINNING)

    def position(self, partition: TopicPartition) -> int:
        self._check_assigned(partition, "get the position of")
        pending = self._pending.get(partition)
        if pending is not None:
            return self._resolve(partition, pending)
        k = KTP(partition.topic, partition.partition)
        try:
            pos = self._c.position([k])[0].offset
            if pos >= 0:
                return int(pos)
            # Nothing returned yet: where fetching will start.
            if self._group is not None:
                committed = self._c.committed([k], timeout=self._timeout)[0]
                if committed.error is not None:
                    raise to_log_error(committed.error, f"committed offset of {partition}")
                if committed.offset >= 0:
                    return int(committed.offset)
        except KafkaException as exc:
            raise to_log_error(exc, f"position of {partition}") from None
        if self._reset == "none":
            raise LogError(f"{partition} has no committed offset and auto.offset.reset is none")
        return self._resolve(partition, OFFSET_BEGINNING if self._reset == "earliest" else OFFSET_END)

    def _resolve(self, tp: TopicPartition, offset: int) -> int:
        if offset >= 0:
            return offset
        try:
            low, high = self._c.get_watermark_offsets(KTP(tp.topic, tp.partition), timeout=self._timeout)
        except KafkaException as exc:
            raise to_log_error(exc, f"offsets of {tp}") from None
        return int(low if offset == OFFSET_BEGINNING else high)

    # -- group offsets -------------------------------------------------------------

    def commit(self, offsets: Mapping[TopicPartition, int], timeout: float | None = None) -> None:
        if self._group is None:
            raise LogError("commit needs a consumer group; this consumer was made without one")
        if not offsets:
            return
        self._events.raise_if_fatal("commit")
        if self._rebalancing_thread == threading.get_ident():
            self._commit_in_rebalance(offsets)
            return
        bound = self._timeout if timeout is None else max(0.0, timeout)
        deadline = time.monotonic() + bound
        self._woken = False
        earlier = self._commit_job
        # One commit waits on the coordinator at a time: a caller that retries each interval through an outage
        # must not pile up helper threads. This one goes through once the earlier one is done.
        if earlier is not None and not self._wait(earlier, deadline):
            raise RetriableLogError(
                f"committing offsets for group {self._group}: not confirmed, "
                + ("woken while an earlier commit still waited for the group coordinator" if self._woken else
                   f"an earlier commit still waits for the group coordinator after {bound * 1000:.0f} ms"))
        ks = [KTP(tp.topic, tp.partition, off) for tp, off in offsets.items()]
        job = _Commit()
        job.thread = threading.Thread(target=self._run_commit, args=(job, ks), daemon=True,
                                      name=f"commit-{self._group}")
        self._commit_job = job
        job.thread.start()
        if not self._wait(job, deadline):
            raise RetriableLogError(
                f"committing offsets for group {self._group}: not confirmed "
                + ("(woken: the caller stopped waiting)" if self._woken else
                   f"within {bound * 1000:.0f} ms (the group coordinator does not answer)"))
        if job.error is not None:
            if isinstance(job.error, KafkaException):
                raise to_log_error(job.error, f"committing offsets for group {self._group}") from None
            raise job.error
        for k in job.result or ():
            if k.error is not None:
                raise to_log_error(k.error, f"committing {k.topic}[{k.partition}] for group {self._group}")

    def _commit_in_rebalance(self, offsets: Mapping[TopicPartition, int]) -> None:
        """A listener's commit during a rebalance, on this (the polling) thread: on a helper thread it could only
        time out. Unbounded as librdkafka's own, but the coordinator has just answered this rebalance."""
        ks = [KTP(tp.topic, tp.partition, off) for tp, off in offsets.items()]
        try:
            result = self._c.commit(offsets=ks, asynchronous=False)
        except KafkaException as exc:
            raise to_log_error(exc, f"committing offsets for group {self._group}") from None
        for k in result or ():
            if k.error is not None:
                raise to_log_error(k.error, f"committing {k.topic}[{k.partition}] for group {self._group}")

    def _run_commit(self, job: _Commit, ks: list[Any]) -> None:
        try:
            job.result = self._c.commit(offsets=ks, asynchronous=False)
        except BaseException as exc:  # handed to the caller, if it still waits
            job.error = exc
        finally:
            job.finished = True
            if self._commit_job is job:
                self._commit_job = None
            job.ready.set()

    def _wait(self, job: _Commit, deadline: float) -> bool:
        """Wait for ``job`` until ``deadline`` or a wakeup; True when it finished."""
        # cleared, then looked at: a finish from here on sets it again, a wakeup before this was for an
        # earlier wait
        job.ready.clear()
        if job.finished:
            return True
        self._waiting_on = job
        try:
            if not self._woken:
                job.ready.wait(max(0.0, deadline - time.monotonic()))
        finally:
            self._waiting_on = None
        return job.finished

    def wakeup(self) -> bool:
        """A commit under way stops waiting for the coordinator; a poll is not woken (False): librdkafka's
        consume has no wakeup that confluent-kafka exposes, so callers keep their polls short."""
        job = self._waiting_on
        if job is not None:
            self._woken = True
            job.ready.set()
        return False

    def committed(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        if self._group is None or not partitions:
            return dict.fromkeys(partitions)
        try:
            result = self._c.committed(
                [KTP(tp.topic, tp.partition) for tp in partitions], timeout=self._timeout
            )
        except KafkaException as exc:
            raise to_log_error(exc, f"committed offsets of group {self._group}") from None
        out: dict[TopicPartition, int | None] = {}
        for k in result:
            if k.error is not None:
                raise to_log_error(k.error, f"committed offset of {k.topic}[{k.partition}]")
            out[_tp(k)] = int(k.offset) if k.offset >= 0 else None
        return out

    # -- flow control -----------------------------------------------------------------

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        # Partitions no longer assigned (a rebalance got there first) are
        # skipped rather than failing the caller.
        tps = [tp for tp in partitions if tp in self._assigned]
        self._paused.update(tps)
        ks = [KTP(tp.topic, tp.partition) for tp in tps if tp not in self._assigning]
        if ks:
            try:
                self._c.pause(ks)
            except KafkaException as exc:
                raise to_log_error(exc, "pausing partitions") from None

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        tps = [tp for tp in partitions if tp in self._paused]
        self._paused.difference_update(tps)
        ks = [KTP(tp.topic, tp.partition) for tp in tps if tp in self._assigned and tp not in self._assigning]
        if ks:
            try:
                self._c.resume(ks)
            except KafkaException as exc:
                raise to_log_error(exc, "resuming partitions") from None

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        if not partitions:
            return {}
        # One ListOffsets round trip for all partitions ("latest" = -1),
        # rather than a watermark query per partition.
        try:
            result = self._c.offsets_for_times(
                [KTP(tp.topic, tp.partition, OFFSET_END) for tp in partitions], timeout=self._timeout
            )
        except KafkaException as exc:
            raise to_log_error(exc, "end offsets") from None
        out: dict[TopicPartition, int] = {}
        for k in result:
            if k.error is not None:
                raise to_log_error(k.error, f"end offset of {k.topic}[{k.partition}]")
            out[_tp(k)] = int(k.offset)
        return out

    def stats(self) -> ClientStats | None:
        return self._statistics.snapshot()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        behind = self._commit_job
        if behind is None:
            self._close_client()
        else:
            # librdkafka's close waits for that commit: bounded here, the rest left to a helper thread. The
            # listener hears nothing from there, late and from another thread.
            self._listener = None
            closer = threading.Thread(target=self._close_client, daemon=True, name=f"close-{self._group}")
            closer.start()
            closer.join(CLOSE_BEHIND_COMMIT_S)
            if closer.is_alive():
                log.warning("Consumer of group %s: a commit still waits for the group coordinator; the close "
                            "finishes in the background once it answers", self._group)
        self._assigned.clear()

    def _close_client(self) -> None:
        try:
            # Leaves the group; the listener hears about the revoked partitions.
            self._c.close()
        except Exception:
            log.exception("error while closing consumer (group %s)", self._group)
