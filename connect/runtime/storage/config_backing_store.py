"""The cluster's connector configs, task configs and target states in ``config.storage.topic``.

Kafka Connect's keys and JSON values, so a Java cluster's topic reads as it is: ``connector-<c>``,
``task-<c>-<n>`` (applied only on ``commit-<c>``), ``target-state-<c>`` (``state`` and ``state.v2``),
``session-key``, ``restart-connector-<c>``, ``tasks-fencing-<c>``, ``logger-cluster-<ns>``; deletes are
tombstones. Headrace adds ``headrace-cluster`` (the group that claimed the topic). One partition, so
every worker applies the records in the same order. Only the leader writes (the herder makes sure);
every worker applies every record on the topic's reader thread and tells its listener.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from connect.log.api import ClientStats, LogBackend, LogError
from connect.runtime.config_encryption import ConfigEncryption
from connect.runtime.herder import ConnectorTaskId, TargetState
from connect.runtime.session_key import SessionKey
from connect.runtime.storage.config_store import (
    CLUSTER_KEY,
    ConfigRecordCodec,
    ConfigSnapshot,
    ConfigWriteError,
    RecordTooLargeError,
)
from connect.runtime.storage.kafka_based_log import KafkaBasedLog, ensure_internal_topic

__all__ = ["ConfigUpdateListener", "KafkaConfigBackingStore"]

log = logging.getLogger(__name__)

_TASK_KEY = re.compile(r"^task-(.+)-(\d+)$")
_DEFAULT_MAX_MESSAGE_BYTES = 1048588
_RECORD_OVERHEAD = 128
_WRITE_TIMEOUT_S = 30.0


class ConfigUpdateListener(Protocol):
    def on_connector_config_update(self, name: str) -> None: ...

    def on_connector_config_remove(self, name: str) -> None: ...

    def on_task_configs_update(self, connector: str, task_ids: Sequence[ConnectorTaskId]) -> None: ...

    def on_target_state_change(self, name: str) -> None: ...

    def on_session_key_update(self, key: SessionKey) -> None: ...

    def on_restart_request(self, name: str, include_tasks: bool, only_failed: bool) -> None: ...

    def on_logger_level(self, namespace: str, level: str) -> None: ...


class KafkaConfigBackingStore:
    def __init__(self, backend: LogBackend, topic: str, *, replication_factor: int = 3,
                 encryption: ConfigEncryption | None = None, group_id: str = "",
                 listener: ConfigUpdateListener | None = None, exactly_once: bool = False,
                 client_id: str | None = None) -> None:
        """``exactly_once`` (exactly.once.source.support preparing or enabled): the topic is read
        read_committed and, once ``claim_write_privileges`` ran, written in transactions, as KIP-618 has
        the leader do so that a zombie leader cannot write."""
        self.backend = backend
        self.topic = topic
        self.replication_factor = replication_factor
        self.group_id = group_id
        self.listener = listener
        self.codec = ConfigRecordCodec(topic, encryption)
        self._live = ConfigSnapshot()  # changed only by the reader thread
        self._published = ConfigSnapshot()  # what snapshot() hands out: never changed once published
        self._dirty = False
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.exactly_once = exactly_once
        self._log = KafkaBasedLog(backend, topic, self._on_record, client_id=client_id,
                                  consumer_config={"isolation.level": "read_committed"} if exactly_once else None)
        self.max_record_bytes = _DEFAULT_MAX_MESSAGE_BYTES

    def client_stats(self) -> tuple[ClientStats, ...]:
        return self._log.client_stats()

    # --- lifecycle ----------------------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> None:
        partitions = ensure_internal_topic(self.backend, self.topic, "config.storage.topic", 1,
                                           self.replication_factor)
        if partitions > 1:
            raise LogError(f"Topic '{self.topic}' supplied via the 'config.storage.topic' property is required to "
                           "have a single partition in order to guarantee consistency of connector "
                           f"configurations, but found {partitions} partitions.")
        admin = self.backend.admin()
        try:
            configs = admin.describe_topic(self.topic).configs
            self.max_record_bytes = int(configs.get("max.message.bytes", _DEFAULT_MAX_MESSAGE_BYTES))
        finally:
            admin.close()
        self._log.start(1, timeout)
        snap = self.snapshot()
        log.info("Read config topic '%s' to offset %d: %d connector(s)", self.topic, snap.offset,
                 len(snap.connectors))

    def stop(self) -> None:
        self._log.stop()

    # --- reading --------------------------------------------------------------------------------------------
    def snapshot(self) -> ConfigSnapshot:
        """The topic as read so far; callers may keep it (later records make a new one)."""
        with self._lock:
            if self._dirty:
                self._published, self._dirty = self._live.copy(), False
            return self._published

    def refresh(self, min_offset: int = 0, timeout: float = 30.0) -> int:
        """Read the topic to its end (at least to ``min_offset``); the offset reached."""
        self._log.read_to_end(timeout)
        return self.snapshot().offset

    def _on_record(self, key: bytes | None, value: bytes | None, partition: int, offset: int) -> None:
        if key is None:
            log.warning("Config topic '%s': record at offset %d has no key; ignored", self.topic, offset)
            return
        name = key.decode("utf-8", "replace")
        try:
            decoded = None if value is None else self.codec.decode(name, value)
        except LogError as exc:
            log.error("%s; record ignored", exc)
            return
        with self._lock:
            if name.startswith(("connector-", "task-", "commit-", "target-state-", "standalone-worker")) or (
                    name == CLUSTER_KEY):
                self._live.apply(name, decoded)
            self._live.offset = offset + 1
            self._dirty = True
        self._notify(name, decoded)

    def _notify(self, key: str, value: dict[str, Any] | None) -> None:
        listener = self.listener
        if listener is None:
            return
        if key.startswith("connector-"):
            name = key[len("connector-"):]
            if value is None:
                listener.on_connector_config_remove(name)
            else:
                listener.on_connector_config_update(name)
        elif key.startswith("commit-"):
            name = key[len("commit-"):]
            count = int((value or {}).get("tasks", 0))
            listener.on_task_configs_update(name, [ConnectorTaskId(name, i) for i in range(count)])
        elif key.startswith("target-state-"):
            listener.on_target_state_change(key[len("target-state-"):])
        elif key == "session-key" and value:
            try:
                session = SessionKey(base64.b64decode(value["key"]), str(value.get("algorithm", "HmacSHA256")),
                                     int(value.get("creation-timestamp", 0)))
            except (KeyError, ValueError, TypeError) as exc:
                log.error("Config topic '%s': unreadable session key record (%s); ignored", self.topic, exc)
                return
            listener.on_session_key_update(session)
        elif key.startswith("restart-connector-") and value is not None:
            listener.on_restart_request(key[len("restart-connector-"):], bool(value.get("include-tasks", False)),
                                        bool(value.get("only-failed", False)))
        elif key.startswith("logger-cluster-") and value:
            listener.on_logger_level(key[len("logger-cluster-"):], str(value.get("level", "")))

    # --- writing (the leader) ----------------------------------------------------------------------------------
    @property
    def write_privileges_lost(self) -> bool:
        """A transactional write failed and gave up the leader's producer (KIP-618): writes fail until
        ``claim_write_privileges`` runs again, which the leader does on its next tick while it still leads."""
        return self._log.privileges_lost is not None

    def claim_write_privileges(self) -> None:
        """Called when this worker becomes the leader: with exactly-once on, fence earlier leaders' writers
        (``transactional.id=connect-cluster-<group.id>``, Kafka Connect's) and write transactionally."""
        if not self.exactly_once:
            return
        with self._write_lock:
            try:
                self._log.use_transactional_producer(f"connect-cluster-{self.group_id}", _WRITE_TIMEOUT_S)
            except (LogError, OSError) as exc:
                raise ConfigWriteError(f"Could not claim write privileges on config topic '{self.topic}': {exc}"
                                       ) from None
        log.info("Writing config topic '%s' transactionally as the leader (transactional.id "
                 "connect-cluster-%s); earlier leaders' writers are fenced", self.topic, self.group_id)

    def _write(self, records: list[tuple[str, object | None]]) -> None:
        """Append ``records`` in order, wait for the acknowledgement and read them back; on failure the
        error says why and nothing this worker reports has changed."""
        wire = [(k.encode("utf-8"), None if v is None else self.codec.encode(v)) for k, v in records]
        for (wire_key, wire_value), (name, _) in zip(wire, records, strict=True):
            size = len(wire_key) + len(wire_value or b"") + _RECORD_OVERHEAD
            if size > self.max_record_bytes:
                raise RecordTooLargeError(
                    f"Config record '{name}' is {size} bytes, more than the {self.max_record_bytes} bytes "
                    f"(max.message.bytes) config topic '{self.topic}' accepts")
        with self._write_lock:
            try:
                if self._log.transactional:
                    self._log.send_in_transaction([(k, v, 0) for k, v in wire], _WRITE_TIMEOUT_S)
                else:
                    for wire_key, wire_value in wire:
                        self._log.send(wire_key, wire_value, 0)
                    self._log.flush(_WRITE_TIMEOUT_S)
            except (LogError, OSError) as exc:
                raise ConfigWriteError(f"Write to config topic '{self.topic}' failed: {exc}") from None
        if not self._log.read_to_end(_WRITE_TIMEOUT_S):
            raise ConfigWriteError(f"Config topic '{self.topic}' was written but not read back within "
                                   f"{_WRITE_TIMEOUT_S:.0f} s")

    def put_connector_config(self, name: str, config: Mapping[str, str], target: TargetState | None = None,
                             secret_keys: Iterable[str] = ()) -> None:
        records: list[tuple[str, object | None]] = [
            (f"connector-{name}", {"properties": self.codec.encrypted(config, secret_keys)})]
        if target is not None:
            records.insert(0, _target_record(name, target))  # as Kafka: the state before the config
        self._write(records)

    def remove_connector(self, name: str) -> None:
        self._write([(f"connector-{name}", None), (f"target-state-{name}", None)])

    def put_task_configs(self, name: str, configs: Sequence[Mapping[str, str]], secret_keys: Iterable[str] = ()
                         ) -> None:
        keys = list(secret_keys)
        records: list[tuple[str, object | None]] = [
            (f"task-{name}-{i}", {"properties": self.codec.encrypted(cfg, keys)}) for i, cfg in enumerate(configs)]
        records.append((f"commit-{name}", {"tasks": len(configs)}))
        self._write(records)

    def put_target_state(self, name: str, target: TargetState) -> None:
        self._write([_target_record(name, target)])

    def put_session_key(self, key: SessionKey) -> None:
        self._write([("session-key", {"key": base64.b64encode(key.key).decode("ascii"),
                                      "algorithm": key.algorithm, "creation-timestamp": key.created_ms})])

    def put_restart_request(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        self._write([(f"restart-connector-{name}", {"include-tasks": include_tasks, "only-failed": only_failed})])

    def put_task_count_record(self, name: str, count: int) -> None:
        self._write([(f"tasks-fencing-{name}", {"task-count": count})])

    def put_logger_level(self, namespace: str, level: str) -> None:
        self._write([(f"logger-cluster-{namespace}", {"level": level})])

    def put_cluster(self, group_id: str) -> None:
        self._write([(CLUSTER_KEY, {"group.id": group_id})])


def _target_record(name: str, target: TargetState) -> tuple[str, object]:
    legacy = "PAUSED" if target is TargetState.STOPPED else target.value
    return f"target-state-{name}", {"state": legacy, "state.v2": target.value}
