"""Kafka's default partitioning: murmur2 of the key for keyed records, round-robin per batch otherwise.

Keyed records must land where the Java client would put them, so that a
topic filled by Headrace and by Kafka clients keeps one key in one partition.
"""

from __future__ import annotations

import struct

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit hash."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    words = length // 4
    for k in struct.unpack_from(f"<{words}I", data):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """Kafka's ``toPositive(murmur2(key)) % partitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


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
