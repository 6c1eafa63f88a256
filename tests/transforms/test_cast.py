"""Cast: whole-value and per-field casts, with and without schemas."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from connect.api import (
    ConfigException,
    DataException,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    SourceRecord,
    Struct,
    Time,
    Timestamp,
    Type,
)
from plugins.transforms import Cast


def record(value, schema=None, key=None, key_schema=None):
    return SourceRecord(None, None, "topic", 0, key_schema, key, schema, value, 1)


def cast(spec, value, schema=None, variant=Cast.Value, **extra):
    transform = variant()
    transform.configure({"spec": spec, **extra})
    return transform.apply(record(value, schema))


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        ("int8", 42, 42),
        ("int8", 300, 44),  # Java narrowing keeps the low bits
        ("int16", 42.9, 42),
        ("int32", True, 1),
        ("int64", "-42", -42),
        ("float32", 42, 42.0),
        ("float64", "42.5", 42.5),
        ("boolean", 0, False),
        ("boolean", 0.5, False),
        ("boolean", "TRUE", True),
        ("boolean", "yes", False),
        ("string", 42, "42"),
        ("string", True, "true"),
        ("string", 1.0e10, "1.0E10"),
        ("string", 0.25, "0.25"),
        ("string", b"\x01\x02", "AQI="),
    ],
)
def test_schemaless_whole_value(spec, value, expected):
    out = cast(spec, value)
    assert out.value == expected and type(out.value) is type(expected)
    assert out.value_schema is None


def test_schemaful_whole_value_builds_schema():
    schema = SchemaBuilder.int32().name("n").version(2).optional().default_value(8).build()
    out = cast("int64", 42, schema)
    assert out.value == 42
    assert out.value_schema.type is Type.INT64
    assert (out.value_schema.name, out.value_schema.version, out.value_schema.optional) == ("n", 2, True)
    assert out.value_schema.default_value == 8


def test_key_variant():
    transform = Cast.Key()
    transform.configure({"spec": "int32"})
    rec = transform.apply(record("v", key=7, key_schema=Schema.INT64_SCHEMA))
    assert (rec.key, rec.key_schema.type, rec.value) == (7, Type.INT32, "v")


def test_schemaful_fields():
    nested_schema = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    schema = (SchemaBuilder.struct().name("s")
              .field("int8", Schema.INT8_SCHEMA)
              .field("int32", SchemaBuilder.int32().default_value(2).build())
              .field("float", Schema.FLOAT32_SCHEMA)
              .field("bool", Schema.BOOLEAN_SCHEMA)
              .field("string", Schema.OPTIONAL_STRING_SCHEMA)
              .field("bytes", Schema.BYTES_SCHEMA)
              .field("nested", nested_schema)
              .field("untouched", Schema.STRING_SCHEMA)
              .build())
    value = (Struct(schema).put("int8", 8).put("int32", 32).put("float", 32.5).put("bool", True)
             .put("string", "42").put("bytes", b"hi").put("nested", Struct(nested_schema).put("x", 1))
             .put("untouched", "u"))
    spec = "int8:int16,int32:string,float:int64,bool:float64,string:int32,bytes:string"
    out = cast(spec, value, schema)
    updated = out.value_schema
    assert updated.name == "s"
    assert updated.field("int8").schema == Schema.INT16_SCHEMA
    assert updated.field("int32").schema == SchemaBuilder.string().default_value("2").build()
    assert updated.field("string").schema == Schema.OPTIONAL_INT32_SCHEMA
    assert updated.field("nested").schema is nested_schema  # nested structs are copied as they are
    got = {f.name: out.value.get(f) for f in updated.fields()}
    assert got == {"int8": 8, "int32": "32", "float": 32, "bool": 1.0, "string": 42, "bytes": "aGk=",
                   "nested": Struct(nested_schema).put("x", 1), "untouched": "u"}


def test_casting_a_nested_struct_field_is_refused():
    nested_schema = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    schema = SchemaBuilder.struct().field("nested", nested_schema).build()
    value = Struct(schema).put("nested", Struct(nested_schema).put("x", 1))
    with pytest.raises(DataException, match="does not support casting from STRUCT"):
        cast("nested:string", value, schema)


def test_schemaless_fields_and_nested_maps():
    out = cast("a:int16,b:string,missing:int32", {"a": "12", "b": 1.5, "nested": {"a": "1"}})
    # Kafka writes fields named in the spec but absent from the map as null.
    assert out.value == {"a": 12, "b": "1.5", "nested": {"a": "1"}, "missing": None}
    with pytest.raises(DataException, match="does not support casting from MAP"):
        cast("nested:string", {"nested": {"a": 1}})


def test_null_field_values_stay_null_and_tombstones_pass():
    schema = SchemaBuilder.struct().field("a", Schema.OPTIONAL_INT32_SCHEMA).build()
    assert cast("a:string", Struct(schema), schema).value.get("a") is None
    assert cast("a:string", {"a": None}).value == {"a": None}
    rec = record(None, Schema.OPTIONAL_INT32_SCHEMA)
    transform = Cast.Value()
    transform.configure({"spec": "string"})
    assert transform.apply(rec) is rec


def test_logical_types():
    schema = (SchemaBuilder.struct()
              .field("date", Date.SCHEMA).field("time", Time.SCHEMA).field("ts", Timestamp.SCHEMA)
              .field("ts2", Timestamp.SCHEMA).field("dec", Decimal.schema(2)).build())
    value = (Struct(schema).put("date", dt.date(1970, 1, 3)).put("time", dt.time(0, 0, 1))
             .put("ts", dt.datetime(2021, 3, 4, 5, 6, 7, 890000, tzinfo=dt.UTC))
             .put("ts2", dt.datetime(2021, 3, 4, tzinfo=dt.UTC)).put("dec", decimal.Decimal("12.34")))
    ints = cast("date:int32,time:int32,ts:int64,dec:int32", value, schema).value
    assert (ints.get("date"), ints.get("time"), ints.get("ts"), ints.get("dec")) == (2, 1000, 1614834367890, 12)
    text = cast("date:string,time:string,ts:string,ts2:string,dec:string", value, schema).value
    assert text.get("date") == "1970-01-03"
    assert text.get("time") == "00:00:01.000Z"
    assert text.get("ts") == "2021-03-04T05:06:07.890Z"
    assert text.get("ts2") == "2021-03-04"
    assert text.get("dec") == "12.34"


def test_bytes_only_cast_to_string():
    with pytest.raises(DataException, match="Unexpected type in Cast transformation"):
        cast("int32", b"12")


def test_out_of_range_strings():
    with pytest.raises(DataException, match=r"Value \(300\) was out of range for requested data type"):
        cast("int8", "300")
    with pytest.raises(DataException, match="out of range"):
        cast("int32", "1.5")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "Must specify at least one field to cast."),
        ("foo:int8,int32", "may only specify a single cast"),
        ("foo:bar", "Invalid type found in casting spec: bar"),
        ("foo:bytes", "does not support casting to BYTES"),
        ("foo:array", "does not support casting to ARRAY"),
        ("a:b:c", "Invalid cast mapping"),
        ("unknown", "Invalid type found in casting spec: unknown"),
    ],
)
def test_config_errors(spec, message):
    with pytest.raises(ConfigException, match=message) as info:
        Cast.Value().configure({"spec": spec})
    assert info.value.name == "spec"


def test_missing_spec():
    with pytest.raises(ConfigException) as info:
        Cast.Value().configure({})
    assert info.value.name == "spec"


def test_replace_null_with_default():
    schema = SchemaBuilder.struct().field("a", SchemaBuilder.int32().optional().default_value(5).build()).build()
    assert cast("a:string", Struct(schema), schema).value.get_without_default("a") == "5"
    kept = cast("a:string", Struct(schema), schema, **{"replace.null.with.default": "false"})
    assert kept.value.get_without_default("a") is None
