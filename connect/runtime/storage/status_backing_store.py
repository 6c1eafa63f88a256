"""Connector and task statuses of the whole cluster, in ``status.storage.topic``.

Each worker writes the statuses of what it runs and reads everyone's, so any worker answers a status
request for any connector. Records as Kafka Connect's: ``status-connector-<c>`` and
``status-task-<c>-<n>`` -> ``{"state", "trace", "worker_id", "generation"}``, a tombstone once deleted,
and ``status-topic-<topic>:connector-<c>`` for the topics a connector used. A worker's UNASSIGNED or FAILED
report of work it no longer owns must not hide the new owner's RUNNING: those writes only go through over
a status from the same worker or an older generation (Kafka Connect's "safe" writes).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time

from connect.log.api import ClientStats, LogBackend, LogError
from connect.runtime.herder import ConnectorTaskId, State, Status
from connect.runtime.storage.kafka_based_log import KafkaBasedLog, ensure_internal_topic
from connect.runtime.storage.status import StatusStore

__all__ = ["KafkaStatusBackingStore"]

log = logging.getLogger(__name__)

_TASK_KEY = re.compile(r"^status-task-(.+)-(\d+)$")
_TOPIC_KEY = re.compile(r"^status-topic-(.+):connector-(.+)$")
_SAFE_STATES = (State.UNASSIGNED, State.FAILED)


def _dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class KafkaStatusBackingStore(StatusStore):
    def __init__(self, backend: LogBackend, topic: str, worker_id: str, *, partitions: int = 5,
                 replication_factor: int = 3, client_id: str | None = None) -> None:
        super().__init__()
        self.backend = backend
        self.topic = topic
        self.worker_id = worker_id
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.generation = 0
        self._log = KafkaBasedLog(backend, topic, self._on_record, client_id=client_id)
        self._send_lock = threading.Lock()

    def start(self, timeout: float = 60.0) -> None:
        partitions = ensure_internal_topic(self.backend, self.topic, "status.storage.topic", self.partitions,
                                           self.replication_factor)
        self._log.start(partitions, timeout)

    def stop(self) -> None:
        try:
            with self._send_lock:
                self._log.flush(10.0)
        except LogError as exc:
            log.warning("Status writes not acknowledged at shutdown: %s", exc)
        self._log.stop()

    def client_stats(self) -> tuple[ClientStats, ...]:
        return self._log.client_stats()

    def refresh(self, timeout: float = 10.0) -> bool:
        """Apply every status written before this call (other workers' included); False on timeout."""
        return self._log.read_to_end(timeout)

    def set_generation(self, generation: int) -> None:
        self.generation = generation

    # --- writes: this worker's statuses --------------------------------------------------------------------
    def put_connector(self, name: str, status: Status) -> None:
        status = self._stamped(status)
        if status.state in _SAFE_STATES and not self._may_overwrite(self.connector(name), status):
            return
        super().put_connector(name, status)
        self._send(f"status-connector-{name}", status)

    def put_task(self, task: ConnectorTaskId, status: Status) -> None:
        status = self._stamped(status)
        if status.state in _SAFE_STATES and not self._may_overwrite(self.task(task), status):
            return
        super().put_task(task, status)
        self._send(f"status-task-{task.connector}-{task.task}", status)

    def remove_task(self, task: ConnectorTaskId) -> None:
        super().remove_task(task)
        self._send(f"status-task-{task.connector}-{task.task}", None)

    def remove_connector(self, name: str) -> None:
        tasks = list(self.tasks(name))
        topics = self.topics(name)
        super().remove_connector(name)
        self._send(f"status-connector-{name}", None)
        for task in tasks:
            self._send(f"status-task-{task.connector}-{task.task}", None)
        for topic in topics:
            self._send(f"status-topic-{topic}:connector-{name}", None)

    def add_topic(self, connector: str, topic: str) -> None:
        if topic in self.topics(connector):
            return
        super().add_topic(connector, topic)
        record = {"topic": {"name": topic, "connector": connector, "task": None,
                            "discoverTimestamp": int(time.time() * 1000)}}
        self._send_raw(f"status-topic-{topic}:connector-{connector}", _dumps(record))

    def reset_topics(self, connector: str) -> None:
        topics = self.topics(connector)
        super().reset_topics(connector)
        for topic in topics:
            self._send(f"status-topic-{topic}:connector-{connector}", None)

    def _stamped(self, status: Status) -> Status:
        if status.generation or not self.generation:
            return status
        return Status(status.state, status.worker_id, status.trace, self.generation)

    @staticmethod
    def _may_overwrite(previous: Status | None, status: Status) -> bool:
        return previous is None or previous.worker_id == status.worker_id or previous.generation <= status.generation

    def _send(self, key: str, status: Status | None) -> None:
        value = None if status is None else _dumps({"state": status.state.value, "trace": status.trace,
                                                    "worker_id": status.worker_id, "generation": status.generation})
        self._send_raw(key, value)

    def _send_raw(self, key: str, value: bytes | None) -> None:
        # not waited for, as in Kafka Connect: a status is a report, and the task must not stall on it
        try:
            with self._send_lock:
                self._log.send(key.encode("utf-8"), value)
        except LogError as exc:
            log.warning("Could not write status '%s' to topic '%s': %s", key, self.topic, exc)

    # --- reads: everyone's statuses, as the topic has them ----------------------------------------------------
    def _on_record(self, key: bytes | None, value: bytes | None, partition: int, offset: int) -> None:
        if key is None:
            return
        name = key.decode("utf-8", "replace")
        try:
            body = None if value is None else json.loads(value)
        except ValueError:
            log.warning("Status topic '%s': record '%s' is not JSON; ignored", self.topic, name)
            return
        if name.startswith("status-connector-"):
            connector = name[len("status-connector-"):]
            status = self._parse(body)
            with self._lock:
                if status is None:
                    self._connectors.pop(connector, None)
                elif self._stale(self._connectors.get(connector), status, name):
                    return
                else:
                    self._connectors[connector] = status
                self._touch(connector)
        elif (m := _TASK_KEY.match(name)) is not None:
            task = ConnectorTaskId(m.group(1), int(m.group(2)))
            status = self._parse(body)
            with self._lock:
                if status is None:
                    self._tasks.get(task.connector, {}).pop(task, None)
                elif self._stale(self._tasks.get(task.connector, {}).get(task), status, name):
                    return
                else:
                    self._tasks.setdefault(task.connector, {})[task] = status
                self._touch(task.connector)
        elif (m := _TOPIC_KEY.match(name)) is not None:
            topic, connector = m.group(1), m.group(2)
            with self._lock:
                if body is None:
                    self._topics.get(connector, set()).discard(topic)
                else:
                    self._topics.setdefault(connector, set()).add(topic)

    def _stale(self, current: Status | None, status: Status, key: str) -> bool:
        """A FAILED or UNASSIGNED report that the writes' safe rule would have refused, had its worker known the
        current status: written by a worker cut off from the cluster (say, a task whose commit failed in the cut)
        and delivered once its link was back, after the new owner's. Every worker reads the topic in the same
        order, so all of them drop it."""
        if status.state not in _SAFE_STATES or self._may_overwrite(current, status):
            return False
        assert current is not None
        log.info("Status topic '%s': %s %s from %s (generation %d) is older than %s from %s (generation %d); "
                 "ignored", self.topic, key, status.state.value, status.worker_id, status.generation,
                 current.state.value, current.worker_id, current.generation)
        return True

    def _parse(self, body: object) -> Status | None:
        if not isinstance(body, dict):
            return None
        try:
            state = State(str(body.get("state")))
        except ValueError:
            return None
        if state is State.DESTROYED:
            return None
        trace = body.get("trace")
        return Status(state, str(body.get("worker_id") or ""), None if trace is None else str(trace),
                      int(body.get("generation") or 0))
