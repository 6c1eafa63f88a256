"""A worker that has lost its group coordinator past the session timeout stops its work (as Kafka Connect's
WorkerCoordinator does, so that nothing runs on a worker that is no longer a member of the group), and takes
work again once it has rejoined.

The member is driven with a stand-in for kafka-python's coordinator (a coordinator that cannot be found); the
herder side uses the in-process cluster of test_distributed_herder (a real Worker on the in-memory log).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any

import pytest

from connect.runtime.distributed.coordinator import WorkerGroupMember, kafka_python_client_configs
from connect.runtime.distributed.protocol import NO_ERROR, Assignment, encode_assignment
from connect.runtime.herder import ConflictError, ConnectorTaskId, State
from tests.runtime.fakes import FakeClock, MemoryBackend, RecordingSinkTask, append, sink_task
from tests.runtime.test_distributed_herder import (  # noqa: F401 - cluster is a fixture
    ME,
    MY_URL,
    SOURCE,
    _lead,
    cluster,
)

SESSION_MS, HEARTBEAT_MS = 10_000, 3_000
T0, T1 = ConnectorTaskId("src", 0), ConnectorTaskId("src", 1)


class _Heartbeat:
    """kafka-python's Heartbeat as far as the member reads it: when the coordinator last answered."""

    def __init__(self) -> None:
        self.last_receive = time.time()
        self.last_reset = time.time()

    def session_timeout_expired(self) -> bool:
        return time.time() - max(self.last_receive, self.last_reset) > SESSION_MS / 1000


class _UnreachableCoordinator:
    """A coordinator that is unknown and cannot be found (the worker's link is down); or, with ``reachable``,
    one that is found, where a join completes only with ``join_completes``."""

    def __init__(self) -> None:
        self.heartbeat = _Heartbeat()
        self.reachable = False
        self.join_completes = True
        self.coordinator_id = "coordinator-1"
        self.discovery_timeouts: list[int | None] = []
        self.joins = 0
        self.generation_resets = 0
        self._rejoin = False

    def coordinator_unknown(self) -> bool:
        return not self.reachable

    def ensure_coordinator_ready(self, timeout_ms: int | None = None) -> bool:
        self.discovery_timeouts.append(timeout_ms)
        return self.reachable

    def need_rejoin(self) -> bool:
        return self._rejoin

    def request_rejoin(self) -> None:
        self._rejoin = True

    def reset_generation(self) -> None:
        self.generation_resets += 1
        self._rejoin = True

    def ensure_active_group(self, timeout_ms: int | None = None) -> bool:
        self.joins += 1
        if not self.join_completes:
            time.sleep((timeout_ms or 0) / 1000)
            return False
        self._rejoin = False
        return True

    def poll_heartbeat(self) -> None:
        pass

    def close(self, timeout_ms: int | None = None) -> None:
        pass


class _Broker:
    def __init__(self, port: int) -> None:
        self.host, self.port = "127.0.0.1", port


class _Cluster:
    """Where the coordinator listens: a port of this machine (``port`` 0: nothing listens there)."""

    def __init__(self) -> None:
        self.port = 0

    def broker_metadata(self, node: str) -> _Broker | None:
        return _Broker(self.port) if node == "coordinator-1" else None


class _Client:
    def __init__(self) -> None:
        self.cluster = _Cluster()
        # kafka-python's connections by node id: the bootstrap broker's and the group coordinator's
        self._conns: dict[str, object] = {"bootstrap-0": object(), "coordinator-1": object()}
        self.closed_nodes: list[str] = []

    def wakeup(self) -> None:
        pass

    def close(self, node_id: str | None = None) -> None:
        if node_id is not None:
            self._conns.pop(node_id, None)
            self.closed_nodes.append(node_id)


class _Listener:
    def __init__(self) -> None:
        self.assigned: list[Assignment] = []
        self.lost: list[tuple[frozenset[str], frozenset[ConnectorTaskId]]] = []

    def on_assigned(self, assignment: Assignment, generation: int) -> None:
        self.assigned.append(assignment)

    def on_revoked(self, leader: str, connectors: Any, tasks: Any) -> None:
        raise AssertionError("the cooperative protocol revokes nothing before a rebalance")

    def on_membership_lost(self, connectors: frozenset[str], tasks: frozenset[ConnectorTaskId]) -> None:
        self.lost.append((connectors, tasks))


