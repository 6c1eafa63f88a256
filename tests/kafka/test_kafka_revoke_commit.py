"""A rebalance listener commits the partitions it gives up, before they go (as WorkerSinkTask does, and Java's
``onPartitionsRevoked`` may): the commit must land then, not time out.

Found by the clean rolling bounce of tests/distributed/test_multihost_bounces.py (issue #36): each sink task
that gave a partition to a restarted worker's task logged "Commit of offsets failed ... not confirmed within
5000 ms", and the new owner wrote again everything since the last periodic commit (1,515 duplicate lines over
three clean bounces). librdkafka holds a commit made on another thread until the rebalance callback returns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log.api import Consumer, NewTopic, RebalanceListener
from connect.log.kafka.backend import KafkaBackend
from services.kafka import KafkaService
from tests.support import wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(180)]

FAST_GROUP = {"heartbeat.interval.ms": "500", "session.timeout.ms": "6000", "auto.offset.reset": "earliest"}
COMMIT_TIMEOUT_S = 10.0  # as a sink task's offset.flush.timeout.ms, doubled for a loaded machine


class CommitOnRevoke(RebalanceListener):
    """Commits, for each partition revoked, the offset it was told (what a sink task has flushed)."""

    def __init__(self, offsets: dict[TopicPartition, int]) -> None:
        self.consumer: Consumer | None = None
        self.offsets = offsets
        self.outcomes: list[tuple[frozenset[TopicPartition], float, BaseException | None]] = []
        self.lock = threading.Lock()
        self.closing = False

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        pass

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        assert self.consumer is not None
        if self.closing:
            return  # the close's own revocation: not what this test is about
        started = time.monotonic()
        error: BaseException | None = None
        try:
            self.consumer.commit({tp: self.offsets[tp] for tp in partitions}, timeout=COMMIT_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test looks at
            error = exc
        with self.lock:
            self.outcomes.append((frozenset(partitions), time.monotonic() - started, error))


@pytest.mark.parametrize("strategy", [None, "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"])
def test_a_commit_from_the_revoke_listener_lands_before_the_partitions_go(
    kafka: KafkaService, unique_topic: Callable[..., str], strategy: str | None
) -> None:
    backend = KafkaBackend({"bootstrap.servers": kafka.bootstrap_servers, "key.converter": "x",
                            "group.id": "workers"})
    try:
        topic, group = unique_topic(), unique_topic("group")
        admin = backend.admin()
        admin.create_topic(NewTopic(topic, partitions=4))
        admin.close()
        every = {TopicPartition(topic, p) for p in range(4)}
        flushed = {tp: 10 + tp.partition for tp in every}

        # the default (eager range, as Java's) revokes every partition; the cooperative protocol only what moves
        settings = {**FAST_GROUP, **({"partition.assignment.strategy": strategy} if strategy else {})}
        first = backend.consumer(group, settings)
        listener = CommitOnRevoke(flushed)
        listener.consumer = first
        first.subscribe([topic], listener=listener)
        wait_until(lambda: first.poll(0.1) is not None and first.assignment() == every, 60, 0,
                   what="the first member assigned every partition")

        second = backend.consumer(group, settings)
        second.subscribe([topic])

        def balanced() -> bool:
            first.poll(0.05)
            second.poll(0.05)
            return len(first.assignment()) == 2 and len(second.assignment()) == 2

        wait_until(balanced, 60, 0, what="the group balanced")
        moved = second.assignment()
        assert listener.outcomes, "the first member revoked nothing"
        revoked, took, error = listener.outcomes[0]
        assert revoked == (moved if strategy else every)
        assert error is None, f"the commit in the revoke listener failed after {took:.1f} s: {error}"
        # the new owner starts where the old one committed, so nothing comes twice
        assert second.committed(list(moved)) == {tp: flushed[tp] for tp in moved}
        listener.closing = True
        second.close()
        first.close()
    finally:
        backend.close()
