"""The connectors and tasks the group assigned to this worker, and starting and stopping them on the Worker.

Only the herder's tick thread calls in here, so nothing is locked beyond reading the sets from REST threads
(``owns_*`` take a snapshot). A connector is started from the config topic's view at that moment; a task
from its committed task config. Source tasks read the offsets topic to its end first, so a task that moved
from another worker resumes where that worker's last committed offset left it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable

from connect.runtime.herder import ConnectorTaskId, TargetState
from connect.runtime.storage.config_store import ConfigSnapshot
from connect.runtime.worker import Worker

__all__ = ["AssignedWork"]

log = logging.getLogger(__name__)


class AssignedWork:
    def __init__(self, worker: Worker, on_reconfigure: Callable[[str], None],
                 refresh_offsets: Callable[[], None]) -> None:
        self.worker = worker
        self._on_reconfigure = on_reconfigure
        self._refresh_offsets = refresh_offsets
        self._lock = threading.Lock()
        self._connectors: set[str] = set()
        self._tasks: set[ConnectorTaskId] = set()

    # --- what runs here ------------------------------------------------------------------------------
    @property
    def connectors(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._connectors)

    @property
    def tasks(self) -> frozenset[ConnectorTaskId]:
        with self._lock:
            return frozenset(self._tasks)

    def owns_connector(self, name: str) -> bool:
        with self._lock:
            return name in self._connectors

    def owns_task(self, task: ConnectorTaskId) -> bool:
        with self._lock:
            return task in self._tasks

    def tasks_of(self, name: str) -> list[ConnectorTaskId]:
        with self._lock:
            return sorted(t for t in self._tasks if t.connector == name)

    # --- starting and stopping -------------------------------------------------------------------------
    def start(self, connectors: Iterable[str], tasks: Iterable[ConnectorTaskId], snapshot: ConfigSnapshot) -> list[str]:
        """Start newly assigned work; returns the connectors that started and need task configs."""
        started = []
        for name in sorted(connectors):
            if name not in snapshot.connectors:
                continue  # deleted since the leader assigned it; the next rebalance takes it back
            with self._lock:
                self._connectors.add(name)
            if self.start_connector(name, snapshot):
                started.append(name)
        tasks = sorted(t for t in tasks if t.connector in snapshot.connectors)
        with self._lock:
            self._tasks.update(tasks)
        if tasks:
            self._refresh_offsets()
        for task in tasks:
            self.start_task(task, snapshot)
        return started

    def start_connector(self, name: str, snapshot: ConfigSnapshot) -> bool:
        """True when the connector runs and is not STOPPED: its task configs must be (re)computed."""
        config = snapshot.connectors.get(name)
        if config is None:
            log.info("[%s] Connector was deleted before it could start here", name)
            return False
        target = snapshot.target_state(name)
        log.info("[%s] Starting connector (target state %s)", name, target.value)
        return self.worker.start_connector(name, config, target, self._on_reconfigure) and (
            target is not TargetState.STOPPED)

    def start_task(self, task: ConnectorTaskId, snapshot: ConfigSnapshot) -> None:
        config = snapshot.connectors.get(task.connector)
        task_configs = snapshot.task_configs.get(task.connector, [])
        target = snapshot.target_state(task.connector)
        if config is None or task.task >= len(task_configs) or target is TargetState.STOPPED:
            log.info("[%s] Task %s has no config (connector deleted, stopped or reconfigured); not started",
                     task.connector, task)
            return
        log.info("[%s] Starting task %s", task.connector, task)
        self.worker.start_task(task, config, task_configs[task.task], target)

    def stop(self, connectors: Collection[str], tasks: Collection[ConnectorTaskId], report: bool = True) -> None:
        """Stop work taken away from this worker (tasks first: they commit their offsets as they stop);
        ``report=False``: the stopping tasks write no status (the work is the group's other members' now)."""
        with self._lock:
            self._connectors.difference_update(connectors)
            self._tasks.difference_update(tasks)
        if tasks:
            log.info("Stopping %d task(s): %s", len(tasks), ", ".join(map(str, sorted(tasks))))
            self.worker.stop_tasks(sorted(tasks), report=report)
        for name in sorted(connectors):
            self.worker.stop_connector(name)

    def stop_all(self) -> None:
        self.stop(self.connectors, self.tasks)

    def restart_connector(self, name: str, snapshot: ConfigSnapshot) -> bool:
        self.worker.stop_connector(name)
        return self.start_connector(name, snapshot)

    def restart_tasks(self, tasks: Collection[ConnectorTaskId], snapshot: ConfigSnapshot) -> None:
        tasks = sorted(tasks)
        self.worker.stop_tasks(tasks)
        if tasks:
            self._refresh_offsets()
        for task in tasks:
            self.start_task(task, snapshot)
