"""DistributedHerder: one worker of a cluster that shares connectors and tasks through Kafka's group coordinator.

Every worker reads the config topic and runs what the group's leader assigned it. Config changes are written
by the leader only (a follower answers REST writes with NotLeaderError, which the REST layer forwards), and
take effect on every worker when they read the change back from the topic: the tick thread applies config
updates, restart requests and new assignments to the Worker, in that one thread, so what runs is always
derived from the config topic and the group's assignment. Statuses go through the status topic, so any
worker answers status requests for the whole cluster.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import attrs
import httpx

from connect.runtime.abstract_herder import AbstractHerder
from connect.runtime.clock import SYSTEM_CLOCK, Clock
from connect.runtime.config_store import ConfigSnapshot
from connect.runtime.distributed.cluster_work import ClusterWork, stored
from connect.runtime.distributed.zombie_fencing import ZombieFencing
from connect.runtime.herder import (
    NO_LEADER_MESSAGE,
    AlreadyExistsError,
    BadRequestError,
    ConflictError,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorState,
    ConnectorStateInfo,
    ConnectorTaskId,
    ConnectorType,
    InternalRequestSignature,
    NotFoundError,
    NotLeaderError,
    ServiceUnavailableError,
    State,
    TargetState,
    TaskInfo,
    TaskState,
    task_metrics_body,
)
from connect.runtime.metrics_snapshot import WorkerMetrics
from connect.runtime.offset_admin import (
    STOPPED_REQUIRED,
    alter_sink_offsets,
    alter_source_offsets,
    check_offsets_with_connector,
    reset_sink_offsets,
    reset_source_offsets,
    sink_offsets,
    source_offsets,
)
from connect.runtime.worker import Worker, client_metrics

__all__ = ["DistributedHerder"]

log = logging.getLogger(__name__)


_MAX_TICK_S = 1.0
_RECONFIGURE_BACKOFF_S = (0.25, 10.0)
_REQUEST_TIMEOUT_S = 60.0


class DistributedHerder(AbstractHerder):
    """``config_store`` is a KafkaConfigBackingStore; ``member_factory(listener, config_state, refresh_config)``
    makes the WorkerGroupMember (tests give their own)."""

    # Each worker counts only the tasks it runs: status shows the status topic's keys alone, so every worker
    # gives the same body (issue #36); ``task_metrics`` asks the task's worker for its counters.
    worker_counts_in_status = False

    def __init__(self, worker: Worker, config_store: Any, rest_url: str, *,
                 member_factory: Callable[..., Any], group_id: str = "connect-cluster", key_ttl_ms: int = 3_600_000,
                 sync_timeout_ms: int = 3000, rebalance_timeout_ms: int = 60_000, clock: Clock = SYSTEM_CLOCK,
                 http: httpx.Client | None = None, on_fatal: Callable[[str], None] | None = None) -> None:
        super().__init__(worker.worker_id, worker.plugins, worker.status, worker.config)
        self.worker = worker
        self.store = config_store
        self.rest_url = rest_url.rstrip("/")
        self.cluster = ClusterWork(worker, config_store, rest_url, member_factory=member_factory,
                                   secret_keys=self._task_secret_keys, group_id=group_id, key_ttl_ms=key_ttl_ms,
                                   sync_timeout_ms=sync_timeout_ms, clock=clock, http=http, on_fatal=on_fatal)
        self._cluster_id: str | None = None
        self.fencing = ZombieFencing(self.cluster, lambda: worker.admin,
                                     lambda config: self.connector_type_of(config).value,
                                     worker.config.transactional_id_prefix, http or httpx.Client(timeout=_REQUEST_TIMEOUT_S),
                                     sync_timeout_ms / 1000,
                                     leader_wait_s=rebalance_timeout_ms / 1000)
        if worker.config.exactly_once_source_enabled:
            worker.zombie_fencer = self.fencing.before_task_starts
        self.make_task_restarter(worker.config, self._restart_own_task)

    # --- lifecycle ------------------------------------------------------------------------------------------
    def start(self) -> None:
        self.store.start()
        self.cluster.start()
        if self.task_restarter is not None:
            self.task_restarter.start()

    def stop(self) -> None:
        if self.task_restarter is not None:
            self.task_restarter.stop()
        self.cluster.stop()
        self.worker.stop()
        self.store.stop()

    def is_ready(self) -> bool:
        return self.cluster.ready

    def health_problem(self) -> str | None:
        return None

    def kafka_cluster_id(self) -> str:
        if self._cluster_id is None:
            self._cluster_id = self.worker.admin.cluster_id()
        return self._cluster_id

    def _task_secret_keys(self, config: Mapping[str, str], task_configs: list[dict[str, str]]) -> set[str]:
        keys = set(self.password_keys(config))
        secrets = {config[k] for k in keys if config.get(k)}
        for task_config in task_configs:
            keys.update(k for k, v in task_config.items() if v in secrets)
        return keys

    # --- where a request must run --------------------------------------------------------------------------------
    def _require_leader(self) -> None:
        if self.cluster.rebalancing or self.cluster.leader_url is None:
            raise ConflictError(NO_LEADER_MESSAGE)
        if not self.cluster.is_leader:
            raise NotLeaderError("This worker is not the leader; the request goes to the leader", self.cluster.leader_url)

    def _config(self, name: str) -> dict[str, str]:
        config = self.store.snapshot().connectors.get(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return config

    def _info(self, name: str, snapshot: ConfigSnapshot | None = None) -> ConnectorInfo:
        snapshot = snapshot or self.store.snapshot()
        config = snapshot.connectors.get(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        tasks = tuple(ConnectorTaskId(name, i) for i in range(len(snapshot.task_configs.get(name, []))))
        return ConnectorInfo(name, self.mask(config), tasks, self.connector_type_of(config))

    # --- Herder: connectors (reads on any worker, writes on the leader) ---------------------------------------
    def connectors(self) -> list[str]:
        return sorted(self.store.snapshot().connectors)

    def connector_info(self, name: str) -> ConnectorInfo:
        return self._info(name)

    def connector_config(self, name: str) -> dict[str, str]:
        return self.mask(self._config(name))

    def put_connector_config(self, name: str, config: Mapping[str, str], allow_replace: bool,
                             initial_state: TargetState | None = None) -> tuple[bool, ConnectorInfo]:
        self._require_leader()
        existing = self.store.snapshot().connectors.get(name)
        if existing is not None and not allow_replace:
            raise AlreadyExistsError(f"Connector {name} already exists")
        config = self.unmask({**config, "name": name} if "name" not in config else config, existing)
        if config.get("name") != name:
            raise BadRequestError(f"Connector name configuration ({config.get('name')}) doesn't match connector "
                                  f"name in the URL ({name})")
        self.validate_or_raise(config)
        with stored(f"Connector {name}'s config"):
            self.store.put_connector_config(name, config, None if existing is not None else (
                initial_state or TargetState.STARTED), self.password_keys(config))
        log.info("[%s] Connector config %s", name, "updated" if existing is not None else "created")
        return existing is None, self._info(name)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        self._require_leader()
        config = dict(self._config(name))
        for key, value in patch.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        return self.put_connector_config(name, config, allow_replace=True)[1]

    def delete_connector(self, name: str) -> None:
        self._require_leader()
        self._config(name)
        with stored(f"Deletion of connector {name}"):
            self.store.remove_connector(name)
        log.info("[%s] Connector deleted", name)

    def connector_status(self, name: str) -> ConnectorStateInfo:
        snapshot = self.store.snapshot()
        config = snapshot.connectors.get(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        count = len(snapshot.task_configs.get(name, []))
        return self.build_status(name, config, count, None, self.worker.backend.health_problem())

    def connector_status_body(self, name: str) -> dict[str, Any]:
        snapshot = self.store.snapshot()
        config = snapshot.connectors.get(name)
        if config is None:
            self.status_views.forget(name)
            raise NotFoundError(f"Connector {name} not found")
        count = len(snapshot.task_configs.get(name, []))
        # no task signatures: they key the body on this worker's counters, which the body does not show
        return self.status_body(name, config, count, (), self.worker.backend.health_problem())

    def status_changes(self) -> Hashable:
        return self.listing_token(self.store.snapshot(), self.worker.backend.health_problem())

    def connector_status_bodies(self, fresh: bool = False) -> dict[str, dict[str, Any]]:
        # no task signatures, as in connector_status_body
        return self.status_listing(self.store.snapshot(), lambda: {}, self.worker.backend.health_problem(), fresh)

    def task_status(self, task: ConnectorTaskId) -> TaskState:
        for t in self.connector_status(task.connector).tasks:
            if t.id == task.task:
                return t
        raise NotFoundError(f"No status found for task {task}")

    def task_metrics(self, task: ConnectorTaskId) -> dict[str, Any]:
        snapshot = self.store.snapshot()
        if task.connector not in snapshot.connectors:
            raise NotFoundError(f"Connector {task.connector} not found")
        if not 0 <= task.task < len(snapshot.task_configs.get(task.connector, [])):
            raise NotFoundError(f"Task {task} not found")
        if self.cluster.work.owns_task(task):
            counters = self.worker.connector_task_metrics(task.connector).get(task)
            restart = self.task_restarter.info(task) if self.task_restarter is not None else None
            return task_metrics_body(task.task, self.worker_id, counters, restart)
        raise self._runs_elsewhere(task)

    def _runs_elsewhere(self, task: ConnectorTaskId) -> ConflictError | NotLeaderError:
        """What to answer about a task this worker does not run: where it runs (the request is sent there, as
        a write is to the leader), or that it runs nowhere right now."""
        status = self.status.task(task)
        if status is None or not status.worker_id or status.worker_id == self.worker_id:
            return ConflictError(f"Task {task} is not running on any worker right now (a rebalance may be under "
                                 "way); retry the request")
        scheme = self.rest_url.split("://", 1)[0]
        return NotLeaderError(f"Task {task} runs on worker {status.worker_id}", f"{scheme}://{status.worker_id}")

    def task_configs(self, name: str) -> list[TaskInfo]:
        snapshot = self.store.snapshot()
        if name not in snapshot.connectors:
            raise NotFoundError(f"Connector {name} not found")
        return [TaskInfo(ConnectorTaskId(name, i), self.mask(cfg))
                for i, cfg in enumerate(snapshot.task_configs.get(name, []))]

    def _verify_signed(self, signature: InternalRequestSignature) -> None:
        """A request between workers carries the session key's signature once the group uses it (KIP-507)."""
        if self.cluster.member is not None and self.cluster.member.protocol_version >= 2:
            key = self.cluster.session_key
            if key is None:
                raise ServiceUnavailableError("This worker has not read the cluster's session key yet; retry the "
                                              "request")
            key.verify(signature)

    def put_task_configs(self, name: str, configs: list[dict[str, str]],
                         signature: InternalRequestSignature) -> None:
        self._verify_signed(signature)
        self._require_leader()
        self.cluster.store_task_configs(name, configs)

    def fence_zombies(self, name: str, signature: InternalRequestSignature) -> None:
        self._verify_signed(signature)
        self._require_leader()
        self.fencing.fence(name)

    def restart_connector(self, name: str, include_tasks: bool, only_failed: bool) -> ConnectorStateInfo | None:
        self._require_leader()
        before = self.connector_status(name)
        with stored(f"Restart request of connector {name}"):
            self.store.put_restart_request(name, include_tasks, only_failed)
        if not include_tasks and not only_failed:
            return None
        restart_connector = not only_failed or before.connector.state is State.FAILED
        connector = (ConnectorState(State.RESTARTING, before.connector.worker_id, version=before.connector.version)
                     if restart_connector
                     else before.connector)
        tasks = tuple(TaskState(t.id, State.RESTARTING, t.worker_id, version=t.version)
                      if include_tasks and (not only_failed or t.state is State.FAILED) else t for t in before.tasks)
        return ConnectorStateInfo(name, connector, tasks, before.type)

    def _restart_own_task(self, task: ConnectorTaskId) -> None:
        """An automatic restart: only of a task this worker still owns (a rebalance may have moved it)."""
        if self.cluster.work.owns_task(task):
            self.cluster.on_tick_thread(lambda: self.cluster.work.restart_tasks([task], self.store.snapshot()))

    def metrics_snapshot(self) -> WorkerMetrics:
        snapshot = self.worker.metrics_snapshot(self.task_restarter.info if self.task_restarter is not None else None)
        rebalance = {"completed_rebalances": self.cluster.rebalances, "epoch": self.cluster.generation,
                     "rebalancing": 0 if self.cluster.ready else 1}
        # the worker's internal topics' clients, named as Kafka Connect names them (<group.id>-configs, ...)
        clients = (*snapshot.clients, *client_metrics((*self.store.client_stats(), *self.status.client_stats(),
                                                         *self.worker.offset_store.client_stats())))
        return attrs.evolve(snapshot, rebalance=rebalance, clients=clients)

    def restart_task(self, task: ConnectorTaskId) -> None:
        snapshot = self.store.snapshot()
        if task.connector not in snapshot.connectors:
            raise NotFoundError(f"Connector {task.connector} not found")
        if task.task >= len(snapshot.task_configs.get(task.connector, [])):
            raise NotFoundError(f"Task {task} not found")
        if self.cluster.work.owns_task(task):
            self.cluster.on_tick_thread(lambda: self.cluster.work.restart_tasks([task], self.store.snapshot()))
            return
        self._require_leader()
        raise self._runs_elsewhere(task)

    def pause_connector(self, name: str) -> None:
        self._require_leader()
        self._config(name)
        self._put_target_state(name, TargetState.PAUSED)
        log.info("[%s] Connector paused", name)

    def resume_connector(self, name: str) -> None:
        self._require_leader()
        self._config(name)
        self._put_target_state(name, TargetState.STARTED)
        log.info("[%s] Connector resumed", name)

    def stop_connector(self, name: str) -> None:
        self._require_leader()
        self._config(name)
        self._put_target_state(name, TargetState.STOPPED)
        with stored(f"Task configs of connector {name}"):
            self.store.put_task_configs(name, [], ())
        log.info("[%s] Connector stopped", name)

    def _put_target_state(self, name: str, target: TargetState) -> None:
        with stored(f"Target state {target.value} of connector {name}"):
            self.store.put_target_state(name, target)

    # --- topics and offsets ------------------------------------------------------------------------------------
    def connector_active_topics(self, name: str) -> list[str]:
        self._config(name)
        return self.status.topics(name)

    def reset_connector_active_topics(self, name: str) -> None:
        self._config(name)
        self.status.reset_topics(name)

    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        config = self._config(name)
        if self.connector_type_of(config) is ConnectorType.SINK:
            return sink_offsets(self.worker.admin, name, self.worker.config_transformer.redact)
        self.cluster.refresh_offsets()
        return source_offsets(self.worker.source_offset_stores(config), name,
                              self.worker.config_transformer.redact)

    def _require_stopped(self, name: str) -> dict[str, str]:
        self._require_leader()
        config = self._config(name)
        if self.store.snapshot().target_state(name) is not TargetState.STOPPED or not self._reported_stopped(name):
            raise BadRequestError(STOPPED_REQUIRED.replace("{name}", name))
        return config

    def _reported_stopped(self, name: str, timeout: float = 10.0) -> bool:
        # The target state is STOPPED; the worker running the connector stops it in the rebalance that follows
        # and then reports STOPPED on the status topic. A request sent right after the stop (forwarded by a worker
        # whose view already says STOPPED) waits for that report instead of being refused: offsets must not be
        # changed under a task that may still commit its own.
        deadline = time.monotonic() + timeout
        while True:
            status = self.status.connector(name)
            if status is None or status.state is State.STOPPED:
                return True
            left = deadline - time.monotonic()
            if left <= 0 or not self.status.refresh(min(left, 5.0)):
                return False
            status = self.status.connector(name)
            if status is None or status.state is State.STOPPED:
                return True
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> str:
        config = self._require_stopped(name)
        check_offsets_with_connector(self.plugins.new_instance(config.get("connector.class", ""), ("source", "sink"),
                                                               "connector.class"), name, config, offsets)
        if self.connector_type_of(config) is ConnectorType.SINK:
            alter_sink_offsets(self.worker.admin, name, offsets)
        else:
            alter_source_offsets(self.worker.source_offset_stores(config), name, offsets)
        log.info("[%s] Offsets altered for %d partition(s)", name, len(offsets))
        return "The offsets for this connector have been altered successfully"

    def reset_connector_offsets(self, name: str) -> str:
        config = self._require_stopped(name)
        if self.connector_type_of(config) is ConnectorType.SINK:
            reset_sink_offsets(self.worker.admin, name)
        else:
            self.cluster.refresh_offsets()
            reset_source_offsets(self.worker.source_offset_stores(config), name)
        log.info("[%s] Offsets reset", name)
        return "The offsets for this connector have been reset successfully"


