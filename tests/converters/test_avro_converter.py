"""AvroConverter against a registry served over HTTP: every Connect type and logical type round-trips,
the batch paths equal the one-record paths, and bad bytes fail with a clear DataException."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct

import httpx
import pytest

from connect.api import ConnectHeaders, DataException, Schema, SchemaBuilder, Struct
from connect.api.logical_types import Date, Decimal, Time, Timestamp
from connect.runtime.plugins import PluginRegistry
from plugins.converters.avro import AvroConverter
from tests.schema_registry.registry_support import ServedRegistry


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory):
    served = ServedRegistry(tmp_path_factory.mktemp("registry") / "log")
    yield served
    served.close()


def converter(registry: ServedRegistry, is_key: bool = False, **extra: object) -> AvroConverter:
    conv = AvroConverter()
    conv.configure({"schema.registry.url": registry.url, **extra}, is_key)
    return conv


ADDRESS = (SchemaBuilder.struct().name("com.example.Address").doc("where")
           .field("street", Schema.STRING_SCHEMA)
           .field("zip", SchemaBuilder.int32().optional().build()).build())
EVERYTHING = (
    SchemaBuilder.struct().name("com.example.Everything").version(3).doc("all the types")
    .field("i8", Schema.INT8_SCHEMA).field("i16", Schema.INT16_SCHEMA).field("i32", Schema.INT32_SCHEMA)
    .field("i64", Schema.INT64_SCHEMA).field("f32", Schema.FLOAT32_SCHEMA).field("f64", Schema.FLOAT64_SCHEMA)
    .field("flag", Schema.BOOLEAN_SCHEMA).field("text", Schema.STRING_SCHEMA).field("raw", Schema.BYTES_SCHEMA)
    .field("price", Decimal.builder(2).parameter("connect.decimal.precision", "12").build())
    .field("big", Decimal.schema(0))
    .field("day", Date.SCHEMA).field("clock", Time.SCHEMA).field("at", Timestamp.SCHEMA)
    .field("maybe", Schema.OPTIONAL_STRING_SCHEMA)
    .field("maybe_set", Schema.OPTIONAL_INT64_SCHEMA)
    .field("with_default", SchemaBuilder.string().default_value("dflt").build())
    .field("optional_default", SchemaBuilder.int32().optional().default_value(7).build())
    .field("home", ADDRESS)
    .field("work", SchemaBuilder.struct().name("com.example.Office").optional()
           .field("floor", Schema.INT16_SCHEMA).build())
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
    .field("addresses", SchemaBuilder.array(ADDRESS).build())
    .field("counts", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build())
    .field("by_id", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build())
    .field("when_by_day", SchemaBuilder.map(Date.SCHEMA, Timestamp.SCHEMA).build())
    .field("optional_list", SchemaBuilder.array(Schema.OPTIONAL_FLOAT64_SCHEMA).optional().build())
    .field("anonymous", SchemaBuilder.struct().field("a", Schema.BOOLEAN_SCHEMA).build())
    .build()
)


def everything() -> Struct:
    home = Struct(ADDRESS).put("street", "Main St").put("zip", 12345)
    return (Struct(EVERYTHING).put("i8", -128).put("i16", 32000).put("i32", -2**31).put("i64", 2**63 - 1)
            .put("f32", 1.5).put("f64", 2.718281828).put("flag", True).put("text", "héllo ☃").put("raw", b"\x00\xff")
            .put("price", decimal.Decimal("1234.50")).put("big", decimal.Decimal("-98765432109876543210"))
            .put("day", dt.date(2024, 2, 29)).put("clock", dt.time(23, 59, 59, 999000))
            .put("at", dt.datetime(2026, 11, 25, 3, 50, 1, 123000, tzinfo=dt.UTC))
            .put("maybe", None).put("maybe_set", 42).put("with_default", "given").put("optional_default", None)
            .put("home", home)
            .put("work", Struct(EVERYTHING.field("work").schema).put("floor", 3))
            .put("tags", ["a", "b"]).put("addresses", [home, Struct(ADDRESS).put("street", "Side St")])
            .put("counts", {"x": 1, "y": -2}).put("by_id", {1: "one", -5: "minus five"})
            .put("when_by_day", {dt.date(2020, 1, 1): dt.datetime(2020, 1, 1, 12, tzinfo=dt.UTC)})
            .put("optional_list", [1.0, None, 3.25])
            .put("anonymous", Struct(EVERYTHING.field("anonymous").schema).put("a", False)))


def test_every_connect_type_round_trips(registry: ServedRegistry) -> None:
    conv = converter(registry)
    value = everything()
    data = conv.from_connect_data("everything", EVERYTHING, value)
    assert data is not None and data[0] == 0
    back = converter(registry).to_connect_data("everything", data)  # a fresh converter: schema from the registry
    assert back.schema == EVERYTHING
    # a null field with a default is written as its default (Struct.get's value), as Connect's AvroData does
    assert back.value == value.put("optional_default", 7)


def test_the_registered_schema_follows_confluents_mapping(registry: ServedRegistry) -> None:
    conv = converter(registry)
    data = conv.from_connect_data("mapping", EVERYTHING, everything())
    schema_id = struct.unpack(">I", data[1:5])[0]
    avro = json.loads(httpx.get(f"{registry.url}/schemas/ids/{schema_id}").json()["schema"])
    assert (avro["type"], avro["name"], avro["namespace"]) == ("record", "Everything", "com.example")
    fields = {f["name"]: f for f in avro["fields"]}
    assert fields["i8"]["type"] == {"type": "int", "connect.type": "int8"}
    assert fields["price"]["type"]["logicalType"] == "decimal" and fields["price"]["type"]["precision"] == 12
    assert fields["big"]["type"]["precision"] == 64  # no connect.decimal.precision: Confluent's 64
    assert fields["day"]["type"]["logicalType"] == "date"
    assert fields["clock"]["type"]["logicalType"] == "time-millis"
    assert fields["at"]["type"]["logicalType"] == "timestamp-millis"
    assert fields["maybe"]["type"] == ["null", "string"] and fields["maybe"]["default"] is None
    assert fields["optional_default"]["type"][1] == "null" and fields["optional_default"]["default"] == 7
    assert fields["with_default"]["default"] == "dflt"
    assert fields["by_id"]["type"]["type"] == "array"
    assert fields["by_id"]["type"]["items"]["name"] == "MapEntry"
    assert fields["counts"]["type"] == {"type": "map", "values": "long"}
    assert fields["anonymous"]["type"]["name"] == "ConnectDefault"
    assert fields["anonymous"]["type"]["namespace"] == "io.confluent.connect.avro"
    assert fields["addresses"]["type"]["items"] == "com.example.Address"  # defined once, then by name


@pytest.mark.parametrize("schema, value", [
    (Schema.STRING_SCHEMA, "plain"), (Schema.INT8_SCHEMA, 5), (Schema.INT16_SCHEMA, -300),
    (Schema.INT32_SCHEMA, 7), (Schema.INT64_SCHEMA, -(2**40)), (Schema.FLOAT32_SCHEMA, 0.25),
    (Schema.FLOAT64_SCHEMA, 1e300), (Schema.BOOLEAN_SCHEMA, False), (Schema.BYTES_SCHEMA, b"bytes"),
    (Decimal.schema(3), decimal.Decimal("-0.001")), (Date.SCHEMA, dt.date(1969, 12, 31)),
    (Time.SCHEMA, dt.time(0, 0)), (Timestamp.SCHEMA, dt.datetime(1960, 1, 1, tzinfo=dt.UTC)),
    (SchemaBuilder.array(Schema.INT32_SCHEMA).build(), [1, 2, 3]),
    (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build(), {"k": "v"}),
    (SchemaBuilder.map(Schema.INT64_SCHEMA, Schema.BOOLEAN_SCHEMA).build(), {10**12: True}),
])
def test_top_level_schemas_round_trip_as_keys_and_values(registry: ServedRegistry, schema: Schema,
                                                         value: object, request: pytest.FixtureRequest) -> None:
    topic = request.node.callspec.id  # a topic, so subjects, per case
    for is_key in (True, False):
        conv = converter(registry, is_key)
        data = conv.from_connect_data(topic, schema, value)
        back = converter(registry, is_key).to_connect_data(topic, data)
        assert back.schema == schema and back.value == value


def test_null_and_tombstones(registry: ServedRegistry) -> None:
    conv = converter(registry)
    assert conv.from_connect_data("t", Schema.OPTIONAL_STRING_SCHEMA, None) is None
    assert conv.to_connect_data("t", None) == (None, None)


def test_batches_equal_single_records(registry: ServedRegistry) -> None:
    conv = converter(registry)
    values = [everything() for _ in range(5)]
    singles = [conv.from_connect_data("batch", EVERYTHING, v) for v in values]
    assert conv.from_connect_batch("batch", EVERYTHING, values) == singles
    schemas, back = conv.to_connect_batch("batch", singles)
    assert schemas == [EVERYTHING] * 5 and back == [v.put("optional_default", 7) for v in values]


def test_subject_name_strategies_and_confluents_class_name(registry: ServedRegistry) -> None:
    cls = PluginRegistry([]).resolve("io.confluent.connect.avro.AvroConverter", "converter", "value.converter")
    assert cls is AvroConverter
    converter(registry).from_connect_data("orders", ADDRESS, Struct(ADDRESS).put("street", "x"))
    converter(registry, True).from_connect_data("orders", Schema.STRING_SCHEMA, "k")
    converter(registry, **{"value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"}
              ).from_connect_data("orders", ADDRESS, Struct(ADDRESS).put("street", "x"))
    converter(registry, **{"value.subject.name.strategy": "TopicRecordNameStrategy"}).from_connect_data("orders", ADDRESS, Struct(ADDRESS).put("street", "x"))
    subjects = httpx.get(f"{registry.url}/subjects").json()
    assert {"orders-value", "orders-key", "com.example.Address", "orders-com.example.Address"} <= set(subjects)
    with pytest.raises(Exception, match="subject.name.strategy"):
        converter(registry, **{"value.subject.name.strategy": "MyOwnStrategy"})


def test_without_auto_register_an_unknown_schema_is_a_data_exception(registry: ServedRegistry) -> None:
    schema = SchemaBuilder.struct().name("NeverRegistered").field("x", Schema.INT32_SCHEMA).build()
    conv = converter(registry, **{"auto.register.schemas": "false"})
    with pytest.raises(DataException, match="40401"):
        conv.from_connect_data("unregistered", schema, Struct(schema).put("x", 1))


def test_use_latest_version_writes_with_the_subjects_latest_schema(registry: ServedRegistry) -> None:
    v1 = SchemaBuilder.struct().name("L").field("a", Schema.INT32_SCHEMA).build()
    v2 = SchemaBuilder.struct().name("L").field("a", Schema.INT32_SCHEMA) \
        .field("b", SchemaBuilder.string().optional().build()).build()
    converter(registry).from_connect_data("latest", v1, Struct(v1).put("a", 1))
    converter(registry).from_connect_data("latest", v2, Struct(v2).put("a", 1).put("b", "x"))
    conv = converter(registry, **{"auto.register.schemas": "false", "use.latest.version": "true"})
    data = conv.from_connect_data("latest", v2, Struct(v2).put("a", 2))
    assert struct.unpack(">I", data[1:5])[0] == httpx.get(
        f"{registry.url}/subjects/latest-value/versions/latest").json()["id"]


def test_schema_id_from_the_header(registry: ServedRegistry) -> None:
    conv = converter(registry)
    data = conv.from_connect_data("hdr", Schema.STRING_SCHEMA, "via header")
    body, schema_id = data[5:], data[1:5]
    for header in (b"\x00" + schema_id, schema_id, str(struct.unpack(">I", schema_id)[0])):
        headers = ConnectHeaders().add("__value_schema_id", header)
        assert conv.to_connect_data("hdr", body, headers).value == "via header"
    with pytest.raises(DataException, match="GUID"):
        conv.to_connect_data("hdr", body, ConnectHeaders().add("__value_schema_id", b"\x01" + b"g" * 16))


def test_bad_bytes_are_data_exceptions_that_say_why(registry: ServedRegistry) -> None:
    conv = converter(registry)
    with pytest.raises(DataException, match="magic byte"):
        conv.to_connect_data("bad", b'{"json": "not avro"}')
    with pytest.raises(DataException, match="schema id 999999 is unknown.*40403"):
        conv.to_connect_data("bad", b"\x00" + struct.pack(">I", 999999) + b"\x02")
    good = conv.from_connect_data("bad", ADDRESS, Struct(ADDRESS).put("street", "x"))
    with pytest.raises(DataException, match="schema id"):
        conv.to_connect_data("bad", good[:6])  # cut short
    with pytest.raises(DataException, match="magic byte"):
        conv.to_connect_batch("bad", [good, b"\x07junk"])
    with pytest.raises(DataException, match="needs a schema"):
        conv.from_connect_data("bad", None, {"a": 1})


def test_unreachable_registry_is_retriable_and_config_errors_name_the_key() -> None:
    from connect.api import ConfigException, RetriableException

    conv = AvroConverter()
    conv.configure({"schema.registry.url": "http://127.0.0.1:9"}, False)
    with pytest.raises(RetriableException, match="unreachable"):
        conv.from_connect_data("t", Schema.STRING_SCHEMA, "x")
    with pytest.raises(ConfigException, match="schema.registry.url"):
        AvroConverter().configure({}, False)
    with pytest.raises(ConfigException, match="basic.auth.user.info"):
        AvroConverter().configure({"schema.registry.url": "http://h:1", "basic.auth.credentials.source": "USER_INFO",
                                   "basic.auth.user.info": "nocolon"}, False)
