"""The thread and lifecycle shared by WorkerSourceTask and WorkerSinkTask."""

from __future__ import annotations

import abc
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from connect.api.converter import Converter, HeaderConverter
from connect.api.topic_partition import TopicPartition
from connect.log.api import ClientStats
from connect.runtime.clock import SYSTEM_CLOCK, Clock
from connect.runtime.connector_config import ConnectorConfig
from connect.runtime.error_handler import ErrorHandler, Stage, TaskStoppingError
from connect.runtime.herder import ConnectorTaskId, State, Status, TargetState, format_trace
from connect.runtime.storage.status import StatusStore
from connect.runtime.subscribe_barrier import SiblingGate
from connect.runtime.transformation_chain import TransformationChain
from connect.runtime.worker_config import WorkerConfig

__all__ = ["TaskConverters", "WorkerTask"]

log = logging.getLogger(__name__)


class TaskConverters:
    def __init__(self, key: Converter, value: Converter, header: HeaderConverter) -> None:
        self.key = key
        self.value = value
        self.header = header

    def for_stage(self, stage: Stage) -> Converter | HeaderConverter | None:
        """The converter a converter stage runs; None for the other stages."""
        if stage is Stage.KEY_CONVERTER:
            return self.key
        if stage is Stage.VALUE_CONVERTER:
            return self.value
        if stage is Stage.HEADER_CONVERTER:
            return self.header
        return None

    def close(self) -> None:
        for conv in (self.key, self.value, self.header):
            try:
                conv.close()
            except Exception:  # closing must not mask the task's own outcome
                log.exception("Error closing converter %s", type(conv).__qualname__)


