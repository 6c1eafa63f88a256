"""The distributed herder's tick thread: group membership, assignments and config-topic updates applied to
the Worker, task configs computed and stored, and the session key rotated. Only this thread starts and
stops connectors and tasks, so what runs is always derived from the group's assignment and the config
topic; REST threads read its state and hand it work through ``on_tick_thread``.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from connect.api.errors import ConnectException
from connect.log.api import LogError
from connect.runtime.abstract_herder import stored
from connect.runtime.clock import SYSTEM_CLOCK, Clock
from connect.runtime.distributed.assigned_work import AssignedWork
from connect.runtime.distributed.protocol import NO_ERROR, Assignment
from connect.runtime.herder import (
    NO_LEADER_MESSAGE,
    ConflictError,
    ConnectorTaskId,
    HerderError,
    NotFoundError,
    State,
    TargetState,
)
from connect.runtime.session_key import SessionKey
from connect.runtime.storage.config_store import ConfigSnapshot
from connect.runtime.worker import Worker

__all__ = ["ClusterWork"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_MAX_TICK_S = 1.0
_RECONFIGURE_BACKOFF_S = (0.25, 10.0)
_REQUEST_TIMEOUT_S = 60.0


class _PendingUpdates:
    """What the config topic's reader thread saw, waiting for the tick thread to apply it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connectors: set[str] = set()
        self.task_configs: set[str] = set()
        self.targets: set[str] = set()
        self.restarts: dict[str, tuple[bool, bool]] = {}
        self.reconfigure: set[str] = set()
        self.rebalance_reason: str | None = None

    def take(self) -> tuple[set[str], set[str], set[str], dict[str, tuple[bool, bool]], set[str], str | None]:
        with self.lock:
            out = (self.connectors, self.task_configs, self.targets, self.restarts, self.reconfigure,
                   self.rebalance_reason)
            self.connectors, self.task_configs, self.targets = set(), set(), set()
            self.restarts, self.reconfigure, self.rebalance_reason = {}, set(), None
        return out

    def any(self) -> bool:
        with self.lock:
            return bool(self.connectors or self.task_configs or self.targets or self.restarts or self.reconfigure
                        or self.rebalance_reason)


