"""The topic layer: the one interface the runtime uses to reach a log.

Two backends implement it and must behave alike: ``connect.log.embedded`` (a
durable on-disk log, the default) and ``connect.log.kafka`` (a real Kafka
cluster). The interface is batch-oriented on purpose: a consumer hands back
whole fetched batches as columns so that hot paths avoid building one Python
object per record unless they need one.

Every failure the layer reports is a LogError; ``retriable`` says whether a retry
may succeed. The tree::

    LogError
     ├── RetriableLogError          a broker or the disk was briefly unavailable: retry
     ├── TopicExistsError           a topic of that name exists
     ├── UnknownTopicError          no topic of that name
     ├── InvalidTopicError          a name the log cannot accept
     ├── ProducerFencedError        a newer producer took over the transactional id: close this one
     ├── TransactionAbortedError    the transaction was aborted; retriable with a new one
     ├── OffsetBeyondLogEndError    a consumer's position lies past the log end: an operator decides
     ├── OffsetOutOfRange           (connect.log.embedded.partition) a read outside a partition's offsets
     └── LogDirectoryLockedError    (connect.log.embedded.dirlock) another process owns the log directory

The embedded log's ``CorruptBatchError`` (damaged bytes on disk) is not one: it is
that package's own signal, caught by its readers, recovery and cleaner, which stop
at the last whole batch; it is no part of this interface.
The runtime's config store adds ``ConfigWriteError`` (a write not acknowledged)
and its ``RecordTooLargeError`` under LogError.
"""

from __future__ import annotations

import abc
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from connect.api.topic_partition import TopicPartition

__all__ = [
    "Admin",
    "BatchCountdown",
    "ClientStats",
    "BatchDeliveryCallback",
    "Consumer",
    "ConsumerRecord",
    "DeliveryCallback",
    "FetchedBatch",
    "InvalidTopicError",
    "LogError",
    "LogBackend",
    "LogGap",
    "LogReader",
    "OffsetBeyondLogEndError",
    "ProducerFencedError",
    "TransactionAbortedError",
    "NewTopic",
    "Producer",
    "RebalanceListener",
    "RecordLimit",
    "RecordMetadata",
    "RecordRange",
    "TopicDescription",
    "TopicExistsError",
    "UnknownTopicError",
    "TopicPartition",
    "read_committed_of",
    "record_bytes",
]

Headers = tuple[tuple[str, bytes | None], ...]


class LogError(Exception):
    """A failure of the topic layer; ``retriable`` says whether a retry may succeed."""

    retriable = False


class RetriableLogError(LogError):
    retriable = True


class TopicExistsError(LogError):
    pass


class UnknownTopicError(LogError):
    pass


class InvalidTopicError(LogError):
    """A topic name the log cannot accept (Kafka's InvalidTopicException)."""


class ProducerFencedError(LogError):
    """A newer producer with the same ``transactional.id`` has started (or the id was fenced): this one
    may neither write nor commit again (Kafka's ProducerFencedException). Not retriable: close it."""


class TransactionAbortedError(LogError):
    """The open transaction could not commit and was aborted; none of its records became visible.
    The producer stays usable: begin a new transaction."""

    retriable = True


class OffsetBeyondLogEndError(LogError):
    """A consumer's position (its group's committed offset, or where it had read to) lies past the log end.

    The log lost records that were already consumed (damage, or a log directory
    restored from an older copy). Resetting silently would re-deliver or skip
    data, so the consumer stops here and an operator decides.
    """

    def __init__(self, topic: str, partition: int, offset: int, log_end: int, source: str,
                 group: str | None = None) -> None:
        who = f" of group {group}" if group else ""
        super().__init__(
            f"The {source} offset {offset}{who} for {topic}-{partition} is past the log end {log_end}: "
            f"records this consumer already had are no longer in the log. Not resetting on my own; "
            f"check the partition's gaps ('headrace topics describe --topic {topic}') and reset the "
            f"offsets to go on"
        )
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.log_end = log_end


