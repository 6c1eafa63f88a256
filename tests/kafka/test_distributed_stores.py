"""The distributed config, status and offset stores on the real broker: two store instances stand for two
workers on one set of internal topics, and the raw records are checked against Kafka Connect's formats."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_backend
from connect.log.api import LogBackend, LogError, NewTopic
from connect.runtime.herder import ConnectorTaskId, State, Status, TargetState
from connect.runtime.storage.config_backing_store import KafkaConfigBackingStore
from connect.runtime.storage.offset_backing_store import KafkaOffsetStore, offset_partition
from connect.runtime.storage.status_backing_store import KafkaStatusBackingStore
from tests.support import wait_until


@pytest.fixture
def backend(kafka) -> Iterator[LogBackend]:
    b = open_log_backend({"bootstrap.servers": kafka.bootstrap_servers})
    yield b
    b.close()


def _raw(backend: LogBackend, topic: str, partitions: int = 1) -> list[tuple[int, bytes | None, bytes | None]]:
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest", "enable.auto.commit": "false"})
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(tps)
    ends = consumer.end_offsets(tps)
    out = []
    try:
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for batch in consumer.poll(1.0, 1000):
                out.extend((batch.partition, k, v) for k, v in zip(batch.keys, batch.values, strict=True))
    finally:
        consumer.close()
    return out


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args: self.calls.append((name, args))


def test_config_writes_of_one_worker_reach_the_other_in_kafka_connects_format(backend, unique_topic):
    topic = unique_topic("configs")
    a = KafkaConfigBackingStore(backend, topic, replication_factor=1)
    listener = Recorder()
    b = KafkaConfigBackingStore(backend, topic, replication_factor=1, listener=listener)  # type: ignore[arg-type]
    a.start()
    b.start()
    try:
        a.put_connector_config("c", {"connector.class": "FileStreamSource", "tasks.max": "1"}, TargetState.STARTED)
        a.put_task_configs("c", [{"task.class": "X", "k": "v"}])
        a.put_target_state("c", TargetState.STOPPED)
        b.refresh(0, 10)
        snap = b.snapshot()
        assert snap.connectors["c"]["tasks.max"] == "1"
        assert snap.task_configs["c"] == [{"task.class": "X", "k": "v"}]
        assert snap.target_state("c") is TargetState.STOPPED
        assert ("on_task_configs_update", ("c", [ConnectorTaskId("c", 0)])) in listener.calls
        a.remove_connector("c")
        b.refresh(0, 10)
        assert "c" not in b.snapshot().connectors
        assert ("on_connector_config_remove", ("c",)) in listener.calls
        records = {k.decode(): v for _, k, v in _raw(backend, topic) if k}
        assert records["target-state-c"] is None and records["connector-c"] is None  # tombstones, last
        raw = [(k, v) for _, k, v in _raw(backend, topic)]
        assert (b"target-state-c", b'{"state":"PAUSED","state.v2":"STOPPED"}') in raw
        assert (b"commit-c", b'{"tasks":1}') in raw
        assert (b"task-c-0", b'{"properties":{"task.class":"X","k":"v"}}') in raw
    finally:
        a.stop()
        b.stop()


def test_task_configs_apply_only_with_their_commit_record(backend, unique_topic):
    topic = unique_topic("configs")
    store = KafkaConfigBackingStore(backend, topic, replication_factor=1)
    store.start()
    try:
        store.put_connector_config("c", {"connector.class": "FileStreamSource"}, TargetState.STARTED)
        producer = backend.producer({"acks": "all"})
        producer.send(topic, b'{"properties":{"a":"1"}}', b"task-c-0", 0)
        producer.flush(10)
        store.refresh(0, 10)
        assert "c" not in store.snapshot().task_configs
        producer.send(topic, b'{"tasks":1}', b"commit-c", 0)
        producer.flush(10)
        producer.close(5)
        store.refresh(0, 10)
        assert store.snapshot().task_configs["c"] == [{"a": "1"}]
    finally:
        store.stop()


def test_a_config_topic_that_is_not_compacted_is_refused(backend, unique_topic):
    topic = unique_topic("configs")
    admin = backend.admin()
    admin.create_topic(NewTopic(topic, 1, 1, {"cleanup.policy": "delete"}))
    admin.close()
    with pytest.raises(LogError, match=f"Topic '{topic}' supplied via the 'config.storage.topic' property is "
                                       "required to have 'cleanup.policy=compact'"):
        KafkaConfigBackingStore(backend, topic, replication_factor=1).start()


def test_statuses_are_shared_and_a_stale_worker_cannot_hide_the_new_owners_state(backend, unique_topic):
    topic = unique_topic("status")
    new_owner = KafkaStatusBackingStore(backend, topic, "w1:8083", partitions=2, replication_factor=1)
    old_owner = KafkaStatusBackingStore(backend, topic, "w2:8083", partitions=2, replication_factor=1)
    new_owner.start()
    old_owner.start()
    task = ConnectorTaskId("c", 0)
    try:
        new_owner.set_generation(5)
        new_owner.put_task(task, Status(State.RUNNING, "w1:8083"))
        wait_until(lambda: (s := old_owner.task(task)) and s.state is State.RUNNING, 15, what="the status read")
        assert old_owner.task(task) == Status(State.RUNNING, "w1:8083", None, 5)
        old_owner.set_generation(4)
        old_owner.put_task(task, Status(State.UNASSIGNED, "w2:8083"))  # a late report from the old generation
        assert old_owner.task(task).state is State.RUNNING
        new_owner.put_connector("c", Status(State.RUNNING, "w1:8083"))
        wait_until(lambda: old_owner.connector("c") is not None, 15, what="the connector status")
        new_owner.remove_connector("c")
        wait_until(lambda: old_owner.connector("c") is None and not old_owner.tasks("c"), 15,
                   what="the tombstones")
        raw = {k: v for _, k, v in _raw(backend, topic, 2)}
        assert raw[b"status-task-c-0"] is None
    finally:
        new_owner.stop()
        old_owner.stop()


def test_offsets_written_anywhere_are_found_by_the_same_lookup(backend, unique_topic):
    topic = unique_topic("offsets")
    a = KafkaOffsetStore(backend, topic, partitions=5, replication_factor=1)
    # b reads the topic only when asked (start, refresh): following it, b could see a's write before the first
    # look below, which checks that another worker's offsets are known once refreshed and not before
    b = KafkaOffsetStore(backend, topic, partitions=5, replication_factor=1, follow=False)
    a.start()
    b.start()
    try:
        a.put("src", [({"filename": "/data/in.txt"}, {"position": 42})])
        assert b.get("src", {"filename": "/data/in.txt"}) is None
        assert b.refresh(10)
        assert b.get("src", {"filename": "/data/in.txt"}) == {"position": 42}
        key = b'["src",{"filename":"/data/in.txt"}]'
        partitions = {p for p, k, _ in _raw(backend, topic, 5) if k == key}
        assert partitions == {offset_partition(key, 5)}
        # a foreign writer's spacing (JSON is JSON): normalised, so the lookup finds it
        producer = backend.producer({"acks": "all"})
        producer.send(topic, b'{ "position" : 7 }', b'[ "other", { "filename" : "x" } ]', 0)
        producer.flush(10)
        producer.close(5)
        assert a.refresh(10)
        assert a.get("other", {"filename": "x"}) == {"position": 7}
        a.reset("src")
        assert b.refresh(10)
        assert b.get("src", {"filename": "/data/in.txt"}) is None
        assert json.loads(key) == ["src", {"filename": "/data/in.txt"}]
    finally:
        a.stop()
        b.stop()