class ClusterWork:
    def __init__(self, worker: Worker, config_store: Any, rest_url: str, *,
                 member_factory: Callable[..., Any], secret_keys: Callable[[Mapping[str, str], list[dict[str, str]]],
                                                                           set[str]],
                 group_id: str = "connect-cluster", key_ttl_ms: int = 3_600_000, sync_timeout_ms: int = 3000,
                 clock: Clock = SYSTEM_CLOCK, http: httpx.Client | None = None,
                 on_fatal: Callable[[str], None] | None = None) -> None:
        """``on_fatal(message)``: called once when this worker must not go on (its topics belong to another
        cluster); the process stops with that message."""
        self.worker = worker
        self._on_fatal = on_fatal
        self.status = worker.status
        self.store = config_store
        self.rest_url = rest_url.rstrip("/")
        self.group_id = group_id
        self.clock = clock
        self._secret_keys = secret_keys
        self._key_ttl_ms = key_ttl_ms
        self._sync_timeout_s = sync_timeout_ms / 1000
        self._http = http or httpx.Client(timeout=_REQUEST_TIMEOUT_S)
        self._member_factory = member_factory
        self._member: Any = None
        self._work = AssignedWork(worker, self._request_reconfiguration, self._refresh_offsets_before_tasks)
        self._pending = _PendingUpdates()
        self._requests: queue.SimpleQueue[tuple[Callable[[], Any], Future]] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="DistributedHerder", daemon=True)
        # set by the tick thread, read by REST threads (single assignments of immutable values)
        self._rebalancing = True
        self._leader_id: str | None = None
        self._leader_url: str | None = None
        self._generation = -1
        self._session_key: SessionKey | None = None
        self._assigned_connectors: frozenset[str] = frozenset()
        self._assigned_tasks: frozenset[ConnectorTaskId] = frozenset()
        self._snapshot: ConfigSnapshot = ConfigSnapshot()
        self._rejoin_at: float | None = None
        self._reconfigure: dict[str, float] = {}  # connector -> when to (re)try computing its task configs
        self._reconfigure_delay: dict[str, float] = {}
        self._write_privileges = False  # claimed on the config topic since this worker last became the leader
        self.rebalances = 0  # completed rebalances this worker took part in (tests and metrics read it)

    def start(self) -> None:
        """Join the group and start the tick thread (the config store is started and read)."""
        self._snapshot = self.store.snapshot()
        problem = self._foreign_claim()
        if problem is not None:
            raise ConnectException(problem)
        self._member = self._member_factory(self, self._config_state, self._refresh_config)
        self._thread.start()

    def _foreign_claim(self) -> str | None:
        claimed = self.store.snapshot().cluster
        if claimed is None or claimed == self.group_id:
            return None
        return (f"Config topic '{self.store.topic}' belongs to the Connect cluster with group.id '{claimed}', not to "
                f"this worker's group.id '{self.group_id}': give each cluster its own config.storage.topic, "
                "offset.storage.topic and status.storage.topic")

    def stop(self) -> None:
        self._stopping.set()
        if self._member is not None:
            self._member.wakeup()
        if self._thread.is_alive():
            self._thread.join(60.0)
        self._http.close()

    # --- what REST threads read --------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def rebalancing(self) -> bool:
        return self._rebalancing

    @property
    def leader_url(self) -> str | None:
        return self._leader_url

    @property
    def member(self) -> Any:
        return self._member

    @property
    def work(self) -> AssignedWork:
        return self._work

    @property
    def session_key(self) -> SessionKey | None:
        return self._session_key

    @property
    def is_leader(self) -> bool:
        member = self._member
        return member is not None and self._leader_id is not None and self._leader_id == member.member_id

    @property
    def generation(self) -> int:
        return self._generation

    # --- the coordinator's view of the config topic --------------------------------------------------
    def _config_state(self) -> tuple[int, Mapping[str, int]]:
        snapshot = self.store.snapshot()
        return snapshot.offset, {name: len(snapshot.task_configs.get(name, [])) for name in snapshot.connectors}

    def _refresh_config(self, min_offset: int, timeout_s: float) -> int:
        return int(self.store.refresh(min_offset, timeout_s))

    def refresh_offsets(self) -> None:
        refresh = getattr(self.worker.offset_store, "refresh", None)
        if refresh is not None:
            refresh(self._sync_timeout_s * 10)

    def _refresh_offsets_before_tasks(self) -> None:
        # With exactly-once sources every source task reads its offsets itself, after its producer has fenced
        # the task's older instances. Read here, before that, the offsets topic can hold an open transaction of
        # a zombie on a worker cut off from the broker, and read_committed would wait for it until it times out.
        if not self.worker.config.exactly_once_source_enabled:
            self.refresh_offsets()

    # --- the config topic's listener (its reader thread) ---------------------------------------------
    def _wake(self) -> None:
        if self._member is not None:
            self._member.wakeup()

    def on_connector_config_update(self, name: str) -> None:
        with self._pending.lock:
            self._pending.connectors.add(name)
            if name not in self._snapshot.connectors:
                self._pending.rebalance_reason = f"connector {name} was created"
        self._wake()

    def on_connector_config_remove(self, name: str) -> None:
        with self._pending.lock:
            self._pending.connectors.add(name)
            self._pending.rebalance_reason = f"connector {name} was deleted"
        self._wake()

    def on_task_configs_update(self, connector: str, task_ids: Collection[ConnectorTaskId] = ()) -> None:
        with self._pending.lock:
            self._pending.task_configs.add(connector)
            self._pending.rebalance_reason = f"the task configs of connector {connector} changed"
        self._wake()

    def on_target_state_change(self, name: str) -> None:
        with self._pending.lock:
            self._pending.targets.add(name)
        self._wake()

    def on_session_key_update(self, key: Any) -> None:
        self._session_key = key if isinstance(key, SessionKey) else SessionKey(key.key, key.algorithm,
                                                                                key.created_ms)
        log.info("Session key updated (created at %d)", self._session_key.created_ms)

    def on_restart_request(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        with self._pending.lock:
            self._pending.restarts[name] = (include_tasks, only_failed)
        self._wake()

    def on_logger_level(self, namespace: str, level: str) -> None:
        logging.getLogger(namespace or None).setLevel(level)

    def _request_reconfiguration(self, name: str) -> None:
        """A running connector asked for new task configs (from its own thread)."""
        with self._pending.lock:
            self._pending.reconfigure.add(name)
        self._wake()

    # --- the group's callbacks (the tick thread, inside member.poll) ----------------------------------
    def on_assigned(self, assignment: Assignment, generation: int) -> None:
        self._handle_assignment(assignment, generation)

    def on_revoked(self, leader: str, connectors: Collection[str], tasks: Collection[ConnectorTaskId]) -> None:
        # eager protocol: everything stops before the group re-forms
        self._rebalancing = True
        self._work.stop(connectors, tasks)
        self._assigned_connectors = self._assigned_connectors - set(connectors)
        self._assigned_tasks = self._assigned_tasks - set(tasks)

    def on_membership_lost(self, connectors: frozenset[str], tasks: frozenset[ConnectorTaskId]) -> None:
        # Out of the group: the others run this work now. Until the next assignment this worker leads
        # nothing and knows no leader, so writes sent to it answer 409 rather than going to a stale leader.
        self._rebalancing = True
        self._leader_id = self._leader_url = None
        self._write_privileges = False
        self._rejoin_at = None
        # the tasks report no UNASSIGNED: sent from here once the link is back, it would land over the
        # RUNNING of the workers that took them over
        self._work.stop(self._work.connectors | connectors, self._work.tasks | tasks, report=False)
        self._assigned_connectors, self._assigned_tasks = frozenset(), frozenset()
        for name in connectors:
            self._reconfigure.pop(name, None)
            self._reconfigure_delay.pop(name, None)

    def _handle_assignment(self, a: Assignment, generation: int) -> None:
        self._generation = generation
        set_generation = getattr(self.status, "set_generation", None)
        if set_generation is not None:
            set_generation(generation)
        if a.error != NO_ERROR:
            log.info("The leader's config topic view (offset %d) is ahead of ours; reading it and rejoining",
                     a.config_offset)
            self.store.refresh(a.config_offset, self._sync_timeout_s)
            self._rebalancing = True
            self._member.request_rejoin("config topic behind the leader")
            return
        self._leader_id, self._leader_url = a.leader, a.leader_url
        self.rebalances += 1
        if a.revoked_connectors or a.revoked_tasks:
            log.info("Revoked by the leader: connectors %s, tasks %s", sorted(a.revoked_connectors),
                     [str(t) for t in sorted(a.revoked_tasks)])
            self._work.stop(a.revoked_connectors, a.revoked_tasks)
        self._assigned_connectors = (self._assigned_connectors - set(a.revoked_connectors)) | set(a.connectors)
        self._assigned_tasks = (self._assigned_tasks - set(a.revoked_tasks)) | set(a.tasks)
        if self.store.snapshot().offset < a.config_offset:
            reached = self.store.refresh(a.config_offset, self._sync_timeout_s)
            if reached < a.config_offset:
                log.warning("Could not read the config topic to offset %d within %.1f s; rejoining",
                            a.config_offset, self._sync_timeout_s)
                self._rebalancing = True
                self._member.request_rejoin("config topic not read to the assignment's offset")
                return
        self._snapshot = self.store.snapshot()
        self._start_assigned_work()
        if a.revoked_connectors or a.revoked_tasks:
            self._member.request_rejoin("revoked work must be reassigned")
        self._rejoin_at = self.clock.monotonic() + a.delay_ms / 1000 if a.delay_ms > 0 else None
        self._rebalancing = False
        self._ready.set()
        log.info("Rebalance done (generation %d, leader %s at %s%s): this worker runs %d connector(s) and %d "
                 "task(s)", generation, a.leader, a.leader_url, ", this worker is the leader" if self.is_leader
                 else "", len(self._assigned_connectors), len(self._assigned_tasks))

    def _start_assigned_work(self) -> None:
        """Start what the group assigned and this worker does not run yet (also what an earlier assignment
        could not start because the config topic was behind)."""
        connectors = self._assigned_connectors - self._work.connectors
        tasks = self._assigned_tasks - self._work.tasks
        now = self.clock.monotonic()
        for name in self._work.start(connectors, tasks, self._snapshot):
            self._reconfigure.setdefault(name, now)

    # --- the tick thread ---------------------------------------------------------------------------------------
    def _run(self) -> None:
        log.info("Distributed herder started (worker %s, REST %s)", self.worker.worker_id, self.rest_url)
        try:
            while not self._stopping.is_set():
                try:
                    self._tick()
                except Exception:  # one bad tick must not end the worker's membership
                    log.exception("Error in the distributed herder's tick; continuing")
                    self._stopping.wait(1.0)
        finally:
            self._work.stop_all()
            if self._member is not None:
                self._member.close()
            while not self._requests.empty():
                _, future = self._requests.get_nowait()
                future.set_exception(ConflictError("The worker is shutting down"))
            log.info("Distributed herder stopped")

    def _poll_timeout_ms(self) -> int:
        if self._pending.any() or not self._requests.empty():
            return 0
        now = self.clock.monotonic()
        deadlines = [now + _MAX_TICK_S, *self._reconfigure.values()]
        if self._rejoin_at is not None:
            deadlines.append(self._rejoin_at)
        return max(0, int((min(deadlines) - now) * 1000))

    def _tick(self) -> None:
        self._member.poll(self._poll_timeout_ms())
        problem = self._foreign_claim()
        if problem is not None:
            # another cluster claimed these topics first (two clusters started at once): this one gives way
            log.error(problem)
            self._stopping.set()
            if self._on_fatal is not None:
                self._on_fatal(problem)
            return
        if self._rejoin_at is not None and self.clock.monotonic() >= self._rejoin_at:
            self._rejoin_at = None
            self._member.request_rejoin("the scheduled rebalance delay is over")
        self._run_requests()
        if self._rebalancing:
            return
        self._apply_config_updates()
        self._reconfigure_connectors()
        if self.is_leader:
            self._maybe_claim_write_privileges()
            self._maybe_rotate_session_key()
            self._maybe_claim_topics()
        else:
            self._write_privileges = False

    def _run_requests(self) -> None:
        while not self._requests.empty():
            fn, future = self._requests.get_nowait()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # handed to the waiting REST thread
                    future.set_exception(exc)

    def on_tick_thread(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the tick thread (where all starting and stopping happens) and wait for its result."""
        if threading.current_thread() is self._thread:
            return fn()
        future: Future[T] = Future()
        self._requests.put((fn, future))
        self._wake()
        return future.result(_REQUEST_TIMEOUT_S)

    def _apply_config_updates(self) -> None:
        connectors, task_configs, targets, restarts, reconfigure, rebalance = self._pending.take()
        if not (connectors or task_configs or targets or restarts or reconfigure or rebalance):
            return
        old, new = self._snapshot, self.store.snapshot()
        self._snapshot = new
        now = self.clock.monotonic()
        for name in sorted(connectors):
            if name not in new.connectors:
                self._connector_deleted(name)
            elif self._work.owns_connector(name) and old.connectors.get(name) != new.connectors.get(name):
                log.info("[%s] Connector config changed; restarting the connector", name)
                if self._work.restart_connector(name, new):
                    self._reconfigure[name] = now
        for name in sorted(targets - set(connectors)):
            self._target_state_changed(name, old, new)
        for name in sorted(task_configs):
            self._task_configs_changed(name, old, new)
        for name, (include_tasks, only_failed) in sorted(restarts.items()):
            self._restart(name, include_tasks, only_failed, new)
        for name in reconfigure:
            self._reconfigure.setdefault(name, now)
        if rebalance:
            self._member.request_rejoin(rebalance)

    def _connector_deleted(self, name: str) -> None:
        tasks = self._work.tasks_of(name)
        owned = self._work.owns_connector(name)
        if owned or tasks:
            log.info("[%s] Connector deleted; stopping it and %d task(s) here", name, len(tasks))
            self._work.stop([name] if owned else [], tasks)
        if owned:
            self.status.remove_connector(name)
        self._reconfigure.pop(name, None)

    def _target_state_changed(self, name: str, old: ConfigSnapshot, new: ConfigSnapshot) -> None:
        if name not in new.connectors:
            return
        target, was = new.target_state(name), old.target_state(name)
        tasks = self._work.tasks_of(name)
        if target is TargetState.STOPPED:
            if tasks:
                self._work.stop([], tasks)
                for task in tasks:
                    self.status.remove_task(task)
            self.worker.set_connector_target_state(name, target)
            return
        if was is TargetState.STOPPED and self._work.owns_connector(name):
            if self._work.restart_connector(name, new):
                self._reconfigure[name] = self.clock.monotonic()
            return
        self.worker.set_connector_target_state(name, target)
        log.info("[%s] Target state now %s", name, target.value)

    def _task_configs_changed(self, name: str, old: ConfigSnapshot, new: ConfigSnapshot) -> None:
        before, after = old.task_configs.get(name, []), new.task_configs.get(name, [])
        gone, changed = [], []
        for task in self._work.tasks_of(name):
            if task.task >= len(after):
                gone.append(task)
            elif task.task >= len(before) or before[task.task] != after[task.task]:
                changed.append(task)
        if gone:
            self._work.stop([], gone)
        if changed:
            log.info("[%s] Task configs changed; restarting %s", name, ", ".join(map(str, changed)))
            self._work.restart_tasks(changed, new)

    def _restart(self, name: str, include_tasks: bool, only_failed: bool, snapshot: ConfigSnapshot) -> None:
        if name not in snapshot.connectors:
            return
        status = self.status.connector(name)
        if self._work.owns_connector(name) and (not only_failed or (status and status.state is State.FAILED)):
            log.info("[%s] Restarting connector on request", name)
            if self._work.restart_connector(name, snapshot):
                self._reconfigure[name] = self.clock.monotonic()
        if include_tasks:
            tasks = [t for t in self._work.tasks_of(name)
                     if not only_failed or ((s := self.status.task(t)) is not None and s.state is State.FAILED)]
            if tasks:
                log.info("[%s] Restarting task(s) %s on request", name, ", ".join(map(str, tasks)))
                self._work.restart_tasks(tasks, snapshot)

    # --- task configs: computed where the connector runs, stored by the leader ------------------------------
    def _reconfigure_connectors(self) -> None:
        now = self.clock.monotonic()
        for name, due in sorted(self._reconfigure.items()):
            if due > now:
                continue
            snapshot = self.store.snapshot()
            config = snapshot.connectors.get(name)
            if (config is None or not self._work.owns_connector(name)
                    or snapshot.target_state(name) is TargetState.STOPPED):
                self._reconfigure.pop(name, None)
                continue
            if snapshot.target_state(name) is TargetState.PAUSED:
                # As Kafka Connect: a paused connector is not asked for task configs (one created PAUSED has
                # no tasks); the request stays pending and runs once the connector is resumed.
                continue
            try:
                configs = self.worker.config_transformer.reverse(config, self.worker.connector_task_configs(name))
            except Exception as exc:  # the connector's task_configs() broke: it is FAILED
                self.worker.fail_connector(name, exc)
                self._reconfigure.pop(name, None)
                continue
            if name in snapshot.task_configs and configs == snapshot.task_configs[name]:
                self._reconfigure.pop(name, None)
                self._reconfigure_delay.pop(name, None)
                continue
            try:
                if self.is_leader:
                    self.store_task_configs(name, configs)
                else:
                    self._send_task_configs(name, configs)
            except (HerderError, httpx.HTTPError) as exc:
                delay = min(self._reconfigure_delay.get(name, _RECONFIGURE_BACKOFF_S[0] / 2) * 2,
                            _RECONFIGURE_BACKOFF_S[1])
                self._reconfigure_delay[name] = delay
                self._reconfigure[name] = now + delay
                log.warning("[%s] Could not store new task configs (%s); retrying in %.2f s", name,
                            getattr(exc, "message", exc), delay)
                continue
            log.info("[%s] %d task config(s) written", name, len(configs))
            self._reconfigure.pop(name, None)
            self._reconfigure_delay.pop(name, None)

    def store_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        config = self.store.snapshot().connectors.get(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        with stored(f"Task configs of connector {name}"):
            self.store.put_task_configs(name, configs, self._secret_keys(config, configs))

    def _send_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        leader = self._leader_url
        if leader is None:
            raise ConflictError(NO_LEADER_MESSAGE)
        body = json.dumps(configs).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        key = self._session_key
        if key is not None:
            headers.update(key.sign(body))
        response = self._http.post(f"{leader}/connectors/{quote(name, safe='')}/tasks?forward=true",
                                   content=body, headers=headers)
        if response.status_code >= 300:
            raise HerderError(f"the leader at {leader} answered {response.status_code}: {response.text[:200]}")

    def _maybe_claim_write_privileges(self) -> None:
        """Each time this worker becomes the leader (KIP-618: fences the config writers of earlier leaders), and
        again after a failed transactional write gave the privileges up while it still leads."""
        if self._write_privileges and not self.store.write_privileges_lost:
            return
        try:
            self.store.claim_write_privileges()
        except Exception as exc:  # tried again on the next tick
            log.error("Could not claim write privileges on the config topic: %s", exc)
            return
        self._write_privileges = True

    def _maybe_claim_topics(self) -> None:
        if self.store.snapshot().cluster is not None:
            return
        try:
            self.store.put_cluster(self.group_id)
        except (LogError, OSError) as exc:
            log.warning("Could not record this cluster's group.id in the config topic: %s", exc)
            return
        log.info("Config topic '%s' now belongs to Connect cluster '%s'", self.store.topic, self.group_id)

    def _maybe_rotate_session_key(self) -> None:
        now_ms = int(time.time() * 1000)
        key = self._session_key
        if key is not None and not key.expired(now_ms, self._key_ttl_ms):
            return
        new = SessionKey.generate(now_ms)
        try:
            self.store.put_session_key(new)
        except (LogError, OSError) as exc:
            log.warning("Could not write a new session key: %s", exc)
            return
        self._session_key = new
        log.info("Wrote a new session key (valid %d ms)", self._key_ttl_ms)