class _MemberOfUnreachableCoordinator(WorkerGroupMember):
    def _connect(self, bootstrap_servers: str, client_id: str, client_configs: Any,
                 coordinator_configs: Any) -> tuple[Any, Any]:
        return _Client(), _UnreachableCoordinator()


def _member(listener: _Listener, heartbeat_ms: int = HEARTBEAT_MS, rebalance_ms: int = 60_000
            ) -> WorkerGroupMember:
    member = _MemberOfUnreachableCoordinator(
        bootstrap_servers="198.18.0.1:9092", group_id="g", rest_url=MY_URL, connect_protocol="sessioned",
        session_timeout_ms=SESSION_MS, heartbeat_interval_ms=heartbeat_ms, rebalance_timeout_ms=rebalance_ms,
        scheduled_rebalance_max_delay_ms=300_000, config_state=lambda: (0, {}),
        refresh_config=lambda offset, timeout: offset, listener=listener)
    assignment = Assignment(NO_ERROR, ME, MY_URL, 0, connectors=("src",), tasks=(T0, T1), version=2)
    member._on_join_complete(3, ME, "sessioned", encode_assignment(assignment))
    return member


def _coordinator(member: WorkerGroupMember) -> _UnreachableCoordinator:
    coordinator = member._coordinator
    assert isinstance(coordinator, _UnreachableCoordinator)
    return coordinator


def test_a_member_cut_off_from_its_coordinator_past_the_session_timeout_stops_its_work(caplog):
    listener = _Listener()
    member = _member(listener)
    coordinator = _coordinator(member)
    coordinator.heartbeat.last_receive = coordinator.heartbeat.last_reset = time.time() - 12.5
    with caplog.at_level(logging.INFO, "connect.runtime.distributed.coordinator"):
        member.poll(1000)
    assert listener.lost == [(frozenset({"src"}), frozenset({T0, T1}))]
    assert member.connectors == frozenset() and member.tasks == frozenset()
    # as Kafka Connect: each poll looks for the coordinator for at most heartbeat.interval.ms
    assert coordinator.discovery_timeouts == [HEARTBEAT_MS]
    # the broker has dropped this member: it joins again as a new one, with nothing to report as running
    assert coordinator.generation_resets == 1 and coordinator.joins == 0
    lines = [r.getMessage() for r in caplog.records if "not a member" in r.getMessage()]
    assert len(lines) == 1, caplog.text
    assert "group g" in lines[0] and "1 connector(s) and 2 task(s)" in lines[0] and "12." in lines[0]
    member.poll(1000)  # still cut off: nothing more to stop, no second line
    assert len(listener.lost) == 1
    assert len([r for r in caplog.records if "not a member" in r.getMessage()]) == 1


def test_a_coordinator_unknown_for_less_than_the_session_timeout_keeps_the_work(caplog):
    # a coordinator moving to another broker, or a broker restart: the group still counts this member in
    listener = _Listener()
    member = _member(listener)
    coordinator = _coordinator(member)
    coordinator.heartbeat.last_receive = time.time() - 4.0
    member.poll(1000)
    assert listener.lost == []
    assert member.tasks == frozenset({T0, T1}) and coordinator.generation_resets == 0


def test_a_member_whose_coordinator_comes_back_rejoins():
    listener = _Listener()
    member = _member(listener)
    coordinator = _coordinator(member)
    coordinator.heartbeat.last_receive = coordinator.heartbeat.last_reset = time.time() - 30
    member.poll(1000)
    assert len(listener.lost) == 1 and coordinator.joins == 0
    coordinator.reachable = True
    member.poll(0)
    assert coordinator.joins == 1


def _join_under_way(member: WorkerGroupMember, silent_s: float) -> _UnreachableCoordinator:
    coordinator = _coordinator(member)
    coordinator.reachable, coordinator.join_completes = True, False
    coordinator.request_rejoin()
    # heartbeats pause while a join is under way: the last answer is from before it
    coordinator.heartbeat.last_receive = coordinator.heartbeat.last_reset = time.time() - silent_s
    return coordinator


