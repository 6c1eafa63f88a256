"""ExtractField, HoistField, MaskField, ValueToKey and SetSchemaMetadata."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from connect.api import (
    ConfigException,
    DataException,
    Schema,
    SchemaBuilder,
    SinkRecord,
    SourceRecord,
    Struct,
    Type,
)
from plugins.transforms import ExtractField, HoistField, MaskField, SetSchemaMetadata, ValueToKey


def record(value=None, schema=None, key=None, key_schema=None):
    return SinkRecord("topic", 0, key_schema, key, schema, value, 5)


def configured(cls, **props):
    transform = cls()
    transform.configure({k.replace("_", "."): v for k, v in props.items()})
    return transform


# --- ExtractField -----------------------------------------------------------

def test_extract_field_schemaless_and_schemaful():
    assert configured(ExtractField.Key, field="magic").apply(record(key={"magic": 42})).key == 42
    assert configured(ExtractField.Value, field="missing").apply(record({"magic": 42})).value is None
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    out = configured(ExtractField.Value, field="magic").apply(record(Struct(schema).put("magic", 42), schema))
    assert (out.value, out.value_schema) == (42, Schema.INT32_SCHEMA)


def test_extract_field_nulls_pass_through():
    transform = configured(ExtractField.Key, field="magic")
    assert transform.apply(record("v")).key is None
    schema = SchemaBuilder.struct().optional().field("magic", Schema.INT32_SCHEMA).build()
    out = transform.apply(record(key=None, key_schema=schema))
    assert out.key is None and out.key_schema == Schema.INT32_SCHEMA


def test_extract_field_unknown_struct_field():
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataException, match="Unknown field: nope"):
        configured(ExtractField.Value, field="nope").apply(record(Struct(schema).put("magic", 1), schema))


def test_extract_field_v2_nested_paths():
    inner = SchemaBuilder.struct().field("baz", Schema.STRING_SCHEMA).build()
    schema = SchemaBuilder.struct().field("foo.bar", inner).field("foo", inner).build()
    value = Struct(schema).put("foo.bar", Struct(inner).put("baz", "dotted")).put("foo", Struct(inner).put("baz", "plain"))
    v2 = {"field_syntax_version": "v2"}
    assert configured(ExtractField.Value, field="`foo.bar`.baz", **v2).apply(record(value, schema)).value == "dotted"
    assert configured(ExtractField.Value, field="foo.baz", **v2).apply(record(value, schema)).value == "plain"
    # Under V1 the whole text is one field name.
    assert configured(ExtractField.Value, field="foo.bar").apply(record(value, schema)).value_schema == inner
    nested_map = {"a": {"b": {"c": 1}}, "a.b": 2}
    assert configured(ExtractField.Value, field="a.b.c", **v2).apply(record(nested_map)).value == 1
    assert configured(ExtractField.Value, field="`a.b`", **v2).apply(record(nested_map)).value == 2
    assert configured(ExtractField.Value, field="a.x.c", **v2).apply(record(nested_map)).value is None
    with pytest.raises(DataException, match="nested field access"):
        configured(ExtractField.Value, field="a.b.c.d", **v2).apply(record(nested_map))


@pytest.mark.parametrize(
    ("path", "steps"),
    [("foo", ["foo"]), ("foo.bar", ["foo", "bar"]), ("`foo.bar`.baz", ["foo.bar", "baz"]),
     ("foo.", ["foo", ""]), ("`a`b`.c", ["a`b", "c"]), ("`a\\`.b`", ["a`.b"]), ("x.`y`", ["x", "y"])],
)
def test_v2_path_syntax(path, steps):
    from plugins.transforms._field_path import SingleFieldPath

    assert list(SingleFieldPath(path, "V2").steps) == steps


def test_v2_path_errors():
    with pytest.raises(ConfigException, match="Incomplete backtick pair"):
        configured(ExtractField.Value, field="`foo.bar", field_syntax_version="V2")
    with pytest.raises(ConfigException) as info:
        configured(ExtractField.Value, field="a", field_syntax_version="V3")
    assert info.value.name == "field.syntax.version"


def test_extract_field_replace_null_with_default():
    schema = SchemaBuilder.struct().field("x", SchemaBuilder.int32().optional().default_value(4).build()).build()
    assert configured(ExtractField.Value, field="x").apply(record(Struct(schema), schema)).value == 4
    keep = configured(ExtractField.Value, field="x", replace_null_with_default="false")
    assert keep.apply(record(Struct(schema), schema)).value is None


# --- HoistField -------------------------------------------------------------

def test_hoist_field():
    assert configured(HoistField.Key, field="magic").apply(record(key=42)).key == {"magic": 42}
    out = configured(HoistField.Value, field="magic").apply(record(42, Schema.INT32_SCHEMA))
    assert out.value_schema == SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    assert out.value.get("magic") == 42
    # Kafka hoists tombstones too.
    assert configured(HoistField.Value, field="magic").apply(record(None)).value == {"magic": None}


# --- MaskField --------------------------------------------------------------

MASK_SCHEMA = (SchemaBuilder.struct()
               .field("magic", Schema.INT32_SCHEMA).field("bool", Schema.BOOLEAN_SCHEMA)
               .field("byte", Schema.INT8_SCHEMA).field("float", Schema.FLOAT64_SCHEMA)
               .field("string", Schema.STRING_SCHEMA).field("list", SchemaBuilder.array(Schema.INT32_SCHEMA).build())
               .field("null", Schema.OPTIONAL_STRING_SCHEMA).field("kept", Schema.STRING_SCHEMA).build())
MASKED = "magic,bool,byte,float,string,list,null"


def _mask_value():
    return (Struct(MASK_SCHEMA).put("magic", 42).put("bool", True).put("byte", 5).put("float", 1.5)
            .put("string", "secret").put("list", [1, 2]).put("kept", "k"))


def test_mask_field_schemaful():
    out = configured(MaskField.Value, fields=MASKED).apply(record(_mask_value(), MASK_SCHEMA))
    got = {f.name: out.value.get(f) for f in MASK_SCHEMA.fields()}
    assert got == {"magic": 0, "bool": False, "byte": 0, "float": 0.0, "string": "", "list": [],
                   "null": None, "kept": "k"}
    assert out.value_schema is MASK_SCHEMA


def test_mask_field_schemaless():
    value = {"magic": 42, "bool": True, "string": "s", "date": dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
             "dec": decimal.Decimal("1.5"), "map": {"a": 1}, "kept": 1}
    out = configured(MaskField.Value, fields="magic,bool,string,date,dec,map,absent").apply(record(value))
    assert out.value == {"magic": 0, "bool": False, "string": "", "date": dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
                         "dec": decimal.Decimal(0), "map": {}, "kept": 1, "absent": None}
    assert value["magic"] == 42


def test_mask_field_replacement():
    out = configured(MaskField.Value, fields="magic,byte,float,string", replacement="123").apply(
        record(_mask_value(), MASK_SCHEMA))
    assert (out.value.get("magic"), out.value.get("byte"), out.value.get("float"), out.value.get("string")) == (
        123, 123, 123.0, "123")
    with pytest.raises(DataException, match="Unable to convert 300"):
        configured(MaskField.Value, fields="byte", replacement="300").apply(record(_mask_value(), MASK_SCHEMA))
    with pytest.raises(DataException, match="Cannot mask value of type bool with custom replacement"):
        configured(MaskField.Value, fields="bool", replacement="x").apply(record({"bool": True}))
    with pytest.raises(DataException, match="Unable to convert abc"):
        configured(MaskField.Value, fields="n", replacement="abc").apply(record({"n": 1}))


def test_mask_field_errors_and_tombstones():
    with pytest.raises(DataException, match="Cannot mask value of type: bytes"):
        configured(MaskField.Value, fields="b").apply(record({"b": b"x"}))
    rec = record(None)
    assert configured(MaskField.Value, fields="a").apply(rec) is rec
    with pytest.raises(ConfigException) as info:
        configured(MaskField.Value, fields="")
    assert info.value.name == "fields"
    with pytest.raises(ConfigException) as info:
        configured(MaskField.Value, fields="a", replacement="")
    assert info.value.name == "replacement"


# --- ValueToKey -------------------------------------------------------------

def test_value_to_key():
    transform = configured(ValueToKey, fields="a,b")
    assert transform.apply(record({"a": 1, "b": 2, "c": 3})).key == {"a": 1, "b": 2}
    assert transform.apply(record(None)).key == {"a": None, "b": None}
    schema = (SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.INT32_SCHEMA)
              .field("c", Schema.INT32_SCHEMA).build())
    out = transform.apply(record(Struct(schema).put("a", 1).put("b", 2).put("c", 3), schema))
    assert out.key_schema == SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.INT32_SCHEMA).build()
    assert (out.key.get("a"), out.key.get("b")) == (1, 2)
    assert out.value.get("c") == 3 and out.kafka_offset == 5


def test_value_to_key_errors():
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataException, match="Field does not exist: x"):
        configured(ValueToKey, fields="x").apply(record(Struct(schema).put("a", 1), schema))
    with pytest.raises(DataException, match="copying fields from value to key"):
        configured(ValueToKey, fields="a").apply(record(None, schema))
    for fields in ("", "a,a"):
        with pytest.raises(ConfigException) as info:
            configured(ValueToKey, fields=fields)
        assert info.value.name == "fields"


# --- SetSchemaMetadata ------------------------------------------------------

def test_set_schema_metadata():
    schema = SchemaBuilder.struct().name("old").version(1).field("a", Schema.INT32_SCHEMA).build()
    out = configured(SetSchemaMetadata.Value, schema_name="foo", schema_version=42).apply(
        record(Struct(schema).put("a", 1), schema))
    assert (out.value_schema.name, out.value_schema.version) == ("foo", 42)
    assert out.value.schema is out.value_schema and out.value.get("a") == 1

    only_version = configured(SetSchemaMetadata.Value, schema_version="7").apply(record("x", Schema.STRING_SCHEMA))
    assert (only_version.value_schema.name, only_version.value_schema.version) == (None, 7)
    assert only_version.value == "x"

    array_schema = SchemaBuilder.array(Schema.INT32_SCHEMA).build()
    renamed = configured(SetSchemaMetadata.Key, schema_name="arr").apply(record(key=[1], key_schema=array_schema))
    assert renamed.key_schema.type is Type.ARRAY and renamed.key_schema.value_schema == Schema.INT32_SCHEMA


def test_set_schema_metadata_needs_schema_and_config():
    with pytest.raises(DataException, match=r"Schema required for \[updating schema metadata\]"):
        configured(SetSchemaMetadata.Value, schema_name="x").apply(record({"a": 1}))
    with pytest.raises(ConfigException, match="Neither schema name nor version configured"):
        configured(SetSchemaMetadata.Value)
    with pytest.raises(ConfigException) as info:
        configured(SetSchemaMetadata.Value, schema_version="one")
    assert info.value.name == "schema.version"


def test_set_schema_metadata_tombstone_and_source_record():
    schema = SchemaBuilder.struct().optional().field("a", Schema.INT32_SCHEMA).build()
    rec = SourceRecord({"p": 1}, {"o": 1}, "t", None, None, None, schema, None)
    out = configured(SetSchemaMetadata.Value, schema_name="n").apply(rec)
    assert out.value is None and out.value_schema.name == "n" and out.source_offset == {"o": 1}
