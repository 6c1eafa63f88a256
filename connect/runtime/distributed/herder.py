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
from collections.abc import Callable
from typing import Any

import attrs
import httpx

from connect.runtime.abstract_herder import AbstractHerder, stored
from connect.runtime.clock import SYSTEM_CLOCK, Clock
from connect.runtime.distributed.cluster_work import ClusterWork
from connect.runtime.distributed.zombie_fencing import ZombieFencing
from connect.runtime.herder import (
    NO_LEADER_MESSAGE,
    ConflictError,
    ConnectorStateInfo,
    ConnectorTaskId,
    InternalRequestSignature,
    NotLeaderError,
    ServiceUnavailableError,
    State,
    TargetState,
    task_metrics_body,
)
from connect.runtime.metrics_snapshot import WorkerMetrics
from connect.runtime.storage.config_store import ConfigSnapshot
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
        super().__init__(worker, config_store)
        self.rest_url = rest_url.rstrip("/")
        self.cluster = ClusterWork(worker, config_store, rest_url, member_factory=member_factory,
                                   secret_keys=self._task_secret_keys, group_id=group_id, key_ttl_ms=key_ttl_ms,
                                   sync_timeout_ms=sync_timeout_ms, clock=clock, http=http, on_fatal=on_fatal)
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

    # --- where a request must run --------------------------------------------------------------------------------
    def _snapshot(self) -> ConfigSnapshot:
        return self.store.snapshot()

    def _require_writer(self) -> None:
        self._require_leader()

    def _refresh_source_offsets(self) -> None:
        self.cluster.refresh_offsets()

    def _require_leader(self) -> None:
        if self.cluster.rebalancing or self.cluster.leader_url is None:
            raise ConflictError(NO_LEADER_MESSAGE)
        if not self.cluster.is_leader:
            raise NotLeaderError("This worker is not the leader; the request goes to the leader", self.cluster.leader_url)

    def task_metrics(self, task: ConnectorTaskId) -> dict[str, Any]:
        self._require_task(task)
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
        return self._restart_plan(before, include_tasks, only_failed)[0]

    def _restart_own_task(self, task: ConnectorTaskId) -> None:
        """An automatic restart: only of a task this worker still owns (a rebalance may have moved it)."""
        if self.cluster.work.owns_task(task):
            self.cluster.on_tick_thread(lambda: self.cluster.work.restart_tasks([task], self.store.snapshot()))

    def metrics_snapshot(self) -> WorkerMetrics:
        snapshot = super().metrics_snapshot()
        rebalance = {"completed_rebalances": self.cluster.rebalances, "epoch": self.cluster.generation,
                     "rebalancing": 0 if self.cluster.ready else 1}
        # the worker's internal topics' clients, named as Kafka Connect names them (<group.id>-configs, ...)
        clients = (*snapshot.clients, *client_metrics((*self.store.client_stats(), *self.status.client_stats(),
                                                         *self.worker.offset_store.client_stats())))
        return attrs.evolve(snapshot, rebalance=rebalance, clients=clients)

    def restart_task(self, task: ConnectorTaskId) -> None:
        self._require_task(task)
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

    # --- offsets ------------------------------------------------------------------------------------
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