@attrs.frozen
class LogGap:
    """Offsets of one partition lost to damage on disk; the intact records on either side are kept.

    ``last_offset`` is None when the damage reached the end of the log, so how
    many offsets it held is unknown.
    """

    topic: str
    partition: int
    first_offset: int
    last_offset: int | None
    segment: str = ""  # the segment file that held the damaged bytes
    position: int = 0  # their byte position in it
    length: int = 0  # how many bytes
    moved_to: str = ""  # the file they were moved to
    detected_ms: int = 0

    def offsets_text(self) -> str:
        return f"{self.first_offset}..{'?' if self.last_offset is None else self.last_offset}"


@attrs.frozen
class RecordMetadata:
    topic: str
    partition: int
    offset: int
    timestamp: int


DeliveryCallback = Callable[[LogError | None, RecordMetadata | None], None]
# one call for a whole send_batch: None once the log acknowledged every record of it, else the first failure
BatchDeliveryCallback = Callable[[LogError | None], None]


class BatchCountdown:
    """Turns the per-record delivery reports of one ``send_batch`` into its single batch callback, for a
    producer that acknowledges record by record. ``record_delivered(err)`` is called once per record, from
    any thread; the batch callback runs once: at the first failure, or when the last record is in."""

    __slots__ = ("_callback", "_remaining", "_lock")

    def __init__(self, count: int, callback: BatchDeliveryCallback) -> None:
        self._callback: BatchDeliveryCallback | None = callback
        self._remaining = count
        self._lock = threading.Lock()

    def record_delivered(self, err: LogError | None) -> None:
        with self._lock:
            callback = self._callback
            if callback is None:
                return  # already reported (a failure before this record's report)
            self._remaining -= 1
            if err is None and self._remaining > 0:
                return
            self._callback = None
        callback(err)


@attrs.frozen
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    # 0 = CreateTime, 1 = LogAppendTime (Kafka's TimestampType ids)
    timestamp_type: int = 0


@attrs.define(slots=True)
class FetchedBatch:
    """Consecutive records of one partition, as parallel columns.

    ``headers`` is None when no record in the batch carries headers, which
    lets consumers skip header handling wholesale.
    """

    topic: str
    partition: int
    offsets: Sequence[int]
    timestamps: Sequence[int]
    keys: Sequence[bytes | None]
    values: Sequence[bytes | None]
    headers: Sequence[Headers] | None = None
    timestamp_type: int = 0

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def next_offset(self) -> int:
        return self.offsets[-1] + 1

    def records(self) -> Iterator[ConsumerRecord]:
        hdrs = self.headers
        for i, off in enumerate(self.offsets):
            yield ConsumerRecord(
                self.topic,
                self.partition,
                off,
                self.timestamps[i],
                self.keys[i],
                self.values[i],
                hdrs[i] if hdrs is not None else (),
                self.timestamp_type,
            )


@attrs.frozen
class NewTopic:
    name: str
    partitions: int = 1
    replication_factor: int = -1  # -1: the backend's default
    configs: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class TopicDescription:
    name: str
    partitions: int
    configs: Mapping[str, str]
    # per partition: (log start offset, log end offset)
    offsets: Mapping[int, tuple[int, int]] = attrs.field(factory=dict)
    # per partition: offsets lost to damage on disk (only partitions that have any)
    gaps: Mapping[int, tuple[LogGap, ...]] = attrs.field(factory=dict)


@attrs.frozen
class ClientStats:
    """A client's traffic as Kafka's client metrics count it (``outgoing-byte-total`` and so on), for /metrics."""

    client_id: str
    kind: str  # "producer", "consumer" or "admin"
    outgoing_bytes: int
    incoming_bytes: int
    connections: int | None  # open broker connections; None where the log is not reached over a network


class RebalanceListener(abc.ABC):
    """Told when a group consumer gains or loses partitions (cooperative: only the delta)."""

    @abc.abstractmethod
    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None: ...

    @abc.abstractmethod
    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None: ...

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        self.on_partitions_revoked(partitions)


