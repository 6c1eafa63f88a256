"""The task host process: runs the tasks its worker deals it (see task_host.py for the design).

Started by the worker as ``python -m connect.runtime.task_host_process --fd N --index I`` with its end of the
task channel as file descriptor N; the worker's settings come over the channel (never on the command line,
where ``ps`` would show their secrets). It runs a Worker of its own whose status and offset stores are the
worker's, reached over the channel, and whose embedded-log sink consumers take their groups from the worker.
When the channel ends without a shutdown, its worker is gone, and so is this process, at once.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import queue
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from connect.api.topic_partition import TopicPartition
from connect.log.embedded.coordinator import GroupMembership, use_group_provider
from connect.log.embedded.signals import Waiter, signals_for
from connect.runtime.herder import ConnectorTaskId, Status, TargetState
from connect.runtime.storage.offsets import OffsetStore
from connect.runtime.storage.status import StatusStore
from connect.runtime.subscribe_barrier import wait_released
from connect.runtime.task_channel import ChannelClosed, TaskChannel

log = logging.getLogger(__name__)

OFFSET_CALL_TIMEOUT_S = 120.0
GROUP_CALL_TIMEOUT_S = 30.0
# A member asks the worker for its group's news when woken (a rebalance there) or when this process saw topics
# change (every writer announces topic changes through the directory's marker); this is only a fallback, long
# enough that hundreds of idle sink tasks cost no CPU
GROUP_CHECK_INTERVAL_S = 30.0


class RemoteStatusStore(StatusStore):
    """Task states go to the worker's status store; this process keeps none of them."""

    def __init__(self, channel: TaskChannel) -> None:
        super().__init__()
        self._channel = channel

    def put_task(self, task: ConnectorTaskId, status: Status) -> None:
        status = self._redacted(status)  # what this process resolved from config providers never leaves it
        try:
            self._channel.notify("status.task", connector=task.connector, task=task.task, state=status.state.value,
                                 trace=status.trace)
        except ChannelClosed:
            pass  # the worker is gone, and this process is about to be

    def add_topic(self, connector: str, topic: str) -> None:
        try:
            self._channel.notify("status.topic", connector=connector, topic=topic)
        except ChannelClosed:
            pass

    def put_connector(self, name: str, status: Status) -> None:
        pass  # connectors run in the worker


class RemoteOffsetStore(OffsetStore):
    """The worker's source offset store: a commit returns once the worker has made it durable."""

    def __init__(self, channel: TaskChannel) -> None:
        super().__init__()
        self._channel = channel

    def start(self) -> None:
        pass

    def _persist(self, changes: Mapping[str, str | None]) -> None:
        self._channel.call("offsets.put", timeout=OFFSET_CALL_TIMEOUT_S, changes=dict(changes))

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self._channel.call("offsets.get", timeout=OFFSET_CALL_TIMEOUT_S,
                                                          connector=connector, partition=dict(partition))
        return found

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        pairs = self._channel.call("offsets.list", timeout=OFFSET_CALL_TIMEOUT_S, connector=connector)
        return [(p, o) for p, o in pairs]


class _Member:
    __slots__ = ("claimed", "due", "dirty", "topics_version", "waiter")

    def __init__(self, waiter: Waiter | None, topics_version: int) -> None:
        self.waiter = waiter
        self.dirty = True
        self.due = 0.0
        self.claimed: list[TopicPartition] = []
        self.topics_version = topics_version


class RemoteGroups:
    """Stand-ins for the worker's group coordinators: each member of this process is one of the worker's,
    and asks it for partitions to give up and take only when told something changed (or once a second)."""

    def __init__(self, channel: TaskChannel) -> None:
        self._channel = channel
        self._lock = threading.Lock()
        self._members: dict[int, _Member] = {}

    def membership(self, root: str, group: str, metadata_interval: float) -> GroupMembership:
        return _RemoteMembership(self, root, group, metadata_interval)

    def wake(self, key: int) -> None:
        with self._lock:
            member = self._members.get(key)
        if member is not None:
            member.dirty = True
            if member.waiter is not None:
                member.waiter.event.set()

    def call(self, method: str, **args: Any) -> Any:
        return self._channel.call(method, timeout=GROUP_CALL_TIMEOUT_S, **args)

    def add(self, key: int, member: _Member) -> None:
        with self._lock:
            self._members[key] = member

    def get(self, key: int) -> _Member | None:
        with self._lock:
            return self._members.get(key)

    def remove(self, key: int) -> None:
        with self._lock:
            self._members.pop(key, None)


