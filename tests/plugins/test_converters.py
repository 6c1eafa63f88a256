"""String, byte-array, number and boolean converters and SimpleHeaderConverter."""

from __future__ import annotations

import datetime as dt

import pytest

import plugins.converters as converters
from connect.api import (
    ConfigException,
    Converter,
    DataException,
    HeaderConverter,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
)
from plugins.converters import (
    BooleanConverter,
    ByteArrayConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    JsonConverter,
    LongConverter,
    ShortConverter,
    SimpleHeaderConverter,
    StringConverter,
)

TOPIC = "topic"


def string_converter(encoding: str | None = None) -> StringConverter:
    conv = StringConverter()
    conv.configure({"converter.encoding": encoding} if encoding else {}, False)
    return conv


def test_package_exposes_kafka_named_plugins_with_version() -> None:
    names = set(converters.__all__)
    assert {"JsonConverter", "StringConverter", "ByteArrayConverter", "SimpleHeaderConverter"} <= names
    for name in converters.__all__:
        cls = getattr(converters, name)
        assert issubclass(cls, Converter | HeaderConverter)
        assert cls().version() == "0.1.0"


def test_string_converter_utf8() -> None:
    conv = string_converter()
    assert conv.from_connect_data(TOPIC, Schema.STRING_SCHEMA, "héllo") == "héllo".encode()
    assert conv.to_connect_data(TOPIC, "héllo".encode()) == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, "héllo")
    assert conv.from_connect_data(TOPIC, None, None) is None
    assert conv.to_connect_data(TOPIC, None) == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
    # other values go through their Java text form
    assert conv.from_connect_data(TOPIC, None, True) == b"true"
    assert conv.from_connect_data(TOPIC, None, 1e10) == b"1.0E10"
    assert conv.from_connect_data(TOPIC, None, 12) == b"12"
    # undecodable bytes read as U+FFFD, as Java's String constructor does
    assert conv.to_connect_data(TOPIC, b"a\xffb").value == "a\ufffdb"


def test_string_converter_other_encodings() -> None:
    latin = string_converter("ISO-8859-1")
    assert latin.from_connect_data(TOPIC, None, "é") == b"\xe9"
    assert latin.from_connect_data(TOPIC, None, "€") == b"?"  # unmappable, as Java writes it
    assert latin.to_connect_data(TOPIC, b"\xe9").value == "é"
    utf16 = string_converter("UTF-16")
    assert utf16.from_connect_data(TOPIC, None, "A") == b"\xfe\xff\x00A"  # Java: big-endian with a BOM
    assert utf16.to_connect_data(TOPIC, b"\xff\xfeA\x00").value == "A"
    assert utf16.to_connect_data(TOPIC, b"\x00A").value == "A"
    with pytest.raises(ConfigException, match="converter.encoding"):
        string_converter("no-such-charset")


def test_byte_array_converter() -> None:
    conv = ByteArrayConverter()
    conv.configure({}, True)
    assert conv.from_connect_data(TOPIC, Schema.BYTES_SCHEMA, b"\x00\x01") == b"\x00\x01"
    assert conv.from_connect_data(TOPIC, None, bytearray(b"ab")) == b"ab"
    assert conv.from_connect_data(TOPIC, None, None) is None
    assert conv.to_connect_data(TOPIC, b"xy") == SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, b"xy")
    with pytest.raises(DataException, match="Invalid schema type for ByteArrayConverter: STRING"):
        conv.from_connect_data(TOPIC, Schema.STRING_SCHEMA, b"x")
    with pytest.raises(DataException, match="not compatible with objects of type str"):
        conv.from_connect_data(TOPIC, None, "x")


@pytest.mark.parametrize(
    ("cls", "value", "raw", "schema"),
    [
        (DoubleConverter, 1.5, b"\x3f\xf8\x00\x00\x00\x00\x00\x00", Schema.OPTIONAL_FLOAT64_SCHEMA),
        (FloatConverter, 1.5, b"\x3f\xc0\x00\x00", Schema.OPTIONAL_FLOAT32_SCHEMA),
        (IntegerConverter, -2, b"\xff\xff\xff\xfe", Schema.OPTIONAL_INT32_SCHEMA),
        (LongConverter, 258, b"\x00\x00\x00\x00\x00\x00\x01\x02", Schema.OPTIONAL_INT64_SCHEMA),
        (ShortConverter, 258, b"\x01\x02", Schema.OPTIONAL_INT16_SCHEMA),
        (BooleanConverter, True, b"\x01", Schema.OPTIONAL_BOOLEAN_SCHEMA),
        (BooleanConverter, False, b"\x00", Schema.OPTIONAL_BOOLEAN_SCHEMA),
    ],
)
def test_number_converters_are_big_endian(cls: type, value: object, raw: bytes, schema: Schema) -> None:
    conv = cls()
    conv.configure({}, False)
    assert conv.from_connect_data(TOPIC, None, value) == raw
    assert conv.to_connect_data(TOPIC, raw) == SchemaAndValue(schema, value)
    assert conv.from_connect_data(TOPIC, None, None) is None
    assert conv.to_connect_data(TOPIC, None) == SchemaAndValue(schema, None)
    assert conv.to_connect_header(TOPIC, "h", conv.from_connect_header(TOPIC, "h", None, value)).value == value


