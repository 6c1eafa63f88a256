"""Kafka's Values (connect.api.values, value_parser, value_text, schema_inference) and Java number formatting."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from connect.api import DataException, Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from connect.api.java_numbers import decimal_to_string, double_to_string, float_to_string, to_float32
from connect.api.schema_inference import infer_schema
from connect.api.value_text import convert_to_string
from connect.api.values import (
    Values,
    convert_to_boolean,
    convert_to_byte,
    convert_to_date,
    convert_to_decimal,
    convert_to_double,
    convert_to_integer,
    convert_to_list,
    convert_to_long,
    convert_to_map,
    convert_to_timestamp,
    parse_string,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (100.0, "100.0"),
        (-12.5, "-12.5"),
        (1234567.0, "1234567.0"),
        (1e7, "1.0E7"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (1.5e-5, "1.5E-5"),
        (123456789.0, "1.23456789E8"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (5e-324, "4.9E-324"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_double_to_string_is_javas(value: float, expected: str) -> None:
    assert double_to_string(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.1, "0.1"),
        (12.34, "12.34"),
        (1e10, "1.0E10"),
        (16777216.0, "1.6777216E7"),
        (3.4028235e38, "3.4028235E38"),
        (1.4e-45, "1.4E-45"),
        (1e39, "Infinity"),
    ],
)
def test_float_to_string_is_javas(value: float, expected: str) -> None:
    assert float_to_string(value) == expected


def test_decimal_to_string_is_big_decimals() -> None:
    assert decimal_to_string(decimal.Decimal("1.50")) == "1.50"
    assert decimal_to_string(decimal.Decimal("-0.00")) == "0.00"
    assert decimal_to_string(decimal.Decimal("1E+3")) == "1E+3"
    assert decimal_to_string(decimal.Decimal("0.0000001")) == "1E-7"


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("true", Schema.BOOLEAN_SCHEMA, True),
        ("false", Schema.BOOLEAN_SCHEMA, False),
        ("42", Schema.INT8_SCHEMA, 42),
        (" -5 ", Schema.INT8_SCHEMA, -5),
        ("+5", Schema.INT8_SCHEMA, 5),
        ("10.0", Schema.INT8_SCHEMA, 10),
        ("300", Schema.INT16_SCHEMA, 300),
        ("70000", Schema.INT32_SCHEMA, 70000),
        ("5000000000", Schema.INT64_SCHEMA, 5000000000),
        ("1.5", Schema.FLOAT32_SCHEMA, 1.5),
        ("0.1", Schema.FLOAT32_SCHEMA, to_float32(0.1)),
        ("3.4e39", Schema.FLOAT64_SCHEMA, 3.4e39),
        ("9223372036854775808", Decimal.schema(0), decimal.Decimal("9223372036854775808")),
        ("2020-01-02", Date.SCHEMA, dt.date(2020, 1, 2)),
        ("12:34:56.789Z", Time.SCHEMA, dt.time(12, 34, 56, 789000)),
        ("2020-01-02T12:34:56.789Z", Timestamp.SCHEMA, dt.datetime(2020, 1, 2, 12, 34, 56, 789000, tzinfo=dt.UTC)),
        ("hello world", Schema.STRING_SCHEMA, "hello world"),
        ("true}", Schema.STRING_SCHEMA, "true}"),
        ("12 apples", Schema.STRING_SCHEMA, "12 apples"),
        ("2020-13-45", Schema.STRING_SCHEMA, "2020-13-45"),
        (".5", Schema.STRING_SCHEMA, ".5"),
        ("", Schema.STRING_SCHEMA, ""),
        ("   ", Schema.STRING_SCHEMA, "   "),
        # an array with a null cannot be aligned to a required element schema: Kafka falls back to text
        ("[1,null]", Schema.STRING_SCHEMA, "[1,null]"),
    ],
)
def test_parse_string_infers_like_kafka(text: str, schema: Schema, value: object) -> None:
    parsed = parse_string(text)
    assert parsed is not None
    assert parsed.schema == schema
    assert parsed.value == value
    assert type(parsed.value) is type(value)


def test_parse_null() -> None:
    assert parse_string("null") is None
    assert parse_string(None) == (None, None)


def test_parse_arrays_widen_numbers() -> None:
    parsed = parse_string("[1, 300, 2]")
    assert parsed is not None
    assert parsed.schema == SchemaBuilder.array(Schema.INT16_SCHEMA).build()
    assert parsed.value == [1, 300, 2]
    mixed = parse_string('[1,"a"]')
    assert mixed is not None and mixed.schema.type is Type.ARRAY and mixed.schema.value_schema is None
    assert mixed.value == [1, "a"]
    assert parse_string('["a b", "c"]').value == ["a b", "c"]  # type: ignore[union-attr]
    stamps = parse_string("[2020-01-02T12:34:56.789Z]")
    assert stamps is not None and stamps.schema.value_schema == Timestamp.SCHEMA


def test_parse_maps() -> None:
    parsed = parse_string('{"a":1,"b":2}')
    assert parsed is not None
    assert parsed.schema == SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT8_SCHEMA).build()
    assert parsed.value == {"a": 1, "b": 2}
    nested = parse_string('{1:[2,3]}')
    assert nested is not None and nested.value == {1: [2, 3]}
    assert parse_string("{").value == "{"  # type: ignore[union-attr]


def test_convert_to_string_is_kafkas() -> None:
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.STRING_SCHEMA).build()
    assert convert_to_string(schema, Struct(schema).put("a", 1).put("b", "x")) == '{"a":1,"b":"x"}'
    assert convert_to_string(None, [1, 'q"\\', None, True]) == '[1,"q\\"\\\\",null,true]'
    assert convert_to_string(None, {"k": 1.0}) == '{"k":1.0}'
    assert convert_to_string(None, 'plain "text"') == 'plain "text"'
    assert convert_to_string(None, b"\x01\x02") == "AQI="
    assert convert_to_string(None, 1e10) == "1.0E10"
    assert convert_to_string(Schema.FLOAT32_SCHEMA, 0.1) == "0.1"
    assert convert_to_string(None, dt.date(2020, 1, 2)) == "2020-01-02"
    assert convert_to_string(None, dt.time(1, 2, 3, 4000)) == "01:02:03.004Z"
    assert convert_to_string(None, dt.datetime(2020, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC)) == "2020-01-02T03:04:05.006Z"
    assert convert_to_string(None, None) is None
    with pytest.raises(DataException, match="unexpected value type"):
        convert_to_string(None, object())


@pytest.mark.parametrize(
    "value",
    [42, 300, -70000, True, "text", [1, 2, 3], {"a": 1}, dt.date(2021, 5, 6), dt.time(23, 59, 59, 999000),
     dt.datetime(2021, 5, 6, 7, 8, 9, 10000, tzinfo=dt.UTC), 2.5],
)
def test_string_round_trip(value: object) -> None:
    parsed = parse_string(convert_to_string(None, value))
    assert parsed is not None and parsed.value == value


def test_coercions() -> None:
    assert convert_to_boolean(None, "true") is True
    assert convert_to_boolean(None, 0) is False
    assert convert_to_byte(None, 300) == 44  # Java's narrowing cast
    assert convert_to_integer(None, "12") == 12
    assert convert_to_long(None, 3.9) == 3
    assert convert_to_double(None, "2.5") == 2.5
    assert convert_to_list(None, "[1,2]") == [1, 2]
    assert convert_to_map(None, '{"a":"b"}') == {"a": "b"}
    assert convert_to_date(None, "2020-01-02") == dt.date(2020, 1, 2)
    assert convert_to_timestamp(Date.SCHEMA, dt.date(1970, 1, 2)) == dt.datetime(1970, 1, 2, tzinfo=dt.UTC)
    assert convert_to_decimal(None, 1.5, 1) == decimal.Decimal("1.5")
    with pytest.raises(DataException, match="Unable to convert"):
        convert_to_integer(None, "abc")
    with pytest.raises(DataException, match="null value"):
        convert_to_list(None, None)
    assert Values.parse_string("1") == parse_string("1")


def test_infer_schema() -> None:
    assert infer_schema("x") == Schema.STRING_SCHEMA
    assert infer_schema(True) == Schema.BOOLEAN_SCHEMA
    assert infer_schema(5) == Schema.INT64_SCHEMA
    assert infer_schema([1, None]) == SchemaBuilder.array(SchemaBuilder.int64().optional().build()).build()
    assert infer_schema([1, "a"]) is None
    assert infer_schema({"a": 1.5}) == SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.FLOAT64_SCHEMA).build()
    assert infer_schema([]) is None
