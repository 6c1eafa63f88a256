"""Kafka's ``Values.inferSchema``: a schema for a Python value, when one can be told.

Python has one ``int``: ``infer_schema`` gives INT64 for it (as the JSON
converter's schemaless mode does) and ``float`` gives FLOAT64.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.schema import Schema, Type
from connect.api.schema_builder import SchemaBuilder
from connect.api.struct import Struct

__all__ = ["infer_schema"]


class _SchemaDetector:
    """Finds the one type shared by every non-null value, or gives up."""

    def __init__(self) -> None:
        self.known: Type | None = None
        self.optional = False

    def can_detect(self, value: Any) -> bool:
        if value is None:
            self.optional = True
            return True
        schema = infer_schema(value)
        if schema is None:
            return False
        if self.known is None:
            self.known = schema.type
        return self.known is schema.type

    def schema(self) -> Schema | None:
        return Schema(self.known, self.optional) if self.known is not None else None


def infer_schema(value: Any) -> Schema | None:
    """A schema for ``value``, or None when none can be told (null, empty or mixed collections)."""
    if isinstance(value, str):
        return Schema.STRING_SCHEMA
    if isinstance(value, bool):
        return Schema.BOOLEAN_SCHEMA
    if isinstance(value, int):
        return Schema.INT64_SCHEMA if -(2**63) <= value < 2**63 else None
    if isinstance(value, float):
        return Schema.FLOAT64_SCHEMA
    if isinstance(value, bytes | bytearray | memoryview):
        return Schema.BYTES_SCHEMA
    if isinstance(value, list | tuple):
        if not value:
            return None
        detector = _SchemaDetector()
        if not all(detector.can_detect(v) for v in value):
            return None
        element = detector.schema()
        return SchemaBuilder.array(element).build() if element is not None else None
    if isinstance(value, Mapping):
        if not value:
            return None
        keys, values = _SchemaDetector(), _SchemaDetector()
        if not all(keys.can_detect(k) and values.can_detect(v) for k, v in value.items()):
            return None
        key_schema, value_schema = keys.schema(), values.schema()
        if key_schema is None or value_schema is None:
            return None
        return SchemaBuilder.map(key_schema, value_schema).build()
    if isinstance(value, Struct):
        return value.schema
    return None