def test_number_converter_errors() -> None:
    ints = IntegerConverter()
    with pytest.raises(DataException, match="Failed to serialize to integer"):
        ints.from_connect_data(TOPIC, None, 2**31)
    with pytest.raises(DataException, match="Failed to serialize to integer"):
        ints.from_connect_data(TOPIC, None, "1")
    with pytest.raises(DataException, match="Size of data received by IntegerDeserializer is not 4"):
        ints.to_connect_data(TOPIC, b"\x00\x01")
    assert FloatConverter().from_connect_data(TOPIC, None, 1e300) == b"\x7f\x80\x00\x00"  # infinity, as Java
    booleans = BooleanConverter()
    with pytest.raises(DataException, match="Invalid schema type for BooleanConverter"):
        booleans.from_connect_data(TOPIC, Schema.INT8_SCHEMA, True)
    with pytest.raises(DataException, match="Unexpected byte"):
        booleans.to_connect_data(TOPIC, b"\x02")


def test_converter_type_config() -> None:
    assert "converter.type" in IntegerConverter().config()
    with pytest.raises(ConfigException, match="converter.type"):
        StringConverter().configure({"converter.type": "sideways"})
    StringConverter().configure({"converter.type": "header"})


def test_simple_header_converter_round_trips() -> None:
    conv = SimpleHeaderConverter()
    conv.configure({})
    cases = [
        (Schema.STRING_SCHEMA, "plain text", b"plain text", Schema.STRING_SCHEMA),
        (Schema.INT32_SCHEMA, 42, b"42", Schema.INT8_SCHEMA),
        (Schema.BOOLEAN_SCHEMA, True, b"true", Schema.BOOLEAN_SCHEMA),
        (Schema.FLOAT64_SCHEMA, 1e10, b"1.0E10", Schema.INT64_SCHEMA),  # a whole number reads as one
        (Schema.FLOAT64_SCHEMA, 2.5, b"2.5", Schema.FLOAT32_SCHEMA),
        (SchemaBuilder.array(Schema.INT8_SCHEMA).build(), [1, 2], b"[1,2]", SchemaBuilder.array(Schema.INT8_SCHEMA).build()),
        (None, dt.date(2020, 1, 2), b"2020-01-02", None),
    ]
    for schema, value, raw, read_schema in cases:
        assert conv.from_connect_header(TOPIC, "h", schema, value) == raw
        parsed = conv.to_connect_header(TOPIC, "h", raw)
        assert parsed.value == value
        if read_schema is not None:
            assert parsed.schema == read_schema
    assert conv.from_connect_header(TOPIC, "h", None, None) is None
    assert conv.to_connect_header(TOPIC, "h", None) == SchemaAndValue(None, None)
    assert conv.to_connect_header(TOPIC, "h", b"null") == SchemaAndValue(None, None)
    assert conv.to_connect_header(TOPIC, "h", b"") == SchemaAndValue(Schema.STRING_SCHEMA, "")
    assert conv.version() == "0.1.0"


# --- bulk conversion: the same result as one record at a time ------------------------------------------------
@pytest.mark.parametrize("encoding", ["UTF-8", "UTF-16"])
def test_string_converter_batches_match_single_conversions(encoding: str) -> None:
    conv = StringConverter()
    conv.configure({"converter.encoding": encoding}, False)
    texts = ["plain", None, "ü-€", 7, True, "lone \udc80 surrogate", ""]
    assert conv.from_connect_batch("t", None, texts) == [conv.from_connect_data("t", None, v) for v in texts]
    assert conv.from_connect_batch("t", None, ["a", "b"]) == [conv.from_connect_data("t", None, v) for v in "ab"]
    raw = [b"plain", None, "ü".encode(), b"\xff\xfe bad", b""]
    schemas, values = conv.to_connect_batch("t", raw)
    singles = [conv.to_connect_data("t", v) for v in raw]
    assert schemas == [s.schema for s in singles]
    assert values == [s.value for s in singles]
    assert conv.to_connect_batch("t", [None, None]) == ([Schema.OPTIONAL_STRING_SCHEMA] * 2, [None, None])


def test_bytearray_converter_batches_match_single_conversions() -> None:
    conv = ByteArrayConverter()
    conv.configure({}, False)
    data = [b"x", None, bytearray(b"y"), memoryview(b"z")]
    assert conv.from_connect_batch("t", None, data) == [b"x", None, b"y", b"z"]
    assert conv.to_connect_batch("t", [b"x", None]) == ([Schema.OPTIONAL_BYTES_SCHEMA] * 2, [b"x", None])
    with pytest.raises(DataException):
        conv.from_connect_batch("t", Schema.STRING_SCHEMA, [b"x"])
    with pytest.raises(DataException):
        conv.from_connect_batch("t", None, ["text"])


def test_default_batch_methods_convert_one_by_one() -> None:
    conv = JsonConverter()
    conv.configure({"schemas.enable": "false"}, False)
    assert conv.from_connect_batch("t", None, [{"a": 1}, None]) == [conv.from_connect_data("t", None, {"a": 1}), None]
    schemas, values = conv.to_connect_batch("t", [b'{"a":1}', None])
    assert values == [{"a": 1}, None] and schemas == [None, None]
    with pytest.raises(DataException):
        conv.to_connect_batch("t", [b"{not json"])