def test_a_member_cut_off_while_a_join_is_under_way_stops_its_work():
    # the join's request sits on a connection over the cut link until it times out; a fresh connection
    # to the coordinator fails at once (here: nothing listens on its port)
    listener = _Listener()
    member = _member(listener, heartbeat_ms=200)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        member._client.cluster.port = probe.getsockname()[1]  # bound, not listening: refused
        coordinator = _join_under_way(member, silent_s=11)
        started = time.monotonic()
        member.poll(1000)
    assert listener.lost == [(frozenset({"src"}), frozenset({T0, T1}))]
    assert coordinator.joins == 1 and time.monotonic() - started < 5  # after one step, not the rebalance timeout


def test_a_long_join_with_a_reachable_coordinator_keeps_the_work():
    # the others are slow to rejoin: the join waits for them, up to the rebalance timeout, and this worker is
    # still a member all along
    listener = _Listener()
    member = _member(listener, heartbeat_ms=100, rebalance_ms=600)
    with socket.socket() as coordinator_port:
        coordinator_port.bind(("127.0.0.1", 0))
        coordinator_port.listen()
        member._client.cluster.port = coordinator_port.getsockname()[1]
        coordinator = _join_under_way(member, silent_s=11)
        member.poll(0)
    assert listener.lost == [] and member.tasks == frozenset({T0, T1})
    assert coordinator.joins >= 3  # waited in steps until the rebalance timeout


def test_the_herder_stops_the_work_of_a_lost_membership_and_refuses_writes_until_it_rejoins(cluster):  # noqa: F811
    herder, _, member, _ = cluster
    _lead(member, herder)
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    _lead(member, herder, generation=2, connectors=("src",))
    herder.cluster._tick()
    _lead(member, herder, generation=3, tasks=(T0, T1))
    for t in (T0, T1):
        herder.status.await_task(t, State.RUNNING)
    assert herder.cluster.is_leader

    reported = {t: list(herder.status.history[t]) for t in (T0, T1)}
    herder.cluster.on_membership_lost(frozenset({"src"}), frozenset({T0, T1}))
    assert herder.cluster.work.tasks == frozenset() and herder.cluster.work.connectors == frozenset()
    assert herder.worker.task_ids("src") == [] and not herder.worker.is_connector_running("src")
    # the tasks that stopped report nothing: the workers that took them over report them (an UNASSIGNED
    # from here, sent once the link is back, would land over their RUNNING)
    assert {t: herder.status.history[t] for t in (T0, T1)} == reported
    # no longer a member: not the leader, and no leader to forward a write to
    assert not herder.cluster.is_leader and herder.cluster.leader_url is None
    with pytest.raises(ConflictError, match="no known leader URL"):
        herder.put_connector_config("other", SOURCE, allow_replace=False)
    herder.cluster._tick()  # a tick while out of the group starts nothing
    assert herder.worker.task_ids("src") == []

    # back in the group: the leader gives it work again (a fresh member: the whole assignment is new)
    _lead(member, herder, generation=7, connectors=("src",), tasks=(T0, T1))
    for t in (T0, T1):
        herder.status.await_task(t, State.RUNNING)
    assert herder.cluster.work.tasks == frozenset({T0, T1}) and herder.worker.is_connector_running("src")


def test_a_task_that_outlives_its_graceful_stop_reports_nothing_more(cluster):  # noqa: F811
    # as Kafka Connect cancels it: by the time it ends it may run on another worker, whose status counts
    herder, _, member, _ = cluster
    worker = herder.worker
    _lead(member, herder)
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    _lead(member, herder, generation=2, connectors=("src",))
    herder.cluster._tick()
    _lead(member, herder, generation=3, tasks=(T0,))
    herder.status.await_task(T0, State.RUNNING)
    task = worker._tasks[T0]
    release = threading.Event()
    original_close = task.close

    def stuck_close() -> None:  # a final commit that cannot reach the broker
        release.wait(10)
        original_close()

    task.close = stuck_close  # type: ignore[method-assign]
    worker.stop_tasks([T0], timeout=0.2)
    assert T0 not in worker.task_ids("src")
    release.set()
    assert task.await_stop(10)
    assert herder.status.history[T0][-1] is State.RUNNING  # no UNASSIGNED once it was cancelled


