"""Kafka's default partitioning of null-key records: one partition per batch, then the next.

Keyed records go where Java's producer puts them: ``connect.log.key_partition``.
"""

from __future__ import annotations

__all__ = ["StickyPartitioner"]


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
