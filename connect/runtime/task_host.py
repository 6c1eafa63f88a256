"""Task host processes: the worker's source and sink tasks run in processes of their own, so N tasks use N cores.

A worker's tasks would otherwise share its one interpreter lock, and two busy tasks use one core between them.
The worker starts up to ``task.processes`` hosts (``python -m connect.runtime.task_host_process``), on demand,
and deals each new task to the host with the fewest. A host runs whole WorkerTasks, plugins, converters,
transforms and log clients included, in a Worker of its own; the herder, REST, the offset and status stores
and the embedded log's group coordinators stay here. Over the task channel (task_channel.py):

* down: start (the stored configs; the host resolves config providers itself, as this worker would), stop,
  cancel, target state, and requests for a task's counters;
* up: every status change (this worker's StatusStore records it, so status is what runs), topics a task
  used, source offsets (committed to this worker's store, and only then acknowledged to the task, which
  commits after the flush as before), the end of a task's thread, and, on the embedded log, each sink
  consumer's part in its group: the member is one of this process's GroupCoordinator, played remotely.

A host whose worker dies sees its channel end and exits at once (so ``kill -9`` of the worker takes its hosts
with it, and what they had not committed is replayed, as for tasks in the worker). A host that dies leaves
its tasks FAILED with the reason, restartable as any failed task. Exactly-once source tasks (their producer
fencing and offset topics are the worker's) and Spark streaming tasks stay in the worker.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from connect.api.connector import SinkTask, SourceTask
from connect.api.topic_partition import TopicPartition
from connect.log.api import ClientStats
from connect.log.embedded.coordinator import GroupCoordinator, local_coordinator
from connect.log.embedded.signals import Waiter, signals_for
from connect.runtime.herder import ConnectorTaskId, State, Status, TargetState
from connect.runtime.host_forkserver import ForkedHost, ForkServerGone, exit_text, fork_server
from connect.runtime.plugins import PluginRegistry
from connect.runtime.storage.offsets import OffsetStore
from connect.runtime.storage.status import StatusStore
from connect.runtime.subscribe_barrier import SiblingGate, SubscribeBarrier
from connect.runtime.task_channel import ChannelClosed, TaskChannel
from connect.runtime.worker_config import WorkerConfig

__all__ = ["RemoteWorkerTask", "TaskHostPool", "task_host_pool"]

log = logging.getLogger(__name__)

SNAPSHOT_TIMEOUT_S = 2.0  # a status request waits at most this for a busy host's counters
SNAPSHOT_MAX_AGE_S = 0.05  # one status pass asks each task's counters several times: one request serves them


class RemoteWorkerTask:
    """The worker's handle on a task running in a host: what the Worker asks of a WorkerTask, over the channel."""

    def __init__(self, host: TaskHost, run: int, task_id: ConnectorTaskId, kind: str,
                 connector_config: Mapping[str, str], task_config: Mapping[str, str], target: TargetState) -> None:
        self.id = task_id
        self.run = run  # which start of the task this is: a restart's stop and start may overlap on one host
        self.host = host
        self.kind = kind  # "source" or "sink"
        self._start_args = {"connector_config": dict(connector_config), "task_config": dict(task_config),
                            "target": target.value}
        self._target = target
        self._ended = threading.Event()
        self._cancelled = False
        self._snapshot: dict[str, Any] = {"metrics": {}, "signature": [], "committed": [], "clients": [],
                                          "offset_commits": 0}
        self._snapshot_lock = threading.Lock()
        self.siblings: SiblingGate | None = None  # set by the Worker for a sink task

    @property
    def is_sink(self) -> bool:
        return self.kind == "sink"

    # --- lifecycle ---------------------------------------------------------------------------------------
    def start(self) -> None:
        try:
            self.host.channel.notify("start", **_task_args(self.id), run=self.run, **self._start_args)
        except ChannelClosed:
            self.host.task_lost(self)

    def stop(self) -> None:
        self._send("stop")

    def cancel(self) -> None:
        self._cancelled = True
        self._send("cancel")

    @property
    def is_cancelled(self) -> bool:
        return self._cancelled

    def await_stop(self, timeout: float) -> bool:
        return self._ended.wait(timeout)

    def transition_to(self, state: TargetState) -> None:
        self._target = state
        self._send("transition", target=state.value)

    @property
    def target_state(self) -> TargetState:
        return self._target

    def ended(self, snapshot: dict[str, Any] | None = None) -> None:
        """The task's thread has ended; ``snapshot``: its final counters."""
        if self.siblings is not None:
            self.siblings.forget(self.id)
        if snapshot is not None:
            with self._snapshot_lock:
                self._snapshot = snapshot
        self._ended.set()

    @property
    def has_ended(self) -> bool:
        return self._ended.is_set()

    def _send(self, method: str, **args: Any) -> None:
        try:
            self.host.channel.notify(method, **_task_args(self.id), **args)
        except ChannelClosed:
            pass  # the host is gone; its end has been (or is being) reported

    # --- counters, from the host -------------------------------------------------------------------------
    def _current(self) -> dict[str, Any]:
        if not self._ended.is_set():
            snap = self.host.snapshot(self.id)
            if snap is not None:
                with self._snapshot_lock:
                    self._snapshot = snap
        with self._snapshot_lock:
            return self._snapshot

    def metrics(self) -> dict[str, int | float]:
        return dict(self._current()["metrics"])

    def metrics_signature(self) -> tuple[Any, ...]:
        return tuple(self._current()["signature"])

    def committed_offsets(self) -> dict[TopicPartition, int]:
        return {TopicPartition(t, p): off for t, p, off in self._current()["committed"]}

    @property
    def offset_commits(self) -> int:
        return int(self._current()["offset_commits"])

    def client_stats(self) -> tuple[ClientStats, ...]:
        return tuple(ClientStats(*fields) for fields in self._current()["clients"])

    def __str__(self) -> str:
        return f"RemoteWorkerTask{{id={self.id}, host={self.host.index}}}"


