"""DistributedHerder in-process: a real Worker on the in-memory log, a fake group member and an in-memory
config store, driven tick by tick on the test's thread (no group, no Kafka, milliseconds per test)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import httpx
import pytest

from connect.runtime.distributed.cluster_work import ClusterWork
from connect.runtime.distributed.herder import DistributedHerder
from connect.runtime.distributed.protocol import CONFIG_MISMATCH, NO_ERROR, Assignment
from connect.runtime.distributed.zombie_fencing import ZombieFencing
from connect.runtime.herder import (
    BadRequestError,
    ConflictError,
    ConnectorTaskId,
    ForbiddenError,
    HerderError,
    InternalRequestSignature,
    NotFoundError,
    NotLeaderError,
    ServiceUnavailableError,
    State,
    TargetState,
)
from connect.runtime.offset_committer import SourceTaskOffsetCommitter
from connect.runtime.session_key import SessionKey
from connect.runtime.storage.config_store import ConfigSnapshot
from connect.runtime.worker import Worker
from connect.runtime.worker_config import DistributedConfig
from tests.runtime.fakes import FakeClock, MemoryBackend, MemoryOffsetStore, RecordingStatus, registry

SOURCE = {"connector.class": "CountingSourceConnector", "tasks.max": "2", "lines": "2"}
ME, OTHER = "member-me", "member-other"
MY_URL, OTHER_URL = "http://127.0.0.1:18083", "http://127.0.0.1:18084"


class MemoryConfigStore:
    """The config topic as a list of records applied to a ConfigSnapshot, calling the listener as the
    KafkaConfigBackingStore's reader thread would."""

    def __init__(self) -> None:
        self._snapshot = ConfigSnapshot()
        self.listener: object = None
        self.records: list[tuple[str, object]] = []
        self.fail_writes = False

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def snapshot(self) -> ConfigSnapshot:
        return copy.deepcopy(self._snapshot)  # as the real store: a copy the herder reads without locks

    def refresh(self, min_offset: int, timeout: float) -> int:
        return self._snapshot.offset

    def _append(self, key: str, value: object) -> None:
        if self.fail_writes:
            from connect.runtime.storage.config_store import ConfigWriteError
            raise ConfigWriteError("the config topic refused the write")
        self.records.append((key, value))
        self._snapshot.apply(key, value)  # type: ignore[arg-type]
        self._snapshot.offset += 1
        listener = self.listener
        name = key.split("-", 1)[1] if "-" in key else key
        if key.startswith("connector-"):
            if value is None:
                listener.on_connector_config_remove(name)  # type: ignore[attr-defined]
            else:
                listener.on_connector_config_update(name)  # type: ignore[attr-defined]
        elif key.startswith("target-state-"):
            listener.on_target_state_change(key[len("target-state-"):])  # type: ignore[attr-defined]
        elif key.startswith("commit-") and listener is not None:
            listener.on_task_configs_update(key[len("commit-"):], ())  # type: ignore[attr-defined]

    def put_connector_config(self, name: str, config: Mapping[str, str], target: TargetState | None = None,
                             secret_keys: Sequence[str] = ()) -> None:
        self._append(f"connector-{name}", {"properties": dict(config)})
        if target is not None:
            self.put_target_state(name, target)

    def put_target_state(self, name: str, target: TargetState) -> None:
        self._append(f"target-state-{name}", {"state.v2": target.value})

    def put_task_configs(self, name: str, configs: Sequence[Mapping[str, str]], secret_keys: object = ()) -> None:
        for i, cfg in enumerate(configs):
            self._append(f"task-{name}-{i}", {"properties": dict(cfg)})
        self._append(f"commit-{name}", {"tasks": len(configs)})

    def remove_connector(self, name: str) -> None:
        self._append(f"connector-{name}", None)
        self._append(f"target-state-{name}", None)

    def put_restart_request(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        self.records.append((f"restart-connector-{name}", {"include-tasks": include_tasks}))
        self.listener.on_restart_request(name, include_tasks, only_failed)  # type: ignore[attr-defined]

    topic = "connect-configs"

    def put_cluster(self, group_id: str) -> None:
        self._append("headrace-cluster", {"group.id": group_id})

    def put_task_count_record(self, name: str, count: int) -> None:
        self._append(f"tasks-fencing-{name}", {"task-count": count})

    write_privileges_lost = False  # no transactional write of this store fails

    def claim_write_privileges(self) -> None:
        self.records.append(("claim", None))

    def put_session_key(self, key: SessionKey) -> None:
        self.records.append(("session-key", key.created_ms))
        self.listener.on_session_key_update(key)  # type: ignore[attr-defined]


class FakeMember:
    def __init__(self, listener: ClusterWork) -> None:
        self.listener = listener
        self.member_id = ME
        self.protocol_version = 2
        self.pending: list[tuple[Assignment, int]] = []
        self.rejoins: list[str] = []
        self.closed = False

    def poll(self, timeout_ms: int) -> None:
        while self.pending:
            assignment, generation = self.pending.pop(0)
            self.listener.on_assigned(assignment, generation)

    def request_rejoin(self, reason: str) -> None:
        self.rejoins.append(reason)

    def wakeup(self) -> None:
        pass

    def close(self, timeout_ms: int = 0) -> None:
        self.closed = True


@pytest.fixture
def cluster():
    clock = FakeClock()
    backend = MemoryBackend(clock)
    config = DistributedConfig({
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "bootstrap.servers": "unused:9092", "group.id": "g", "config.storage.topic": "c",
        "offset.storage.topic": "o", "status.storage.topic": "s", "task.shutdown.graceful.timeout.ms": "2000"})
    worker = Worker("127.0.0.1:18083", config, registry(), backend, MemoryOffsetStore(), RecordingStatus(),
                    clock=clock, source_committer=SourceTaskOffsetCommitter(clock))
    store = MemoryConfigStore()
    members: list[FakeMember] = []

    def member_factory(listener, state, refresh):
        members.append(FakeMember(listener))
        return members[-1]

    herder = DistributedHerder(worker, store, MY_URL, member_factory=member_factory, clock=clock)
    store.listener = herder.cluster
    herder.store.start()
    cluster = herder.cluster
    cluster._snapshot = store.snapshot()
    cluster._member = member_factory(cluster, cluster._config_state, cluster._refresh_config)
    yield herder, store, members[0], clock
    herder.cluster.work.stop_all()
    worker.stop()


def _lead(member: FakeMember, herder: DistributedHerder, generation: int = 1, leader: str = ME, **items) -> None:
    url = MY_URL if leader == ME else OTHER_URL
    member.pending.append((Assignment(NO_ERROR, leader, url, herder.store.snapshot().offset, **items), generation))
    herder.cluster._tick()


def test_requests_during_the_first_rebalance_get_409_with_kafka_connects_message(cluster):
    herder, _, _, _ = cluster
    with pytest.raises(ConflictError, match="no known leader URL"):
        herder.put_connector_config("src", SOURCE, allow_replace=False)


def test_a_follower_sends_writes_to_the_leader(cluster):
    herder, _, member, _ = cluster
    _lead(member, herder, leader=OTHER)
    with pytest.raises(NotLeaderError) as err:
        herder.put_connector_config("src", SOURCE, allow_replace=False)
    assert err.value.leader_url == OTHER_URL


def test_the_leader_stores_a_connector_and_a_rebalance_is_asked_for(cluster):
    herder, store, member, _ = cluster
    _lead(member, herder)
    created, info = herder.put_connector_config("src", SOURCE, allow_replace=False)
    assert created and info.tasks == ()
    assert ("connector-src", {"properties": {**SOURCE, "name": "src"}}) in store.records
    herder.cluster._tick()
    assert any("src was created" in r for r in member.rejoins)


def test_an_assigned_connector_starts_and_its_task_configs_are_written_by_the_leader(cluster):
    herder, store, member, _ = cluster
    _lead(member, herder)
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    _lead(member, herder, generation=2, connectors=("src",))
    herder.cluster._tick()
    assert [k for k, _ in store.records if k.startswith(("task-", "commit-"))] == [
        "task-src-0", "task-src-1", "commit-src"]
    tasks = (ConnectorTaskId("src", 0), ConnectorTaskId("src", 1))
    _lead(member, herder, generation=3, tasks=tasks)
    for t in tasks:
        herder.status.await_task(t, State.RUNNING)
    assert herder.cluster.work.tasks == frozenset(tasks)


def test_the_status_listing_holds_every_connector_with_the_body_of_each(cluster):
    herder, _, member, _ = cluster
    _lead(member, herder)
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    herder.put_connector_config("other", SOURCE, allow_replace=False)
    _lead(member, herder, generation=2, connectors=("src",))  # "other" is another worker's
    herder.cluster._tick()
    tasks = (ConnectorTaskId("src", 0), ConnectorTaskId("src", 1))
    _lead(member, herder, generation=3, tasks=tasks)
    for t in tasks:
        herder.status.await_task(t, State.RUNNING)
    bodies = herder.connector_status_bodies()
    assert set(bodies) == {"src", "other"}
    for name, body in bodies.items():
        assert body is herder.connector_status_body(name)
        assert body == herder.connector_status(name).to_json()
    assert [t["state"] for t in bodies["src"]["tasks"]] == ["RUNNING", "RUNNING"]


def test_revoked_work_stops_and_the_worker_rejoins_at_once(cluster):
    herder, _, member, _ = cluster
    _lead(member, herder)
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    _lead(member, herder, generation=2, connectors=("src",))
    herder.cluster._tick()
    t0, t1 = ConnectorTaskId("src", 0), ConnectorTaskId("src", 1)
    _lead(member, herder, generation=3, tasks=(t0, t1))
    herder.status.await_task(t1, State.RUNNING)
    member.rejoins.clear()
    _lead(member, herder, generation=4, revoked_tasks=(t1,))
    assert herder.cluster.work.tasks == frozenset({t0})
    assert t1 not in herder.worker.task_ids("src")
    assert member.rejoins == ["revoked work must be reassigned"]


def test_a_config_mismatch_rejoins_without_starting_anything(cluster):
    herder, _, member, _ = cluster
    member.pending.append((Assignment(CONFIG_MISMATCH, ME, MY_URL, 99), 1))
    herder.cluster._tick()
    assert member.rejoins == ["config topic behind the leader"]
    with pytest.raises(ConflictError):
        herder.put_connector_config("x", SOURCE, allow_replace=False)


def test_a_scheduled_delay_rejoins_when_it_is_over(cluster):
    herder, _, member, clock = cluster
    member.pending.append((Assignment(NO_ERROR, ME, MY_URL, 0, delay_ms=3000), 1))
    herder.cluster._tick()
    assert member.rejoins == []
    clock.advance(3.1)
    herder.cluster._tick()
    assert member.rejoins == ["the scheduled rebalance delay is over"]


def test_stop_writes_stopped_and_empty_task_configs_and_the_owner_stops_its_tasks(cluster):
    herder, store, member, _ = cluster
    _lead(member, herder)
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    _lead(member, herder, generation=2, connectors=("src",))
    herder.cluster._tick()
    t0, t1 = ConnectorTaskId("src", 0), ConnectorTaskId("src", 1)
    _lead(member, herder, generation=3, tasks=(t0, t1))
    herder.status.await_task(t0, State.RUNNING)
    herder.stop_connector("src")
    assert store.records[-2:] == [("target-state-src", {"state.v2": "STOPPED"}), ("commit-src", {"tasks": 0})]
    herder.cluster._tick()
    assert herder.worker.task_ids("src") == []
    assert herder.status.connector("src").state is State.STOPPED


def test_task_configs_from_another_worker_need_the_session_key_signature(cluster):
    herder, store, member, _ = cluster
    _lead(member, herder)
    herder.cluster._tick()  # the leader writes the first session key
    key = herder.cluster.session_key
    assert key is not None and "session-key" in [k for k, _ in store.records]
    assert ("headrace-cluster", {"group.id": "connect-cluster"}) in store.records
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    body = b'[{"a":"1"}]'
    with pytest.raises(BadRequestError, match="missing required signature"):
        herder.put_task_configs("src", [{"a": "1"}], InternalRequestSignature(body, None, None))
    wrong = SessionKey.generate(0).sign(body)
    with pytest.raises(ForbiddenError, match="invalid signature"):
        herder.put_task_configs("src", [{"a": "1"}], InternalRequestSignature(
            body, wrong["X-Connect-Request-Signature-Algorithm"], wrong["X-Connect-Authorization"]))
    good = key.sign(body)
    herder.put_task_configs("src", [{"a": "1"}], InternalRequestSignature(
        body, good["X-Connect-Request-Signature-Algorithm"], good["X-Connect-Authorization"]))
    assert store.snapshot().task_configs["src"] == [{"a": "1"}]


def test_without_a_session_key_yet_internal_requests_get_503(cluster):
    herder, _, member, _ = cluster
    _lead(member, herder, leader=OTHER)
    with pytest.raises(ServiceUnavailableError):
        herder.put_task_configs("src", [], InternalRequestSignature(b"[]", None, "x"))


def test_a_failed_config_write_changes_nothing_and_says_why(cluster):
    herder, store, member, _ = cluster
    _lead(member, herder)
    store.fail_writes = True
    with pytest.raises(Exception, match="not stored: the config topic refused the write"):
        herder.put_connector_config("src", SOURCE, allow_replace=False)
    assert herder.connectors() == []


def test_a_deleted_connector_stops_on_its_worker(cluster):
    herder, _, member, _ = cluster
    _lead(member, herder)
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    _lead(member, herder, generation=2, connectors=("src",))
    herder.cluster._tick()
    t0 = ConnectorTaskId("src", 0)
    _lead(member, herder, generation=3, tasks=(t0,))
    herder.status.await_task(t0, State.RUNNING)
    herder.delete_connector("src")
    herder.cluster._tick()
    assert herder.worker.task_ids("src") == [] and not herder.worker.is_connector_running("src")
    assert herder.cluster.work.connectors == frozenset()


def test_a_claim_of_these_topics_by_another_cluster_stops_this_worker_with_one_line(cluster):
    herder, store, member, _ = cluster
    fatal: list[str] = []
    herder.cluster._on_fatal = fatal.append
    store._append("headrace-cluster", {"group.id": "someone-else"})
    store._append("headrace-cluster", {"group.id": "connect-cluster"})  # a later claim does not win
    herder.cluster._tick()
    assert len(fatal) == 1 and "group.id 'someone-else'" in fatal[0] and "connect-cluster" in fatal[0]
    assert herder.cluster._stopping.is_set()


# --- KIP-618 zombie fencing on the leader --------------------------------------------------------------------


class FencingAdmin:
    def __init__(self) -> None:
        self.fenced: list[list[str]] = []

    def fence_producers(self, ids):
        self.fenced.append(list(ids))

    def close(self) -> None:
        pass


def test_the_leader_claims_config_write_privileges_each_time_it_becomes_leader(cluster):
    herder, store, member, _ = cluster
    _lead(member, herder)
    herder.cluster._tick()
    assert [k for k, _ in store.records].count("claim") == 1
    _lead(member, herder, generation=2, leader=OTHER)
    _lead(member, herder, generation=3)
    assert [k for k, _ in store.records].count("claim") == 2


def test_fencing_writes_a_task_count_record_and_fences_the_previous_generation(cluster):
    herder, store, member, _ = cluster
    admin = FencingAdmin()
    herder.worker._admin = admin
    _lead(member, herder)
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    herder.cluster.store_task_configs("src", [{"task.class": "x"}] * 3)
    herder.fencing.fence("src")  # the first exactly-once generation: nothing to fence, a record to write
    assert admin.fenced == [] and ("tasks-fencing-src", {"task-count": 3}) in store.records
    herder.fencing.fence("src")  # nothing changed since: no second round
    assert [k for k, _ in store.records].count("tasks-fencing-src") == 1
    herder.cluster.store_task_configs("src", [{"task.class": "x"}] * 2)
    herder.fencing.fence("src")
    assert admin.fenced == [["g-src-0", "g-src-1", "g-src-2"]]
    assert store.records[-1] == ("tasks-fencing-src", {"task-count": 2})


def test_one_task_replacing_one_task_needs_no_fencing_round(cluster):
    herder, store, member, _ = cluster
    admin = FencingAdmin()
    herder.worker._admin = admin
    _lead(member, herder)
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    herder.cluster.store_task_configs("src", [{"task.class": "x"}])
    herder.fencing.fence("src")
    herder.cluster.store_task_configs("src", [{"task.class": "y"}])
    herder.fencing.fence("src")
    assert admin.fenced == [] and store.records[-1] == ("tasks-fencing-src", {"task-count": 1})


def test_fencing_asks_for_a_source_connector_that_exists(cluster):
    herder, _, member, _ = cluster
    _lead(member, herder)
    with pytest.raises(NotFoundError):
        herder.fencing.fence("nope")
    herder.put_connector_config("snk", {"connector.class": "NullSinkConnector", "topics": "t"},
                                allow_replace=False)
    with pytest.raises(BadRequestError, match="not a source connector"):
        herder.fencing.fence("snk")


def test_a_follower_refuses_fencing_requests_and_names_the_leader(cluster):
    herder, _, member, _ = cluster
    _lead(member, herder, leader=OTHER)
    member.protocol_version = 1  # unsigned (the signature check comes first, tested with put_task_configs)
    with pytest.raises(NotLeaderError):
        herder.fence_zombies("src", InternalRequestSignature(b"", None, None))


# --- a follower's task asks the leader to fence, while the group may change under it --------------------------


class _FollowerCluster:
    """What ZombieFencing reads of ClusterWork on a worker that does not lead."""

    def __init__(self, leaders: list[str | None]) -> None:
        self._leaders = leaders  # the leader each successive ask sees; the last one stays
        self.is_leader = False
        self.session_key = None

    @property
    def leader_url(self) -> str | None:
        return self._leaders.pop(0) if len(self._leaders) > 1 else self._leaders[0]


def _fencing(leaders: list[str | None], answer, wait_s: float = 60.0):
    asked: list[str] = []
    slept: list[float] = []
    now = [0.0]

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return answer(request)

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    fencing = ZombieFencing(_FollowerCluster(leaders), lambda: FencingAdmin(), lambda config: "source", "g-",
                            httpx.Client(transport=httpx.MockTransport(handler)), 3.0, leader_wait_s=wait_s,
                            sleep=sleep, monotonic=lambda: now[0])
    return fencing, asked, slept


def test_a_task_asks_the_next_leader_when_the_one_it_asked_went_away():
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.host == "old-leader":
            raise httpx.ConnectError("Connection refused", request=request)
        return httpx.Response(204)

    fencing, asked, slept = _fencing(["http://old-leader:8083", None, "http://new-leader:8083"], answer)
    fencing.before_task_starts(ConnectorTaskId("src", 0))
    assert asked == ["http://old-leader:8083/connectors/src/fence", "http://new-leader:8083/connectors/src/fence"]
    assert slept == [0.1, 0.2], "asked again after a growing pause, once no leader was known either"


def test_a_task_asks_again_while_the_worker_it_asked_is_rebalancing_or_no_longer_leads():
    answers = [httpx.Response(409, text="rebalance in progress"), httpx.Response(503, text="no session key"),
               httpx.Response(204)]
    fencing, asked, _ = _fencing(["http://leader:8083"], lambda request: answers.pop(0))
    fencing.before_task_starts(ConnectorTaskId("src", 0))
    assert len(asked) == 3 and answers == []


def test_a_refused_fencing_request_is_not_asked_again():
    fencing, asked, _ = _fencing(["http://leader:8083"], lambda request: httpx.Response(404, text="not found"))
    with pytest.raises(HerderError, match="answered 404"):
        fencing.before_task_starts(ConnectorTaskId("src", 0))
    assert len(asked) == 1


def test_a_task_stops_asking_once_the_rebalance_timeout_passed_or_it_is_stopped():
    fencing, asked, slept = _fencing([None], lambda request: httpx.Response(204), wait_s=10.0)
    with pytest.raises(HerderError, match="src-0.*no leader"):
        fencing.before_task_starts(ConnectorTaskId("src", 0))
    assert asked == [] and 8.0 <= sum(slept) <= 10.0
    fencing, asked, slept = _fencing([None], lambda request: httpx.Response(204))
    with pytest.raises(HerderError, match="no leader"):
        fencing.before_task_starts(ConnectorTaskId("src", 0), stopping=lambda: True)
    assert slept == [], "a task being stopped does not wait for a leader"


@pytest.mark.parametrize("exactly_once", [False, True])
def test_the_offsets_topic_is_read_before_tasks_start_unless_each_source_task_reads_it_after_fencing(
        cluster, monkeypatch, exactly_once):
    # With exactly-once sources, a read here could wait on a zombie's open transaction that only the new
    # task's producer aborts (the cut-worker failure of tests/distributed/test_multihost_exactly_once.py).
    herder, _, member, _ = cluster
    worker = herder.cluster.worker
    monkeypatch.setattr(type(worker.config), "exactly_once_source_enabled", property(lambda self: exactly_once))
    reads: list[float] = []
    monkeypatch.setattr(worker.offset_store, "refresh", reads.append, raising=False)
    _lead(member, herder)
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    _lead(member, herder, generation=2, connectors=("src",))
    herder.cluster._tick()
    _lead(member, herder, generation=3, tasks=(ConnectorTaskId("src", 0),))
    assert len(reads) == (0 if exactly_once else 1)