# What record_bytes counts for each header beyond its name and value: its framing in either backend's format
HEADER_FRAMING_BYTES = 10


def record_bytes(key: bytes | None, value: bytes | None, headers: Headers | None = None) -> int:
    """The bytes of one record that a ``RecordLimit`` bounds: its key, its value, and each header's name (UTF-8),
    value and framing."""
    size = (len(key) if key is not None else 0) + (len(value) if value is not None else 0)
    for name, data in headers or ():
        size += len(name.encode("utf-8")) + (len(data) if data is not None else 0) + HEADER_FRAMING_BYTES
    return size


@attrs.frozen
class RecordLimit:
    """The largest record a producer can write to a topic: a record whose ``record_bytes`` plus ``overhead`` (what
    a batch of that one record adds in the log's format) is above ``max_bytes`` is refused by the log, whole."""

    max_bytes: int
    overhead: int
    setting: str  # the setting that makes it, for messages: "max.request.size", "max.message.bytes of topic t"

    @property
    def max_record_bytes(self) -> int:
        """The most ``record_bytes`` a record may have."""
        return self.max_bytes - self.overhead


class Producer(abc.ABC):
    """Asynchronous, batching producer. ``send`` may buffer; ``flush`` waits for acks.

    Delivery callbacks run on the thread that calls ``poll`` or ``flush``.
    """

    @abc.abstractmethod
    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Headers | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> None: ...

    @abc.abstractmethod
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
        """Queue many records; acked by the next ``flush``.

        ``partition`` None lets the producer choose as ``send`` would (by key, else sticky).
        A failure surfaces as a LogError from the next ``flush``. ``on_delivery``, if given, is called once
        for the whole batch, on the thread that calls ``poll`` or ``flush`` (as record callbacks are): with
        None once every record of it is acknowledged, or with the first failure. A failure that
        ``send_batch`` raises itself is not also reported to it.
        """

    @abc.abstractmethod
    def poll(self, timeout: float = 0.0) -> int:
        """Serve delivery callbacks; returns how many were served."""

    @abc.abstractmethod
    def flush(self, timeout: float | None = None) -> int:
        """Send everything queued and wait for acks; returns records still unacked."""

    @abc.abstractmethod
    def close(self, timeout: float | None = None) -> None: ...

    def partitions_for(self, topic: str) -> int:
        raise NotImplementedError

    def stats(self) -> ClientStats | None:
        """This producer's traffic so far; None while it has none to report."""
        return None

    def record_limit(self, topic: str) -> RecordLimit | None:
        """The largest record this producer can write to ``topic`` (which exists), as far as it knows; None when
        it knows none. Callers check records against it before sending, because a record above it fails its
        whole send."""
        return None

    # -- transactions -----------------------------------------------------------------------------
    # A producer made with ``transactional.id`` in its config is transactional, as in Kafka: call
    # ``init_transactions`` once (it fences every earlier producer of that id and finishes or aborts
    # what it left open), then ``begin_transaction`` / sends / ``commit_transaction`` or
    # ``abort_transaction``. Records sent inside a transaction, to any topics and partitions, become
    # visible to ``isolation.level=read_committed`` readers together at commit, or never. Every call
    # raises ProducerFencedError once a newer producer of the same id has initialised.

    @property
    def transactional(self) -> bool:
        return False

    def init_transactions(self, timeout: float | None = None) -> None:
        raise LogError(f"{type(self).__name__} was made without transactional.id; it cannot run transactions")

    def begin_transaction(self) -> None:
        raise LogError(f"{type(self).__name__} was made without transactional.id; it cannot run transactions")

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush what the transaction sent and make all of it visible at once; durable on return."""
        raise LogError(f"{type(self).__name__} was made without transactional.id; it cannot run transactions")

    def abort_transaction(self, timeout: float | None = None) -> None:
        raise LogError(f"{type(self).__name__} was made without transactional.id; it cannot run transactions")


class Consumer(abc.ABC):
    """A consumer that either subscribes as a member of a group or is assigned partitions."""

    @abc.abstractmethod
    def subscribe(
        self,
        topics: Sequence[str] | None = None,
        pattern: str | re.Pattern[str] | None = None,
        listener: RebalanceListener | None = None,
    ) -> None: ...

    @abc.abstractmethod
    def assign(self, partitions: Sequence[TopicPartition]) -> None: ...

    @abc.abstractmethod
    def assignment(self) -> set[TopicPartition]: ...

    @abc.abstractmethod
    def poll(self, timeout: float, max_records: int = 500) -> list[FetchedBatch]: ...

    def wakeup(self) -> bool:
        """From another thread: a ``poll`` under way (or the next one) returns at once with no records, and
        a ``commit`` under way that waits on a remote coordinator stops waiting and raises RetriableLogError.

        True when this consumer can wake a poll, so a caller may poll with long timeouts while idle and still
        stop at once; False (the default) when a poll always runs to its timeout, so callers keep them short.
        A commit under way is woken either way.
        """
        return False

    def prepare_to_join(self, topics: Sequence[str], timeout: float) -> None:
        """Before ``subscribe``: make ready to join the group at once, so that consumers started together join
        in one generation (a Kafka consumer finds its group coordinator and connects to it, by reading the
        group's offsets of ``topics``). Best effort: returns within ``timeout`` whatever happened, and the
        default has nothing to do."""
        return None

    @abc.abstractmethod
    def seek(self, partition: TopicPartition, offset: int) -> None: ...

    @abc.abstractmethod
    def seek_to_beginning(self, partitions: Sequence[TopicPartition]) -> None: ...

    @abc.abstractmethod
    def position(self, partition: TopicPartition) -> int: ...

    @abc.abstractmethod
    def commit(self, offsets: Mapping[TopicPartition, int], timeout: float | None = None) -> None:
        """Synchronously commit, for the group, the next offset to read per partition.

        Waits at most ``timeout`` seconds (None: the consumer's ``default.api.timeout.ms``) and less when
        ``wakeup`` is called meanwhile; a commit not confirmed by then raises RetriableLogError and counts
        as not made (it may still land later: the offsets it carries were all consumed, so at worst the
        records after the previous commit are read again).
        """

    @abc.abstractmethod
    def committed(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]: ...

    @abc.abstractmethod
    def pause(self, partitions: Sequence[TopicPartition]) -> None: ...

    @abc.abstractmethod
    def resume(self, partitions: Sequence[TopicPartition]) -> None: ...

    @abc.abstractmethod
    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def stats(self) -> ClientStats | None:
        """This consumer's traffic so far; None while it has none to report."""
        return None


class Admin(abc.ABC):
    @abc.abstractmethod
    def create_topic(self, topic: NewTopic, exist_ok: bool = False) -> None: ...

    @abc.abstractmethod
    def list_topics(self, include_internal: bool = False) -> list[str]: ...

    @abc.abstractmethod
    def describe_topic(self, name: str) -> TopicDescription: ...

    @abc.abstractmethod
    def delete_topic(self, name: str) -> None: ...

    @abc.abstractmethod
    def list_group_offsets(self, group: str) -> dict[TopicPartition, int]: ...

    @abc.abstractmethod
    def alter_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int | None]) -> None:
        """Set (or, with None, delete) a group's committed offsets; the group must be empty."""

    @abc.abstractmethod
    def delete_group(self, group: str) -> None: ...

    @abc.abstractmethod
    def cluster_id(self) -> str: ...

    def stats(self) -> ClientStats | None:
        """This admin client's traffic so far; None while it has none to report."""
        return None

    def fence_producers(self, transactional_ids: Sequence[str]) -> None:
        """Fence every producer now holding one of these ids, as Kafka's Admin.fenceProducers does:
        their open transactions are aborted and their next write or commit raises ProducerFencedError."""
        raise NotImplementedError(f"{type(self).__name__} cannot fence producers")

    def log_gaps(self, topics: Sequence[str] | None = None) -> dict[TopicPartition, list[LogGap]]:
        """Offsets lost to damage on disk, per partition that has any (for metrics and tools)."""
        return {}

    @abc.abstractmethod
    def close(self) -> None: ...


