"""TimestampConverter and the SimpleDateFormat patterns it shares with TimestampRouter."""

from __future__ import annotations

import datetime as dt

import pytest

from connect.api import (
    ConfigException,
    ConnectException,
    DataException,
    Date,
    Schema,
    SchemaBuilder,
    SourceRecord,
    Struct,
    Time,
    Timestamp,
)
from plugins.transforms import TimestampConverter
from plugins.transforms._dateformat import JavaDateFormat

UTC = dt.UTC
# 2017-01-02 03:04:05.006 UTC, as in Kafka's own tests.
INSTANT = dt.datetime(2017, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)
MILLIS = 1483326245006
DATE = dt.date(2017, 1, 2)
TIME = dt.time(3, 4, 5, 6000)
STRING_PATTERN = "yyyy MM dd HH mm ss SSS z"
STRING = "2017 01 02 03 04 05 006 UTC"


def record(value, schema=None, key=None, key_schema=None):
    return SourceRecord({"p": 1}, {"o": 1}, "topic", 0, key_schema, key, schema, value, 5)


def converter(variant=TimestampConverter.Value, **props):
    transform = variant()
    transform.configure({k.replace("_", "."): v for k, v in props.items()})
    return transform


@pytest.mark.parametrize(
    ("target", "expected"),
    [("Timestamp", INSTANT), ("Date", DATE), ("Time", TIME), ("unix", MILLIS), ("string", STRING)],
)
@pytest.mark.parametrize("source", [INSTANT, MILLIS, STRING])
def test_schemaless_whole_value(source, target, expected):
    out = converter(target_type=target, format=STRING_PATTERN).apply(record(source))
    assert out.value == expected and out.value_schema is None


@pytest.mark.parametrize(
    ("schema", "value"),
    [(Timestamp.SCHEMA, INSTANT), (Schema.INT64_SCHEMA, MILLIS), (Schema.STRING_SCHEMA, STRING)],
)
@pytest.mark.parametrize(
    ("target", "expected_schema", "expected"),
    [
        ("Timestamp", Timestamp.SCHEMA, INSTANT),
        ("Date", Date.SCHEMA, DATE),
        ("Time", Time.SCHEMA, TIME),
        ("unix", Schema.INT64_SCHEMA, MILLIS),
        ("string", Schema.STRING_SCHEMA, STRING),
    ],
)
def test_schemaful_whole_value(schema, value, target, expected_schema, expected):
    out = converter(target_type=target, format=STRING_PATTERN).apply(record(value, schema))
    assert out.value == expected and out.value_schema == expected_schema


def test_date_and_time_sources():
    assert converter(target_type="unix").apply(record(DATE, Date.SCHEMA)).value == 1483315200000
    assert converter(target_type="unix").apply(record(TIME, Time.SCHEMA)).value == 11045006


def test_optional_schema_stays_optional_and_null_passes():
    out = converter(target_type="Date").apply(record(None, Timestamp.builder().optional().build()))
    assert out.value is None and out.value_schema == Date.builder().optional().build()
    assert converter(target_type="Date").apply(record(None)).value is None


@pytest.mark.parametrize(
    ("precision", "unix", "millis"),
    [("seconds", 1483326245, 1483326245000), ("milliseconds", MILLIS, MILLIS),
     ("microseconds", MILLIS * 1000 + 123, MILLIS), ("nanoseconds", MILLIS * 1_000_000 + 999, MILLIS)],
)
def test_unix_precision(precision, unix, millis):
    to_timestamp = converter(target_type="Timestamp", unix_precision=precision)
    assert to_timestamp.apply(record(unix)).value == Timestamp.to_logical(Timestamp.SCHEMA, millis)
    to_unix = converter(target_type="unix", unix_precision=precision)
    expected = {"seconds": 1483326245, "milliseconds": MILLIS, "microseconds": MILLIS * 1000,
                "nanoseconds": MILLIS * 1_000_000}[precision]
    assert to_unix.apply(record(INSTANT)).value == expected


def test_unix_precision_truncates_toward_zero_before_epoch():
    out = converter(target_type="unix", unix_precision="seconds").apply(record(-1500, Schema.INT64_SCHEMA))
    # -1500 ms read as seconds is -1500 s; converting back keeps it.
    assert out.value == -1500
    to_millis = converter(target_type="Timestamp", unix_precision="microseconds")
    assert to_millis.apply(record(-1999)).value == dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)


