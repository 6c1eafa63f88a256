"""SourceRecordBatch and SinkRecordBatch: sequences of records held as columns."""

from __future__ import annotations

import pytest

from connect.api import (
    Header,
    Schema,
    SinkRecord,
    SinkRecordBatch,
    SourceRecord,
    SourceRecordBatch,
    TimestampType,
)

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


def _sink_batch() -> SinkRecordBatch:
    batch = SinkRecordBatch()
    batch.add("a", 0, [5, 6, 7], [10, 20, 30], TimestampType.CREATE_TIME, [None] * 3, ["k5", "k6", "k7"], [OS] * 3,
              ["x", "y", "z"])
    batch.add("b", 1, [0], [40], TimestampType.LOG_APPEND_TIME, [None], [None], [OS], ["w"])
    return batch


def test_sink_batch_columns_read_in_order_across_partitions() -> None:
    batch = _sink_batch()
    assert batch.topics == ["a", "a", "a", "b"]
    assert batch.timestamps == [10, 20, 30, 40]
    assert batch.key_schemas == [None] * 4 and batch.value_schemas == [OS] * 4
    assert batch.keys == ["k5", "k6", "k7", None] and batch.values == ["x", "y", "z", "w"]


def test_with_columns_is_new_record_per_record_and_splits_a_partition_where_its_topic_changes() -> None:
    batch = _sink_batch()
    changed = batch.with_columns(values=["X", "Y", "Z", "W"], value_schemas=[S] * 4,
                                 topics=["a-1", "a-2", "a-2", "b-1"])
    expected = [r.new_record(topic=t, value_schema=S, value=v)
                for r, t, v in zip(batch, ["a-1", "a-2", "a-2", "b-1"], "XYZW", strict=True)]
    assert isinstance(changed, SinkRecordBatch) and list(changed) == expected
    assert [(r.original_topic, r.original_kafka_partition, r.original_kafka_offset) for r in changed] == \
        [("a", 0, 5), ("a", 0, 6), ("a", 0, 7), ("b", 1, 0)]
    assert [r.timestamp_type for r in changed][-1] is TimestampType.LOG_APPEND_TIME
    assert repr(changed) == "SinkRecordBatch(4 records from a-1-0, a-2-0, b-1-1)"
    assert batch.values == ["x", "y", "z", "w"] and batch.topics == ["a", "a", "a", "b"]  # the input is unchanged
    assert list(batch.with_columns(keys=[1, 2, 3, 4])) == [r.new_record(key=k) for r, k in zip(batch, [1, 2, 3, 4],
                                                                                                strict=True)]
    with pytest.raises(ValueError, match="a column of 3 entries for a batch of 4 records"):
        batch.with_columns(values=["only", "three", "values"])


def test_extend_appends_the_other_batch_after_these_records() -> None:
    batch = _sink_batch()
    more = SinkRecordBatch()
    more.add("c", 2, [9], [50], TimestampType.CREATE_TIME, [None], [None], [None], ["v"])
    before = list(batch)
    batch.extend(more)
    assert len(batch) == 5 and list(batch) == [*before, *more]


def _keyed_batch() -> SourceRecordBatch:
    return SourceRecordBatch("events", ["a", "b"], value_schema=OS, source_partition=PARTITION,
                             source_offsets=[{"id": "1-0"}, {"id": "2-0"}], keys=["1-0", "2-0"], key_schema=S,
                             timestamps=[1, 2], headers=[Header("stream", OS, "events")],
                             header_columns=[("id", OS, ["1-0", "2-0"]), ("n", Schema.INT32_SCHEMA, [7, 8])])


def test_source_batch_with_keys_headers_and_timestamps_reads_as_full_records() -> None:
    batch = _keyed_batch()
    assert batch.has_headers() and not source_batch().has_headers()
    first = batch[0]
    assert first == SourceRecord(PARTITION, {"id": "1-0"}, "events", None, S, "1-0", OS, "a", 1,
                                 [Header("stream", OS, "events"), Header("id", OS, "1-0"),
                                  Header("n", Schema.INT32_SCHEMA, 7)])
    assert [(r.key, r.timestamp, [h.value for h in r.headers]) for r in batch] == [
        ("1-0", 1, ["events", "1-0", 7]), ("2-0", 2, ["events", "2-0", 8])]
    first.headers.add_string("extra", "x")  # a record's headers are its own
    assert [h.key for h in batch[0].headers] == ["stream", "id", "n"]
    tail = batch[1:]
    assert isinstance(tail, SourceRecordBatch) and list(tail) == [batch[1]]


@pytest.mark.parametrize(("column", "message"), [
    ({"keys": ["k"]}, "2 values but 1 keys"),
    ({"timestamps": [1, 2, 3]}, "2 values but 3 timestamps"),
    ({"header_columns": [("id", OS, ["x"])]}, "2 values but 1 values of header id"),
])
def test_source_batch_refuses_columns_that_do_not_match_the_values(column, message) -> None:
    with pytest.raises(ValueError, match=message):
        SourceRecordBatch("t", ["x", "y"], **column)
