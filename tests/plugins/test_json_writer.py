"""The compiled JSON writers write exactly what the generic writer writes, and fail where it fails.

A property test over random schemas (structs nested in structs, arrays and maps; optional fields; defaults
with and without replace.null.with.default; the logical types; both decimal formats) and random values for
them, mostly valid, some of the wrong Python type or null where the schema says required.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connect.api import DataException, Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from connect.api.log_event import LOG_EVENT_SCHEMA, from_mapping
from plugins.converters import JsonConverter
from plugins.converters.json_values import JsonValueConverter
from plugins.converters.json_writer import CompiledJsonWriters

_NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6)
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)  # controls, quotes, non-ASCII


def _leaf_builders() -> st.SearchStrategy[tuple[SchemaBuilder, st.SearchStrategy[Any]]]:
    ints = lambda bits: st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)  # noqa: E731
    floats = st.floats(allow_nan=True, allow_infinity=True)
    return st.sampled_from([
        (SchemaBuilder.int8, ints(8)), (SchemaBuilder.int16, ints(16)), (SchemaBuilder.int32, ints(32)),
        (SchemaBuilder.int64, ints(64)), (SchemaBuilder.float32, floats), (SchemaBuilder.float64, floats),
        (SchemaBuilder.bool, st.booleans()), (SchemaBuilder.string, _TEXT),
        (SchemaBuilder.bytes, st.binary(max_size=8)),
        (lambda: Decimal.builder(2), st.decimals(places=2, allow_nan=False, allow_infinity=False,
                                                 min_value=-10**6, max_value=10**6)),
        (Date.builder, st.dates(dt.date(1900, 1, 1), dt.date(2100, 1, 1))),
        (Time.builder, st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
        (Timestamp.builder, st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1),
                                         timezones=st.just(dt.UTC)).map(
                                             lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))),
    ])


_WRONG = st.sampled_from(["text", 7, 2.5, True, b"\x01", [1], {"k": 1}, object()])


@st.composite
def schema_and_values(draw: st.DrawFn, depth: int = 0) -> tuple[Schema, st.SearchStrategy[Any]]:
    """A schema and a strategy of values for it."""
    kind = draw(st.sampled_from(["leaf", "leaf", "struct", "array", "map"] if depth < 3 else ["leaf"]))
    optional = draw(st.booleans())
    if kind == "leaf":
        make, values = draw(_leaf_builders())
        builder = make()
    elif kind == "struct":
        names = draw(st.lists(_NAMES, min_size=0, max_size=5, unique=True))
        builder = SchemaBuilder.struct()
        parts = []
        for name in names:
            schema, strategy = draw(schema_and_values(depth + 1))
            builder.field(name, schema)
            parts.append(strategy)
        values = st.tuples(*parts).map(list) if parts else st.just([])
    elif kind == "array":
        element, element_values = draw(schema_and_values(depth + 1))
        builder = SchemaBuilder.array(element)
        values = st.lists(element_values, max_size=3) | st.lists(element_values, max_size=2).map(tuple)
    else:
        value_schema, map_values = draw(schema_and_values(depth + 1))
        if draw(st.booleans()):
            builder = SchemaBuilder.map(Schema.STRING_SCHEMA, value_schema)
            values = st.dictionaries(_TEXT, map_values, max_size=3)
        else:
            builder = SchemaBuilder.map(Schema.INT32_SCHEMA, value_schema)
            values = st.dictionaries(st.integers(-5, 5), map_values, max_size=3)
    if optional:
        builder.optional()
    if kind != "struct" and draw(st.integers(0, 3)) == 0:
        default = draw(values)
        try:
            builder.default_value(default)
        except Exception:  # a value the builder's check refuses (float32 range...): no default then
            pass
    schema = builder.build()
    if kind == "struct":
        field_values = values

        def as_struct(vals: list[Any], schema: Schema = schema) -> Struct:
            s = Struct(schema)
            s._values = vals  # unchecked, as a source may build it
            return s

        values = field_values.map(as_struct)
    choices = [values, values, values, st.none(), _WRONG]
    return schema, st.one_of(*choices)


_CHECKS = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=100, deadline=None, suppress_health_check=_CHECKS)
@given(st.data(), st.booleans(), st.booleans())
def test_compiled_writer_matches_the_generic_writer(data: st.DataObject, replace_null: bool, numeric: bool) -> None:
    _check_one(data, replace_null, numeric)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=_CHECKS)
@given(st.data(), st.booleans(), st.booleans())
def test_compiled_writer_matches_the_generic_writer_at_length(data: st.DataObject, replace_null: bool,
                                                               numeric: bool) -> None:
    _check_one(data, replace_null, numeric)


def _check_one(data: st.DataObject, replace_null: bool, numeric: bool) -> None:
    schema, values = data.draw(schema_and_values())
    generic = JsonValueConverter(numeric_decimals=numeric, replace_null=replace_null)
    compiled = CompiledJsonWriters(generic).writer(schema)
    for _ in range(3):
        value = data.draw(values)
        try:
            expected: Any = generic.convert_to_json(schema, value)
        except DataException as exc:
            expected = ("raises", str(exc))
        except Exception as exc:  # noqa: BLE001 - any other failure must be the same too
            expected = ("raises", type(exc).__name__, str(exc))
        try:
            got: Any = compiled(value)
        except DataException as exc:
            got = ("raises", str(exc))
        except Exception as exc:  # noqa: BLE001
            got = ("raises", type(exc).__name__, str(exc))
        assert got == expected, f"{schema!r} {value!r}"


def _converter(**configs: str) -> JsonConverter:
    conv = JsonConverter()
    conv.configure({k.replace("_", "."): v for k, v in configs.items()}, False)
    return conv


def _generic_bytes(conv: JsonConverter, schema: Schema | None, value: Any, envelope: bool) -> bytes:
    payload = conv._values.convert_to_json(schema, value)
    text = '{"schema":' + conv.as_json_schema(schema) + ',"payload":' + payload + "}" if envelope else payload
    return text.encode()


@pytest.mark.parametrize("envelope", [True, False])
def test_converter_batch_and_single_write_the_generic_bytes_for_log_events(envelope: bool) -> None:
    conv = _converter(schemas_enable=str(envelope).lower())
    events = [
        from_mapping({"message": "a\u000bb \"q\" é", "log": {"level": "INFO", "logger": "x"},
                      "process": {"pid": 3, "thread": {"name": "t", "id": 2**40}}, "labels": {"k": "v"},
                      "@timestamp": "2026-01-01T00:00:00Z"}),
        from_mapping({"@timestamp": 1, "message": None}),
        from_mapping({"ident": "x", "_gelf": 3, "level": 3, "short_message": "m"}),
    ]
    want = [_generic_bytes(conv, LOG_EVENT_SCHEMA, e, envelope) for e in events]
    assert conv.from_connect_batch("t", LOG_EVENT_SCHEMA, events) == want
    assert [conv.from_connect_data("t", LOG_EVENT_SCHEMA, e) for e in events] == want


def test_a_lone_surrogate_fails_the_batch_and_the_record_with_a_data_exception() -> None:
    schema = SchemaBuilder.struct().field("s", Schema.STRING_SCHEMA).build()
    bad = Struct(schema).put("s", "\ud800")
    conv = _converter(schemas_enable="false")
    with pytest.raises(DataException, match="serialization error"):
        conv.from_connect_batch("t", schema, [bad])
    with pytest.raises(DataException, match="serialization error"):
        conv.from_connect_data("t", schema, bad)


def test_a_struct_of_another_schema_is_refused_as_the_generic_writer_refuses_it() -> None:
    a = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    b = SchemaBuilder.struct().field("y", Schema.INT32_SCHEMA).build()
    conv = _converter(schemas_enable="false")
    with pytest.raises(DataException, match="Mismatching schema"):
        conv.from_connect_batch("t", a, [Struct(b).put("y", 1)])


def test_field_names_are_data_never_code() -> None:
    name = "x'}{__import__('os').system('false')}"
    schema = SchemaBuilder.struct().field(name, Schema.OPTIONAL_STRING_SCHEMA).build()
    conv = _converter(schemas_enable="false")
    assert conv.from_connect_data("t", schema, Struct(schema)) == ('{"' + name + '":null}').encode()
    assert Type.STRUCT is schema.type
