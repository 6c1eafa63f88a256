"""The built-in transforms' batch path gives what ``apply`` gives, record by record, over mixed batches.

Mixed: schemaless maps, Structs (with defaults and optional nulls), tombstones, in one SinkRecordBatch and in
a plain list of records; a bad record makes the batch raise what ``apply`` raises for it. The batch path keeps
a SinkRecordBatch a SinkRecordBatch (no record made) for maps and Structs alike, and checks no ABC per record.
"""

from __future__ import annotations

import abc
import re
from typing import Any

import pytest

from connect.api import (
    DataException,
    Schema,
    SchemaBuilder,
    SinkRecord,
    SinkRecordBatch,
    SourceRecord,
    Struct,
    TimestampType,
)
from connect.runtime.transformation_chain import TransformationChain, TransformStage
from plugins.predicates import RecordIsTombstone, TopicNameMatches
from plugins.transforms import ExtractField, HoistField, InsertField, MaskField, ReplaceField, TimestampRouter

T0 = 1_763_856_000_000

SCHEMA = (
    SchemaBuilder.struct().name("payment").version(2)
    .field("id", Schema.INT64_SCHEMA)
    .field("user", Schema.STRING_SCHEMA)
    .field("amount", Schema.FLOAT64_SCHEMA)
    .field("country", SchemaBuilder.string().optional().default_value("XX").build())
    .field("note", Schema.OPTIONAL_STRING_SCHEMA)
    .field("ok", Schema.BOOLEAN_SCHEMA)
    .build()
)
OTHER_SCHEMA = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("user", Schema.STRING_SCHEMA).build()


def _struct(i: int, country: str | None = "DE") -> Struct:
    return (Struct(SCHEMA).put("id", i).put("user", f"u{i}").put("amount", i / 4).put("country", country)
            .put("ok", i % 2 == 0))


def _map(i: int) -> dict[str, Any]:
    return {"id": i, "user": f"u{i}", "amount": i / 4, "country": "FR", "ts": T0 + i, "ok": i % 3 == 0}


def _mixed() -> list[tuple[Schema | None, Any]]:
    """(schema, value) pairs: maps (one without some fields), Structs (one with a null that has a default),
    a Struct of another schema, tombstones of both kinds."""
    return [
        (None, _map(0)),
        (SCHEMA, _struct(1)),
        (None, None),
        (None, {"id": 3, "amount": 1}),
        (SCHEMA, _struct(4, country=None)),
        (OTHER_SCHEMA, Struct(OTHER_SCHEMA).put("id", 5).put("user", "u5")),
        (SCHEMA, None),
        (None, _map(7)),
        (None, {"id": 8, "user": None, "amount": 2.5, "country": "US", "ok": True, "extra": [1, 2]}),
    ]


def _batch(pairs: list[tuple[Schema | None, Any]], on_key: bool = False, topic: str = "payments",
           start: int = 0) -> SinkRecordBatch:
    n = len(pairs)
    schemas = [schema for schema, _ in pairs]
    values = [value for _, value in pairs]
    batch = SinkRecordBatch()
    others: list[Any] = ["v"] * n
    if on_key:
        batch.add(topic, 1, list(range(start, start + n)), [T0 + i for i in range(n)], TimestampType.CREATE_TIME,
                  schemas, values, [None] * n, others)
    else:
        batch.add(topic, 1, list(range(start, start + n)), [T0 + i for i in range(n)], TimestampType.CREATE_TIME,
                  [None] * n, others, schemas, values)
    return batch


def _configured(transform: Any, **configs: str) -> Any:
    transform.configure({k.replace("_", "."): v for k, v in configs.items()})
    return transform


def _snapshot(values: list[Any]) -> list[Any]:
    """A deep enough copy to see a transform change its input."""
    return [dict(v) if type(v) is dict else (v.field_values() if isinstance(v, Struct) else v) for v in values]