@attrs.frozen
class RecordRange:
    """What one ``LogReader.read`` found: whole batches of records in the asked range, and where to go on.

    ``next_offset`` is where the next read of the range starts: the range's
    end once it is done; with no batches, where the log ends for now (or, for a
    ``read_committed`` reader, where the first still-open transaction begins).
    """

    batches: list[FetchedBatch]
    next_offset: int


class LogReader(abc.ABC):
    """Reads partitions by offset range, outside any consumer group and committing nothing.

    For jobs that plan their own reads, such as the Spark sinks' data source:
    a planner asks for the partitions and their offsets, and workers read
    ranges of them. One reader serves one thread. Made by
    ``LogBackend.reader`` or, in a process that runs no worker, by
    ``connect.log.open_log_reader``.

    A ``read_committed`` reader hands out only records written outside
    transactions and those of committed transactions, never markers; a range it
    is asked for should end at or before the ``stable_offsets`` it gave, since
    beyond them transactions may still be open.
    """

    read_committed: bool = False

    @abc.abstractmethod
    def partition_offsets(self, topics: Sequence[str] = (), pattern: str | None = None
                          ) -> dict[TopicPartition, tuple[int, int]]:
        """(log start offset, log end offset) of every partition of ``topics`` (those that exist) and of every
        non-internal topic whose whole name ``pattern`` matches."""

    @abc.abstractmethod
    def stable_offsets(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Kafka's last stable offset of each partition in ``positions``: below it, every transaction has ended
        (for a reader that is not ``read_committed``, the log end offset).

        ``positions`` says where the caller's reads stand; everything before
        them must be settled already (a reader may look for open transactions
        from there on only). Partitions that do not exist are left out.
        """

    @abc.abstractmethod
    def read(self, topic: str, partition: int, start: int, end: int, max_bytes: int = 4 << 20) -> RecordRange:
        """Records of one partition with offsets in [``start``, ``end``), the first ones from ``start`` on.

        Returns about ``max_bytes`` of records, at least one batch when there
        is one. Offsets below the log start offset (deleted by retention) are
        skipped with a warning; offsets that compaction removed are simply
        absent. Raises UnknownTopicError for a partition that does not exist.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


def read_committed_of(isolation_level: object) -> bool:
    """Whether a consumer's or reader's ``isolation.level`` setting asks for ``read_committed``; a value that is
    neither of Kafka's two raises LogError naming it."""
    level = str(isolation_level or "read_uncommitted").strip().lower()
    if level not in ("read_uncommitted", "read_committed"):
        raise LogError(f"Invalid value {isolation_level!r} for isolation.level: read_uncommitted or read_committed")
    return level == "read_committed"


class LogBackend(abc.ABC):
    """Makes producers, consumers and admin clients for one log (a directory or a cluster).

    ``config`` maps are client settings in Kafka's names (``acks``,
    ``linger.ms``, ``auto.offset.reset``, ...); a backend ignores the ones
    that mean nothing to it. Two of them change semantics and every backend
    honours them: a producer's ``transactional.id`` (see Producer) and a
    consumer's ``isolation.level`` (``read_uncommitted``, the default, or
    ``read_committed``: only records of committed transactions and records
    written outside transactions, never past the first still-open transaction).
    """

    name: str

    @abc.abstractmethod
    def producer(self, config: Mapping[str, Any] | None = None) -> Producer: ...

    @abc.abstractmethod
    def consumer(self, group_id: str | None = None, config: Mapping[str, Any] | None = None) -> Consumer: ...

    @abc.abstractmethod
    def admin(self, config: Mapping[str, Any] | None = None) -> Admin: ...

    def reader(self, isolation_level: str = "read_uncommitted") -> LogReader:
        """A LogReader of this log (see LogReader), reading with ``isolation_level``."""
        raise NotImplementedError(f"{type(self).__name__} has no range reader")

    def health_problem(self) -> str | None:
        """None while the log is reachable; else one line on what is wrong (shown in task statuses)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