class _RemoteMembership:
    def __init__(self, groups: RemoteGroups, root: str, group: str, metadata_interval: float) -> None:
        self._groups = groups
        self._root = root
        self._group = group
        self._interval = metadata_interval
        self._signals = signals_for(root)

    def join(self, topics: Iterable[str] | None, pattern: re.Pattern[str] | None, waiter: Waiter | None = None) -> int:
        key = int(self._groups.call("group.join", root=self._root, group=self._group, interval=self._interval,
                                    topics=sorted(topics or ()), pattern=pattern.pattern if pattern else None))
        self._groups.add(key, _Member(waiter, self._signals.topics_version))
        return key

    def resubscribe(self, member_id: int, topics: Iterable[str] | None, pattern: re.Pattern[str] | None) -> None:
        self._groups.call("group.resubscribe", member=member_id, topics=sorted(topics or ()),
                          pattern=pattern.pattern if pattern else None)
        self._groups.wake(member_id)

    def leave(self, member_id: int) -> None:
        self._groups.remove(member_id)
        try:
            self._groups.call("group.leave", member=member_id)
        except (ChannelClosed, TimeoutError):
            pass  # the worker is gone: so is the group

    def maybe_refresh(self) -> None:
        pass  # the worker refreshes the group's topics when this member asks for news

    def pending_revocations(self, member_id: int) -> list[TopicPartition]:
        member = self._groups.get(member_id)
        if member is None:
            return []
        now = time.monotonic()
        version = self._signals.topics_version  # topics this process saw appear or go
        if not member.dirty and now < member.due and version == member.topics_version:
            return []
        member.dirty = False
        member.due = now + GROUP_CHECK_INTERVAL_S
        # topics appeared or went (seen here through the directory's marker): the worker may not have looked
        topics_changed, member.topics_version = version != member.topics_version, version
        news = self._groups.call("group.sync", member=member_id, topics_changed=topics_changed)
        member.claimed = [TopicPartition(t, p) for t, p in news["claimed"]]
        return [TopicPartition(t, p) for t, p in news["revoked"]]

    def confirm_revoked(self, member_id: int, partitions: Iterable[TopicPartition]) -> None:
        self._groups.call("group.confirm", member=member_id, partitions=[list(tp) for tp in partitions])

    def claim_assignments(self, member_id: int) -> list[TopicPartition]:
        member = self._groups.get(member_id)
        if member is None:
            return []
        claimed, member.claimed = member.claimed, []
        return claimed


class RemoteSubscribeBarrier:
    """The worker's SubscribeBarrier seen from a host: the worker expects the tasks it deals and tells each
    when its siblings (in this host or another) are ready to subscribe too."""

    def __init__(self, channel: TaskChannel) -> None:
        self._channel = channel
        self._lock = threading.Lock()
        self._released: dict[ConnectorTaskId, threading.Event] = {}

    def expect(self, task_id: ConnectorTaskId) -> None:
        pass  # the worker expected it when it dealt it here

    def forget(self, task_id: ConnectorTaskId) -> None:
        try:
            self._channel.notify("task.subscribing", connector=task_id.connector, task=task_id.task, waits=False)
        except ChannelClosed:
            pass

    def wait(self, task_id: ConnectorTaskId, stopping: threading.Event, timeout: float) -> None:
        released = threading.Event()
        with self._lock:
            self._released[task_id] = released
        try:
            self._channel.notify("task.subscribing", connector=task_id.connector, task=task_id.task, waits=True)
            wait_released(released, stopping, timeout)
        except ChannelClosed:
            pass
        finally:
            with self._lock:
                self._released.pop(task_id, None)

    def release(self, task_id: ConnectorTaskId) -> None:
        with self._lock:
            released = self._released.get(task_id)
        if released is not None:
            released.set()


