"""In-memory collaborators for the runtime unit tests: a status store that keeps each task's history, builders
of worker tasks, and plugins.

The clock, the in-memory log backend and the offset store ship in ``connect.testing`` (for plugin authors
too); they are imported here so the runtime tests take everything from one module.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from connect.api.connector import (
    SinkTask,
    SourceTask,
    StreamingSinkTask,
)
from connect.runtime.connector_config import ConnectorConfig, SinkConnectorConfig, SourceConnectorConfig
from connect.runtime.error_handler import ErrorHandler
from connect.runtime.herder import ConnectorTaskId, State, Status, TargetState
from connect.runtime.offset_committer import SourceTaskOffsetCommitter
from connect.runtime.sink_task import WorkerSinkTask
from connect.runtime.source_task import WorkerSourceTask
from connect.runtime.storage.offsets import ConnectorOffsetReader
from connect.runtime.storage.status import StatusStore
from connect.runtime.streaming_task import WorkerStreamingTask
from connect.runtime.worker_config import WorkerConfig
from connect.runtime.worker_task import TaskConverters
from connect.testing import (  # noqa: F401 - the runtime tests take these from here, as before
    FakeClock,
    MemoryAdmin,
    MemoryBackend,
    MemoryConsumer,
    MemoryLog,
    MemoryOffsetStore,
    MemoryProducer,
)
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