class WorkerTask(abc.ABC):
    """Runs one task in its own named thread; follows the connector's target state.

    ``connector_config`` and ``worker_config`` are parsed once by the Worker; a task reads its settings
    only through their typed properties. ``task`` is the plugin's task, set by each kind of WorkerTask.
    """

    task: Any
    kind = "source"  # as metrics name it: "source" or "sink"
    is_sink = False  # a consumer-fed sink task, with committed offsets (and so a lag)
    offset_commits = 0  # a sink task's completed commits

    def __init__(
        self,
        task_id: ConnectorTaskId,
        worker_id: str,
        connector_config: ConnectorConfig,
        task_config: Mapping[str, str],
        converters: TaskConverters,
        chain: TransformationChain | None,
        errors: ErrorHandler,
        status: StatusStore,
        target_state: TargetState,
        worker_config: WorkerConfig,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.id = task_id
        self.clock = clock
        self.worker_id = worker_id
        self.connector_config = connector_config
        self.task_config = dict(task_config)
        self.converters = converters
        self.chain = chain
        self.errors = errors
        self.status = status
        self.worker_config = worker_config
        self._stopping = errors.stop_event
        self._state_changed = threading.Condition()
        self._target = target_state
        self._failed = False
        self._cancelled = False
        self._reported: State | None = None  # the state this thread last reported
        self._last_summary: dict[str, int | float] | None = None
        self._thread = threading.Thread(target=self._run, name=f"task-{task_id}", daemon=True)
        self.on_exit: Callable[[], None] | None = None  # the last thing the task thread does
        # a sink task's siblings started with it, which it waits for before it subscribes (set by the Worker)
        self.siblings: SiblingGate | None = None
        self.offset_flush_interval = worker_config.offset_flush_interval_ms / 1000
        self.offset_flush_timeout = worker_config.offset_flush_timeout_ms / 1000

    # --- lifecycle, called by the Worker -------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the task to stop; returns at once. ``await_stop`` waits."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        with self._state_changed:
            self._state_changed.notify_all()
        self._signal_stop()

    def await_stop(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def cancel(self) -> None:
        """This task reports no state any more (as Kafka Connect's WorkerTask.cancel): it was given up for
        stopped, and may run on another worker by the time its thread ends, so an UNASSIGNED or FAILED from
        here would hide that worker's state."""
        self._cancelled = True

    @property
    def is_cancelled(self) -> bool:
        return self._cancelled

    def transition_to(self, state: TargetState) -> None:
        with self._state_changed:
            self._target = state
            self._state_changed.notify_all()
        self._signal_state_change()

    @property
    def target_state(self) -> TargetState:
        return self._target

    @property
    def is_paused(self) -> bool:
        return self._target is TargetState.PAUSED

    @property
    def is_stopping(self) -> bool:
        return self._stopping.is_set()

    def metrics(self) -> dict[str, int | float]:
        """Record counters of this task (records processed, then the error counters), for status and logs."""
        return {**self.record_counts(), **self.errors.metrics.as_dict()}

    def client_stats(self) -> tuple[ClientStats, ...]:
        """Traffic of the log clients this task owns (its producer or consumer, its dead letter queue's)."""
        dlq = self.errors.dlq
        stats = dlq.producer.stats() if dlq is not None else None
        return (stats,) if stats is not None else ()

    def committed_offsets(self) -> dict[TopicPartition, int]:
        """The offsets a sink task has committed, by partition (other tasks: none)."""
        return {}

    def record_counts(self) -> dict[str, int]:
        """Records this task moved; each kind of task names its own counters."""
        return {}

    def metrics_signature(self) -> tuple[int | float, ...]:
        """The values of ``metrics()`` in order, without building its dicts: a status view made at one
        signature stays right until the signature changes (status listings read it per task per request)."""
        return (*self.record_signature(), *self.errors.metrics.signature())

    def record_signature(self) -> tuple[int, ...]:
        """The values of ``record_counts()`` in order; busy task kinds override it with a plain tuple."""
        return tuple(self.record_counts().values())

    def log_metrics_summary(self) -> None:
        """One INFO line with the task's counters, when they changed since the last one (called at commits)."""
        counts = self.metrics()
        if counts == self._last_summary:
            return
        self._last_summary = counts
        log.info("%s Record counts of connector %s task %d: %s", self, self.id.connector, self.id.task,
                 ", ".join(f"{k}={v}" for k, v in counts.items()))

    # --- to implement ----------------------------------------------------------------------
    @abc.abstractmethod
    def initialize_and_start(self) -> None: ...

    @abc.abstractmethod
    def execute(self) -> None: ...

    @abc.abstractmethod
    def close(self) -> None:
        """Release everything; called once in the task thread whatever happened."""

    def _signal_stop(self) -> None:  # noqa: B027 - optional hook
        """Wake the task thread out of a blocking plugin call, from the stopping thread."""

    def _signal_state_change(self) -> None:  # noqa: B027 - optional hook
        pass

    # --- helpers -------------------------------------------------------------------------------
    def _plugin_class(self, stage: Stage) -> str:
        """The class a failure at ``stage`` is reported against: the transform that raised, the stage's
        converter, or the task itself."""
        if stage is Stage.TRANSFORMATION and self.chain is not None and self.chain.failed_stage is not None:
            return type(self.chain.failed_stage.transform).__qualname__
        conv = self.converters.for_stage(stage)
        return type(conv).__qualname__ if conv is not None else type(self.task).__qualname__

    def _close_dlq_producer(self) -> None:
        if self.errors.dlq is not None:
            try:
                self.errors.dlq.producer.close(self.offset_flush_timeout)
            except Exception:  # closing must not mask the task's own outcome
                log.exception("%s Error closing the dead letter queue producer", self)

    def await_unpaused(self) -> bool:
        """Block while paused; False when the task should stop. Called on the task thread between two
        polls/puts, so the PAUSED it reports means no record moves until RUNNING is reported again."""
        if not self.is_paused or self.is_stopping:
            return not self.is_stopping
        self.report_paused()
        with self._state_changed:
            while self._target is TargetState.PAUSED and not self._stopping.is_set():
                self._state_changed.wait(1.0)
        if self._stopping.is_set():
            return False
        self.report_running()
        return True

    def report_paused(self) -> None:
        """The task thread has stopped moving records (the Worker never reports this for it)."""
        if self._reported is not State.PAUSED:
            self._set_status(State.PAUSED)
            log.info("%s Task paused", self)

    def report_running(self) -> None:
        """The task thread moves records again after a pause."""
        if self._reported is State.PAUSED:
            self._set_status(State.RUNNING)
            log.info("%s Task resumed", self)

    def _set_status(self, state: State, trace: str | None = None) -> None:
        if self._cancelled:
            return
        self._reported = state
        self.status.put_task(self.id, Status(state, self.worker_id, trace))

    def _run(self) -> None:
        log.info("%s Starting task", self)
        try:
            self.initialize_and_start()
            if not self._stopping.is_set():
                self._set_status(State.PAUSED if self.is_paused else State.RUNNING)
                log.info("%s Task started, state %s", self, "PAUSED" if self.is_paused else "RUNNING")
                self.execute()
        except TaskStoppingError as exc:
            log.info("%s %s", self, exc)
        except BaseException as exc:  # any escape fails the task with its trace
            self._failed = True
            log.error("%s Task threw an uncaught and unrecoverable exception. Task is being killed and will "
                      "not recover until manually restarted: %s", self, exc, exc_info=exc)
            self._set_status(State.FAILED, format_trace(exc))
        finally:
            started = self.clock.monotonic()
            try:
                self.close()
            except Exception:
                log.exception("%s Error while closing task", self)
            self.converters.close()
            if self.chain is not None:
                self.chain.close()
            if not self._failed:
                self._set_status(State.UNASSIGNED)
            self.log_metrics_summary()
            log.info("%s Task stopped (close took %.0f ms)", self, (self.clock.monotonic() - started) * 1000)
            if self.on_exit is not None:
                self.on_exit()

    def __str__(self) -> str:
        return f"{type(self).__name__}{{id={self.id}}}"
