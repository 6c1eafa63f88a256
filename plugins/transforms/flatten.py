"""Flatten: turn nested structs or maps into one level, joining field names with a delimiter."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any, NamedTuple

from connect.api import (
    ConfigDef,
    ConfigType,
    ConnectRecord,
    DataException,
    Field,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    Type,
)
from connect.api.java_text import LINKED, JavaMap, java_iteration_order, table_layout
from plugins.transforms._base import KeyOrValueTransformation, key_value_variants
from plugins.transforms._config import parse_config
from plugins.transforms._requirements import require_map, require_struct, type_name
from plugins.transforms._schemas import SchemaCache, copy_schema_basics

__all__ = ["Flatten"]

DELIMITER = "delimiter"

_PURPOSE = "flattening"

CONFIG_DEF = ConfigDef().define(
    DELIMITER, ConfigType.STRING, ".", importance=Importance.MEDIUM,
    documentation="Delimiter to insert between field names from the input record when generating field names "
    "for the output record",
)

# Values copied as they are; arrays are leaves too, as in Kafka (their elements are not flattened).
# Connect's logical values (dates, decimals) count as leaves in schemaless maps as well.
_LEAF_TYPES = (bool, int, float, str, bytes, bytearray, list, tuple, decimal.Decimal, dt.date, dt.time)


class _Copy(NamedTuple):
    """How one flat field is filled: follow ``parents`` from the root struct, then read ``leaf``."""

    parents: tuple[Field, ...]
    leaf: Field
    target: Field


class _Plan(NamedTuple):
    schema: Schema
    copies: tuple[_Copy, ...]


@key_value_variants
class Flatten(KeyOrValueTransformation[ConnectRecord]):
    """Flatten a nested data structure, naming each field by joining the names at each level with a delimiter.

    Applies to a Struct when a schema is present, or a Map for schemaless data.
    Use ``Flatten.Key`` for the record key or ``Flatten.Value`` for the value.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._delimiter = "."
        self._plans = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._delimiter = parse_config(CONFIG_DEF, configs).get_string(DELIMITER) or ""
        self._plans.clear()

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self._operating_value(record)
        if value is None:
            return record
        if self._operating_schema(record) is None:
            # Kafka's Flatten fills a LinkedHashMap, walking each map in its Java iteration order
            flat = JavaMap()
            flat.java_layout = table_layout(LINKED)
            self._flatten_map(require_map(value, _PURPOSE), "", flat)
            return self._new_record(record, None, flat)
        struct = require_struct(value, _PURPOSE)
        plan = self._plans.get_or_make(struct.schema, self._plan)
        flat_struct = Struct(plan.schema)
        for copy in plan.copies:
            current: Struct | None = struct
            for parent in copy.parents:
                current = current.get(parent)  # type: ignore[union-attr]
                if current is None:
                    break
            # Children of a null struct stay null in the flat struct.
            if current is not None:
                flat_struct.put(copy.target, current.get(copy.leaf))
        return self._new_record(record, plan.schema, flat_struct)

    def _name(self, prefix: str, name: Any) -> Any:
        return name if not prefix else f"{prefix}{self._delimiter}{name}"

    def _flatten_map(self, original: dict[Any, Any], prefix: str, flat: dict[Any, Any]) -> None:
        for key in java_iteration_order(original):
            value = original[key]
            name = self._name(prefix, key)
            if value is None or isinstance(value, _LEAF_TYPES):
                flat[name] = value
            elif isinstance(value, dict):
                self._flatten_map(value, name, flat)
            elif isinstance(value, Struct):
                raise DataException(
                    f"Flatten transformation does not support Struct for record without schemas (for field {name})."
                )
            else:
                raise DataException(
                    f"Flatten transformation was passed a value of type {type_name(value)} which is not "
                    "supported by Connect's data API"
                )

    def _plan(self, schema: Schema) -> _Plan:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        leaves: list[tuple[tuple[Field, ...], Field, str]] = []
        default = schema.default_value if isinstance(schema.default_value, Struct) else None
        self._flatten_schema(schema, "", builder, schema.optional, default, (), leaves)
        flat = builder.build()
        copies = tuple(_Copy(parents, leaf, flat.field(name)) for parents, leaf, name in leaves)  # type: ignore[arg-type]
        return _Plan(flat, copies)

    def _flatten_schema(
        self,
        schema: Schema,
        prefix: str,
        builder: SchemaBuilder,
        optional: bool,
        parent_default: Struct | None,
        parents: tuple[Field, ...],
        leaves: list[tuple[tuple[Field, ...], Field, str]],
    ) -> None:
        for field in schema.fields():
            name = self._name(prefix, field.name)
            # A field under an optional struct can be missing, so its flat form is optional too;
            # a default on an enclosing struct supplies the default of the flat field.
            field_optional = optional or field.schema.optional
            default = field.schema.default_value
            if default is None and parent_default is not None:
                default = parent_default.get(field)
            if field.schema.type is Type.STRUCT:
                self._flatten_schema(
                    field.schema, name, builder, field_optional, default, (*parents, field), leaves
                )
                continue
            flat_schema = copy_schema_basics(field.schema)
            if field_optional:
                flat_schema.optional()
            if default is not None:
                flat_schema.default_value(default)
            builder.field(name, flat_schema.build())
            leaves.append((parents, field, name))

    def close(self) -> None:
        self._plans.clear()
