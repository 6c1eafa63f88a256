"""JsonConverter: exact bytes as Kafka Connect writes them, round trips and error messages."""

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
    SchemaAndValue,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
)
from plugins.converters import JsonConverter
from plugins.converters.json import ENVELOPE_REQUIRED_MESSAGE

TOPIC = "topic"


def converter(**configs: object) -> JsonConverter:
    conv = JsonConverter()
    conv.configure({k.replace("_", "."): v for k, v in configs.items()}, False)
    return conv


@pytest.fixture
def json_conv() -> JsonConverter:
    return converter()


def envelope(schema: str, payload: str) -> bytes:
    return ('{"schema":' + schema + ',"payload":' + payload + "}").encode()


# --- primitives ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "value", "schema_json", "payload"),
    [
        (Schema.STRING_SCHEMA, "hello", '{"type":"string","optional":false}', '"hello"'),
        (Schema.INT8_SCHEMA, 12, '{"type":"int8","optional":false}', "12"),
        (Schema.INT16_SCHEMA, -300, '{"type":"int16","optional":false}', "-300"),
        (Schema.INT32_SCHEMA, 12, '{"type":"int32","optional":false}', "12"),
        (Schema.INT64_SCHEMA, 4398046511104, '{"type":"int64","optional":false}', "4398046511104"),
        (Schema.FLOAT32_SCHEMA, 12.34, '{"type":"float","optional":false}', "12.34"),
        (Schema.FLOAT64_SCHEMA, 12.34, '{"type":"double","optional":false}', "12.34"),
        (Schema.FLOAT64_SCHEMA, 1.0, '{"type":"double","optional":false}', "1.0"),
        (Schema.FLOAT64_SCHEMA, 1e10, '{"type":"double","optional":false}', "1.0E10"),
        (Schema.FLOAT64_SCHEMA, 1.5e-5, '{"type":"double","optional":false}', "1.5E-5"),
        (Schema.FLOAT64_SCHEMA, 123456789.0, '{"type":"double","optional":false}', "1.23456789E8"),
        (Schema.FLOAT64_SCHEMA, 3, '{"type":"double","optional":false}', "3.0"),
        (Schema.FLOAT64_SCHEMA, float("nan"), '{"type":"double","optional":false}', '"NaN"'),
        (Schema.FLOAT32_SCHEMA, float("-inf"), '{"type":"float","optional":false}', '"-Infinity"'),
        (Schema.BOOLEAN_SCHEMA, True, '{"type":"boolean","optional":false}', "true"),
        (Schema.BYTES_SCHEMA, b"test-string", '{"type":"bytes","optional":false}', '"dGVzdC1zdHJpbmc="'),
        (Schema.OPTIONAL_STRING_SCHEMA, None, '{"type":"string","optional":true}', "null"),
        (Schema.OPTIONAL_INT32_SCHEMA, None, '{"type":"int32","optional":true}', "null"),
    ],
)
def test_primitive_bytes_match_kafka(
    json_conv: JsonConverter, schema: Schema, value: object, schema_json: str, payload: str
) -> None:
    assert json_conv.from_connect_data(TOPIC, schema, value) == envelope(schema_json, payload)


def test_string_without_envelope() -> None:
    conv = converter(schemas_enable="false")
    assert conv.from_connect_data(TOPIC, Schema.STRING_SCHEMA, "hello") == b'"hello"'
    assert conv.from_connect_data(TOPIC, Schema.INT64_SCHEMA, 7) == b"7"
    assert conv.to_connect_data(TOPIC, b'"hello"') == SchemaAndValue(None, "hello")


def test_string_escaping_matches_jackson(json_conv: JsonConverter) -> None:
    text = 'q"b\\s/\t\n\r\b\f\x01\x1f\x7f é 😀'
    # Jackson writes a character beyond the BMP as its escaped surrogate pair (seen side by side with
    # Kafka Connect 4.1 in tests/compat/test_data_side_by_side.py); BMP characters stay raw UTF-8
    expected = '"q\\"b\\\\s/\\t\\n\\r\\b\\f\\u0001\\u001F\x7f é \\uD83D\\uDE00"'.encode()
    assert converter(schemas_enable=False).from_connect_data(TOPIC, Schema.STRING_SCHEMA, text) == expected
    out = json_conv.from_connect_data(TOPIC, Schema.STRING_SCHEMA, text)
    assert json_conv.to_connect_data(TOPIC, out).value == text


