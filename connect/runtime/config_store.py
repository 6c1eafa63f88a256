"""Connector configs and target states in a compacted config topic, in Kafka Connect's formats.

Keys: ``connector-<c>`` -> ``{"properties": {...}}``, ``task-<c>-<n>`` ->
``{"properties": {...}}``, ``commit-<c>`` -> ``{"tasks": N}`` (task configs
apply only once their commit record is read), ``target-state-<c>`` ->
``{"state": ..., "state.v2": ...}``. A delete writes tombstones for
``connector-<c>`` and ``target-state-<c>``.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Mapping

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogBackend, LogError, NewTopic
from connect.runtime.herder import TargetState

__all__ = ["ConfigSnapshot", "ConfigTopicStore"]

log = logging.getLogger(__name__)

_TASK_KEY = re.compile(r"^task-(.+)-(\d+)$")


def _dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class ConfigSnapshot:
    """What the config topic says, as of the last record read."""

    def __init__(self) -> None:
        self.connectors: dict[str, dict[str, str]] = {}
        self.target_states: dict[str, TargetState] = {}
        self.task_configs: dict[str, list[dict[str, str]]] = {}
        self._pending_tasks: dict[str, dict[int, dict[str, str]]] = {}
        self.offset = 0

    def apply(self, key: str, value: dict | None) -> None:
        if key.startswith("connector-"):
            name = key[len("connector-"):]
            if value is None:
                self.connectors.pop(name, None)
                self.task_configs.pop(name, None)
                self._pending_tasks.pop(name, None)
            else:
                self.connectors[name] = {str(k): str(v) for k, v in value.get("properties", {}).items()}
        elif key.startswith("target-state-"):
            name = key[len("target-state-"):]
            if value is None:
                self.target_states.pop(name, None)
            else:
                state = value.get("state.v2") or value.get("state") or "STARTED"
                self.target_states[name] = TargetState(state)
        elif key.startswith("commit-"):
            name = key[len("commit-"):]
            count = int((value or {}).get("tasks", 0))
            pending = self._pending_tasks.pop(name, {})
            self.task_configs[name] = [pending.get(i, {}) for i in range(count)]
        elif (m := _TASK_KEY.match(key)) is not None and value is not None:
            self._pending_tasks.setdefault(m.group(1), {})[int(m.group(2))] = {
                str(k): str(v) for k, v in value.get("properties", {}).items()
            }

    def target_state(self, name: str) -> TargetState:
        return self.target_states.get(name, TargetState.STARTED)


class ConfigTopicStore:
    """Reads the whole config topic at start and writes each change durably before returning."""

    def __init__(self, backend: LogBackend, topic: str, replication_factor: int = -1) -> None:
        self.backend = backend
        self.topic = topic
        self.replication_factor = replication_factor
        self.snapshot = ConfigSnapshot()
        self._lock = threading.Lock()
        self._producer = None

    def start(self, timeout: float = 30.0) -> None:
        admin = self.backend.admin()
        try:
            admin.create_topic(NewTopic(self.topic, 1, self.replication_factor, {"cleanup.policy": "compact"}),
                               exist_ok=True)
            policy = admin.describe_topic(self.topic).configs.get("cleanup.policy", "compact")
            if "compact" not in policy:
                raise LogError(f"Topic '{self.topic}' supplied via the 'config.storage.topic' property is required "
                               f"to have 'cleanup.policy=compact', but found '{policy}'")
        finally:
            admin.close()
        self._read_to_end(timeout)
        self._producer = self.backend.producer({"acks": "all"})
        log.info("Read %d connector config(s) from config topic '%s'", len(self.snapshot.connectors), self.topic)

    def _read_to_end(self, timeout: float) -> None:
        consumer = self.backend.consumer(None, {"auto.offset.reset": "earliest", "enable.auto.commit": "false"})
        tp = TopicPartition(self.topic, 0)
        try:
            consumer.assign([tp])
            consumer.seek_to_beginning([tp])
            end = consumer.end_offsets([tp])[tp]
            deadline = time.monotonic() + timeout
            while consumer.position(tp) < end:
                if time.monotonic() > deadline:
                    raise LogError(f"Timed out reading config topic '{self.topic}' to offset {end}")
                for batch in consumer.poll(0.5, 10000):
                    for key, value in zip(batch.keys, batch.values, strict=True):
                        if key is not None:
                            self.snapshot.apply(key.decode("utf-8"), None if value is None else json.loads(value))
            self.snapshot.offset = end
        finally:
            consumer.close()

    def stop(self) -> None:
        if self._producer is not None:
            self._producer.close(5.0)
            self._producer = None

    def _write(self, records: list[tuple[str, object | None]]) -> None:
        assert self._producer is not None, "ConfigTopicStore.start() was not called"
        with self._lock:
            for key, value in records:
                self._producer.send(self.topic, None if value is None else _dumps(value), key=key.encode("utf-8"),
                                    partition=0)
            if self._producer.flush(30.0):
                raise LogError(f"Timed out writing to config topic '{self.topic}'")
            for key, value in records:
                self.snapshot.apply(key, value)  # type: ignore[arg-type]

    # --- writes ---------------------------------------------------------------------------------
    def put_connector_config(self, name: str, config: Mapping[str, str], target: TargetState | None = None) -> None:
        records: list[tuple[str, object | None]] = [(f"connector-{name}", {"properties": dict(config)})]
        if target is not None:
            records.append(self._target_record(name, target))
        self._write(records)

    def put_target_state(self, name: str, target: TargetState) -> None:
        self._write([self._target_record(name, target)])

    @staticmethod
    def _target_record(name: str, target: TargetState) -> tuple[str, object]:
        legacy = "PAUSED" if target is TargetState.STOPPED else target.value
        return f"target-state-{name}", {"state": legacy, "state.v2": target.value}

    def put_task_configs(self, name: str, configs: list[Mapping[str, str]]) -> None:
        records: list[tuple[str, object | None]] = [
            (f"task-{name}-{i}", {"properties": dict(cfg)}) for i, cfg in enumerate(configs)
        ]
        records.append((f"commit-{name}", {"tasks": len(configs)}))
        self._write(records)

    def remove_connector(self, name: str) -> None:
        self._write([(f"connector-{name}", None), (f"target-state-{name}", None)])
