"""SourceRecordBatch and SinkRecordBatch: sequences of records held as columns."""

from __future__ import annotations

import pytest

from connect.api import Schema, SinkRecord, SinkRecordBatch, SourceRecord, SourceRecordBatch, TimestampType

PARTITION = {"filename": "/var/log/app.log"}
S = Schema.STRING_SCHEMA
OS = Schema.OPTIONAL_STRING_SCHEMA


def source_batch() -> SourceRecordBatch:
    return SourceRecordBatch("logs", ["a", "b", "c"], value_schema=S, source_partition=PARTITION,
                             source_offsets=[{"position": 2}, {"position": 4}, {"position": 6}], timestamp=1700)


def test_source_batch_reads_as_the_records_it_stands_for() -> None:
    batch = source_batch()
    expected = [SourceRecord(PARTITION, {"position": p}, "logs", None, None, None, S, v, 1700)
                for v, p in (("a", 2), ("b", 4), ("c", 6))]
    assert len(batch) == 3
    assert list(batch) == expected
    assert batch == expected
    assert batch[-1] == expected[-1]
    assert batch[1:] == expected[1:]
    assert isinstance(batch[1:], SourceRecordBatch)
    assert batch.last_offset == {"position": 6}
    assert batch[0].source_partition is PARTITION  # one partition object for all: the runtime keys offsets on it
    with pytest.raises(IndexError):
        batch[3]


def test_source_batch_joins_lists_and_keeps_no_offsets_when_none_given() -> None:
    batch = SourceRecordBatch("t", ["x", "y"], value_schema=S)
    assert batch.last_offset is None
    assert [r.source_offset for r in batch] == [None, None]
    extra = SourceRecord(None, None, "t", value="z")
    joined = batch + [extra]
    assert isinstance(joined, list) and [r.value for r in joined] == ["x", "y", "z"]
    assert [r.value for r in [extra] + batch] == ["z", "x", "y"]


def test_source_batch_refuses_offsets_that_do_not_match_the_values() -> None:
    with pytest.raises(ValueError, match="2 values but 1 source offsets"):
        SourceRecordBatch("t", ["x", "y"], source_offsets=[{"p": 1}])


def test_sink_batch_gives_values_without_making_records() -> None:
    batch = SinkRecordBatch()
    batch.add("t", 0, [10, 11], [1, 2], TimestampType.CREATE_TIME, [OS, OS], [None, "k"], [OS, OS], ["a", "b"])
    batch.add("t", 3, [7], [3], TimestampType.LOG_APPEND_TIME, [None], [None], [OS], ["c"])
    assert len(batch) == 3
    assert batch.values == ["a", "b", "c"]
    assert batch.keys == [None, "k", None]
    assert batch._records is None  # nothing was read as a record


def test_sink_batch_reads_as_stable_records() -> None:
    batch = SinkRecordBatch()
    batch.add("t", 0, [10, 11], [1, 2], TimestampType.CREATE_TIME, [OS, OS], [None, "k"], [OS, OS], ["a", "b"])
    first = batch[0]
    assert first is batch[0]  # a task that changes a record sees its change on the next read
    assert list(batch) == [
        SinkRecord("t", 0, OS, None, OS, "a", 10, 1, TimestampType.CREATE_TIME),
        SinkRecord("t", 0, OS, "k", OS, "b", 11, 2, TimestampType.CREATE_TIME),
    ]
    assert batch[1].original_kafka_offset == 11


def test_sink_batch_refuses_columns_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="t-0"):
        SinkRecordBatch().add("t", 0, [1, 2], [1, 2], TimestampType.CREATE_TIME, [OS], [None], [OS, OS], ["a", "b"])
