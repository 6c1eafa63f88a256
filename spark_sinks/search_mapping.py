"""Index mappings for typed values: the Spark type of an Avro value (decoded with its registered schema) as the
field types of an Elasticsearch/OpenSearch index, the way Confluent's Elasticsearch sink maps Connect schemas.

Without an explicit mapping the cluster guesses from the first document: a Decimal sent as a JSON number may
become ``long`` and then refuse ``12.5``, a timestamp becomes ``date`` only if its text happens to look like
one, and a Struct field that is absent from the first document gets no type at all. The sink therefore puts the
mapping before the first document of an index and, when a BACKWARD-compatible evolution adds fields, adds them
with ``PUT <index>/_mapping``. Fields the index already has keep their type: a mapping type cannot be changed
in place, so the sink never tries.

Types: integral types keep their width (``byte``, ``short``, ``integer``, ``long``); ``float``, ``double``,
``boolean``; a string is ``text`` with a ``keyword`` sub-field (``ignore_above`` 256), so it is searchable by
words and exact value, as Confluent maps STRING; Decimal is ``double`` (as Confluent maps it: Elasticsearch has
no decimal type, and ``scaled_float`` would need a scale per field that a schema evolution may change); Date and
Timestamp are ``date``; bytes are ``binary`` (Spark writes them as base64, which is what ``binary`` takes); a
nested record is an ``object`` with its own properties; an array has its element's type (every field may hold
several values); a map is an ``object`` whose keys the cluster maps as they come.
"""

from __future__ import annotations

from typing import Any

__all__ = ["added_properties", "field_mapping", "index_properties"]

_KEYWORD = {"keyword": {"type": "keyword", "ignore_above": 256}}


def field_mapping(data_type: Any) -> dict[str, Any]:
    """The mapping of one field of Spark type ``data_type``."""
    from pyspark.sql import types as T

    simple = {
        T.ByteType: "byte", T.ShortType: "short", T.IntegerType: "integer", T.LongType: "long",
        T.FloatType: "float", T.DoubleType: "double", T.BooleanType: "boolean", T.BinaryType: "binary",
        T.DateType: "date", T.TimestampType: "date", T.TimestampNTZType: "date", T.DecimalType: "double",
    }
    for spark_type, name in simple.items():
        if isinstance(data_type, spark_type):
            return {"type": name}
    if isinstance(data_type, T.StringType):
        return {"type": "text", "fields": dict(_KEYWORD)}
    if isinstance(data_type, T.ArrayType):
        return field_mapping(data_type.elementType)
    if isinstance(data_type, T.StructType):
        return {"type": "object", "properties": index_properties(data_type)}
    if isinstance(data_type, T.MapType):
        return {"type": "object", "dynamic": True}
    raise ValueError(f"no index field type for the Spark type {data_type.simpleString()}")


def index_properties(struct: Any) -> dict[str, Any]:
    """The ``properties`` of an index whose documents are the records of Spark struct type ``struct``."""
    return {field.name: field_mapping(field.dataType) for field in struct.fields}


def added_properties(wanted: dict[str, Any], existing: dict[str, Any]) -> dict[str, Any]:
    """The part of ``wanted`` the index's ``existing`` properties lack, nested objects included; what exists
    is left as it is (a field's type cannot change in place)."""
    out: dict[str, Any] = {}
    for name, mapping in wanted.items():
        have = existing.get(name)
        if have is None:
            out[name] = mapping
        elif "properties" in mapping and "properties" in have:
            inner = added_properties(mapping["properties"], have["properties"])
            if inner:
                out[name] = {"properties": inner}
    return out
