"""In-memory collaborators for the runtime unit tests: a clock, a log backend, an offset store and plugins.

The log fakes implement ``connect.log.api``'s interfaces the way the embedded
log behaves where the runtime depends on it: a producer's records are acked
(appended) at ``flush``, a consumer joins its group at its first poll, and a
poll that finds nothing waits its timeout on the fake clock.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.connector import (
    SinkTask,
    SourceTask,
    StreamingSinkTask,
)
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
    NewTopic,
    Producer,
    RebalanceListener,
    RecordLimit,
    RecordMetadata,
    TopicDescription,
    UnknownTopicError,
)
from connect.runtime.connector_config import ConnectorConfig, SinkConnectorConfig, SourceConnectorConfig
from connect.runtime.error_handler import ErrorHandler
from connect.runtime.herder import ConnectorTaskId, State, TargetState
from connect.runtime.offset_committer import SourceTaskOffsetCommitter
from connect.runtime.offsets import ConnectorOffsetReader, OffsetStore
from connect.runtime.sink_task import WorkerSinkTask
from connect.runtime.source_task import WorkerSourceTask
from connect.runtime.status import Status, StatusStore
from connect.runtime.streaming_task import WorkerStreamingTask
from connect.runtime.worker_config import WorkerConfig
from connect.runtime.worker_task import TaskConverters
from plugins.converters.string import StringConverter
from tests.runtime.fake_plugins import (  # noqa: F401 - the tests take plugins and fakes from one module
    FAILING,
    IN_PUT,
    PARTITION,
    PUT_GATE,
    PUT_VALUES,
    WAIT,
    ControlledStreamingTask,
    RecordingSinkTask,
    ScriptedSourceTask,
    lines_batch,
    registry,
)


class FakeClock:
    """A monotonic clock that moves only when told to (or when a fake waits on it)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += max(0.0, seconds)


# --- the log -------------------------------------------------------------------------------------------------
class MemoryLog:
    """Topics as lists of (key, value, timestamp) per partition, and committed offsets per group."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.topics: dict[str, list[list[tuple[bytes | None, bytes | None, int]]]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.groups: dict[str, dict[TopicPartition, int]] = {}

    def create(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> None:
        with self.lock:
            if name not in self.topics:
                self.topics[name] = [[] for _ in range(partitions)]
                self.configs[name] = dict(configs or {})

    def append(self, topic: str, partition: int, rows: Sequence[tuple[bytes | None, bytes | None, int]]) -> int:
        with self.lock:
            self.create(topic)
            log = self.topics[topic][partition]
            base = len(log)
            log.extend(rows)
            return base

    def values(self, topic: str, partition: int = 0) -> list[str | None]:
        with self.lock:
            rows = list(self.topics.get(topic, [[]])[partition])
        return [None if v is None else v.decode() for _k, v, _t in rows]


class MemoryProducer(Producer):
    """Records wait unacknowledged until ``flush`` appends them; failures and slow acks can be scripted."""

    def __init__(self, log: MemoryLog) -> None:
        self.log = log
        self.buffer: list[tuple[str, int, bytes | None, bytes | None, int, DeliveryCallback | None]] = []
        self.lock = threading.Lock()
        self.flushes = 0
        self.fail_flush: LogError | None = None
        self.unacked_on_flush = 0  # a flush that times out with this many records unacknowledged
        self.batch_callbacks = 0  # send_batch calls that asked for a batch callback
        self.closed = False
        # a record whose value and key are longer is refused as the embedded log refuses it: send_batch raises,
        # send fails it at flush; record_limit tells it (None: no limit)
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
        countdown = BatchCountdown(len(values), on_delivery) if on_delivery is not None else None
        self.batch_callbacks += countdown is not None
        for i, value in enumerate(values):
            self.send(topic, value, keys[i] if keys else None, partition,
                      timestamps[i] if timestamps else None,
                      on_delivery=(lambda err, _md, c=countdown: c.record_delivered(err)) if countdown else None)

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
        with self.lock:
            return [None if v is None else v.decode() for _t, _p, _k, v, _ts, _cb in self.buffer]

    def close(self, timeout: float | None = None) -> None:
        self.closed = True


class MemoryConsumer(Consumer):
    """A group member that gets every partition of its topics at its first poll."""

    def __init__(self, log: MemoryLog, group: str | None, clock: FakeClock) -> None:
        self.log = log
        self.group = group
        self.clock = clock
        self.topics: list[str] = []
        self.pattern: re.Pattern[str] | None = None
        self.listener: RebalanceListener | None = None
        self._assignment: set[TopicPartition] = set()
        self._joined = False
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
        self._joined = False

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self._assignment = set(partitions)
        self._joined = True
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
        if not out:
            self.clock.sleep(timeout)  # nothing came: the poll waited its whole timeout
        return out

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
    def __init__(self, log: MemoryLog) -> None:
        self.log = log

    def create_topic(self, topic: NewTopic, exist_ok: bool = False) -> None:
        self.log.create(topic.name, topic.partitions, topic.configs)

    def list_topics(self, include_internal: bool = False) -> list[str]:
        return sorted(self.log.topics)

    def describe_topic(self, name: str) -> TopicDescription:
        if name not in self.log.topics:
            raise UnknownTopicError(name)
        parts = self.log.topics[name]
        return TopicDescription(name, len(parts), self.log.configs[name], {i: (0, len(p)) for i, p in enumerate(parts)})

    def delete_topic(self, name: str) -> None:
        self.log.topics.pop(name, None)

    def list_group_offsets(self, group: str) -> dict[TopicPartition, int]:
        return dict(self.log.groups.get(group, {}))

    def alter_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int | None]) -> None:
        current = self.log.groups.setdefault(group, {})
        for tp, off in offsets.items():
            if off is None:
                current.pop(tp, None)
            else:
                current[tp] = off

    def delete_group(self, group: str) -> None:
        self.log.groups.pop(group, None)

    def cluster_id(self) -> str:
        return "memory"

    def close(self) -> None:
        pass


class MemoryBackend(LogBackend):
    name = "memory"

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.log = MemoryLog()
        self.clock = clock or FakeClock()
        self.producers: list[MemoryProducer] = []
        self.consumers: list[MemoryConsumer] = []

    def producer(self, config: Mapping[str, Any] | None = None) -> Producer:
        producer = MemoryProducer(self.log)
        self.producers.append(producer)
        return producer

    def consumer(self, group_id: str | None = None, config: Mapping[str, Any] | None = None) -> Consumer:
        consumer = MemoryConsumer(self.log, group_id, self.clock)
        self.consumers.append(consumer)
        return consumer

    def admin(self, config: Mapping[str, Any] | None = None) -> Admin:
        return MemoryAdmin(self.log)


class MemoryOffsetStore(OffsetStore):
    """Source offsets in memory; every commit kept in ``commits``; ``fail`` makes the next one fail."""

    def __init__(self) -> None:
        super().__init__()
        self.commits: list[dict[str, str | None]] = []
        self.fail: Exception | None = None

    def start(self) -> None:
        pass

    def _persist(self, changes: Mapping[str, str | None]) -> None:
        if self.fail is not None:
            error, self.fail = self.fail, None
            raise error
        self.commits.append(dict(changes))


class RecordingStatus(StatusStore):
    """The real status store, with the history of each task's states."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[ConnectorTaskId, list[State]] = {}
        self.changed = threading.Condition()

    def put_task(self, task: ConnectorTaskId, status: Status) -> None:
        super().put_task(task, status)
        with self.changed:
            self.history.setdefault(task, []).append(status.state)
            self.changed.notify_all()

    def await_task(self, task: ConnectorTaskId, state: State, timeout: float = WAIT) -> Status:
        """Wait (on a condition, not a sleep) until the task's status is ``state``."""
        with self.changed:
            ok = self.changed.wait_for(lambda: (s := self.task(task)) is not None and s.state is state, timeout)
        current = self.task(task)
        assert ok, f"{task} is {current.state if current else None}, expected {state}"
        assert current is not None
        return current

    def state(self, task: ConnectorTaskId) -> State | None:
        status = self.task(task)
        return status.state if status is not None else None