def _coordinates(records: Any) -> list[tuple[Any, ...]]:
    return [(r.topic, r.kafka_partition, r.kafka_offset, r.timestamp, r.original_topic, r.original_kafka_partition,
             r.original_kafka_offset, r.key_schema, r.value_schema) for r in records]


def _per_record(transform: Any, records: Any) -> list[Any]:
    return [out for out in map(transform.apply, records) if out is not None]


# each of the realistic chain's transforms, in the configurations users write, on both sides
TRANSFORMS = {
    "insert-static": lambda side: _configured(side(InsertField), static_field="source", static_value="headrace"),
    "insert-static-required": lambda side: _configured(side(InsertField), static_field="source!",
                                                       static_value="headrace"),
    "insert-metadata": lambda side: _configured(side(InsertField), topic_field="t", offset_field="o!",
                                                partition_field="p", timestamp_field="ts2",
                                                static_field="source", static_value="headrace"),
    "mask": lambda side: _configured(side(MaskField), fields="user,amount,ok,country,absent"),
    "mask-replacement": lambda side: _configured(side(MaskField), fields="user,id", replacement="0"),
    "replace-renames": lambda side: _configured(side(ReplaceField), renames="id:payment_id,country:cc"),
    "replace-include-renames": lambda side: _configured(side(ReplaceField), include="id,user,country",
                                                        renames="user:who"),
    "replace-exclude": lambda side: _configured(side(ReplaceField), exclude="user,ts"),
    "replace-exclude-renames": lambda side: _configured(side(ReplaceField), exclude="ok", renames="id:ident"),
    "replace-no-defaults": lambda side: _configured(side(ReplaceField), renames="id:pid",
                                                    replace_null_with_default="false"),
    "mask-no-defaults": lambda side: _configured(side(MaskField), fields="user",
                                                 replace_null_with_default="false"),
    "insert-no-defaults": lambda side: _configured(side(InsertField), static_field="source",
                                                   static_value="headrace", replace_null_with_default="false"),
    "hoist": lambda side: _configured(side(HoistField), field="wrapped"),
    "extract": lambda side: _configured(side(ExtractField), field="id"),
}
# the configurations whose batch path needs no record (metadata fields other than the topic do)
COLUMNAR = set(TRANSFORMS) - {"insert-metadata"}
SIDES = {"value": lambda cls: cls.Value(), "key": lambda cls: cls.Key()}


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("name", TRANSFORMS)
def test_a_batch_of_maps_structs_and_tombstones_gives_what_apply_gives(name: str, side: str) -> None:
    make = TRANSFORMS[name]
    on_key = side == "key"
    pairs = _mixed()
    batch = _batch(pairs, on_key)
    if name == "hoist":  # a tombstone of a required struct schema cannot be hoisted: both ways refuse it
        with pytest.raises(DataException, match="null used for required field") as refused:
            _per_record(make(SIDES[side]), _batch(pairs, on_key))
        with pytest.raises(DataException, match=re.escape(str(refused.value))):
            make(SIDES[side]).apply_batch(batch)
        pairs = [pair for pair in pairs if pair != (SCHEMA, None)]
        batch = _batch(pairs, on_key)
    before = _snapshot([value for _, value in pairs])
    expected = _per_record(make(SIDES[side]), _batch(pairs, on_key))
    out = make(SIDES[side]).apply_batch(batch)
    assert list(out) == expected
    assert _coordinates(out) == _coordinates(expected)
    if name in COLUMNAR:
        assert type(out) is SinkRecordBatch  # the columns were changed, no record was made
    # and from records already made (a list), with their headers kept
    records = list(_batch(pairs, on_key))
    for i, record in enumerate(records):
        record.headers.add_string("h", f"{i}")
    from_list = make(SIDES[side]).apply_batch(records)
    assert from_list == _per_record(make(SIDES[side]), records)
    assert [[h.value for h in r.headers] for r in from_list] == [[f"{i}"] for i in range(len(records))]
    assert _snapshot([value for _, value in pairs]) == before  # no input value was changed


