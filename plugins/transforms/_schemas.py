"""Copying struct fields and schemas, and the per-input-schema cache of what a transform derives from it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from connect.api import Field, Schema, SchemaBuilder, Struct, Type

__all__ = ["SchemaCache", "copy_fields", "copy_schema_basics", "field_value"]


def field_value(struct: Struct, field: Field, replace_null_with_default: bool) -> Any:
    """A struct field's value, with or without its schema default standing in for null (KIP-1040)."""
    if replace_null_with_default:
        return struct.get(field)
    return struct.get_without_default(field.name)


def copy_fields(
    source: Struct, target: Struct, pairs: tuple[tuple[Field, Field], ...], replace_null_with_default: bool
) -> None:
    """Copy each (source field, target field) pair; the per-record hot loop of most struct transforms."""
    put = target.put
    if replace_null_with_default:
        get = source.get
        for source_field, target_field in pairs:
            put(target_field, get(source_field))
    else:
        get_raw = source.get_without_default
        for source_field, target_field in pairs:
            put(target_field, get_raw(source_field.name))


def copy_schema_basics(source: Schema, builder: SchemaBuilder | None = None) -> SchemaBuilder:
    """Name, version, doc and parameters of ``source`` onto ``builder`` (a same-type builder if omitted).

    Optionality and default are left out on purpose: callers decide those,
    because a changed schema usually cannot keep the old default.
    """
    if builder is None:
        if source.type is Type.ARRAY:
            builder = SchemaBuilder.array(source.value_schema)  # type: ignore[arg-type]
        elif source.type is Type.MAP:
            builder = SchemaBuilder.map(source.key_schema, source.value_schema)  # type: ignore[arg-type]
        else:
            builder = SchemaBuilder(source.type)
    if source.name is not None:
        builder.name(source.name)
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    if source.parameters:
        builder.parameters(source.parameters)
    return builder


class SchemaCache:
    """Derived data per input schema, bounded like Kafka's 16-entry LRU cache.

    Records of one connector nearly always share a handful of schemas, so a
    hit is the common case; on overflow the oldest entry goes, which keeps a
    hit a single dict lookup (no reordering on reads).
    """

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int = 16) -> None:
        self._entries: dict[Schema, Any] = {}
        self._size = size

    def get(self, schema: Schema) -> Any:
        return self._entries.get(schema)

    def get_or_make(self, schema: Schema, make: Callable[[Schema], Any]) -> Any:
        """What is cached for ``schema``, made by ``make(schema)`` and kept on a miss."""
        derived = self._entries.get(schema)
        if derived is None:
            derived = make(schema)
            self.put(schema, derived)
        return derived

    def put(self, schema: Schema, derived: Any) -> None:
        if len(self._entries) >= self._size:
            del self._entries[next(iter(self._entries))]
        self._entries[schema] = derived

    def clear(self) -> None:
        self._entries.clear()
