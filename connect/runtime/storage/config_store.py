"""Connector configs and target states in a compacted config topic, in Kafka Connect's formats.

Keys: ``connector-<c>`` -> ``{"properties": {...}}``, ``task-<c>-<n>`` ->
``{"properties": {...}}``, ``commit-<c>`` -> ``{"tasks": N}`` (task configs
apply only once their commit record is read), ``target-state-<c>`` ->
``{"state": ..., "state.v2": ...}``. A delete writes tombstones for
``connector-<c>`` and ``target-state-<c>``. Headrace adds
``standalone-worker`` -> ``{"worker.id", "rest.worker.id"}``: the one
standalone worker whose configs these are; another worker refuses the topic.

A write returns only once every record of it is acknowledged by the log;
until then, and if it fails, the snapshot (what the herder runs from) is
unchanged. PASSWORD values are stored encrypted (see config_encryption).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence

from connect.api.errors import ConnectException
from connect.api.topic_partition import TopicPartition
from connect.log.api import LogBackend, LogError, NewTopic, Producer
from connect.runtime.config_encryption import ConfigEncryption
from connect.runtime.herder import TargetState

__all__ = ["CLUSTER_KEY", "ConfigRecordCodec", "ConfigSnapshot", "ConfigStoreOwnerError", "ConfigTopicStore", "ConfigWriteError", "RecordTooLargeError"]

log = logging.getLogger(__name__)

_TASK_KEY = re.compile(r"^task-(.+)-(\d+)$")
OWNER_KEY = "standalone-worker"
# Headrace's record of the distributed cluster whose config topic this is: {"group.id": ...}
CLUSTER_KEY = "headrace-cluster"
# Kafka's default max.message.bytes, and what a batch of one record adds to key and value
_DEFAULT_MAX_MESSAGE_BYTES = 1048588
_RECORD_OVERHEAD = 128


class ConfigWriteError(LogError):
    """A config-topic write was not acknowledged; nothing of it took effect."""


class RecordTooLargeError(ConfigWriteError):
    """A config record is larger than the config topic accepts."""


class ConfigStoreOwnerError(ConnectException):
    """The config topic belongs to another standalone worker."""


def _dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class ConfigRecordCodec:
    """Config-topic values as bytes and back, with PASSWORD values encrypted when there is a key."""

    def __init__(self, topic: str, encryption: ConfigEncryption | None) -> None:
        self.topic = topic
        self.encryption = encryption

    @staticmethod
    def encode(value: object) -> bytes:
        return _dumps(value)

    def decode(self, key: str, raw: bytes) -> dict:
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise LogError(f"Config topic '{self.topic}': record '{key}' is not JSON: {exc}") from None
        props = value.get("properties") if isinstance(value, dict) else None
        if isinstance(props, dict) and self.encryption is not None:
            value["properties"] = self.encryption.decrypt_values(props, f"config topic '{self.topic}', record '{key}'")
        elif isinstance(props, dict) and any(ConfigEncryption.is_encrypted(v) for v in props.values()):
            raise LogError(f"Config topic '{self.topic}': record '{key}' holds encrypted values and this worker "
                           "has no config.storage.encryption key")
        return value if isinstance(value, dict) else {}

    def encrypted(self, config: Mapping[str, str], secret_keys: Iterable[str]) -> dict[str, str]:
        if self.encryption is None:
            return dict(config)
        return self.encryption.encrypt_values(config, secret_keys)


class ConfigSnapshot:
    """What the config topic says, as of the last record read."""

    def __init__(self) -> None:
        self.connectors: dict[str, dict[str, str]] = {}
        self.target_states: dict[str, TargetState] = {}
        self.task_configs: dict[str, list[dict[str, str]]] = {}
        self._pending_tasks: dict[str, dict[int, dict[str, str]]] = {}
        self.owner: dict[str, str] | None = None
        self.cluster: str | None = None  # the group.id of the distributed cluster that claimed the topic
        self.inconsistent: set[str] = set()  # connectors whose committed task configs are incomplete
        # KIP-618: the task count each connector's exactly-once tasks were last fenced at, and the connectors
        # whose task configs changed since (their older task generations may still have live producers)
        self.task_count_records: dict[str, int] = {}
        self.pending_fencing: set[str] = set()
        self.offset = 0

    def copy(self) -> ConfigSnapshot:
        """A copy that later ``apply`` calls on this one leave alone (values are replaced, never changed)."""
        out = ConfigSnapshot()
        out.connectors, out.target_states = dict(self.connectors), dict(self.target_states)
        out.task_configs = dict(self.task_configs)
        out._pending_tasks = {name: dict(tasks) for name, tasks in self._pending_tasks.items()}
        out.owner, out.cluster, out.inconsistent = self.owner, self.cluster, set(self.inconsistent)
        out.task_count_records, out.pending_fencing = dict(self.task_count_records), set(self.pending_fencing)
        out.offset = self.offset
        return out

    def apply(self, key: str, value: dict | None) -> None:
        if key.startswith("connector-"):
            name = key[len("connector-"):]
            if value is None:
                self.connectors.pop(name, None)
                self.task_configs.pop(name, None)
                self._pending_tasks.pop(name, None)
                self.pending_fencing.discard(name)
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
            if any(i not in pending for i in range(count)):
                # compaction kept the commit but not every task record of it: wait for the connector to
                # write its task configs again rather than run tasks with a config missing
                self.inconsistent.add(name)
                return
            self.inconsistent.discard(name)
            self.task_configs[name] = [pending.get(i, {}) for i in range(count)]
            self.pending_fencing.add(name)
        elif key.startswith("tasks-fencing-"):
            name = key[len("tasks-fencing-"):]
            if value is None:
                self.task_count_records.pop(name, None)
            else:
                self.task_count_records[name] = int(value.get("task-count", 0))
                self.pending_fencing.discard(name)
        elif key == OWNER_KEY:
            self.owner = None if value is None else {str(k): str(v) for k, v in value.items()}
        elif key == CLUSTER_KEY:
            # the first claim decides: two clusters started at once both claim, and the later one gives way
            if value is None:
                self.cluster = None
            elif self.cluster is None:
                self.cluster = str(value.get("group.id", "")) or None
        elif (m := _TASK_KEY.match(key)) is not None and value is not None:
            self._pending_tasks.setdefault(m.group(1), {})[int(m.group(2))] = {
                str(k): str(v) for k, v in value.get("properties", {}).items()
            }

    def target_state(self, name: str) -> TargetState:
        return self.target_states.get(name, TargetState.STARTED)


class ConfigTopicStore:
    """Reads the whole config topic at start and writes each change durably before returning.

    ``owner`` (``{"worker.id": ..., "rest.worker.id": ...}``) makes the store a standalone worker's own: a
    topic another owner has claimed is refused at start, an unclaimed one is claimed.
    """

    def __init__(self, backend: LogBackend, topic: str, replication_factor: int = -1, *,
                 owner: Mapping[str, str] | None = None, encryption: ConfigEncryption | None = None,
                 topic_configs: Mapping[str, str] | None = None) -> None:
        self.backend = backend
        self.topic = topic
        self.replication_factor = replication_factor
        self.owner = dict(owner) if owner else None
        self.encryption = encryption
        self.codec = ConfigRecordCodec(topic, encryption)
        self.topic_configs = dict(topic_configs or {})
        self.snapshot = ConfigSnapshot()
        self.max_record_bytes = _DEFAULT_MAX_MESSAGE_BYTES
        self._lock = threading.Lock()
        self._producer: Producer | None = None

    def start(self, timeout: float = 30.0) -> None:
        admin = self.backend.admin()
        try:
            admin.create_topic(NewTopic(self.topic, 1, self.replication_factor,
                                        {"cleanup.policy": "compact", **self.topic_configs}), exist_ok=True)
            configs = admin.describe_topic(self.topic).configs
            policy = configs.get("cleanup.policy", "compact")
            if "compact" not in policy:
                raise LogError(f"Topic '{self.topic}' supplied via the 'config.storage.topic' property is required "
                               f"to have 'cleanup.policy=compact', but found '{policy}'")
            self.max_record_bytes = int(configs.get("max.message.bytes", _DEFAULT_MAX_MESSAGE_BYTES))
        finally:
            admin.close()
        self._read_to_end(timeout)
        self._check_owner()
        self._producer = self.backend.producer({"acks": "all"})
        if self.owner is not None and self.snapshot.owner is None:
            self._write([(OWNER_KEY, self.owner)])
            log.info("Config topic '%s' now belongs to this standalone worker (%s)", self.topic,
                     self.owner.get("worker.id"))
        log.info("Read %d connector config(s) from config topic '%s'", len(self.snapshot.connectors), self.topic)

    def _check_owner(self) -> None:
        mine, theirs = self.owner, self.snapshot.owner
        if mine is None or theirs is None or theirs.get("worker.id") == mine.get("worker.id"):
            return
        raise ConfigStoreOwnerError(
            f"Config topic '{self.topic}' belongs to another standalone worker (id {theirs.get('worker.id')}, "
            f"REST {theirs.get('rest.worker.id', '?')}); this worker is {mine.get('worker.id')}: give it its own "
            "config.storage.topic (or none: the default is a topic of its own)")

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
                            name = key.decode("utf-8")
                            self.snapshot.apply(name, None if value is None else self._decrypted(name, value))
            self.snapshot.offset = end
        finally:
            consumer.close()

    def _decrypted(self, key: str, raw: bytes) -> dict:
        return self.codec.decode(key, raw)

    def stop(self) -> None:
        if self._producer is not None:
            self._producer.close(5.0)
            self._producer = None

    def _write(self, records: list[tuple[str, object | None]],
               stored: list[tuple[str, object | None]] | None = None) -> None:
        """Append ``stored`` (default ``records``: what goes to disk, encrypted) in one batch, wait for the
        acknowledgement, then apply ``records`` to the snapshot. On any failure nothing is applied."""
        assert self._producer is not None, "ConfigTopicStore.start() was not called"
        wire = [(key.encode("utf-8"), None if value is None else _dumps(value)) for key, value in stored or records]
        for (wire_key, wire_value), (name, _) in zip(wire, records, strict=True):
            size = len(wire_key) + len(wire_value or b"") + _RECORD_OVERHEAD
            if size > self.max_record_bytes:
                raise RecordTooLargeError(
                    f"Config record '{name}' is {size} bytes, more than the {self.max_record_bytes} bytes "
                    f"(max.message.bytes) config topic '{self.topic}' accepts")
        with self._lock:
            try:
                # one batch: the records of one change are appended together or not at all
                self._producer.send_batch(self.topic, 0, [v for _, v in wire], [k for k, _ in wire])
                left = self._producer.flush(30.0)
            except (LogError, OSError) as exc:  # the embedded log lets a full disk's OSError through
                raise ConfigWriteError(f"Write to config topic '{self.topic}' failed: {exc}") from None
            if left:
                raise ConfigWriteError(f"Write to config topic '{self.topic}' not acknowledged within 30 s")
            for key, value in records:
                self.snapshot.apply(key, value)  # type: ignore[arg-type]
            self.snapshot.offset += len(records)  # this worker owns the topic: its records are the next ones

    def _encrypted(self, config: Mapping[str, str], secret_keys: Iterable[str]) -> dict[str, str]:
        return self.codec.encrypted(config, secret_keys)

    # --- writes ---------------------------------------------------------------------------------
    def put_connector_config(self, name: str, config: Mapping[str, str], target: TargetState | None = None,
                             secret_keys: Iterable[str] = ()) -> None:
        records: list[tuple[str, object | None]] = [(f"connector-{name}", {"properties": dict(config)})]
        stored: list[tuple[str, object | None]] = [
            (f"connector-{name}", {"properties": self._encrypted(config, secret_keys)})]
        if target is not None:
            records.append(self._target_record(name, target))
            stored.append(self._target_record(name, target))
        self._write(records, stored)

    def put_target_state(self, name: str, target: TargetState) -> None:
        self._write([self._target_record(name, target)])

    @staticmethod
    def _target_record(name: str, target: TargetState) -> tuple[str, object]:
        legacy = "PAUSED" if target is TargetState.STOPPED else target.value
        return f"target-state-{name}", {"state": legacy, "state.v2": target.value}

    def put_task_configs(self, name: str, configs: Sequence[Mapping[str, str]], secret_keys: Iterable[str] = ()) -> None:
        keys = list(secret_keys)
        records: list[tuple[str, object | None]] = [
            (f"task-{name}-{i}", {"properties": dict(cfg)}) for i, cfg in enumerate(configs)
        ]
        stored: list[tuple[str, object | None]] = [
            (f"task-{name}-{i}", {"properties": self._encrypted(cfg, keys)}) for i, cfg in enumerate(configs)
        ]
        records.append((f"commit-{name}", {"tasks": len(configs)}))
        stored.append((f"commit-{name}", {"tasks": len(configs)}))
        self._write(records, stored)

    def remove_connector(self, name: str) -> None:
        self._write([(f"connector-{name}", None), (f"target-state-{name}", None)])