def test_schemaful_field():
    schema = (SchemaBuilder.struct().name("s").field("ts", Schema.INT64_SCHEMA)
              .field("other", Schema.STRING_SCHEMA).build())
    transform = converter(target_type="Date", field="ts")
    out = transform.apply(record(Struct(schema).put("ts", MILLIS).put("other", "o"), schema))
    assert out.value_schema.name == "s"
    assert out.value_schema.field("ts").schema == Date.SCHEMA
    assert out.value.get("ts") == DATE and out.value.get("other") == "o"
    assert transform.apply(record(Struct(schema).put("ts", 0).put("other", "o"), schema)).value_schema is out.value_schema
    # A null struct keeps its null value but gets the new schema.
    optional_schema = SchemaBuilder.struct().optional().field("ts", Schema.INT64_SCHEMA).build()
    tombstone = transform.apply(record(None, optional_schema))
    assert tombstone.value is None and tombstone.value_schema.field("ts").schema == Date.SCHEMA


def test_schemaless_field_and_key_variant():
    out = converter(target_type="string", field="ts", format="yyyy-MM-dd").apply(record({"ts": MILLIS, "x": 1}))
    assert out.value == {"ts": "2017-01-02", "x": 1}
    missing = converter(target_type="unix", field="ts").apply(record({"x": 1}))
    assert missing.value == {"x": 1, "ts": None}
    key = converter(TimestampConverter.Key, target_type="Timestamp").apply(record("v", key=MILLIS))
    assert key.key == INSTANT and key.value == "v"
    assert key.source_partition == {"p": 1}


def test_replace_null_with_default():
    schema = (SchemaBuilder.struct().field("ts", Schema.INT64_SCHEMA)
              .field("o", SchemaBuilder.int32().optional().default_value(3).build()).build())
    value = Struct(schema).put("ts", 0)
    assert converter(target_type="Date", field="ts").apply(record(value, schema)).value.get_without_default("o") == 3
    keep = converter(target_type="Date", field="ts", replace_null_with_default="false")
    assert keep.apply(record(value, schema)).value.get_without_default("o") is None


def test_data_errors():
    with pytest.raises(DataException, match="does not match pattern"):
        converter(target_type="unix", format="yyyy-MM-dd").apply(record("not a date"))
    with pytest.raises(DataException, match="does not support float objects as timestamps"):
        converter(target_type="unix").apply(record(1.5))
    with pytest.raises(ConnectException, match="does not correspond to a known timestamp type"):
        converter(target_type="unix").apply(record(True, Schema.BOOLEAN_SCHEMA))
    with pytest.raises(DataException, match="Expected Unix timestamp to be a Long"):
        converter(target_type="Date").apply(record("1", Schema.INT64_SCHEMA))


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({}, "target.type"),
        ({"target.type": "invalid"}, "target.type"),
        ({"target.type": "string"}, "format"),
        ({"target.type": "string", "format": "bad pattern q"}, "format"),
        ({"target.type": "unix", "unix.precision": "minutes"}, "unix.precision"),
    ],
)
def test_config_errors(props, key):
    with pytest.raises(ConfigException) as info:
        TimestampConverter.Value().configure(props)
    assert info.value.name == key


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2017-01-02T03:04:05.006+0000"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2017-01-02T03:04:05.006Z"),
        ("yyyyMMddHHmmssSSS", "20170102030405006"),
        ("EEE, d MMM yyyy hh:mm:ss.SSS a", "Mon, 2 Jan 2017 03:04:05.006 AM"),
        ("EEEE MMMM dd yy kk:mm:ss.SSS G", "Monday January 02 17 03:04:05.006 AD"),
        ("'quoted ''text''' yyyy DDD HH:mm:ss.SSS", "quoted 'text' 2017 002 03:04:05.006"),
    ],
)
def test_java_date_format_round_trip(pattern, text):
    fmt = JavaDateFormat(pattern)
    assert fmt.format(INSTANT) == text
    assert fmt.parse(text) == INSTANT
    assert fmt.format_millis(MILLIS) == text


def test_java_date_format_parsing_quirks():
    fmt = JavaDateFormat("yyyy-MM-dd HH:mm")
    # Offsets in the text shift to UTC, trailing text is ignored and unpadded numbers are accepted.
    assert JavaDateFormat("yyyy-MM-dd HH:mm Z").parse("2017-01-02 05:04 +0200") == dt.datetime(
        2017, 1, 2, 3, 4, tzinfo=UTC)
    assert fmt.parse("2017-1-2 3:04 and more") == dt.datetime(2017, 1, 2, 3, 4, tzinfo=UTC)
    # Lenient, like SimpleDateFormat: 30 February rolls into March.
    assert fmt.parse("2017-02-30 00:00") == dt.datetime(2017, 3, 2, tzinfo=UTC)
    with pytest.raises(ValueError):
        fmt.parse("nope")
    with pytest.raises(ValueError, match="Illegal pattern character 'q'"):
        JavaDateFormat("yyyy q")
    with pytest.raises(ValueError, match="Unterminated quote"):
        JavaDateFormat("yyyy 'oops")
