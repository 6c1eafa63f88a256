"""Kafka's default partitioning: murmur2 of the key for keyed records, round-robin per batch otherwise.

Keyed records must land where the Java client would put them, so that a
topic filled by Headrace and by Kafka clients keeps one key in one partition.
"""

from __future__ import annotations

from connect.log.key_partition import murmur2, partition_for_key

__all__ = ["StickyPartitioner", "murmur2", "partition_for_key"]


class StickyPartitioner:
    """Null-key records stay on one partition until its batch is sent, then move to the next."""

    def __init__(self) -> None:
        self._current: dict[str, int] = {}

    def partition(self, topic: str, partitions: int) -> int:
        p = self._current.get(topic)
        if p is None or p >= partitions:
            p = self._current[topic] = 0 if p is None else p % partitions
        return p

    def batch_sent(self, topic: str, partition: int, partitions: int) -> None:
        if self._current.get(topic) == partition:
            self._current[topic] = (partition + 1) % partitions
