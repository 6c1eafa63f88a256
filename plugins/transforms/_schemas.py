"""Copying struct fields and schemas, and the per-input-schema cache of what a transform derives from it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from connect.api import DataException, Field, Schema, SchemaBuilder, Struct, Type
from connect.api.struct import validate_value

__all__ = ["SchemaCache", "StructCopy", "copy_fields", "copy_schema_basics", "field_value"]


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

    __slots__ = ("_entries", "_size", "_last_schema", "_last")

    def __init__(self, size: int = 16) -> None:
        self._entries: dict[Schema, Any] = {}
        self._size = size
        # the last schema asked for, by identity: a batch's records nearly always share one schema object
        self._last_schema: Schema | None = None
        self._last: Any = None

    def get(self, schema: Schema) -> Any:
        return self._entries.get(schema)

    def get_or_make(self, schema: Schema, make: Callable[[Schema], Any]) -> Any:
        """What is cached for ``schema``, made by ``make(schema)`` and kept on a miss."""
        if schema is self._last_schema:
            return self._last
        derived = self._entries.get(schema)
        if derived is None:
            derived = make(schema)
            self.put(schema, derived)
        self._last_schema, self._last = schema, derived
        return derived

    def put(self, schema: Schema, derived: Any) -> None:
        if len(self._entries) >= self._size:
            del self._entries[next(iter(self._entries))]
        self._entries[schema] = derived
        if schema is self._last_schema:
            self._last = derived

    def clear(self) -> None:
        self._entries.clear()
        self._last_schema = self._last = None


def _holds_containers(schema: Schema) -> bool:
    return schema.type in (Type.STRUCT, Type.ARRAY, Type.MAP)


class StructCopy:
    """The batch form of ``copy_fields`` for one (source schema, target schema) pair: the target's values by
    position, and the Struct made from them without checking each value again.

    ``Struct.put`` checks a value against its field's schema. The copied values were checked against these
    very schemas when they were put into the source (or vouched for by a converter's
    ``Struct.from_valid_values``), and a number or a string cannot have changed since, so only what could
    fail is checked again: nulls in required fields (a Struct starts all null) and structs, lists and maps,
    which can be changed after they were put. ``make`` returns None when a check fails: the caller then goes
    the ``put`` way, which raises ``apply``'s error, for the first field in field order.
    """

    __slots__ = ("schema", "_pick", "_identity", "_defaults", "_required", "_containers", "_fields")

    def __init__(self, source: Schema, target: Schema, pairs: Sequence[tuple[Field, Field]],
                 replace_null_with_default: bool, extra: int = 0) -> None:
        """``pairs`` of a ``source`` field and a ``target`` field fill the target's first fields, in order;
        ``extra`` more fields follow them (inserted by the caller)."""
        fields = target.fields()
        if [t.index for _, t in pairs] != list(range(len(pairs))) or len(fields) != len(pairs) + extra:
            raise ValueError("the copied fields must come first in the target, in order")
        sources = [s.index for s, _ in pairs]
        self.schema = target
        self._fields = fields
        # the common case takes every source field in order: a plain copy of the list
        self._identity = sources == list(range(len(source.fields())))
        self._pick: Callable[[Any], Any] | None = itemgetter(*sources) if len(sources) > 1 else None
        if len(sources) == 1:
            only = sources[0]
            self._pick = lambda values: (values[only],)
        elif not sources:
            self._pick = lambda values: ()
        # with defaults standing in for nulls (KIP-1040), as Struct.get gives them
        self._defaults = tuple((j, s.schema.default_value) for j, (s, _) in enumerate(pairs)
                               if replace_null_with_default and s.schema.default_value is not None)
        self._required = tuple(j for j, f in enumerate(fields)
                               if not f.schema.optional and f.schema.default_value is None)
        self._containers = tuple(j for j, f in enumerate(fields) if _holds_containers(f.schema))

    def values(self, source: Struct) -> list[Any]:
        """The copied values (then the inserted ones are appended by the caller), in target field order."""
        raw = source.field_values()
        values = list(raw) if self._identity else list(self._pick(raw))  # type: ignore[misc]
        for j, default in self._defaults:
            if values[j] is None:
                values[j] = default
        return values

    def make(self, values: list[Any]) -> Struct | None:
        """The target Struct holding ``values`` (kept, not copied); None if ``Struct.put`` would refuse one."""
        for j in self._required:
            if values[j] is None:
                return None
        if self._containers:
            fields = self._fields
            try:
                for j in self._containers:
                    if values[j] is not None:
                        validate_value(fields[j].schema, values[j], fields[j].name)
            except DataException:
                return None
        return Struct.from_valid_values(self.schema, values)