def test_characters_beyond_the_bmp_are_escaped_as_surrogate_pairs_everywhere() -> None:
    conv = converter(schemas_enable=False)
    assert conv.from_connect_data(TOPIC, Schema.STRING_SCHEMA, "🚀x\U0010FFFF") == b'"\\uD83D\\uDE80x\\uDBFF\\uDFFF"'
    assert conv.from_connect_data(TOPIC, None, {"k🚀": "v😀"}) == b'{"k\\uD83D\\uDE80":"v\\uD83D\\uDE00"}'
    assert conv.to_connect_data(TOPIC, b'"\\uD83D\\uDE80"').value == "🚀"


def test_tombstones(json_conv: JsonConverter) -> None:
    assert json_conv.from_connect_data(TOPIC, None, None) is None
    assert json_conv.to_connect_data(TOPIC, None) == SchemaAndValue(None, None)


def test_schemaless_values_in_envelope(json_conv: JsonConverter) -> None:
    value = {"a": [1, 2.5, "x", None, True], "b": {"c": b"\x00\xff"}}
    assert json_conv.from_connect_data(TOPIC, None, value) == envelope(
        "null", '{"a":[1,2.5,"x",null,true],"b":{"c":"AP8="}}'
    )
    assert json_conv.from_connect_data(TOPIC, None, {1: "a"}) == envelope("null", '[[1,"a"]]')


def test_schemaless_read_infers_int64_and_float64() -> None:
    conv = converter(schemas_enable=False)
    assert conv.to_connect_data(TOPIC, b'{"a": 12, "b": 12.24, "c": [1, "2"], "d": null}') == SchemaAndValue(
        None, {"a": 12, "b": 12.24, "c": [1, "2"], "d": None}
    )
    assert conv.to_connect_data(TOPIC, b"") == SchemaAndValue(None, None)


# --- structured types ----------------------------------------------------------------------------


