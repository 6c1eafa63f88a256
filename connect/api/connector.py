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
from typing import Any

from connect.api.config import ConfigDef, ConfigValue
from connect.api.records import SinkRecord, SourceRecord
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
]


class ExactlyOnceSupport(enum.Enum):
    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorTransactionBoundaries(enum.Enum):
    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class OffsetStorageReader(abc.ABC):
    """Reads committed source offsets; keys are source partition maps."""

    @abc.abstractmethod
    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None: ...

    def offsets(
        self, partitions: Collection[Mapping[str, Any]]
    ) -> list[tuple[Mapping[str, Any], dict[str, Any] | None]]:
        return [(p, self.offset(p)) for p in partitions]


class ConnectorContext(abc.ABC):
    @abc.abstractmethod
    def request_task_reconfiguration(self) -> None: ...

    @abc.abstractmethod
    def raise_error(self, error: BaseException) -> None:
        """Fail the connector from a background thread of the plugin's own."""


class SourceConnectorContext(ConnectorContext):
    @abc.abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader: ...


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
    def version(self) -> str: ...

    @abc.abstractmethod
    def start(self, props: Mapping[str, str]) -> None: ...

    @abc.abstractmethod
    def task_class(self) -> type[Task]: ...

    @abc.abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]: ...

    @abc.abstractmethod
    def stop(self) -> None: ...

    @abc.abstractmethod
    def config(self) -> ConfigDef: ...

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        """Validate with ``config()``; override to add cross-key checks."""
        return self.config().validate(connector_configs)


class SourceConnector(Connector):
    context: SourceConnectorContext

    def exactly_once_support(self, connector_config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        return None

    def can_define_transaction_boundaries(
        self, connector_config: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def alter_offsets(
        self,
        connector_config: Mapping[str, str],
        offsets: Mapping[Mapping[str, Any], Mapping[str, Any] | None],
    ) -> bool:
        """Say whether an offset change is acceptable; True means the connector handled or accepts it."""
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
    def version(self) -> str: ...

    @abc.abstractmethod
    def start(self, props: Mapping[str, str]) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None:
        """Called from another thread than ``poll``/``put``; must make them return promptly."""


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
    def configs(self) -> Mapping[str, str]: ...

    @abc.abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader: ...


class SourceTask(Task):
    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    @abc.abstractmethod
    def poll(self) -> Sequence[SourceRecord] | None:
        """Return the next records, or None/[] when there are none right now (may block briefly).

        A list of records, or a ``SourceRecordBatch`` when they share a topic and source partition and
        have no keys or headers (the runtime then sends them in bulk).
        """

    def commit(self) -> None:  # noqa: B027 - optional hook
        """Offsets up to the last flush are committed."""

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:  # noqa: B027
        """``record`` was acknowledged by the log (metadata None: dropped by a transform or filter)."""


class ErrantRecordReporter(abc.ABC):
    """Lets a sink task hand a record it cannot process to the framework's error handling (DLQ)."""

    @abc.abstractmethod
    def report(self, record: SinkRecord, error: BaseException) -> Future[None]: ...


class SinkTaskContext(abc.ABC):
    @abc.abstractmethod
    def configs(self) -> Mapping[str, str]: ...

    @abc.abstractmethod
    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Rewind (or advance) consumption to these offsets."""

    @abc.abstractmethod
    def timeout(self, timeout_ms: int) -> None:
        """After a RetriableException, redeliver the batch after this long."""

    @abc.abstractmethod
    def assignment(self) -> set[TopicPartition]: ...

    @abc.abstractmethod
    def pause(self, *partitions: TopicPartition) -> None: ...

    @abc.abstractmethod
    def resume(self, *partitions: TopicPartition) -> None: ...

    @abc.abstractmethod
    def request_commit(self) -> None: ...

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return None


class SinkTask(Task):
    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    def open(self, partitions: Collection[TopicPartition]) -> None:  # noqa: B027 - optional hook
        """These partitions are now this task's."""

    @abc.abstractmethod
    def put(self, records: Sequence[SinkRecord]) -> None:
        """Write (or buffer) these records; durable by the next ``flush``.

        ``records`` is a sequence: a list, or a ``SinkRecordBatch``, whose ``values`` spare a task that
        needs only the values from reading the records one by one.
        """

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:  # noqa: B027 - optional hook
        """Make everything ``put`` so far durable."""

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        """Return the offsets that are safe to commit (the next offset to read, per partition)."""
        self.flush(current_offsets)
        return current_offsets

    def close(self, partitions: Collection[TopicPartition]) -> None:  # noqa: B027 - optional hook
        """These partitions are no longer this task's; drop their buffered state."""


class DeadLetterQueue(abc.ABC):
    """Where a streaming sink task sends records it could not write: the connector's
    ``errors.deadletterqueue.*`` topic, with the context headers when they are enabled."""

    @abc.abstractmethod
    def report(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
               headers: Sequence[tuple[str, bytes | None]], error: BaseException | str) -> None:
        """Queue one record (its original bytes) and the reason it failed."""

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
        ``bootstrap.servers`` (plus client security settings) for Kafka, or ``embedded.log.dir``."""

    @abc.abstractmethod
    def state_dir(self) -> str:
        """A directory of this connector's own that survives restarts (checkpoints, state)."""

    @abc.abstractmethod
    def dead_letter_queue(self) -> DeadLetterQueue | None:
        """The connector's dead-letter topic, or None when ``errors.deadletterqueue.topic.name`` is not set."""

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
        """Move data until stopped; return when ``stop`` was called, raise on a failure."""

    def pause(self) -> None:  # noqa: B027 - optional hook
        """Stop taking new records until ``resume``; called from another thread."""

    def resume(self) -> None:  # noqa: B027 - optional hook
        """Take records again after ``pause``; called from another thread."""

    def progress(self) -> Mapping[str, Any]:
        """Numbers worth showing (records/s, last batch, lag, ...); called from another thread."""
        return {}
