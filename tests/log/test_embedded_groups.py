"""Consumer groups on the embedded log: in-process coordination, listener deltas, committed offsets."""

from __future__ import annotations

import gc

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogError, NewTopic, RebalanceListener
from connect.log.embedded.backend import EmbeddedBackend
from tests.support import wait_until

pytestmark = pytest.mark.timeout(60)
QUIET = {"log.retention.check.interval.ms": 3_600_000}
NO_AUTO = {"auto.offset.reset": "earliest", "enable.auto.commit": "false"}


class Recorder(RebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, list[TopicPartition]]] = []

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        self.events.append(("assigned", list(partitions)))

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        self.events.append(("revoked", list(partitions)))


def tps(topic: str, *parts: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in parts]


def poll_until(condition, consumers, timeout: float = 10.0, max_records: int = 500) -> None:
    def settled() -> bool:
        if condition():
            return True
        for c in consumers:
            c.poll(0.01, max_records)
        return False

    wait_until(settled, timeout, interval=0, what="the group to settle")


def test_two_members_split_four_partitions_and_one_takes_over(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("t", 4))
    l1, l2 = Recorder(), Recorder()
    c1 = backend.consumer("g", NO_AUTO)
    c2 = backend.consumer("g", NO_AUTO)
    c1.subscribe(["t"], listener=l1)
    c1.poll(0)
    assert c1.assignment() == set(tps("t", 0, 1, 2, 3))
    assert l1.events == [("assigned", tps("t", 0, 1, 2, 3))]

    c2.subscribe(["t"], listener=l2)
    poll_until(lambda: len(c1.assignment()) == 2 and len(c2.assignment()) == 2, [c2, c1])
    assert c1.assignment() | c2.assignment() == set(tps("t", 0, 1, 2, 3))
    moved = sorted(c2.assignment())
    # cooperative: c1 heard only what it lost, c2 only what it gained
    assert l1.events[1:] == [("revoked", moved)]
    assert l2.events == [("assigned", moved)]

    c2.close()
    assert l2.events[-1] == ("revoked", moved)
    poll_until(lambda: len(c1.assignment()) == 4, [c1])
    assert l1.events[2:] == [("assigned", moved)]
    c1.close()
    assert l1.events[-1] == ("revoked", tps("t", 0, 1, 2, 3))
    backend.close()


def test_a_moved_partition_continues_from_the_committed_offset(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("t", 2))
    producer = backend.producer()
    for p in (0, 1):
        producer.send_batch("t", p, [b"%d-%d" % (p, i) for i in range(10)])
    producer.flush()

    class CommitOnRevoke(Recorder):
        def __init__(self, consumer) -> None:
            super().__init__()
            self.consumer = consumer
            self.committed: dict[TopicPartition, int] = {}

        def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
            super().on_partitions_revoked(partitions)
            self.committed = {tp: self.consumer.position(tp) for tp in partitions}
            self.consumer.commit(self.committed)

    c1 = backend.consumer("g", NO_AUTO)
    listener = CommitOnRevoke(c1)
    c1.subscribe(["t"], listener=listener)
    c1.poll(1.0, 3)
    c1.poll(1.0, 3)
    c2 = backend.consumer("g", NO_AUTO)

    class PositionOnAssign(Recorder):
        def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
            self.positions = {tp: c2.position(tp) for tp in partitions}

    l2 = PositionOnAssign()
    c2.subscribe(["t"], listener=l2)
    poll_until(lambda: len(c1.assignment()) == 1, [c1], max_records=1)
    first = []
    while not first:
        first = c2.poll(1.0, 1)
    (moved,) = c2.assignment()
    start = listener.committed[moved]
    assert 0 < start < 10 or moved.partition == 1
    assert l2.positions == {moved: start}
    assert (first[0].offsets[0], first[0].values[0]) == (start, b"%d-%d" % (moved.partition, start))
    c1.close()
    c2.close()
    backend.close()