def test_struct_with_nested_struct_array_and_map(json_conv: JsonConverter) -> None:
    inner = SchemaBuilder.struct().name("inner").field("x", Schema.INT32_SCHEMA).build()
    schema = (
        SchemaBuilder.struct()
        .name("com.example.Outer")
        .version(2)
        .doc("an outer record")
        .field("name", Schema.STRING_SCHEMA)
        .field("inner", inner)
        .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
        .field("counts", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build())
        .field("note", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    value = (
        Struct(schema)
        .put("name", "n")
        .put("inner", Struct(inner).put("x", 7))
        .put("tags", ["a", "b"])
        .put("counts", {"k": 1})
    )
    expected_schema = (
        '{"type":"struct","fields":['
        '{"type":"string","optional":false,"field":"name"},'
        '{"type":"struct","fields":[{"type":"int32","optional":false,"field":"x"}],'
        '"optional":false,"name":"inner","field":"inner"},'
        '{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"tags"},'
        '{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int64","optional":false},'
        '"optional":false,"field":"counts"},'
        '{"type":"string","optional":true,"field":"note"}],'
        '"optional":false,"name":"com.example.Outer","version":2,"doc":"an outer record"}'
    )
    expected_payload = '{"name":"n","inner":{"x":7},"tags":["a","b"],"counts":{"k":1},"note":null}'
    out = json_conv.from_connect_data(TOPIC, schema, value)
    assert out == envelope(expected_schema, expected_payload)
    assert json_conv.to_connect_data(TOPIC, out) == SchemaAndValue(schema, value)
    # a second converter reads it through the full parser too
    assert converter().to_connect_data(TOPIC, out) == SchemaAndValue(schema, value)


def test_map_with_non_string_keys_is_array_of_pairs(json_conv: JsonConverter) -> None:
    schema = SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA).build()
    out = json_conv.from_connect_data(TOPIC, schema, {1: 12, 2: 15})
    assert out == envelope(
        '{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"int32","optional":false},'
        '"optional":false}',
        "[[1,12],[2,15]]",
    )
    assert json_conv.to_connect_data(TOPIC, out) == SchemaAndValue(schema, {1: 12, 2: 15})


def test_schema_parameters_and_defaults(json_conv: JsonConverter) -> None:
    schema = SchemaBuilder.int32().optional().name("n").parameter("p", "v").default_value(5).build()
    out = json_conv.from_connect_data(TOPIC, schema, None)
    assert out == envelope(
        '{"type":"int32","optional":true,"name":"n","parameters":{"p":"v"},"default":5}', "5"
    )
    assert converter(replace_null_with_default=False).from_connect_data(TOPIC, schema, None) == envelope(
        '{"type":"int32","optional":true,"name":"n","parameters":{"p":"v"},"default":5}', "null"
    )


def test_replace_null_with_default_for_struct_fields() -> None:
    schema = SchemaBuilder.struct().field("f", SchemaBuilder.string().optional().default_value("d").build()).build()
    value = Struct(schema)
    assert converter(schemas_enable=False).from_connect_data(TOPIC, schema, value) == b'{"f":"d"}'
    plain = converter(schemas_enable=False, replace_null_with_default=False)
    assert plain.from_connect_data(TOPIC, schema, value) == b'{"f":null}'
    incoming = envelope(converter().as_json_schema(schema), '{"f":null}')
    assert converter().to_connect_data(TOPIC, incoming).value.get_without_default("f") == "d"
    assert converter(replace_null_with_default=False).to_connect_data(TOPIC, incoming).value.get_without_default("f") is None


# --- logical types ---------------------------------------------------------------------------------

DECIMAL_SCHEMA_JSON = (
    '{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
    '"parameters":{"scale":"2"}}'
)


@pytest.mark.parametrize(
    ("value", "payload"),
    [("1.56", '"AJw="'), ("-1.28", '"gA=="'), ("0.00", '"AA=="'), ("1.27", '"fw=="'), ("-1.29", '"/38="')],
)
def test_decimal_base64(json_conv: JsonConverter, value: str, payload: str) -> None:
    out = json_conv.from_connect_data(TOPIC, Decimal.schema(2), decimal.Decimal(value))
    assert out == envelope(DECIMAL_SCHEMA_JSON, payload)
    assert json_conv.to_connect_data(TOPIC, out) == SchemaAndValue(Decimal.schema(2), decimal.Decimal(value))


def test_decimal_numeric() -> None:
    conv = converter(decimal_format="numeric")
    out = conv.from_connect_data(TOPIC, Decimal.schema(2), decimal.Decimal("1.56"))
    assert out == envelope(DECIMAL_SCHEMA_JSON, "1.56")
    assert conv.to_connect_data(TOPIC, out).value == decimal.Decimal("1.56")
    high = envelope(DECIMAL_SCHEMA_JSON.replace('"2"', '"17"'), "1.23456789123456789")
    assert conv.to_connect_data(TOPIC, high).value == decimal.Decimal("1.23456789123456789")


def test_date_time_timestamp(json_conv: JsonConverter) -> None:
    date = dt.date(1970, 1, 1) + dt.timedelta(days=10000)
    assert json_conv.from_connect_data(TOPIC, Date.SCHEMA, date) == envelope(
        '{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1}', "10000"
    )
    time = dt.time(4, 0)
    assert json_conv.from_connect_data(TOPIC, Time.SCHEMA, time) == envelope(
        '{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1}', "14400000"
    )
    stamp = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=4_000_000_000)
    out = json_conv.from_connect_data(TOPIC, Timestamp.SCHEMA, stamp)
    assert out == envelope(
        '{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1}',
        "4000000000",
    )
    assert json_conv.to_connect_data(TOPIC, out) == SchemaAndValue(Timestamp.SCHEMA, stamp)


def test_reads_kafka_envelopes_with_whitespace(json_conv: JsonConverter) -> None:
    msg = b'{ "schema": { "type": "struct", "fields": [{ "field": "f1", "type": "boolean" }] }, "payload": { "f1": true } }'
    schema = SchemaBuilder.struct().field("f1", Schema.BOOLEAN_SCHEMA).build()
    assert json_conv.to_connect_data(TOPIC, msg) == SchemaAndValue(schema, Struct(schema).put("f1", True))
    msg = b'{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1, "default": 0 }, "payload": null }'
    assert json_conv.to_connect_data(TOPIC, msg).value == dt.date(1970, 1, 1)