def test_stopping_several_stuck_tasks_waits_one_graceful_timeout_not_one_each(cluster):  # noqa: F811
    herder, _, member, _ = cluster
    worker = herder.worker
    _lead(member, herder)
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    _lead(member, herder, generation=2, connectors=("src",))
    herder.cluster._tick()
    _lead(member, herder, generation=3, tasks=(T0, T1))
    release = threading.Event()
    for t in (T0, T1):
        herder.status.await_task(t, State.RUNNING)
        task = worker._tasks[t]
        task.close = lambda close=task.close: (release.wait(10), close())  # type: ignore[method-assign]
    started = time.monotonic()
    worker.stop_tasks([T0, T1], timeout=2.0)
    elapsed = time.monotonic() - started
    release.set()
    assert 2.0 <= elapsed < 3.5, elapsed  # one timeout for both (4 s and more when each waited its own)


def _sink() -> tuple[Any, Any]:
    clock = FakeClock()
    backend = MemoryBackend(clock)
    backend.log.create("lines")
    wt = sink_task(RecordingSinkTask(), clock, backend)
    wt.initialize_and_start()
    return wt, backend


def test_a_sink_task_asked_to_stop_puts_nothing_its_poll_returns_afterwards():
    # a poll (or a commit before it) that returns after the stop request: the records are left for the next
    # owner of the partitions, which reads them again from the committed offsets
    wt, backend = _sink()
    append(backend, "lines", "a", "b")
    wt.stop()
    wt.iteration()
    assert wt.task.values == []


def test_a_cancelled_sink_task_leaves_out_its_final_commit():
    # its worker lost it: the commit could not reach the log (and is no longer this task's to make)
    wt, backend = _sink()
    append(backend, "lines", "a")
    wt.iteration()
    assert wt.task.values == ["a"]
    wt.cancel()
    wt.stop()
    wt.execute()
    assert backend.log.groups == {}



def test_the_group_member_reconnects_within_a_second_once_the_broker_is_back():
    # kafka-python's own reconnect back-off grows to 30 s while the broker cannot be reached: a worker whose
    # attempts failed through a 30 s outage then waited up to that long after the heal before it rejoined, and
    # the first worker back took all the work alone, only to hand most of it on again. Kafka Connect's clients
    # back off at most reconnect.backoff.max.ms (1 s); the member's client does the same.
    configs = kafka_python_client_configs({})
    assert configs["reconnect_backoff_ms"] == 50 and configs["reconnect_backoff_max_ms"] == 1000
    # the worker settings of the same names (Kafka's and librdkafka's) apply to the member's client too
    configs = kafka_python_client_configs({"reconnect.backoff.ms": "20", "reconnect.backoff.max.ms": "2500"})
    assert configs["reconnect_backoff_ms"] == 20 and configs["reconnect_backoff_max_ms"] == 2500


def test_a_member_that_gives_up_its_membership_drops_its_connections_to_the_broker():
    # Requests sent over a link that went down stay in flight until request.timeout.ms (30 s), also after the
    # link is back: kafka-python marks a dead coordinator unknown but keeps its connection (Kafka's client
    # disconnects it). Dropped, the member looks for the coordinator on fresh connections as soon as the broker
    # answers, instead of up to 30 s after the heal while another worker takes all the work alone.
    listener = _Listener()
    member = _member(listener)
    coordinator = _coordinator(member)
    coordinator.heartbeat.last_receive = coordinator.heartbeat.last_reset = time.time() - 12.5
    member.poll(1000)
    assert len(listener.lost) == 1
    assert sorted(member._client.closed_nodes) == ["bootstrap-0", "coordinator-1"]
    member.poll(1000)  # still cut off: nothing more to give up, and nothing more to drop
    assert len(member._client.closed_nodes) == 2