def test_pattern_subscription_picks_up_new_topics(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    admin = backend.admin()
    admin.create_topic(NewTopic("logs-a", 1))
    admin.create_topic(NewTopic("other", 1))
    listener = Recorder()
    consumer = backend.consumer("pat", NO_AUTO)
    consumer.subscribe(pattern=r"logs-.*", listener=listener)
    consumer.poll(0)
    assert consumer.assignment() == {TopicPartition("logs-a", 0)}
    admin.create_topic(NewTopic("logs-b", 2))
    producer = backend.producer()
    producer.send_batch("logs-b", 1, [b"hello"])
    producer.flush()
    values = wait_until(lambda: [v for fb in consumer.poll(0.1) for v in fb.values], 10, interval=0,
                        what="the record on the new topic")
    assert values == [b"hello"]
    assert consumer.assignment() == {TopicPartition("logs-a", 0), *tps("logs-b", 0, 1)}
    assert listener.events[-1] == ("assigned", tps("logs-b", 0, 1))
    consumer.close()
    backend.close()


def test_committed_offsets_survive_reopening(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("t", 2))
    producer = backend.producer()
    producer.send_batch("t", 0, [b"x"] * 20)
    producer.flush()
    consumer = backend.consumer("keep", NO_AUTO)
    consumer.assign(tps("t", 0, 1))
    assert consumer.committed(tps("t", 0, 1)) == {TopicPartition("t", 0): None, TopicPartition("t", 1): None}
    consumer.commit({TopicPartition("t", 0): 12})
    consumer.close()
    backend.close()

    backend = EmbeddedBackend(str(tmp_path), QUIET)
    consumer = backend.consumer("keep", NO_AUTO)
    consumer.assign(tps("t", 0))
    assert consumer.committed(tps("t", 0)) == {TopicPartition("t", 0): 12}
    assert consumer.position(TopicPartition("t", 0)) == 12
    assert consumer.poll(1.0)[0].offsets[0] == 12
    assert backend.admin().list_group_offsets("keep") == {TopicPartition("t", 0): 12}
    consumer.close()
    backend.close()


def test_auto_commit_on_close(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("t", 1))
    producer = backend.producer()
    producer.send_batch("t", 0, [b"x"] * 7)
    producer.flush()
    consumer = backend.consumer("auto", {"auto.offset.reset": "earliest"})
    consumer.subscribe(["t"])
    assert sum(len(b) for b in consumer.poll(1.0)) == 7
    consumer.close()
    assert backend.admin().list_group_offsets("auto") == {TopicPartition("t", 0): 7}
    backend.close()


def test_group_offsets_admin_refuses_a_live_group(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    admin = backend.admin()
    admin.create_topic(NewTopic("t", 1))
    admin.alter_group_offsets("g", {TopicPartition("t", 0): 3})
    assert admin.list_group_offsets("g") == {TopicPartition("t", 0): 3}
    consumer = backend.consumer("g", NO_AUTO)
    consumer.subscribe(["t"])
    with pytest.raises(LogError):
        admin.alter_group_offsets("g", {TopicPartition("t", 0): 0})
    with pytest.raises(LogError):
        admin.delete_group("g")
    consumer.close()
    admin.alter_group_offsets("g", {TopicPartition("t", 0): None})
    assert admin.list_group_offsets("g") == {}
    admin.alter_group_offsets("g", {TopicPartition("t", 0): 1})
    admin.delete_group("g")
    assert admin.list_group_offsets("g") == {}
    backend.close()


def test_a_consumer_dropped_without_close_leaves_the_group(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("t", 2))
    keeper = backend.consumer("g", NO_AUTO)
    keeper.subscribe(["t"])
    dropped = backend.consumer("g", NO_AUTO)
    dropped.subscribe(["t"])
    poll_until(lambda: len(keeper.assignment()) == 1, [keeper, dropped])
    assert len(dropped.assignment()) == 1
    del dropped
    gc.collect()
    poll_until(lambda: len(keeper.assignment()) == 2, [keeper])
    keeper.close()
    backend.close()