@pytest.mark.parametrize("name", TRANSFORMS)
def test_source_records_in_a_list_give_what_apply_gives(name: str) -> None:
    records = [SourceRecord({"f": "x"}, {"pos": i}, "payments", None, None, None, schema, value, T0 + i)
               for i, (schema, value) in enumerate(_mixed())]
    make = TRANSFORMS[name]
    try:
        expected: Any = _per_record(make(SIDES["value"]), records)
    except DataException as exc:  # InsertField's offset field needs sink records, in both paths
        with pytest.raises(DataException, match=re.escape(str(exc))):
            make(SIDES["value"]).apply_batch(records)
        return
    assert make(SIDES["value"]).apply_batch(records) == expected


BAD = [
    ("insert-static", (None, "not a map")),
    ("insert-static", (None, [1, 2])),
    ("insert-static", (SCHEMA, {"id": 1})),
    ("insert-static", (SCHEMA, Struct(SCHEMA).put("id", 1))),  # required fields never set
    ("mask", (None, "not a map")),
    ("mask", (None, {"user": b"bytes"})),
    ("mask", (SCHEMA, {"id": 1})),
    ("mask", (SCHEMA, Struct(SCHEMA).put("id", 1))),
    ("mask-replacement", (None, {"id": True})),
    ("mask-replacement", (None, {"user": [1]})),
    ("replace-renames", (None, 17)),
    ("replace-renames", (SCHEMA, "x")),
    ("replace-renames", (SCHEMA, Struct(SCHEMA).put("id", 1))),
    ("replace-exclude", (None, "x")),
    ("replace-include-renames", (None, ("a", 1))),
]


@pytest.mark.parametrize(("name", "bad"), BAD)
def test_a_bad_record_makes_the_batch_raise_what_apply_raises_for_it(name: str, bad: tuple[Any, Any]) -> None:
    pairs = [*_mixed()[:2], bad, *_mixed()[:2]]
    make = TRANSFORMS[name]
    records = list(_batch(pairs))
    with pytest.raises(DataException) as per_record:
        make(SIDES["value"]).apply(records[2])
    with pytest.raises(DataException) as batched:
        make(SIDES["value"]).apply_batch(_batch(pairs))
    assert str(batched.value) == str(per_record.value)
    with pytest.raises(DataException) as from_list:
        make(SIDES["value"]).apply_batch(records)
    assert str(from_list.value) == str(per_record.value)
    # the good records alone still go through
    good = [pair for i, pair in enumerate(pairs) if i != 2]
    assert list(make(SIDES["value"]).apply_batch(_batch(good))) == _per_record(make(SIDES["value"]), _batch(good))


def _realistic_chain(*extra: TransformStage) -> TransformationChain:
    return TransformationChain([
        TransformStage("insert", TRANSFORMS["insert-static"](SIDES["value"])),
        TransformStage("mask", _configured(MaskField.Value(), fields="user")),
        TransformStage("rename", TRANSFORMS["replace-renames"](SIDES["value"])),
        *extra,
    ])


def test_the_realistic_chain_keeps_the_batch_as_columns_and_gives_what_apply_gives() -> None:
    pairs = _mixed() * 3
    chain = _realistic_chain()
    assert chain.batched
    out = chain.apply_batch(_batch(pairs))
    assert type(out) is SinkRecordBatch
    expected = _per_record(chain, _batch(pairs))
    assert list(out) == expected and _coordinates(out) == _coordinates(expected)
    assert out.values[0] == {"payment_id": 0, "user": "", "amount": 0.0, "cc": "FR", "ts": T0, "ok": True,
                             "source": "headrace"}