def _task_args(task_id: ConnectorTaskId) -> dict[str, Any]:
    return {"connector": task_id.connector, "task": task_id.task}


class _RemoteWake(threading.Event):
    """A remote member's waiter event: the coordinator setting it tells the host its member has work."""

    def __init__(self, on_set: Callable[[], None]) -> None:
        super().__init__()
        self._on_set = on_set

    def set(self) -> None:
        if not self.is_set():
            super().set()
            self._on_set()


class TaskHost:
    """One task host process and the worker's side of its channel."""

    def __init__(self, index: int, pool: TaskHostPool) -> None:
        self.index = index
        self.pool = pool
        self._lock = threading.Lock()
        self.tasks: dict[ConnectorTaskId, RemoteWorkerTask] = {}  # the latest run of each task dealt here
        self._runs: dict[int, RemoteWorkerTask] = {}  # every run whose thread has not ended, stopping ones too
        self._snapshot_lock = threading.Lock()
        self._snapshots: dict[ConnectorTaskId, dict[str, Any]] = {}
        self._snapshots_at = float("-inf")
        self._health: str | None = None
        self._health_at = float("-inf")
        # the host's group members, by the key the host knows them by: (coordinator, wake-up, member id, log dir)
        self._members: dict[int, tuple[GroupCoordinator, _RemoteWake, int, str]] = {}
        self._next_member_key = 0
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.process = _spawn(child, index)
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        self.channel = TaskChannel(parent, self._handle, name=f"task-host-{index}-channel", on_close=self._closed)
        self.channel.start()

    @property
    def alive(self) -> bool:
        return not self.channel.closed

    def init(self, settings: Mapping[str, Any]) -> None:
        """Hand the host its settings. Not waited for: the tasks dealt to it meanwhile queue behind this on the
        channel, and a host that cannot start ends its channel, which fails them with the reason."""
        self.channel.notify("init", **settings)
        log.info("Task host %d started (pid %d)", self.index, self.process.pid)

    def add(self, task: RemoteWorkerTask) -> None:
        with self._lock:
            self.tasks[task.id] = task
            self._runs[task.run] = task

    def snapshot(self, task_id: ConnectorTaskId) -> dict[str, Any] | None:
        """The task's counters as the host last sent them: one request for every task of the host serves a
        whole status pass (a listing of many connectors asks each task several times)."""
        with self._snapshot_lock:
            # a task started since the last request is not in it: ask again rather than show no counters
            if time.monotonic() - self._snapshots_at >= SNAPSHOT_MAX_AGE_S or task_id not in self._snapshots:
                try:
                    found = self.channel.call("snapshots", timeout=SNAPSHOT_TIMEOUT_S)
                    self._snapshots = {ConnectorTaskId(c, t): snap for c, t, snap in found}
                except (ChannelClosed, TimeoutError) as exc:
                    log.debug("Counters of task host %d not read: %s", self.index, exc)
                self._snapshots_at = time.monotonic()
            return self._snapshots.get(task_id)

    def log_problem(self) -> str | None:
        """The host's answer to "is the log reachable" (its backend's health), asked at most every
        SNAPSHOT_MAX_AGE_S * 10; None when the host cannot say (busy, gone)."""
        with self._snapshot_lock:
            if time.monotonic() - self._health_at >= SNAPSHOT_MAX_AGE_S * 10:
                try:
                    self._health = self.channel.call("health", timeout=SNAPSHOT_TIMEOUT_S)
                except (ChannelClosed, TimeoutError) as exc:
                    log.debug("Log health of task host %d not read: %s", self.index, exc)
                    self._health = None
                self._health_at = time.monotonic()
            return self._health

    @property
    def load(self) -> int:
        with self._lock:
            return len(self._runs)

    # --- what the host sends -------------------------------------------------------------------------------
    def _handle(self, method: str, args: dict[str, Any]) -> Any:
        if method == "status.task":
            task = self._task(args)
            if task is not None and not task.is_cancelled:
                self.pool.status.put_task(task.id, Status(State(args["state"]), self.pool.worker_id, args.get("trace")))
            return None
        if method == "status.topic":
            self.pool.status.add_topic(args["connector"], args["topic"])
            return None
        if method == "task.ended":
            with self._lock:
                task = self._runs.pop(int(args["run"]), None)
                if task is not None and self.tasks.get(task.id) is task:
                    del self.tasks[task.id]
            if task is not None:
                task.ended(args.get("snapshot"))
            return None
        if method == "task.subscribing":
            task = self._task(args)
            # the siblings are this worker's SubscribeBarrier: a host's tasks run here only through this channel
            if task is not None and isinstance(task.siblings, SubscribeBarrier):
                if args.get("waits"):
                    task.siblings.arrive(task.id, functools.partial(self._release, task.id))
                else:
                    task.siblings.forget(task.id)
            return None
        if method == "offsets.put":
            self.pool.offset_store.put_raw(args["changes"])
            return None
        if method == "offsets.get":
            return self.pool.offset_store.get(args["connector"], args["partition"])
        if method == "offsets.list":
            return self.pool.offset_store.connector_offsets(args["connector"])
        if method.startswith("group."):
            return self._group(method, args)
        raise ValueError(f"unknown request {method!r}")

    def _task(self, args: Mapping[str, Any]) -> RemoteWorkerTask | None:
        with self._lock:
            return self.tasks.get(ConnectorTaskId(args["connector"], args["task"]))

    def _group(self, method: str, args: dict[str, Any]) -> Any:
        """A sink consumer's part in its embedded-log group, played by a member of this process's coordinator."""
        if method == "group.join":
            coordinator = local_coordinator(args["root"], args["group"], float(args["interval"]))
            with self._lock:
                key = self._next_member_key = self._next_member_key + 1
            wake = _RemoteWake(lambda: self._wake_member(key))
            waiter = Waiter()
            waiter.event = wake
            pattern = re.compile(args["pattern"]) if args.get("pattern") is not None else None
            member_id = coordinator.join(args.get("topics"), pattern, waiter)
            with self._lock:
                self._members[key] = (coordinator, wake, member_id, args["root"])
            return key
        key = int(args["member"])
        with self._lock:
            entry = self._members.get(key)
        if entry is None:
            raise ValueError(f"no group member {key}")
        coordinator, wake, member_id, root = entry
        if method == "group.sync":
            wake.clear()  # before looking: a rebalance from now on tells the host again
            if args.get("topics_changed"):
                # the host saw topics change through the directory's marker; this process, whose own consumers
                # may all be gone, may not be watching it, and its topic list is cached per change it heard of
                signals_for(root).topics_changed()
            coordinator.maybe_refresh()
            revoked = coordinator.pending_revocations(member_id)
            claimed = coordinator.claim_assignments(member_id)
            return {"revoked": [list(tp) for tp in revoked], "claimed": [list(tp) for tp in claimed]}
        if method == "group.confirm":
            coordinator.confirm_revoked(member_id, [TopicPartition(t, p) for t, p in args["partitions"]])
            return None
        if method == "group.resubscribe":
            pattern = re.compile(args["pattern"]) if args.get("pattern") is not None else None
            coordinator.resubscribe(member_id, args.get("topics"), pattern)
            return None
        if method == "group.leave":
            self._leave(key)
            return None
        raise ValueError(f"unknown request {method!r}")

    def _release(self, task_id: ConnectorTaskId) -> None:
        try:
            self.channel.notify("task.subscribe", **_task_args(task_id))
        except ChannelClosed:
            pass

    def _wake_member(self, key: int) -> None:
        try:
            self.channel.notify("group.wake", member=key)
        except ChannelClosed:
            pass

    def _leave(self, key: int) -> None:
        with self._lock:
            entry = self._members.pop(key, None)
        if entry is not None:
            entry[0].leave(entry[2])

    def _closed(self) -> None:
        """The channel ended: the host exited (or is being shut down). Its members leave their groups; tasks it
        still ran are FAILED with the reason, unless they were being given up anyway."""
        for key in list(self._members):
            self._leave(key)
        code = self.process.poll()
        if code is None:
            try:
                code = self.process.wait(2.0)
            except subprocess.TimeoutExpired:
                code = None
        with self._lock:
            tasks = list(self._runs.values())
            self._runs.clear()
            self.tasks.clear()
        if tasks and not self.pool.closing:
            log.error("Task host %d (pid %d) exited (%s) while running %d task(s): %s", self.index,
                      self.process.pid, exit_text(code), len(tasks), ", ".join(str(t.id) for t in tasks))
        for task in tasks:
            self.task_lost(task, code)

    def task_lost(self, task: RemoteWorkerTask, code: int | None = None) -> None:
        if not task.is_cancelled and not task.has_ended and not self.pool.closing:
            trace = (f"org.apache.kafka.connect.errors.ConnectException: the task host process {self.index} "
                     f"(pid {self.process.pid}) running task {task.id} exited ({exit_text(code)})")
            self.pool.status.put_task(task.id, Status(State.FAILED, self.pool.worker_id, trace))
        task.ended()

    def close(self, timeout: float) -> None:
        """Ask the host to stop and wait for it; killed after ``timeout``."""
        try:
            self.channel.notify("shutdown")
        except ChannelClosed:
            pass
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("Task host %d (pid %d) did not stop within %.1f s; killing it", self.index,
                        self.process.pid, timeout)
            self.process.kill()
            self.process.wait()
        self.channel.close()