# --- building tasks --------------------------------------------------------------------------------------------
def string_converters() -> TaskConverters:
    key, value, header = StringConverter(), StringConverter(), StringConverter()
    key.configure({}, True)
    value.configure({}, False)
    header.configure({})
    return TaskConverters(key, value, header)


def worker_config(**settings: Any) -> WorkerConfig:
    """A worker config with String converters and ``settings`` (``_`` in their names for ``.``)."""
    return WorkerConfig({"key.converter": "StringConverter", "value.converter": "StringConverter",
                         **{k.replace("_", "."): v for k, v in settings.items()}})


def _common(name: str, status: StatusStore, clock: FakeClock, target: TargetState, interval_ms: int,
            connector_config: Mapping[str, Any] | None, config_class: type[ConnectorConfig],
            **worker_settings: Any) -> dict[str, Any]:
    task_id = ConnectorTaskId(name, 0)
    stop = threading.Event()
    parsed = config_class({"name": name, "connector.class": "test", "topics": "lines",
                           **(connector_config or {})})
    return dict(task_id=task_id, worker_id="test-worker:0", connector_config=parsed,
                task_config={"topics": "lines"}, converters=string_converters(), chain=None,
                errors=ErrorHandler(parsed, name, 0, stop), status=status, target_state=target,
                worker_config=worker_config(offset_flush_interval_ms=interval_ms, **worker_settings),
                clock=clock)


def source_task(task: SourceTask, clock: FakeClock, backend: MemoryBackend | None = None,
                committer: SourceTaskOffsetCommitter | None = None, status: StatusStore | None = None,
                offsets: MemoryOffsetStore | None = None, target: TargetState = TargetState.STARTED,
                interval_ms: int = 1000) -> WorkerSourceTask:
    backend = backend or MemoryBackend(clock)
    offsets = offsets if offsets is not None else MemoryOffsetStore()
    return WorkerSourceTask(task=task, producer=backend.producer(), admin=None, offset_store=offsets,
                            offset_reader=ConnectorOffsetReader(offsets, "src"),
                            committer=committer or SourceTaskOffsetCommitter(clock),
                            **_common("src", status or RecordingStatus(), clock, target, interval_ms, None,
                                      SourceConnectorConfig))


def sink_task(task: SinkTask, clock: FakeClock, backend: MemoryBackend, status: StatusStore | None = None,
              target: TargetState = TargetState.STARTED, interval_ms: int = 1000,
              connector_config: Mapping[str, Any] | None = None) -> WorkerSinkTask:
    return WorkerSinkTask(task=task, consumer=backend.consumer("connect-snk"),
                          **_common("snk", status or RecordingStatus(), clock, target, interval_ms,
                                    connector_config, SinkConnectorConfig))


def streaming_task(task: StreamingSinkTask, clock: FakeClock, status: StatusStore | None = None,
                   target: TargetState = TargetState.STARTED, state_dir: str = "state") -> WorkerStreamingTask:
    common = _common("stream", status or RecordingStatus(), clock, target, 1000, None, SinkConnectorConfig,
                     streaming_state_dir=state_dir, embedded_log_dir="data")
    return WorkerStreamingTask(task=task, **common)


def append(backend: MemoryBackend, topic: str, *values: str) -> None:
    backend.log.append(topic, 0, [(None, v.encode(), 0) for v in values])