def test_a_failing_record_names_its_stage_and_the_others_go_through_record_by_record() -> None:
    pairs = [*_mixed(), (None, {"user": b"\x00"}), *_mixed()]
    chain = _realistic_chain()
    with pytest.raises(DataException, match="Cannot mask value of type: bytes"):
        chain.apply_batch(_batch(pairs))
    assert chain.failed_stage is not None and chain.failed_stage.alias == "mask"
    outcomes = []
    for record in _batch(pairs):  # what WorkerSinkTask does next: each record alone
        try:
            outcomes.append(chain.apply(record))
        except DataException as exc:
            outcomes.append(str(exc))
    assert outcomes[len(_mixed())] == "Cannot mask value of type: bytes"
    good = [pair for pair in pairs if pair[1] != {"user": b"\x00"}]
    assert [o.value for o in outcomes if not isinstance(o, str)] == \
        _realistic_chain().apply_batch(_batch(good)).values


class _CountingAbcChecks:
    """Counts isinstance/issubclass checks that go through ABCMeta while in use."""

    def __enter__(self) -> _CountingAbcChecks:
        self.count = 0
        self._saved = abc.ABCMeta.__instancecheck__, abc.ABCMeta.__subclasscheck__
        instancecheck, subclasscheck = self._saved

        def counted_instancecheck(cls: Any, instance: Any) -> bool:
            self.count += 1
            return instancecheck(cls, instance)

        def counted_subclasscheck(cls: Any, subclass: Any) -> bool:
            self.count += 1
            return subclasscheck(cls, subclass)

        abc.ABCMeta.__instancecheck__ = counted_instancecheck  # type: ignore[method-assign]
        abc.ABCMeta.__subclasscheck__ = counted_subclasscheck  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        abc.ABCMeta.__instancecheck__, abc.ABCMeta.__subclasscheck__ = self._saved  # type: ignore[method-assign]


@pytest.mark.parametrize("struct", [False, True], ids=["maps", "structs"])
def test_the_chain_checks_no_abc_per_record(struct: bool) -> None:
    def checks(n: int) -> int:
        pairs = [(SCHEMA, _struct(i)) if struct else (None, _map(i)) for i in range(n)]
        chain = _realistic_chain()
        batch = _batch(pairs)
        with _CountingAbcChecks() as counter:
            out = chain.apply_batch(batch)
            # read as FileStreamSink reads them
            values = out.values if type(out) is SinkRecordBatch else [r.value for r in out]
        assert len(values) == n
        return counter.count

    # exact type checks only: none per record, and none per batch either (small batches are common)
    assert (checks(10), checks(1000)) == (0, 0)


def test_a_predicate_still_gates_its_transform_per_record_with_negate() -> None:
    # tombstones pass the gated stage unchanged; every other record is hoisted
    hoist = _configured(HoistField.Value(), field="wrapped")
    gated = TransformStage("hoist", hoist, _configured(RecordIsTombstone(), ), negate=True)
    chain = _realistic_chain(gated)
    pairs = [(None, _map(0)), (None, None), (None, _map(2))]
    out = list(chain.apply_batch(_batch(pairs))) if chain.batched else _per_record(chain, _batch(pairs))
    assert [r.value for r in out] == [
        {"wrapped": {"payment_id": 0, "user": "", "amount": 0.0, "cc": "FR", "ts": T0, "ok": True,
                     "source": "headrace"}},
        None,
        {"wrapped": {"payment_id": 2, "user": "", "amount": 0.5, "cc": "FR", "ts": T0 + 2, "ok": False,
                     "source": "headrace"}},
    ]
    assert out == _per_record(chain, _batch(pairs))
    # a predicate on the topic, not negated: only "payments" records are routed
    route = TransformStage("route", _configured(TimestampRouter(), topic_format="${topic}-x"),
                           _configured(TopicNameMatches(), pattern="payments"))
    chain = _realistic_chain(route)
    both = [*_batch(pairs), *_batch(pairs, topic="refunds", start=10)]
    assert [r.topic for r in _per_record(chain, both)] == ["payments-x"] * 3 + ["refunds"] * 3