def _spawn(channel: socket.socket, index: int) -> subprocess.Popen[bytes] | ForkedHost:
    """Start host ``index`` on its end of the task channel: forked by the fork server when the worker has one
    (connect.runtime.host_forkserver: the runtime is imported already), else a new interpreter."""
    server = fork_server()
    if server is not None:
        try:
            return server.spawn(channel, index)
        except ForkServerGone as exc:
            log.warning("Task host %d starts as a new process: %s", index, exc)
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "connect.runtime.task_host_process", "--fd", str(channel.fileno()),
         "--index", str(index)],
        # a session of its own: a Ctrl-C or a signal to the worker's process group is the worker's to act on (it
        # stops its tasks, then its hosts); a host that got it first would die under running tasks
        pass_fds=(channel.fileno(),), stdin=subprocess.DEVNULL, close_fds=True, start_new_session=True)


def default_task_processes() -> int:
    """One host per core; none on a single core, where a host would only add a hop."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores if cores > 1 else 0


def task_host_pool(config: WorkerConfig, worker_id: str, plugins: PluginRegistry, backend: Any, status: StatusStore,
                   offset_store: OffsetStore) -> TaskHostPool | None:
    """The worker's task hosts as ``task.processes`` asks, or None: tasks in the worker (``task.processes=0``,
    one core, or a log another process cannot open)."""
    processes = config.task_processes
    if processes < 0:
        processes = default_task_processes()
    if processes == 0:
        return None
    if backend.name == "embedded":
        settings: dict[str, Any] = {"embedded.log.dir": backend.log_dir}
        backend.share_with_processes()
    elif backend.name == "kafka":
        settings = {}
    else:
        log.info("task.processes=%d: the %s log is this process's own; tasks run in the worker", processes,
                 backend.name)
        return None
    log.info("Tasks run in up to %d task host process(es) (task.processes=%d)", processes, config.task_processes)
    return TaskHostPool(processes, worker_id, config, plugins, settings, status, offset_store)


class TaskHostPool:
    """Up to ``processes`` task hosts, started on demand; each new task goes to the host running fewest."""

    def __init__(self, processes: int, worker_id: str, config: WorkerConfig, plugins: PluginRegistry,
                 backend_settings: Mapping[str, Any], status: StatusStore, offset_store: OffsetStore) -> None:
        self.processes = processes
        self.worker_id = worker_id
        self.config = config
        self.plugins = plugins
        self.status = status
        self.offset_store = offset_store
        self._settings = {"worker_id": worker_id, "worker_config": {k: _text(v) for k, v in config.originals.items()},
                          "backend": dict(backend_settings)}
        self._hosts: list[TaskHost] = []
        self._lock = threading.Lock()
        self._runs = 0
        self.closing = False

    def can_host(self, task_config: Mapping[str, str]) -> str | None:
        """"source" or "sink" when the task named by ``task.class`` runs in a host; None when it runs in the
        worker (exactly-once sources, streaming tasks, a class that does not resolve: its error is the
        worker's to report)."""
        try:
            cls = self.plugins.task_class(str(task_config.get("task.class", "")))
        except Exception:
            return None
        if issubclass(cls, SinkTask):
            return "sink"
        if issubclass(cls, SourceTask) and not self.config.exactly_once_source_enabled:
            return "source"
        return None

    def task(self, task_id: ConnectorTaskId, kind: str, connector_config: Mapping[str, str],
             task_config: Mapping[str, str], target: TargetState) -> RemoteWorkerTask:
        host = self._least_loaded()
        with self._lock:
            self._runs += 1
            run = self._runs
        task = RemoteWorkerTask(host, run, task_id, kind, connector_config, task_config, target)
        host.add(task)
        return task

    def _least_loaded(self) -> TaskHost:
        """The host running fewest tasks; a new host while every host has some and there may be more."""
        with self._lock:
            self._hosts = [h for h in self._hosts if h.alive]
            best = min(self._hosts, key=lambda h: (h.load, h.index)) if self._hosts else None
            if best is not None and (best.load == 0 or len(self._hosts) >= self.processes):
                return best
            used = {h.index for h in self._hosts}
            host = TaskHost(next(i for i in range(1, self.processes + 1) if i not in used), self)
            try:
                host.init(self._settings)
            except BaseException:
                host.close(1.0)
                raise
            self._hosts.append(host)
            return host

    def log_problem(self) -> str | None:
        """The first problem with the log a host's clients see (the hosts' tasks are what reads and writes)."""
        return next((p for p in (h.log_problem() for h in self.hosts() if h.alive) if p is not None), None)

    def hosts(self) -> list[TaskHost]:
        with self._lock:
            return list(self._hosts)

    def close(self, timeout: float = 10.0) -> None:
        self.closing = True
        for host in self.hosts():
            host.close(timeout)


def _text(value: Any) -> Any:
    """A worker setting as the host's config takes it (lists as the comma-separated text they came from)."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
