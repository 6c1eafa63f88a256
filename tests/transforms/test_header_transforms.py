"""HeaderFrom, InsertHeader and DropHeaders."""

from __future__ import annotations

import datetime as dt

import pytest

from connect.api import (
    ConfigException,
    ConnectHeaders,
    DataException,
    Date,
    Header,
    Schema,
    SchemaBuilder,
    SourceRecord,
    Struct,
    Time,
    Timestamp,
    Type,
)
from connect.api.java_numbers import to_float32
from plugins.transforms import DropHeaders, HeaderFrom, InsertHeader


def record(value=None, schema=None, key=None, key_schema=None, headers=None):
    return SourceRecord({"p": 1}, {"o": 1}, "topic", 0, key_schema, key, schema, value, 9,
                        headers if headers is not None else ConnectHeaders().add_string("existing", "e"))


def configured(cls, **props):
    transform = cls()
    transform.configure({k.replace("_", "."): v for k, v in props.items()})
    return transform


SCHEMA = (SchemaBuilder.struct().name("s").field("field1", Schema.STRING_SCHEMA)
          .field("field2", Schema.OPTIONAL_INT32_SCHEMA).field("keep", Schema.BOOLEAN_SCHEMA).build())


def _value():
    return Struct(SCHEMA).put("field1", "one").put("field2", 2).put("keep", True)


@pytest.mark.parametrize("operation", ["copy", "move"])
def test_header_from_schemaful(operation):
    original = record(_value(), SCHEMA)
    out = configured(HeaderFrom.Value, fields="field1,field2", headers="h1,h2", operation=operation).apply(original)
    assert list(out.headers) == [Header("existing", Schema.OPTIONAL_STRING_SCHEMA, "e"),
                                 Header("h1", Schema.STRING_SCHEMA, "one"),
                                 Header("h2", Schema.OPTIONAL_INT32_SCHEMA, 2)]
    if operation == "copy":
        assert out.value_schema is SCHEMA and out.value == _value()
    else:
        assert [f.name for f in out.value_schema.fields()] == ["keep"]
        assert out.value_schema.name == "s" and out.value.get("keep") is True
    assert len(original.headers) == 1  # the input's headers are not touched


@pytest.mark.parametrize("operation", ["copy", "move"])
def test_header_from_schemaless_key(operation):
    original = record("v", key={"field1": "one", "other": 1})
    out = configured(HeaderFrom.Key, fields="field1,absent", headers="h1,h1", operation=operation).apply(original)
    assert [(h.key, h.schema, h.value) for h in out.headers][1:] == [("h1", None, "one"), ("h1", None, None)]
    expected = {"field1": "one", "other": 1} if operation == "copy" else {"other": 1}
    assert out.key == expected and out.value == "v" and original.key == {"field1": "one", "other": 1}


def test_header_from_errors():
    with pytest.raises(ConfigException, match="must have the same number of elements"):
        configured(HeaderFrom.Value, fields="a,b", headers="h", operation="copy")
    with pytest.raises(ConfigException) as info:
        configured(HeaderFrom.Value, fields="a", headers="h", operation="steal")
    assert info.value.name == "operation"
    with pytest.raises(DataException, match=r"Only Map objects supported in absence of schema for \[header move\]"):
        configured(HeaderFrom.Value, fields="a", headers="h", operation="move").apply(record(None))
    with pytest.raises(DataException, match="nope is not a valid field name"):
        configured(HeaderFrom.Value, fields="nope", headers="h", operation="copy").apply(record(_value(), SCHEMA))


def test_insert_header():
    out = configured(InsertHeader, header="app.id", value_literal="best-app-ever").apply(record("v"))
    assert list(out.headers)[-1] == Header("app.id", Schema.STRING_SCHEMA, "best-app-ever")
    assert out.value == "v" and out.source_offset == {"o": 1}
    with pytest.raises(ConfigException) as info:
        configured(InsertHeader, header="h")
    assert info.value.name == "value.literal"


def _inserted(literal):
    """The header InsertHeader adds for ``literal``: its typing is Kafka's Values.parseString (connect.api.values)."""
    header = list(configured(InsertHeader, header="h", value_literal=literal).apply(record("v")).headers)[-1]
    return header.schema, header.value


@pytest.mark.parametrize(
    ("literal", "schema_type", "value"),
    [
        ("1234", Type.INT16, 1234),
        ("42", Type.INT8, 42),
        ("-9753186420", Type.INT64, -9753186420),
        ("1.5", Type.FLOAT32, 1.5),
        ("true", Type.BOOLEAN, True),
        ("hello world", Type.STRING, "hello world"),
        ("  padded ", Type.STRING, "padded"),  # ConfigDef trims STRING values, as Kafka's does
        ("", Type.STRING, ""),
        ("[-3, 0, 5]", Type.ARRAY, [-3, 0, 5]),
        ('["a", "b,c"]', Type.ARRAY, ["a", "b,c"]),
        # FLOAT32 keys, as Kafka's: 3.4 is the float32 nearest to it
        ("{3.4: 4761, -5.9: -9753186420}", Type.MAP, {to_float32(3.4): 4761, to_float32(-5.9): -9753186420}),
        ("[1, oops]", Type.STRING, "[1, oops]"),
        ("{unclosed", Type.STRING, "{unclosed"),
    ],
)
def test_insert_header_types_the_literal(literal, schema_type, value):
    schema, inserted = _inserted(literal)
    assert schema.type is schema_type and inserted == value


def test_insert_header_special_literals():
    assert _inserted("null") == (None, None)
    mapped, _ = _inserted("{3.4: 4761, -5.9: -9753186420}")
    assert (mapped.key_schema.type, mapped.value_schema.type) == (Type.FLOAT32, Type.INT64)
    assert _inserted("2024-01-31") == (Date.SCHEMA, dt.date(2024, 1, 31))
    assert _inserted("12:30:00.000Z") == (Time.SCHEMA, dt.time(12, 30))
    assert _inserted("2024-01-31T12:30:00.000Z") == (Timestamp.SCHEMA, dt.datetime(2024, 1, 31, 12, 30, tzinfo=dt.UTC))
    big, _ = _inserted("123456789012345678901234567890")
    assert big.name == "org.apache.kafka.connect.data.Decimal"


def test_drop_headers():
    headers = ConnectHeaders().add_string("a", "1").add_string("b", "2").add_string("a", "3").add_int("c", 4)
    original = record("v", headers=headers)
    out = configured(DropHeaders, headers="a,c").apply(original)
    assert [h.key for h in out.headers] == ["b"]
    assert len(original.headers) == 4
    with pytest.raises(ConfigException) as info:
        configured(DropHeaders, headers="")
    assert info.value.name == "headers"
