"""spark_sinks.sequence_file against the test's own reader of the format (Hadoop's reader reads it in
tests/spark/test_hdfs_path_template.py): records, sync markers every 2,000 bytes, long Text values."""

from __future__ import annotations

import pytest

from spark_sinks.sequence_file import TEXT, sequence_file
from tests.flume_support import read_sequence_file


def test_records_round_trip_with_sync_markers_and_multi_byte_lengths():
    records = [(1_700_000_000_000 + i, bytes([i % 256]) * (i * 7)) for i in range(200)]
    data = sequence_file(records, sync=b"S" * 16)
    key_class, value_class, got = read_sequence_file(data)
    assert (key_class, value_class) == ("org.apache.hadoop.io.LongWritable", "org.apache.hadoop.io.BytesWritable")
    assert [(int.from_bytes(k, "big"), v[4:]) for k, v in got] == records
    assert data.count(b"\xff\xff\xff\xff" + b"S" * 16) >= len(data) // 2500  # Hadoop's sync interval
    text = sequence_file([(1, "Zürich ".encode() * 100)], TEXT)
    _, value_class, [(_, value)] = read_sequence_file(text)
    assert value_class == "org.apache.hadoop.io.Text" and value.endswith("Zürich ".encode() * 100)
    with pytest.raises(ValueError, match="not written"):
        sequence_file([], "org.apache.hadoop.io.IntWritable")
