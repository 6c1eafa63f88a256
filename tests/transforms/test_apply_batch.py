"""Transformation.apply_batch: the SDK's default, the built-in column overrides, and the chain's batched path."""

from __future__ import annotations

import pytest

from connect.api import ConfigDef, DataException, SinkRecord, SinkRecordBatch, TimestampType, Transformation
from connect.runtime.transformation_chain import TransformationChain, TransformStage
from plugins.predicates import TopicNameMatches
from plugins.transforms import InsertField, ReplaceField, TimestampRouter

DAY = 86_400_000
T0 = 1_763_856_000_000  # 2025-11-23T00:00:00Z


class _DropOdd(Transformation):
    """Only ``apply``: drops records with an odd offset, marks the others."""

    def configure(self, configs):
        pass

    def apply(self, record):
        return None if record.kafka_offset % 2 else record.new_record(value=f"{record.value}!")

    def config(self):
        return ConfigDef()


def _batch(values, stamps=None, topic="events", keys=None) -> SinkRecordBatch:
    n = len(values)
    batch = SinkRecordBatch()
    batch.add(topic, 0, list(range(n)), stamps or [T0 + i for i in range(n)], TimestampType.CREATE_TIME, [None] * n,
              keys or [None] * n, [None] * n, values)
    return batch


def _configured(transform, **configs):
    transform.configure({k.replace("_", "."): v for k, v in configs.items()})
    return transform


def _maps(n=6):
    return [{"id": i, "secret": "s", "name": f"n{i}"} for i in range(n)]


def _same(out, expected):
    """The records and the coordinates SinkRecord's == leaves out."""
    assert list(out) == list(expected)
    assert [(r.original_topic, r.original_kafka_partition, r.original_kafka_offset) for r in out] == \
        [(r.original_topic, r.original_kafka_partition, r.original_kafka_offset) for r in expected]


def test_the_default_apply_batch_is_apply_per_record_without_the_dropped():
    batch = _batch(["a", "b", "c", "d"])
    out = _DropOdd().apply_batch(batch)
    assert [r.value for r in out] == ["a!", "c!"]
    assert out == [r for r in map(_DropOdd().apply, batch) if r is not None]


@pytest.mark.parametrize("make", [
    lambda: _configured(InsertField.Value(), static_field="src", static_value="bench"),
    lambda: _configured(ReplaceField.Value(), exclude="secret"),
    lambda: _configured(ReplaceField.Value(), include="id,name", renames="name:label"),
    lambda: _configured(TimestampRouter(), topic_format="${topic}-${timestamp}", timestamp_format="yyyyMMdd"),
    lambda: _configured(TimestampRouter(), topic_format="fixed-${topic}"),
])
def test_builtin_overrides_give_the_records_apply_gives_and_keep_the_columns(make):
    values = [*_maps(4), None, *_maps(2)]  # a tombstone passes through
    stamps = [T0, T0 + 1, T0 + DAY, T0 + DAY, T0 + 2 * DAY, T0, T0]
    batch = _batch(values, stamps)
    originals = [dict(v) if v is not None else None for v in values]
    out = make().apply_batch(batch)
    assert isinstance(out, SinkRecordBatch)  # no record was needed
    _same(out, [make().apply(r) for r in batch])
    assert batch.values == originals and batch.topics == ["events"] * 7  # the input is left unchanged


def test_a_key_side_override_changes_the_keys():
    batch = _batch(["v1", "v2"], keys=[{"id": 1}, {"id": 2}])
    insert = _configured(InsertField.Key(), static_field="src", static_value="bench")
    out = insert.apply_batch(batch)
    assert isinstance(out, SinkRecordBatch) and out.keys == [{"id": 1, "src": "bench"}, {"id": 2, "src": "bench"}]
    _same(out, [insert.apply(r) for r in batch])


def test_overrides_raise_what_apply_raises_for_a_bad_record_and_take_plain_lists_record_by_record():
    insert = _configured(InsertField.Value(), static_field="src", static_value="bench")
    with pytest.raises(DataException, match="Only Map objects supported"):
        insert.apply_batch(_batch([{"id": 0}, "not a map", {"id": 2}]))
    router = _configured(TimestampRouter())
    with pytest.raises(DataException, match="Timestamp missing"):
        router.apply_batch(_batch(["a", "b"], stamps=[T0, None]))
    records = [SinkRecord("events", 0, None, None, None, {"id": i}, i, T0) for i in range(3)]
    out = insert.apply_batch(records)
    assert not isinstance(out, SinkRecordBatch) and out == [insert.apply(r) for r in records]


def test_only_chains_of_overriding_transforms_without_predicates_are_batched():
    insert = _configured(InsertField.Value(), static_field="src", static_value="bench")
    router = _configured(TimestampRouter())
    assert TransformationChain([TransformStage("i", insert), TransformStage("r", router)]).batched
    assert not TransformationChain([TransformStage("i", insert), TransformStage("d", _DropOdd())]).batched
    gated = TransformStage("r", router, _configured(TopicNameMatches(), pattern="events"))
    assert not TransformationChain([TransformStage("i", insert), gated]).batched
    assert not TransformationChain([]).batched


def test_the_chain_applies_each_stage_to_the_whole_batch_and_names_a_failing_stage():
    chain = TransformationChain([
        TransformStage("insert", _configured(InsertField.Value(), static_field="src", static_value="bench")),
        TransformStage("drop", _configured(ReplaceField.Value(), exclude="secret")),
        TransformStage("route", _configured(TimestampRouter())),
    ])
    batch = _batch(_maps())
    out = chain.apply_batch(batch)
    assert isinstance(out, SinkRecordBatch)
    _same(out, [chain.apply(r) for r in batch])
    with pytest.raises(DataException):
        chain.apply_batch(_batch([{"id": 0}, {"id": 1}], stamps=[T0, None]))
    assert chain.failed_stage is not None and chain.failed_stage.alias == "route"
