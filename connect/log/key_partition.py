"""Kafka's default partition for a keyed record: ``toPositive(murmur2(key)) % partitions``.

One definition for everything that places keys: the embedded log's producer, and the offset store that
must put each key on the partition Java's producer picks (so a key written by Java and by Headrace is one
key that compaction keeps once). Hand-written rather than taken from kafka-python, whose package import
pulls in its admin client and botocore: a third of a second on every worker start.
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
