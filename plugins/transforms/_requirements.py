"""Kafka's transforms.util.Requirements: checks on a record's parts that raise the messages Kafka raises."""

from __future__ import annotations

from typing import Any

from connect.api import ConnectRecord, DataException, Schema, SinkRecord, Struct

__all__ = [
    "require_map",
    "require_map_or_none",
    "require_schema",
    "require_sink_record",
    "require_struct",
    "require_struct_or_none",
    "type_name",
]


def type_name(value: Any) -> str:
    """The class name Kafka's messages show, or ``null``."""
    return "null" if value is None else type(value).__name__


def require_schema(schema: Schema | None, purpose: str) -> Schema:
    if schema is None:
        raise DataException(f"Schema required for [{purpose}]")
    return schema


def require_map(value: Any, purpose: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DataException(
            f"Only Map objects supported in absence of schema for [{purpose}], found: {type_name(value)}"
        )
    return value


def require_map_or_none(value: Any, purpose: str) -> dict[str, Any] | None:
    return None if value is None else require_map(value, purpose)


def require_struct(value: Any, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        raise DataException(f"Only Struct objects supported for [{purpose}], found: {type_name(value)}")
    return value


def require_struct_or_none(value: Any, purpose: str) -> Struct | None:
    return None if value is None else require_struct(value, purpose)


def require_sink_record(record: ConnectRecord, purpose: str) -> SinkRecord:
    if not isinstance(record, SinkRecord):
        raise DataException(f"Only SinkRecord supported for [{purpose}], found: {type_name(record)}")
    return record
