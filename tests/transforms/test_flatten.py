"""Flatten: nested structs and maps into one level."""

from __future__ import annotations

import pytest

from connect.api import DataException, Schema, SchemaBuilder, SinkRecord, Struct
from plugins.transforms import Flatten


def record(value, schema=None, key=None, key_schema=None):
    return SinkRecord("topic", 0, key_schema, key, schema, value, 9)


def flatten(value, schema=None, variant=Flatten.Value, **props):
    transform = variant()
    transform.configure({k: v for k, v in props.items()})
    rec = record(value, schema) if variant is Flatten.Value else record("v", key=value, key_schema=schema)
    return transform, transform.apply(rec)


def test_schemaless_nested_maps():
    value = {"A": {"B": {"int8": 8, "string": "s", "array": [1, {"x": 1}], "null": None}, "float": 1.5},
             "top": True}
    _, out = flatten(value)
    assert out.value == {"A.B.int8": 8, "A.B.string": "s", "A.B.array": [1, {"x": 1}], "A.B.null": None,
                         "A.float": 1.5, "top": True}
    assert value["A"]["B"]["int8"] == 8  # input untouched


def test_custom_delimiter_and_key_variant():
    _, out = flatten({"a": {"b": 1}}, variant=Flatten.Key, delimiter="#")
    assert out.key == {"a#b": 1} and out.value == "v"


def test_schemaful_nested_structs_propagate_optionality_and_defaults():
    leaf = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).field("y", Schema.OPTIONAL_STRING_SCHEMA).build()
    optional_leaf = (SchemaBuilder.struct().optional().field("x", Schema.INT32_SCHEMA).build())
    defaulted = SchemaBuilder.struct().field("d", SchemaBuilder.int64().default_value(9).build()).build()
    schema = (SchemaBuilder.struct().name("outer").version(2)
              .field("leaf", leaf)
              .field("maybe", optional_leaf)
              .field("defaulted", defaulted)
              .field("list", SchemaBuilder.array(Schema.INT32_SCHEMA).build())
              .field("top", Schema.STRING_SCHEMA)
              .build())
    value = (Struct(schema).put("leaf", Struct(leaf).put("x", 1).put("y", "why"))
             .put("defaulted", Struct(defaulted).put("d", 3)).put("list", [1, 2]).put("top", "t"))
    transform, out = flatten(value, schema)
    flat = out.value_schema
    assert (flat.name, flat.version) == ("outer", 2)
    assert [f.name for f in flat.fields()] == ["leaf.x", "leaf.y", "maybe.x", "defaulted.d", "list", "top"]
    assert flat.field("leaf.x").schema == Schema.INT32_SCHEMA
    assert flat.field("leaf.y").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert flat.field("maybe.x").schema == Schema.OPTIONAL_INT32_SCHEMA
    assert flat.field("defaulted.d").schema.default_value == 9
    assert flat.field("list").schema.type.name == "ARRAY"
    got = {f.name: out.value.get_without_default(f.name) for f in flat.fields()}
    assert got == {"leaf.x": 1, "leaf.y": "why", "maybe.x": None, "defaulted.d": 3, "list": [1, 2], "top": "t"}
    assert transform.apply(record(value, schema)).value_schema is flat


def test_tombstones_pass_through():
    transform = Flatten.Value()
    transform.configure({})
    for rec in (record(None), record(None, SchemaBuilder.struct().optional().build())):
        assert transform.apply(rec) is rec


def test_unsupported_values():
    with pytest.raises(DataException, match=r"Only Map objects supported in absence of schema for \[flattening\]"):
        flatten(42)
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataException, match="does not support Struct for record without schemas"):
        flatten({"s": Struct(schema).put("a", 1)})
    with pytest.raises(DataException, match="not supported by Connect's data API"):
        flatten({"o": object()})