# --- errors and config ----------------------------------------------------------------------------


def test_plain_json_with_schemas_enabled_is_rejected(json_conv: JsonConverter) -> None:
    with pytest.raises(DataException) as info:
        json_conv.to_connect_data(TOPIC, b'{"a": 1}')
    assert str(info.value) == ENVELOPE_REQUIRED_MESSAGE
    assert str(info.value).startswith('JsonConverter with schemas.enable requires "schema" and "payload" fields')
    with pytest.raises(DataException, match="may not contain additional fields"):
        json_conv.to_connect_data(TOPIC, b'{"schema": null, "payload": 1, "x": 2}')


@pytest.mark.parametrize("raw", [b"{not json", b'{"schema":null,"payload":NaN}', b"\xff\xfe"])
def test_invalid_json_is_a_serialization_error(json_conv: JsonConverter, raw: bytes) -> None:
    with pytest.raises(DataException, match="^Converting byte\\[\\] to Kafka Connect data failed due to serialization error: "):
        json_conv.to_connect_data(TOPIC, raw)


def test_payload_of_the_wrong_kind_is_rejected(json_conv: JsonConverter) -> None:
    json_conv.to_connect_data(TOPIC, envelope('{"type":"int32","optional":false}', "1"))
    with pytest.raises(DataException):
        json_conv.to_connect_data(TOPIC, envelope('{"type":"int32","optional":false}', '"x"'))
    with pytest.raises(DataException, match="Invalid null value for required INT32 field"):
        json_conv.to_connect_data(TOPIC, envelope('{"type":"int32","optional":false}', "null"))
    with pytest.raises(DataException, match="out of range"):
        json_conv.to_connect_data(TOPIC, envelope('{"type":"int8","optional":false}', "300"))
    with pytest.raises(DataException, match="Unknown schema type: nope"):
        json_conv.to_connect_data(TOPIC, envelope('{"type":"nope"}', "1"))


def test_write_errors(json_conv: JsonConverter) -> None:
    with pytest.raises(DataException, match="null value for field that is required"):
        json_conv.from_connect_data(TOPIC, Schema.STRING_SCHEMA, None)
    with pytest.raises(DataException, match="Invalid type for INT32"):
        json_conv.from_connect_data(TOPIC, Schema.INT32_SCHEMA, "12")
    with pytest.raises(DataException, match="Mismatching schema"):
        json_conv.from_connect_data(TOPIC, SchemaBuilder.struct().build(), {"a": 1})


def test_bad_config_names_the_key() -> None:
    with pytest.raises(ConfigException, match="decimal.format"):
        converter(decimal_format="HEX")
    assert "schemas.enable" in JsonConverter().config().names()


def test_schema_cache_and_fast_path_follow_schema_changes(json_conv: JsonConverter) -> None:
    a = json_conv.from_connect_data(TOPIC, Schema.STRING_SCHEMA, "x")
    b = json_conv.from_connect_data(TOPIC, Schema.OPTIONAL_STRING_SCHEMA, "y")
    assert json_conv.to_connect_data(TOPIC, a) == SchemaAndValue(Schema.STRING_SCHEMA, "x")
    assert json_conv.to_connect_data(TOPIC, a) == SchemaAndValue(Schema.STRING_SCHEMA, "x")
    assert json_conv.to_connect_data(TOPIC, b) == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, "y")
    assert json_conv.to_connect_data(TOPIC, a) == SchemaAndValue(Schema.STRING_SCHEMA, "x")
    # a known prefix followed by something that is not one JSON value still fails as a whole
    with pytest.raises(DataException):
        json_conv.to_connect_data(TOPIC, a[:-1] + b',"extra":1}')


def test_header_methods_and_version(json_conv: JsonConverter) -> None:
    raw = json_conv.from_connect_header(TOPIC, "h", Schema.INT32_SCHEMA, 5)
    assert json_conv.to_connect_header(TOPIC, "h", raw) == SchemaAndValue(Schema.INT32_SCHEMA, 5)
    assert json_conv.version() == "0.1.0"