class TaskHostProcess:
    """This process: the channel's reader thread answers counters inline and queues the lifecycle, which the
    main thread carries out in order."""

    def __init__(self, sock: socket.socket, index: int) -> None:
        self.index = index
        self._control: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        self.channel = TaskChannel(sock, self._handle, name=f"task-host-{index}-channel", on_close=self._closed)
        self.groups = RemoteGroups(self.channel)
        self.siblings = RemoteSubscribeBarrier(self.channel)
        self.worker: Any = None
        self.backend: Any = None
        self._ready = threading.Event()
        self._stopping: dict[ConnectorTaskId, Any] = {}  # asked to stop, thread not yet ended
        self._shutdown = False

    def _handle(self, method: str, args: dict[str, Any]) -> Any:
        if method == "snapshots":
            return self._snapshots()
        if method == "health":
            return self.backend.health_problem() if self.backend is not None else None
        if method == "group.wake":
            self.groups.wake(int(args["member"]))
            return None
        if method == "task.subscribe":
            self.siblings.release(ConnectorTaskId(args["connector"], args["task"]))
            return None
        if method in ("init", "start", "stop", "cancel", "transition", "shutdown"):
            self._control.put((method, args))
            return None
        raise ValueError(f"unknown request {method!r}")

    def _closed(self) -> None:
        if not self._shutdown:
            # the worker is gone (killed, or crashed): nobody takes this process's statuses and offsets any more;
            # what its tasks had not committed is replayed when the worker's replacement runs them
            os._exit(0)
        self._control.put(("closed", {}))

    def run(self) -> int:
        self.channel.start()
        while True:
            method, args = self._control.get()
            if method == "closed":
                return 0
            try:
                if method == "init":
                    self._init(args)
                elif method == "shutdown":
                    self._shutdown = True
                    self._stop_all()
                    return 0
                else:
                    self._lifecycle(method, args)
            except Exception:
                log.exception("Task host %d: %s failed", self.index, method)
                if method == "init":
                    return 1  # the worker sees the channel end and fails the tasks it dealt here

    def _init(self, args: dict[str, Any]) -> None:
        from connect.log import open_log_backend
        from connect.runtime.config_transformer import SecretRedactingFilter
        from connect.runtime.gc_policy import settle_heap
        from connect.runtime.plugins import PluginRegistry
        from connect.runtime.worker import Worker
        from connect.runtime.worker_config import WorkerConfig

        config = WorkerConfig(args["worker_config"])
        sys.setswitchinterval(config.python_switch_interval_us / 1_000_000)
        plugins = PluginRegistry(config.get_list("plugin.path"))
        settings = {**config.backend_config(), **args["backend"]}
        if settings.get("bootstrap.servers"):
            self.backend = open_log_backend(settings)
        else:
            from connect.log.embedded.backend import EmbeddedBackend

            # the worker owns the directory: it recovered it and cleans it
            self.backend = EmbeddedBackend(str(settings["embedded.log.dir"]), settings, beside_owner=True)
        use_group_provider(self.groups.membership)
        status = RemoteStatusStore(self.channel)
        worker = Worker(args["worker_id"], config, plugins, self.backend, RemoteOffsetStore(self.channel), status)
        worker.subscribe_barrier = self.siblings
        # as in the worker: values resolved from config providers are blanked from log lines and status traces
        status.redact = worker.config_transformer.redact
        redacting = SecretRedactingFilter(worker.config_transformer)
        for handler in logging.getLogger().handlers:
            handler.addFilter(redacting)
        self.worker = worker
        settle_heap()
        log.info("Task host %d ready (pid %d)", self.index, os.getpid())

    def _lifecycle(self, method: str, args: dict[str, Any]) -> None:
        task_id = ConnectorTaskId(args["connector"], args["task"])
        if method == "start":
            run = int(args["run"])
            # the Worker hands this to the task it builds now: its end is this run's, whatever else runs
            self.worker.task_exit_listener = functools.partial(self._task_ended, run)
            if not self.worker.start_task(task_id, args["connector_config"], args["task_config"],
                                          TargetState(args["target"])):
                self._task_ended(run, task_id, None)  # FAILED while being built: reported, nothing runs
        elif method == "stop":
            for tid, task in self.worker.signal_stop([task_id]):
                self._stopping[tid] = task
        elif method == "cancel":
            task = self.worker.task(task_id) or self._stopping.get(task_id)
            if task is not None:
                task.cancel()
        elif method == "transition":
            task = self.worker.task(task_id)
            if task is not None:
                task.transition_to(TargetState(args["target"]))

    def _task_ended(self, run: int, task_id: ConnectorTaskId, task: Any) -> None:
        """The task's thread ended (or it never started): the worker hears so with its final counters, which
        its status keeps showing (a FAILED task's, say) until the task is restarted or removed."""
        if self._stopping.get(task_id) is task:
            del self._stopping[task_id]
        try:
            self.channel.notify("task.ended", connector=task_id.connector, task=task_id.task, run=run,
                                snapshot=_snapshot_of(task) if task is not None else None)
        except ChannelClosed:
            pass

    def _snapshots(self) -> list[list[Any]]:
        """Every running task's counters."""
        worker = self.worker
        if worker is None:
            return []
        out: list[list[Any]] = []
        for task_id in worker.task_ids():
            task = worker.task(task_id)
            if task is not None:
                out.append([task_id.connector, task_id.task, _snapshot_of(task)])
        return out

    def _stop_all(self) -> None:
        if self.worker is not None:
            self.worker.stop()  # stops what still runs (nothing, normally: the worker stopped its tasks first)
        if self.backend is not None:
            self.backend.close()


def _snapshot_of(task: Any) -> dict[str, Any]:
    """A task's counters as RemoteWorkerTask serves them to the worker's status and metrics."""
    committed = task.committed_offsets() if task.is_sink else {}
    return {
        "metrics": task.metrics(),
        "signature": list(task.metrics_signature()),
        "committed": [[tp.topic, tp.partition, off] for tp, off in committed.items()],
        "clients": [[s.client_id, s.kind, s.outgoing_bytes, s.incoming_bytes, s.connections]
                    for s in task.client_stats()],
        "offset_commits": getattr(task, "offset_commits", 0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="connect.runtime.task_host_process")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--index", type=int, required=True)
    args = parser.parse_args(argv)
    return serve(args.fd, args.index)


def serve(fd: int, index: int) -> int:
    """Run host ``index`` on the task channel end ``fd`` until its worker stops it; the exit status. What a
    host forked by the fork server (connect.runtime.host_forkserver) runs too."""
    # the worker decides when this process stops: a Ctrl-C meant for the worker's terminal is the worker's
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    from connect.logging_setup import configure_logging

    configure_logging(tag=f"task-host-{index}")
    sock = socket.socket(fileno=fd)
    return TaskHostProcess(sock, index).run()


if __name__ == "__main__":
    sys.exit(main())
