"""ValueToKey: build the record key from fields of the value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from connect.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    DataException,
    Field,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
)
from connect.api.java_text import JavaLayout, JavaMap, hash_map_capacity, table_layout
from plugins.transforms._base import BuiltinTransformation
from plugins.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    define_replace_null_with_default,
    non_empty_list,
    parse_config,
)
from plugins.transforms._requirements import require_map_or_none, require_struct
from plugins.transforms._schemas import SchemaCache, copy_fields

__all__ = ["ValueToKey"]

FIELDS = "fields"

_PURPOSE = "copying fields from value to key"

CONFIG_DEF = ConfigDef().define(
    FIELDS, ConfigType.LIST, validator=non_empty_list(), importance=Importance.HIGH,
    documentation="Field names on the record value to extract as the record key.",
)
define_replace_null_with_default(CONFIG_DEF)


class _Plan(NamedTuple):
    schema: Schema
    copies: tuple[tuple[Field, Field], ...]


class ValueToKey(BuiltinTransformation[ConnectRecord]):
    """Replace the record key with a new key formed from a subset of fields in the record value."""

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._fields: tuple[str, ...] = ()
        self._key_layout: JavaLayout | None = None
        self._replace_null_with_default = True
        self._plans = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._fields = tuple(config.get_list(FIELDS))
        capacity = hash_map_capacity(len(self._fields), initial_capacity=len(self._fields))
        # None when the pre-sized table is the default one, so that a plain dict prints as Java's map does
        self._key_layout = None if capacity == hash_map_capacity(len(self._fields)) else table_layout(capacity)
        if len(set(self._fields)) != len(self._fields):
            raise ConfigException(FIELDS, list(self._fields), "Field names must not be repeated")
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._plans.clear()

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if record.value_schema is None:
            # A tombstone has no value to read from; its key gets null fields.
            value = require_map_or_none(record.value, _PURPOSE)
            if value is None:
                key = dict.fromkeys(self._fields)
            else:
                key = {name: value.get(name) for name in self._fields}
            if self._key_layout is not None:  # Java's new HashMap<>(fields.size()), filled in field order
                key = JavaMap(key)
                key.java_layout = self._key_layout
            return record.new_record(key_schema=None, key=key)
        struct = require_struct(record.value, _PURPOSE)
        plan = self._plans.get_or_make(struct.schema, self._plan)
        key_struct = Struct(plan.schema)
        copy_fields(struct, key_struct, plan.copies, self._replace_null_with_default)
        return record.new_record(key_schema=plan.schema, key=key_struct)

    def _plan(self, schema: Schema) -> _Plan:
        builder = SchemaBuilder.struct()
        sources: list[Field] = []
        for name in self._fields:
            field = schema.field(name)
            if field is None:
                raise DataException(f"Field does not exist: {name}")
            builder.field(name, field.schema)
            sources.append(field)
        key_schema = builder.build()
        return _Plan(key_schema, tuple((field, key_schema.field(field.name)) for field in sources))  # type: ignore[misc]

    def close(self) -> None:
        self._plans.clear()
