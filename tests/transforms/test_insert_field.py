"""InsertField against Kafka Connect's documented behaviour."""

from __future__ import annotations

import datetime as dt

import pytest

from connect.api import (
    ConfigException,
    ConnectHeaders,
    DataException,
    Schema,
    SchemaBuilder,
    SinkRecord,
    SourceRecord,
    Struct,
    Timestamp,
    TimestampType,
)
from plugins.transforms import InsertField

SCHEMA = SchemaBuilder.struct().name("name").version(1).doc("doc").field("magic", Schema.INT64_SCHEMA).build()


def source(value, schema=None, key=None, key_schema=None, timestamp=1_700_000_000_000):
    return SourceRecord({"file": "a"}, {"pos": 7}, "test", 0, key_schema, key, schema, value, timestamp,
                        ConnectHeaders().add_string("h", "v"))


def sink(value, schema=None, timestamp=1_700_000_000_000):
    return SinkRecord("test", 3, None, None, schema, value, 42, timestamp, TimestampType.CREATE_TIME)


def configured(cls, **props):
    transform = cls()
    transform.configure({k.replace("_", "."): v for k, v in props.items()})
    return transform


def test_config_copied_from_kafka_docs_configures_and_applies():
    properties = """
        transforms=InsertSource
        transforms.InsertSource.type=org.apache.kafka.connect.transforms.InsertField$Value
        transforms.InsertSource.static.field=data_source
        transforms.InsertSource.static.value=test-file-source
    """
    props = dict(line.strip().split("=", 1) for line in properties.strip().splitlines())
    alias = props["transforms"]
    prefix = f"transforms.{alias}."
    sub = {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}
    class_name = sub.pop("type")
    # The registry resolves Kafka's name by its simple name with '$' read as '.'.
    import plugins.transforms

    cls = plugins.transforms
    for part in class_name.rsplit(".", 1)[1].split("$"):
        cls = getattr(cls, part)
    assert cls is InsertField.Value

    transform = cls()
    transform.configure(sub)
    record = source({"line": "hello"})
    out = transform.apply(record)
    assert out.value == {"line": "hello", "data_source": "test-file-source"}
    assert record.value == {"line": "hello"}  # the input is left alone

    schemaful = transform.apply(source(Struct(SchemaBuilder.struct().field("line", Schema.STRING_SCHEMA).build())
                                       .put("line", "hello"),
                                       SchemaBuilder.struct().field("line", Schema.STRING_SCHEMA).build()))
    assert schemaful.value.get("data_source") == "test-file-source"
    assert schemaful.value_schema.field("data_source").schema == Schema.OPTIONAL_STRING_SCHEMA


def test_schemaful_insert_all_metadata_into_sink_record():
    transform = configured(InsertField.Value, topic_field="topic_field!", partition_field="partition_field",
                           offset_field="offset_field!", timestamp_field="timestamp_field?",
                           static_field="instance_id", static_value="my-instance-id")
    record = sink(Struct(SCHEMA).put("magic", 42), SCHEMA)
    out = transform.apply(record)

    schema = out.value_schema
    assert (schema.name, schema.version, schema.doc) == ("name", 1, "doc")
    assert schema.field("magic").schema == Schema.INT64_SCHEMA
    assert schema.field("topic_field").schema == Schema.STRING_SCHEMA
    assert schema.field("partition_field").schema == Schema.OPTIONAL_INT32_SCHEMA
    assert schema.field("offset_field").schema == Schema.INT64_SCHEMA
    assert schema.field("timestamp_field").schema == Timestamp.builder().optional().build()
    assert schema.field("instance_id").schema == Schema.OPTIONAL_STRING_SCHEMA
    value = out.value
    assert value.get("magic") == 42
    assert value.get("topic_field") == "test"
    assert value.get("partition_field") == 3
    assert value.get("offset_field") == 42
    assert value.get("timestamp_field") == dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC)
    assert value.get("instance_id") == "my-instance-id"
    assert isinstance(out, SinkRecord) and out.kafka_offset == 42 and out.original_topic == "test"

    # The derived schema is cached per input schema.
    assert transform.apply(record).value_schema is schema


def test_schemaless_insert_uses_raw_timestamp_and_keeps_record_type():
    transform = configured(InsertField.Value, topic_field="topic_field!", partition_field="partition_field",
                           timestamp_field="timestamp_field?", static_field="instance_id",
                           static_value="my-instance-id")
    record = source({"magic": 42})
    out = transform.apply(record)
    assert out.value == {"magic": 42, "topic_field": "test", "partition_field": 0,
                         "timestamp_field": 1_700_000_000_000, "instance_id": "my-instance-id"}
    assert isinstance(out, SourceRecord)
    assert out.source_partition == {"file": "a"} and out.source_offset == {"pos": 7}
    assert list(out.headers) == list(record.headers)


def test_missing_partition_and_timestamp_are_skipped():
    transform = configured(InsertField.Value, partition_field="p", timestamp_field="ts")
    record = SourceRecord(None, None, "t", None, None, None, None, {"a": 1}, None)
    assert transform.apply(record).value == {"a": 1}


def test_offset_needs_a_sink_record():
    transform = configured(InsertField.Value, offset_field="offset")
    with pytest.raises(DataException, match=r"Only SinkRecord supported for \[field insertion\]"):
        transform.apply(source({"a": 1}))
    assert transform.apply(sink({"a": 1})).value == {"a": 1, "offset": 42}


def test_tombstones_pass_through_unchanged():
    transform = configured(InsertField.Value, topic_field="topic")
    for record in (source(None), source(None, SCHEMA)):
        assert transform.apply(record) is record


def test_key_variant_operates_on_the_key():
    transform = configured(InsertField.Key, topic_field="topic")
    record = source({"v": 1}, key={"k": 1})
    out = transform.apply(record)
    assert out.key == {"k": 1, "topic": "test"}
    assert out.value == {"v": 1}


def test_wrong_value_types_raise_data_exceptions():
    transform = configured(InsertField.Value, topic_field="topic")
    with pytest.raises(DataException, match=r"Only Map objects supported in absence of schema for \[field insertion\], found: str"):
        transform.apply(source("text"))
    with pytest.raises(DataException, match=r"Only Struct objects supported for \[field insertion\], found: str"):
        transform.apply(source("text", Schema.STRING_SCHEMA))


def test_replace_null_with_default():
    schema = SchemaBuilder.struct().field("opt", SchemaBuilder.int32().optional().default_value(7).build()).build()
    record = source(Struct(schema), schema)
    assert configured(InsertField.Value, topic_field="t").apply(record).value.get_without_default("opt") == 7
    keep_null = configured(InsertField.Value, topic_field="t", replace_null_with_default="false")
    assert keep_null.apply(record).value.get_without_default("opt") is None


def test_config_errors():
    with pytest.raises(ConfigException, match="No field insertion configured"):
        InsertField.Value().configure({})
    with pytest.raises(ConfigException) as info:
        InsertField.Value().configure({"static.field": "s"})
    assert info.value.name == "static.value"
    with pytest.raises(ConfigException) as info:
        InsertField.Value().configure({"topic.field": "t", "replace.null.with.default": "maybe"})
    assert info.value.name == "replace.null.with.default"


def test_plugin_surface():
    assert InsertField.Value.__qualname__ == "InsertField.Value"
    assert InsertField.Key.__qualname__ == "InsertField.Key"
    transform = InsertField.Value()
    assert transform.version() == "0.1.0"
    assert {"topic.field", "partition.field", "offset.field", "timestamp.field", "static.field",
            "static.value", "replace.null.with.default"} <= set(transform.config().names())
