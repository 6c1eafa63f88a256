"""HeaderFrom: move or copy fields of the key or value into headers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    DataException,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    ValidString,
)
from plugins.transforms._base import KeyOrValueTransformation, key_value_variants
from plugins.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    define_replace_null_with_default,
    non_empty_list,
    parse_config,
)
from plugins.transforms._requirements import require_map, require_struct
from plugins.transforms._schemas import SchemaCache, copy_schema_basics, field_value

__all__ = ["HeaderFrom"]

FIELDS = "fields"
HEADERS = "headers"
OPERATION = "operation"
MOVE = "move"
COPY = "copy"

CONFIG_DEF = (
    ConfigDef()
    .define(FIELDS, ConfigType.LIST, validator=non_empty_list(), importance=Importance.HIGH,
            documentation="Field names in the record whose values are to be copied or moved to headers.")
    .define(HEADERS, ConfigType.LIST, validator=non_empty_list(), importance=Importance.HIGH,
            documentation="Header names, in the same order as the field names listed in the fields "
            "configuration property.")
    .define(OPERATION, ConfigType.STRING, validator=ValidString.in_(MOVE, COPY), importance=Importance.HIGH,
            documentation="Either <code>move</code> if the fields are to be moved to the headers (removed from "
            "the key/value), or <code>copy</code> if the fields are to be copied to the headers (retained in "
            "the key/value).")
)
define_replace_null_with_default(CONFIG_DEF)


@key_value_variants
class HeaderFrom(KeyOrValueTransformation[ConnectRecord]):
    """Moves or copies fields in the key/value of a record into that record's headers.

    The n-th entry of ``fields`` goes to the header named by the n-th entry of ``headers``.
    Use ``HeaderFrom.Key`` for the record key or ``HeaderFrom.Value`` for the value.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._pairs: tuple[tuple[str, str], ...] = ()
        self._fields: frozenset[str] = frozenset()
        self._move = False
        self._purpose = "header copy"
        self._replace_null_with_default = True
        self._move_schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        fields = config.get_list(FIELDS)
        headers = config.get_list(HEADERS)
        if len(fields) != len(headers):
            raise ConfigException(
                HEADERS, headers, f"'{FIELDS}' config must have the same number of elements as '{HEADERS}' config."
            )
        self._pairs = tuple(zip(fields, headers, strict=True))
        self._fields = frozenset(fields)
        operation = config.get_string(OPERATION)
        self._move = operation == MOVE
        self._purpose = f"header {operation}"
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._move_schemas.clear()

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self._operating_schema(record)
        value = self._operating_value(record)
        headers = record.headers.duplicate()
        if schema is None:
            original = require_map(value, self._purpose)
            updated = dict(original)
            for field_name, header_name in self._pairs:
                if self._move:
                    updated.pop(field_name, None)
                headers.add(header_name, original.get(field_name), None)
            return self._new_record(record, None, updated, headers)

        struct = require_struct(value, self._purpose)
        replace = self._replace_null_with_default
        for field_name, header_name in self._pairs:
            field = struct.schema.field(field_name)
            if field is None:
                raise DataException(f"{field_name} is not a valid field name")
            headers.add(header_name, field_value(struct, field, replace), field.schema)
        if not self._move:
            return self._new_record(record, schema, struct, headers)
        moved_schema = self._moved_schema(schema)
        moved = Struct(moved_schema)
        for field in moved_schema.fields():
            moved.put(field, field_value(struct, struct.schema.field(field.name), replace))  # type: ignore[arg-type]
        return self._new_record(record, moved_schema, moved, headers)

    def _moved_schema(self, schema: Schema) -> Schema:
        moved = self._move_schemas.get(schema)
        if moved is None:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for field in schema.fields():
                if field.name not in self._fields:
                    builder.field(field.name, field.schema)
            moved = builder.build()
            self._move_schemas.put(schema, moved)
        return moved

    def close(self) -> None:
        self._move_schemas.clear()
