"""The index mapping derived from a value's Spark type (spark_sinks/search_mapping.py), without a cluster."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from spark_sinks.search_mapping import added_properties, field_mapping, index_properties

# no Spark session, broker or service of the session's: beside the services group
pytestmark = pytest.mark.beside_services


def test_every_type_gets_its_field_type():
    struct = T.StructType([
        T.StructField("b", T.ByteType()), T.StructField("s", T.ShortType()), T.StructField("i", T.IntegerType()),
        T.StructField("l", T.LongType()), T.StructField("f", T.FloatType()), T.StructField("d", T.DoubleType()),
        T.StructField("ok", T.BooleanType()), T.StructField("raw", T.BinaryType()), T.StructField("day", T.DateType()),
        T.StructField("at", T.TimestampType()), T.StructField("price", T.DecimalType(10, 2)),
        T.StructField("name", T.StringType()), T.StructField("tags", T.ArrayType(T.LongType())),
        T.StructField("attrs", T.MapType(T.StringType(), T.StringType())),
        T.StructField("address", T.StructType([T.StructField("city", T.StringType())])),
    ])
    got = {name: m.get("type") for name, m in index_properties(struct).items()}
    assert got == {"b": "byte", "s": "short", "i": "integer", "l": "long", "f": "float", "d": "double",
                   "ok": "boolean", "raw": "binary", "day": "date", "at": "date", "price": "double", "name": "text",
                   "tags": "long", "attrs": "object", "address": "object"}
    assert index_properties(struct)["name"]["fields"]["keyword"]["type"] == "keyword"
    assert index_properties(struct)["address"]["properties"]["city"]["type"] == "text"


def test_only_missing_fields_are_added_and_existing_types_stay():
    wanted = {"id": {"type": "long"}, "name": {"type": "text"},
              "address": {"type": "object", "properties": {"city": {"type": "text"}, "zip": {"type": "keyword"}}}}
    existing = {"name": {"type": "keyword"}, "address": {"properties": {"city": {"type": "keyword"}}}}
    assert added_properties(wanted, existing) == {"id": {"type": "long"},
                                                  "address": {"properties": {"zip": {"type": "keyword"}}}}
    assert added_properties(wanted, wanted) == {}


def test_a_type_without_an_index_field_type_is_named():
    with pytest.raises(ValueError, match="calendarinterval|interval"):
        field_mapping(T.CalendarIntervalType())