def test_records_put_through_the_chain_twice_come_out_the_same() -> None:
    # after a failure the worker runs the same records again: the built-ins keep no state but caches
    chain = _realistic_chain()
    pairs = _mixed() * 2
    first = list(chain.apply_batch(_batch(pairs)))
    second = list(chain.apply_batch(_batch(pairs)))
    assert first == second == _per_record(chain, _batch(pairs))


def test_masked_and_copied_struct_fields_are_checked_against_the_schema_as_apply_checks_them() -> None:
    byte_schema = SchemaBuilder.struct().field("b", Schema.INT8_SCHEMA).field("s", Schema.STRING_SCHEMA).build()
    value = Struct(byte_schema).put("b", 5).put("s", "x")
    mask = _configured(MaskField.Value(), fields="b", replacement="300")  # out of INT8's range
    batch = SinkRecordBatch()
    batch.add("t", 0, [0], [T0], TimestampType.CREATE_TIME, [None], [None], [byte_schema], [value])
    with pytest.raises(DataException, match="Unable to convert 300"):
        mask.apply(SinkRecord("t", 0, None, None, byte_schema, value, 0))
    with pytest.raises(DataException, match="Unable to convert 300"):
        mask.apply_batch(batch)


class _PutStruct(Struct):
    """A Struct subclass: the transforms take it the checked way, every value put, as before the batch path."""

    __slots__ = ()


def _as_put_struct(value: Any) -> Any:
    if type(value) is not Struct:
        return value
    copy = _PutStruct(value.schema)
    for field, field_value in zip(value.schema.fields(), value.field_values(), strict=True):
        copy._values[field.index] = field_value  # as held, unchecked: a Struct may hold nulls in required fields
    return copy


NESTED = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
WITH_NESTED = (SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("user", Schema.STRING_SCHEMA)
               .field("inner", NESTED).field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
               .build())


def _struct_cases() -> list[tuple[Schema, Any]]:
    incomplete_inner = Struct(NESTED)  # its required field never set: putting it anywhere fails
    complete_inner = Struct(NESTED).put("x", 1)
    bad_tags = Struct(WITH_NESTED).put("id", 1).put("user", "u").put("inner", complete_inner).put("tags", ["a"])
    bad_tags.get("tags").append(7)  # changed after it was put: no longer a list of strings
    return [
        (SCHEMA, _struct(1)),
        (SCHEMA, _struct(4, country=None)),
        (SCHEMA, Struct(SCHEMA).put("id", 1)),
        (OTHER_SCHEMA, Struct(OTHER_SCHEMA).put("id", 5).put("user", "u5")),
        (WITH_NESTED, Struct(WITH_NESTED).put("id", 1).put("user", "u").put("inner", complete_inner)),
        (WITH_NESTED, Struct.from_valid_values(WITH_NESTED, [1, "u", incomplete_inner, None])),
        (WITH_NESTED, bad_tags),
    ]


@pytest.mark.parametrize("name", TRANSFORMS)
def test_structs_copied_by_position_give_what_putting_every_value_gives(name: str) -> None:
    make = TRANSFORMS[name]
    for i, (schema, value) in enumerate(_struct_cases()):
        fast = SinkRecord("payments", 1, None, None, schema, value, 0, T0)
        checked = SinkRecord("payments", 1, None, None, schema, _as_put_struct(value), 0, T0)
        try:
            expected = make(SIDES["value"]).apply(checked)
        except Exception as exc:  # noqa: BLE001 - whatever the checked way raises, the fast way must too
            with pytest.raises(type(exc)) as raised:
                make(SIDES["value"]).apply(fast)
            assert str(raised.value) == str(exc), (i, value)
            with pytest.raises(type(exc)) as raised:
                make(SIDES["value"]).apply_batch(_batch([(schema, value)]))
            assert str(raised.value) == str(exc), (i, value)
            continue
        assert make(SIDES["value"]).apply(fast) == expected, (i, value)
        out = make(SIDES["value"]).apply_batch(_batch([(schema, value)]))
        assert [(r.value_schema, r.value) for r in out] == [(expected.value_schema, expected.value)], (i, value)
