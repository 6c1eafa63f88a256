"""Zombie fencing for exactly-once source tasks (KIP-618), done by the cluster's leader.

When a connector's task configs change, tasks of the earlier generation may still run on a worker the
group has given up on (paused, partitioned). Before a task of the new generation reads its offsets it
asks the leader to fence them: the leader fences the transactional ids of every task of the last fenced
generation (``tasks-fencing-<connector>`` holds its task count), so their open transactions abort and
their commits fail, then writes the new task count there. A connector whose task configs have not
changed since its last record needs nothing; one run exactly once for the first time has no producers
to fence but gets its record, so the next change knows what to fence. A task's own id is fenced anyway
when its new instance initialises its producer, so one task replacing one task needs no round either.

A task asks while the group may be changing under it (a rolling restart stops the leader it asks): a leader
that cannot be reached, has gone, or is not the leader any more is asked again, whoever leads by then, until
the rebalance timeout has passed or the task is stopped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from connect.runtime.herder import BadRequestError, ConnectorTaskId, HerderError, NotFoundError

__all__ = ["ZombieFencing"]

log = logging.getLogger(__name__)


class _LeaderUnavailable(HerderError):
    """No leader could answer this time (none elected yet, unreachable, or no longer the leader)."""


_RETRY_FIRST_S = 0.1
_RETRY_MAX_S = 2.0


class ZombieFencing:
    """``cluster`` is the worker's ClusterWork (leader, session key, config store); ``connector_kind`` says
    "source" or "sink" of a connector config; fencing itself goes through the worker's log admin;
    ``leader_wait_s``: how long a task keeps asking while no leader answers (the rebalance timeout)."""

    def __init__(self, cluster: Any, admin: Callable[[], Any], connector_kind: Callable[[dict[str, str]], str],
                 transactional_id_prefix: str, http: httpx.Client, sync_timeout_s: float,
                 leader_wait_s: float = 60.0, sleep: Callable[[float], None] = time.sleep,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.cluster = cluster
        self._admin = admin
        self._kind = connector_kind
        self.prefix = transactional_id_prefix
        self._http = http
        self._sync_timeout_s = sync_timeout_s
        self._leader_wait_s = leader_wait_s
        self._sleep = sleep
        self._monotonic = monotonic
        self._lock = threading.Lock()  # one round at a time: two tasks of a connector ask together

    def fence(self, name: str) -> None:
        """Leader only: fence the connector's earlier task generation if that is still due."""
        store = self.cluster.store
        with self._lock:
            store.refresh(0, self._sync_timeout_s)
            snapshot = store.snapshot()
            config = snapshot.connectors.get(name)
            if config is None:
                raise NotFoundError(f"Connector {name} not found")
            if self._kind(config) != "source":
                raise BadRequestError(f"Connector {name} is not a source connector")
            if name not in snapshot.pending_fencing:
                return  # the last record already covers the current task configs
            task_count = len(snapshot.task_configs.get(name, []))
            previous = snapshot.task_count_records.get(name)
            if previous is not None and not (previous == 1 and task_count == 1):
                ids = [f"{self.prefix}{name}-{i}" for i in range(previous)]
                self._admin().fence_producers(ids)
                log.info("[%s] Fenced the producers of %d task(s) of the previous generation before its %d new "
                         "task(s) start", name, previous, task_count)
            store.put_task_count_record(name, task_count)

    def before_task_starts(self, task_id: ConnectorTaskId, stopping: Callable[[], bool] = lambda: False) -> None:
        """Called on an exactly-once task's thread once its producer is initialised: returns when the
        connector's earlier generation is fenced (here if this worker leads, else by the leader). ``stopping``
        tells that the task is being stopped, which ends the wait for a leader."""
        deadline = self._monotonic() + self._leader_wait_s
        delay = _RETRY_FIRST_S
        while True:
            try:
                self._fence_once(task_id)
                return
            except _LeaderUnavailable as exc:
                if stopping() or self._monotonic() + delay > deadline:
                    raise HerderError(f"Zombie fencing for task {task_id} failed: {exc}") from exc
                log.info("[%s] Zombie fencing for task %s: %s; asking again in %.1f s", task_id.connector, task_id,
                         exc, delay)
                self._sleep(delay)
                delay = min(delay * 2, _RETRY_MAX_S)

    def _fence_once(self, task_id: ConnectorTaskId) -> None:
        if self.cluster.is_leader:
            self.fence(task_id.connector)
            return
        leader = self.cluster.leader_url
        if leader is None:
            raise _LeaderUnavailable("the cluster has no leader to fence the connector's earlier tasks")
        headers: dict[str, str] = {}
        key = self.cluster.session_key
        if key is not None:
            headers.update(key.sign(b""))
        try:
            response = self._http.put(f"{leader}/connectors/{quote(task_id.connector, safe='')}/fence", content=b"",
                                      headers=headers)
        except httpx.TransportError as exc:
            raise _LeaderUnavailable(f"the leader at {leader} could not be reached ({exc})") from exc
        if response.status_code == httpx.codes.CONFLICT or response.status_code >= 500:
            # 409: a rebalance is under way or that worker leads no more; 5xx: it could not do it this time
            raise _LeaderUnavailable(f"the leader at {leader} answered {response.status_code}: "
                                     f"{response.text[:200]}")
        if response.status_code >= 300:
            raise HerderError(f"Zombie fencing for task {task_id} failed: the leader at {leader} answered "
                              f"{response.status_code}: {response.text[:200]}")
