"""Connectors and tasks: what a plugin author implements.

A Connector splits a job into task configs; Tasks move the data. A
SourceTask's ``poll`` returns a batch of SourceRecords; a SinkTask's ``put``
takes a batch of SinkRecords and ``flush``/``pre_commit`` say what is durable.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, ClassVar

from connect.api.config import ConfigDef, ConfigValue
from connect.api.records import SinkRecord, SourceRecord, SourceRecordBatch
from connect.api.topic_partition import TopicPartition

__all__ = [
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "DeadLetterQueue",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "OffsetStorageReader",
    "RecordMetadata",
    "SinkConnector",
    "SinkConnectorContext",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceConnectorContext",
    "SourceTask",
    "SourceTaskContext",
    "StreamingSinkTask",
    "StreamingSinkTaskContext",
    "Task",
    "TransactionBoundary",
    "TransactionContext",
]


class ExactlyOnceSupport(enum.Enum):
    """What ``SourceConnector.exactly_once_support`` answers for a config (Kafka Connect's enum)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorTransactionBoundaries(enum.Enum):
    """Whether a connector's tasks can say where transactions end (``transaction.boundary=connector``)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class TransactionBoundary(enum.Enum):
    """``transaction.boundary``: where an exactly-once source task's transactions end.

    POLL: after the records of each ``poll``; INTERVAL: every ``transaction.boundary.interval.ms``;
    CONNECTOR: where the task says, through its ``TransactionContext``.
    """

    POLL = "poll"
    INTERVAL = "interval"
    CONNECTOR = "connector"

    @classmethod
    def parse(cls, text: str) -> TransactionBoundary:
        return cls(text.strip().lower())


class TransactionContext(abc.ABC):
    """How a source task defines its own transactions (``transaction.boundary=connector`` only).

    Every call only asks: the worker acts on the request on the task thread, after the records of the
    current ``poll`` have been handed over, so a call made from ``poll`` itself is the normal use. A
    record-scoped request takes effect right after that record (later records of the same batch go into
    the next transaction); an unscoped one after the whole batch.
    """

    @abc.abstractmethod
    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Commit the open transaction after ``record`` (or after this batch), with its source offsets."""

    @abc.abstractmethod
    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Abort the open transaction after ``record`` (or after this batch): none of its records become
        visible to read_committed readers and none of its offsets are stored, so the task re-reads them
        only if it seeks back itself."""


class OffsetStorageReader(abc.ABC):
    """Reads committed source offsets; keys are source partition maps."""

    @abc.abstractmethod
    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The last committed offset of one source partition, or None if none was committed.

        Called on the task's (or connector's) own thread, usually in ``start``; reads the offset store and may
        raise ConnectException when it cannot be read.
        """

    def offsets(
        self, partitions: Collection[Mapping[str, Any]]
    ) -> list[tuple[Mapping[str, Any], dict[str, Any] | None]]:
        return [(p, self.offset(p)) for p in partitions]


class ConnectorContext(abc.ABC):
    @abc.abstractmethod
    def request_task_reconfiguration(self) -> None:
        """Ask the worker to call ``task_configs`` again and restart the tasks if their configs changed.

        Safe from any thread (a monitoring thread of the connector's, typically); returns at once: the
        reconfiguration runs on a worker thread.
        """

    @abc.abstractmethod
    def raise_error(self, error: BaseException) -> None:
        """Fail the connector from a background thread of the plugin's own.

        The connector's status becomes FAILED with ``error``'s trace; its tasks keep running. Never raises.
        """


class SourceConnectorContext(ConnectorContext):
    @abc.abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader:
        """A reader of the offsets this connector's tasks committed; usable from any thread."""


class SinkConnectorContext(ConnectorContext):
    pass


class Connector(abc.ABC):
    """Configures and splits a job. One instance per connector, in the worker that owns it."""

    context: ConnectorContext

    def initialize(
        self, context: ConnectorContext, task_configs: Sequence[Mapping[str, str]] | None = None
    ) -> None:
        self.context = context

    @abc.abstractmethod
    def version(self) -> str:
        """The plugin's version, shown by ``GET /connector-plugins``. Called on any thread; must not raise."""

    @abc.abstractmethod
    def start(self, props: Mapping[str, str]) -> None:
        """Start the connector with its config (``${...}`` references already resolved).

        Called once on a worker thread after ``initialize``, before ``task_configs``. Raise ConnectException
        (or any exception) to fail the connector: its status becomes FAILED with the trace.
        """

    @abc.abstractmethod
    def task_class(self) -> type[Task]:
        """The Task class the worker instantiates for each task config; it must be registered with the
        connector (same module or plugin package). Called on a worker thread after ``start``.
        """

    @abc.abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Split the job into at most ``max_tasks`` task configs (``tasks.max``).

        Called on a worker thread after ``start`` and again after ``request_task_reconfiguration``. Values
        must be strings. Raising fails the connector.
        """

    @abc.abstractmethod
    def stop(self) -> None:
        """Release what ``start`` acquired; called once on a worker thread when the connector is stopped,
        paused to STOPPED, reconfigured or deleted. Exceptions are logged, not propagated.
        """

    @abc.abstractmethod
    def config(self) -> ConfigDef:
        """The ConfigDef of the connector's own keys: used to validate configs (REST ``config/validate``,
        the CLI) before anything runs. Called on any thread, on an instance that was never started; must
        not raise.
        """

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        """Validate with ``config()``; override to add cross-key checks."""
        return self.config().validate(connector_configs)


class SourceConnector(Connector):
    """A connector whose tasks read from outside and write to the log.

    To declare exactly-once support without overriding anything, set the class attributes: a source whose
    offsets say exactly where to resume sets ``exactly_once = ExactlyOnceSupport.SUPPORTED``; one whose
    tasks end their own transactions also sets ``transaction_boundaries =
    ConnectorTransactionBoundaries.SUPPORTED``. Override the methods instead when the answer depends on
    the config.
    """

    context: SourceConnectorContext
    exactly_once: ClassVar[ExactlyOnceSupport | None] = None
    transaction_boundaries: ClassVar[ConnectorTransactionBoundaries] = ConnectorTransactionBoundaries.UNSUPPORTED

    def exactly_once_support(self, connector_config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Whether this config can deliver exactly once; asked during validation when
        ``exactly.once.support=required``, on the REST thread, before anything runs.

        SUPPORTED when the tasks' source offsets say exactly where to resume (a byte position, a log
        sequence number) and re-reading from them yields the same records. The default None means "not
        declared", which ``required`` refuses as Kafka Connect does. Raising fails validation with the
        exception's message.
        """
        return self.exactly_once

    def can_define_transaction_boundaries(
        self, connector_config: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        """Whether the tasks use ``SourceTaskContext.transaction_context()`` to end transactions; asked
        during validation when ``transaction.boundary=connector``. Default: the class attribute
        ``transaction_boundaries`` (UNSUPPORTED)."""
        return self.transaction_boundaries

    def alter_offsets(
        self,
        connector_config: Mapping[str, str],
        offsets: Mapping[Any, Mapping[str, Any] | None],
    ) -> bool:
        """Check an offset change requested over REST (``PATCH /connectors/{c}/offsets``) before it is written.

        Raise ConnectException with a reason to refuse it (the request answers 400 naming that reason); return
        True when the connector handled or accepts it, False when it leaves offsets to the framework. Each key
        of ``offsets`` is a source partition as a tuple of (key, value) pairs (``dict(key)`` gives the map
        back); a value of None resets that partition."""
        return False


class SinkConnector(Connector):
    context: SinkConnectorContext
    TOPICS_CONFIG = "topics"
    TOPICS_REGEX_CONFIG = "topics.regex"

    def alter_offsets(
        self, connector_config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        return False


class Task(abc.ABC):
    @abc.abstractmethod
    def version(self) -> str:
        """The task's version. Called on any thread; must not raise."""

    @abc.abstractmethod
    def start(self, props: Mapping[str, str]) -> None:
        """Start the task with its task config (``${...}`` references resolved in memory only).

        Called once on the task's own thread after ``initialize``. Raising fails the task (FAILED, with the trace).
        """

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the task. Called from another thread than ``poll``/``put`` (the worker's), so it must make a
        blocking ``poll``/``put`` return promptly; it may be called while one is running. Exceptions are
        logged, not propagated.
        """


class RecordMetadata:
    """Where the log put a produced record."""

    __slots__ = ("topic", "partition", "offset", "timestamp")

    def __init__(self, topic: str, partition: int, offset: int, timestamp: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp

    def __repr__(self) -> str:
        return f"RecordMetadata({self.topic}-{self.partition}@{self.offset})"


class SourceTaskContext(abc.ABC):
    @abc.abstractmethod
    def configs(self) -> Mapping[str, str]:
        """The task's config, as given to ``start``."""

    @abc.abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader:
        """A reader of this connector's committed source offsets; use it in ``start`` to resume."""

    def transaction_context(self) -> TransactionContext | None:
        """The task's TransactionContext when it runs exactly once with ``transaction.boundary=connector``;
        None otherwise (the worker then decides where transactions end)."""
        return None


class SourceTask(Task):
    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    @abc.abstractmethod
    def poll(self) -> Sequence[SourceRecord] | None:
        """Return the next records, or None/[] when there are none right now (may block briefly).

        A list of records, or a ``SourceRecordBatch`` when they share a topic and source partition and
        have no keys or headers (the runtime then sends them in bulk).

        Called in a loop on the task's own thread; it should block for at most about a second so that
        pause and stop are noticed (``stop`` is called from another thread to end a longer wait). Raise
        RetriableException to be polled again, anything else to fail the task.
        """

    def commit(self) -> None:  # optional hook
        """Offsets up to the last flush are committed."""

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """``record`` was acknowledged by the log (metadata None: dropped by a transform or filter).

        Kafka Connect's ``commitRecord``. A task that overrides it has every record sent on its own, with a
        delivery callback each; one that only needs to know when whole batches are in overrides
        ``commit_batch`` instead, which keeps the bulk path.
        """

    def commit_batch(self, batch: SourceRecordBatch) -> None:  # optional hook
        """Every record of ``batch``, a SourceRecordBatch this task's ``poll`` returned, is done with: each
        was acknowledged by the log, or dropped by a transform or filter, or skipped after a failure that
        ``errors.tolerance`` tolerates, or refused for its size (``refuse_record``, called before).

        Called exactly once per polled batch that is not empty, with the very object ``poll`` returned,
        once its last record is done, however the runtime sent it (in bulk, or record by record when
        transforms run or a conversion failed); never for a batch whose records could not be written (the
        task then fails). Calls come on the thread that serves the producer's acknowledgements: the task's
        own thread, or the worker's offset-commit thread while it flushes, so keep it short and
        thread-safe. Acknowledged means what ``commit_record`` means: on the embedded log, written to the
        segment file (which survives ``kill -9``); on Kafka, acknowledged as the producer's ``acks`` say.
        A task overriding both hooks gets both calls.
        """

    def refuse_record(self, polled: Sequence[SourceRecord], index: int, reason: str) -> None:  # optional hook
        """Record ``index`` of ``polled`` (the very list or SourceRecordBatch this task's ``poll`` returned) will
        not be written: converted, it is larger than the log takes one record (``reason`` says how large and
        the limit). Called on the task's thread before the rest of ``polled`` is sent.

        A task that overrides this tells its sender (or counts the refusal) and keeps running whatever
        ``errors.tolerance`` says: the record is counted as failed, logged and sent to the dead-letter queue
        if one is set, and counts as done for ``commit_batch``; ``commit_record`` is not called for it. A
        task that does not override it is handled as for a failed conversion: with ``errors.tolerance=none``
        it fails (as Kafka Connect's does on a RecordTooLargeException), with ``all`` the record is skipped.
        """


class ErrantRecordReporter(abc.ABC):
    """Lets a sink task hand a record it cannot process to the framework's error handling (DLQ)."""

    @abc.abstractmethod
    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        """Hand ``record`` and why it failed to the framework (``errors.tolerance``, the error log, the DLQ).

        Call it from ``put`` on the task's thread. The Future completes when the DLQ has the record; the
        record's offset is committed only after that. Raises ConnectException when ``errors.tolerance=none``
        (the task then fails).
        """


class SinkTaskContext(abc.ABC):
    @abc.abstractmethod
    def configs(self) -> Mapping[str, str]:
        """The task's config, as given to ``start``."""

    @abc.abstractmethod
    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Rewind (or advance) consumption to these offsets.

        Call from the task's thread (``open``, ``put``); applied before the next fetch.
        """

    @abc.abstractmethod
    def timeout(self, timeout_ms: int) -> None:
        """After a RetriableException, redeliver the batch after this long. Call from ``put``."""

    @abc.abstractmethod
    def assignment(self) -> set[TopicPartition]:
        """The partitions currently assigned to this task."""

    @abc.abstractmethod
    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching these partitions until ``resume``; from the task's thread."""

    @abc.abstractmethod
    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch these partitions again after ``pause``; from the task's thread."""

    @abc.abstractmethod
    def request_commit(self) -> None:
        """Ask for an offset commit (``pre_commit``) after the current ``put`` instead of waiting for
        ``offset.flush.interval.ms``; from the task's thread.
        """

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return None


class SinkTask(Task):
    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    def open(self, partitions: Collection[TopicPartition]) -> None:  # optional hook
        """These partitions are now this task's."""

    @abc.abstractmethod
    def put(self, records: Sequence[SinkRecord]) -> None:
        """Write (or buffer) these records; durable by the next ``flush``.

        ``records`` is a sequence: a list, or a ``SinkRecordBatch``, whose ``values`` spare a task that
        needs only the values from reading the records one by one.

        Called on the task's own thread. Raise RetriableException to have the same batch redelivered
        (after ``context.timeout``), anything else to fail the task; a single bad record goes to
        ``context.errant_record_reporter()`` instead.
        """

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:  # optional hook
        """Make everything ``put`` so far durable."""

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        """Return the offsets that are safe to commit (the next offset to read, per partition)."""
        self.flush(current_offsets)
        return current_offsets

    def close(self, partitions: Collection[TopicPartition]) -> None:  # optional hook
        """These partitions are no longer this task's; drop their buffered state."""


class DeadLetterQueue(abc.ABC):
    """Where a streaming sink task sends records it could not write: the connector's
    ``errors.deadletterqueue.*`` topic, with the context headers when they are enabled."""

    @abc.abstractmethod
    def report(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
               headers: Sequence[tuple[str, bytes | None]], error: BaseException | str) -> None:
        """Queue one record (its original bytes) and the reason it failed; from the task's thread."""

    @abc.abstractmethod
    def flush(self, timeout: float | None = None) -> None:
        """Wait until every reported record is durable in the log; raises ConnectException if one is not."""


class StreamingSinkTaskContext(abc.ABC):
    """What the worker gives a StreamingSinkTask."""

    @abc.abstractmethod
    def configs(self) -> Mapping[str, str]:
        """The task config (connector config plus ``topics``/``topics.regex``)."""

    @abc.abstractmethod
    def log_settings(self) -> Mapping[str, str]:
        """How to reach the log the worker uses, so the task can read the same topics itself: either
        ``bootstrap.servers`` (plus client security settings) for Kafka, or ``embedded.log.dir``.
        """

    @abc.abstractmethod
    def state_dir(self) -> str:
        """A directory of this connector's own that survives restarts (checkpoints, state)."""

    @abc.abstractmethod
    def dead_letter_queue(self) -> DeadLetterQueue | None:
        """The connector's dead-letter topic, or None when ``errors.deadletterqueue.topic.name`` is not set."""

    def worker_settings(self, prefix: str) -> Mapping[str, str]:
        """The worker config's settings under ``prefix`` (kept in the keys) for the engine the task runs, such
        as the operator's ``spark.*`` settings: they may hold what a connector config is not allowed to."""
        return {}

    def connector_name(self) -> str:
        return str(self.configs().get("name", ""))


class StreamingSinkTask(Task):
    """A sink task that reads its topics itself (a Spark query, say) instead of being handed batches.

    The worker does not consume for it: it calls ``start`` and then ``run``
    on the task's thread; ``run`` blocks until ``stop`` (from another thread)
    makes it return, and raises to fail the task. ``pause``/``resume`` follow
    the connector's target state; ``progress`` is shown in the task status
    and logged periodically.
    """

    context: StreamingSinkTaskContext

    def initialize(self, context: StreamingSinkTaskContext) -> None:
        self.context = context

    @abc.abstractmethod
    def run(self) -> None:
        """Move data until stopped; return when ``stop`` was called, raise on a failure.

        Called once on the task's own thread after ``start``; ``stop``, ``pause`` and ``resume`` come from
        other threads while it runs. An exception fails the task with its trace.
        """

    def pause(self) -> None:  # optional hook
        """Stop taking new records until ``resume``; called from another thread."""

    def resume(self) -> None:  # optional hook
        """Take records again after ``pause``; called from another thread."""

    def progress(self) -> Mapping[str, Any]:
        """Numbers worth showing (records/s, last batch, lag, ...); called from another thread."""
        return {}
