"""ReplaceField: exclude, include, renames and the deprecated blacklist/whitelist."""

from __future__ import annotations

import pytest

from connect.api import (
    ConfigException,
    DataException,
    Schema,
    SchemaBuilder,
    SinkRecord,
    SourceRecord,
    Struct,
)
from plugins.transforms import ReplaceField


def record(value, schema=None, key=None, key_schema=None):
    return SinkRecord("topic", 0, key_schema, key, schema, value, 0)


def configured(cls, props):
    transform = cls()
    transform.configure(props)
    return transform


def test_schemaless_exclude_include_rename():
    transform = configured(ReplaceField.Value, {"exclude": "dont", "renames": "abc:xyz,foo:bar"})
    value = {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}
    out = transform.apply(record(value))
    assert out.value == {"xyz": 42, "bar": True, "etc": "etc"}
    assert value == {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}

    include = configured(ReplaceField.Value, {"include": "abc,foo", "renames": "abc:xyz"})
    assert include.apply(record(value)).value == {"xyz": 42, "foo": True}


def test_exclude_takes_precedence_over_include():
    transform = configured(ReplaceField.Value, {"include": "a,b", "exclude": "b"})
    assert transform.apply(record({"a": 1, "b": 2, "c": 3})).value == {"a": 1}


def test_schemaful_keeps_schema_metadata_and_field_order():
    schema = (SchemaBuilder.struct().name("n").version(3).field("dont", Schema.STRING_SCHEMA)
              .field("abc", Schema.INT32_SCHEMA).field("foo", Schema.BOOLEAN_SCHEMA)
              .field("etc", Schema.STRING_SCHEMA).build())
    value = Struct(schema).put("dont", "whatever").put("abc", 42).put("foo", True).put("etc", "etc")
    transform = configured(ReplaceField.Value, {"exclude": "dont", "renames": "abc:xyz,foo:bar"})
    out = transform.apply(record(value, schema))
    assert [f.name for f in out.value_schema.fields()] == ["xyz", "bar", "etc"]
    assert (out.value_schema.name, out.value_schema.version) == ("n", 3)
    assert (out.value.get("xyz"), out.value.get("bar"), out.value.get("etc")) == (42, True, "etc")
    assert transform.apply(record(value, schema)).value_schema is out.value_schema


def test_key_variant_and_source_record_fields_survive():
    transform = configured(ReplaceField.Key, {"exclude": "b"})
    rec = SourceRecord({"p": 1}, {"o": 2}, "t", None, None, {"a": 1, "b": 2}, None, "v", 5)
    out = transform.apply(rec)
    assert out.key == {"a": 1} and out.value == "v"
    assert (out.source_partition, out.source_offset, out.timestamp) == ({"p": 1}, {"o": 2}, 5)


def test_tombstone_passes_through():
    transform = configured(ReplaceField.Value, {"exclude": "a"})
    rec = record(None, Schema.OPTIONAL_STRING_SCHEMA)
    assert transform.apply(rec) is rec


def test_deprecated_blacklist_and_whitelist():
    transform = configured(ReplaceField.Value, {"blacklist": "a", "whitelist": "a,b"})
    assert transform.apply(record({"a": 1, "b": 2, "c": 3})).value == {"b": 2}
    # The current name wins when both are set.
    both = configured(ReplaceField.Value, {"exclude": "b", "blacklist": "a"})
    assert both.apply(record({"a": 1, "b": 2})).value == {"a": 1}


def test_replace_null_with_default():
    schema = SchemaBuilder.struct().field("x", SchemaBuilder.string().optional().default_value("d").build()).build()
    value = Struct(schema)
    assert configured(ReplaceField.Value, {}).apply(record(value, schema)).value.get_without_default("x") == "d"
    keep = configured(ReplaceField.Value, {"replace.null.with.default": "false"})
    assert keep.apply(record(value, schema)).value.get_without_default("x") is None


@pytest.mark.parametrize("renames", ["foo", "foo:bar:baz", "foo:"])
def test_bad_rename_mapping(renames):
    with pytest.raises(ConfigException, match="Invalid rename mapping") as info:
        ReplaceField.Value().configure({"renames": renames})
    assert info.value.name == "renames"


def test_non_map_value():
    with pytest.raises(DataException, match="field replacement"):
        configured(ReplaceField.Value, {}).apply(record(12))


def test_a_renamed_map_that_java_iterates_as_a_plain_dicts_is_made_a_plain_dict():
    from connect.api.java_text import JavaMap, java_to_string

    # issue #37's records: 7 keys, so Java's new HashMap<>(7) grows to the 16 buckets of a new HashMap<>():
    # a plain dict holding the keys in that map's order is the same map, and costs less to make and print
    value = {"id": 1, "user": "u", "amount": 0.5, "country": "DE", "ts": 17, "ok": True, "source": "bench"}
    renames = configured(ReplaceField.Value, {"renames": "amount:value,ts:event_time"})
    # 6 of 7 kept: Java's table has 8 buckets, a plain dict's 16, so the map keeps its layout
    excludes = configured(ReplaceField.Value, {"exclude": "ok"})
    for transform, kind in ((renames, dict), (excludes, JavaMap)):
        records = [record(dict(value)) for _ in range(5)]
        made = [transform.apply(records[0]).value, *(r.value for r in transform.apply_batch(records))]
        assert [type(m) for m in made] == [kind] * 6
        assert len({java_to_string(m) for m in made}) == 1
    # as Kafka Connect's FileStreamSink prints it (the text Headrace printed with a JavaMap before), and held
    # in that order, in which Kafka's JsonConverter writes the map
    renamed = renames.apply(record(value)).value
    assert java_to_string(renamed) == "{country=DE, id=1, source=bench, ok=true, value=0.5, user=u, event_time=17}"
    assert list(renamed) == ["country", "id", "source", "ok", "value", "user", "event_time"]
