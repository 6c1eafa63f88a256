"""Automatic restart of FAILED tasks with a growing delay (worker settings ``task.restart.*``).

Kafka Connect leaves a FAILED task for an operator; Strimzi and other tools restart it with backoff. The
restarter listens to the status store: a task of this worker reported FAILED is restarted after
``initial.delay.ms × multiplier^tries`` (at most ``max.delay.ms``), ``max.tries`` times; after that it
stays FAILED with its last trace. A task that ran longer than ``max.delay.ms`` since its last automatic
restart counts from zero again. One timer thread serves every task.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable

import attrs

from connect.runtime.clock import SYSTEM_CLOCK, Clock
from connect.runtime.herder import ConnectorTaskId, State, Status
from connect.runtime.metrics_snapshot import TaskRestartInfo
from connect.runtime.storage.status import StatusStore
from connect.runtime.worker_config import WorkerConfig

__all__ = ["TaskRestartPolicy", "TaskAutoRestarter"]

log = logging.getLogger(__name__)


@attrs.frozen
class TaskRestartPolicy:
    initial_delay_ms: int
    max_delay_ms: int
    multiplier: float
    max_tries: int

    @classmethod
    def from_worker_config(cls, config: WorkerConfig) -> TaskRestartPolicy:
        return cls(config.task_restart_initial_delay_ms, config.task_restart_max_delay_ms,
                   config.task_restart_multiplier, config.task_restart_max_tries)

    def delay_ms(self, tries: int) -> int:
        """The delay before restart number ``tries + 1``."""
        return int(min(self.max_delay_ms, self.initial_delay_ms * self.multiplier ** tries))


@attrs.define
class _Entry:
    tries: int = 0
    due: float | None = None  # monotonic time of the planned restart
    due_ms: int | None = None  # the same as epoch milliseconds, for status and metrics
    last_restart: float = 0.0


class TaskAutoRestarter:
    """Plans and makes the automatic restarts of the FAILED tasks of one worker."""

    def __init__(self, worker_id: str, policy: TaskRestartPolicy, status: StatusStore,
                 restart: Callable[[ConnectorTaskId], None], clock: Clock = SYSTEM_CLOCK) -> None:
        self.worker_id = worker_id
        self.policy = policy
        self.status = status
        self._restart = restart
        self._clock = clock
        self._cond = threading.Condition()
        self._entries: dict[ConnectorTaskId, _Entry] = {}
        self._heap: list[tuple[float, ConnectorTaskId]] = []
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="task-auto-restart", daemon=True)
        status.listeners.append(self._on_status)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(10)

    def info(self, task: ConnectorTaskId) -> TaskRestartInfo | None:
        with self._cond:
            entry = self._entries.get(task)
            if entry is None:
                return None
            return TaskRestartInfo(entry.tries, self.policy.max_tries, entry.due_ms)

    def forget(self, connector: str) -> None:
        """The connector was deleted or reconfigured: its tasks start counting again."""
        with self._cond:
            for tid in [t for t in self._entries if t.connector == connector]:
                del self._entries[tid]

    # --- status listener -----------------------------------------------------------------------
    def _on_status(self, connector: str, task: ConnectorTaskId | None, status: Status | None) -> None:
        if task is None or status is None or status.state is not State.FAILED or status.worker_id != self.worker_id:
            return
        now = self._clock.monotonic()
        with self._cond:
            if self._stopped:
                return
            entry = self._entries.setdefault(task, _Entry())
            if entry.due is not None:
                return  # already planned
            if entry.tries and now - entry.last_restart > self.policy.max_delay_ms / 1000:
                entry.tries = 0  # it ran well for a long while: a new run of failures
            if entry.tries >= self.policy.max_tries:
                log.warning("[%s] Task %s FAILED again after %d automatic restarts; leaving it FAILED",
                            connector, task, entry.tries)
                return
            delay = self.policy.delay_ms(entry.tries) / 1000
            entry.due = now + delay
            entry.due_ms = int((time.time() + delay) * 1000)
            heapq.heappush(self._heap, (entry.due, task))
            self._cond.notify_all()
        log.info("[%s] Task %s FAILED; automatic restart %d of %d in %.1f s", connector, task, entry.tries + 1,
                 self.policy.max_tries, delay)

    # --- timer thread --------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    now = self._clock.monotonic()
                    if self._heap and self._heap[0][0] <= now:
                        break
                    self._cond.wait(self._heap[0][0] - now if self._heap else None)
                if self._stopped:
                    return
                _, task = heapq.heappop(self._heap)
                entry = self._entries.get(task)
                if entry is None or entry.due is None:
                    continue  # forgotten meanwhile
                entry.due = entry.due_ms = None
                entry.tries += 1
                entry.last_restart = self._clock.monotonic()
                tries = entry.tries
            current = self.status.task(task)
            if current is None or current.state is not State.FAILED:
                log.info("[%s] Task %s is no longer FAILED; automatic restart dropped", task.connector, task)
                continue
            log.info("[%s] Automatic restart %d of %d of task %s", task.connector, tries, self.policy.max_tries,
                     task)
            try:
                self._restart(task)
            except Exception as exc:  # the connector went away meanwhile, say
                log.warning("[%s] Automatic restart of task %s failed: %s", task.connector, task, exc)
