"""Hadoop SequenceFiles (version 6, uncompressed) as Flume's HDFS sink writes them: a ``LongWritable`` key
(the event time in epoch ms) and a ``BytesWritable`` or ``Text`` value (the body).

Written here rather than through Hadoop's writer because Spark has no SequenceFile writer for DataFrames and
its RDD route starts Python workers for every file; the format is small. As Hadoop's writer does, a sync
marker follows at least every 2,000 bytes, so the files split like Hadoop's own.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ["BYTES_WRITABLE", "LONG_WRITABLE", "TEXT", "sequence_file"]

LONG_WRITABLE = "org.apache.hadoop.io.LongWritable"
BYTES_WRITABLE = "org.apache.hadoop.io.BytesWritable"
TEXT = "org.apache.hadoop.io.Text"
_SYNC_INTERVAL = 100 * (4 + 16)  # Hadoop's SequenceFile.SYNC_INTERVAL


def _vlong(i: int) -> bytes:
    """Hadoop's WritableUtils.writeVLong."""
    if -112 <= i <= 127:
        return bytes([i & 0xFF])
    length = -112
    if i < 0:
        i = ~i
        length = -120
    tmp = i
    while tmp:
        tmp >>= 8
        length -= 1
    count = -(length + 120) if length < -120 else -(length + 112)
    return bytes([length & 0xFF]) + i.to_bytes(count, "big")


def _text(value: str | bytes) -> bytes:
    data = value.encode("utf-8") if isinstance(value, str) else value
    return _vlong(len(data)) + data


def sequence_file(records: Iterable[tuple[int, bytes]], value_class: str = BYTES_WRITABLE,
                  sync: bytes | None = None) -> bytes:
    """The bytes of a SequenceFile of ``(epoch ms, body)`` records; ``value_class`` BYTES_WRITABLE or TEXT."""
    if value_class not in (BYTES_WRITABLE, TEXT):
        raise ValueError(f"value class {value_class} is not written")
    marker = sync or os.urandom(16)
    out = bytearray(b"SEQ\x06")
    out += _text(LONG_WRITABLE) + _text(value_class)
    out += b"\x00\x00"  # neither record nor block compressed
    out += (0).to_bytes(4, "big")  # no metadata
    out += marker
    last_sync = len(out)
    for stamp, body in records:
        if len(out) >= last_sync + _SYNC_INTERVAL:
            out += b"\xff\xff\xff\xff" + marker
            last_sync = len(out)
        key = stamp.to_bytes(8, "big", signed=True)
        value = len(body).to_bytes(4, "big") + body if value_class == BYTES_WRITABLE else _text(body)
        out += (len(key) + len(value)).to_bytes(4, "big") + len(key).to_bytes(4, "big") + key + value
    return bytes(out)
