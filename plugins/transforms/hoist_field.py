"""HoistField: wrap the key or value in a single-field Struct or Map."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import ConfigDef, ConfigType, ConnectRecord, Importance, Schema, SchemaBuilder, Struct
from plugins.transforms._base import KeyOrValueTransformation, key_value_variants, schemaless
from plugins.transforms._config import parse_config
from plugins.transforms._schemas import SchemaCache

__all__ = ["HoistField"]

FIELD = "field"

CONFIG_DEF = ConfigDef().define(
    FIELD, ConfigType.STRING, importance=Importance.MEDIUM,
    documentation="Field name for the single field that will be created in the resulting Struct or Map.",
)


@key_value_variants
class HoistField(KeyOrValueTransformation[ConnectRecord]):
    """Wrap data using the specified field name in a Struct when schema present, or a Map otherwise.

    Use ``HoistField.Key`` for the record key or ``HoistField.Value`` for the value.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._field = ""
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._field = parse_config(CONFIG_DEF, configs).get_string(FIELD) or ""
        self._schemas.clear()

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self._operating_schema(record)
        value = self._operating_value(record)
        if schema is None:
            return self._new_record(record, None, {self._field: value})
        updated = self._hoisted(schema, value)
        return self._new_record(record, updated.schema, updated)

    def _hoisted(self, schema: Schema, value: Any) -> Struct:
        updated_schema = self._schemas.get(schema)
        if updated_schema is None:
            updated_schema = SchemaBuilder.struct().field(self._field, schema).build()
            self._schemas.put(schema, updated_schema)
        return Struct(updated_schema).put(self._field, value)

    def _transform_column(
        self, schemas: list[Schema | None], values: list[Any]
    ) -> tuple[list[Schema | None] | None, list[Any]] | None:
        field = self._field
        if schemaless(schemas):
            return None, [{field: value} for value in values]
        new_schemas: list[Schema | None] = []
        hoisted: list[Any] = []
        for schema, value in zip(schemas, values, strict=True):
            if schema is None:
                new_schemas.append(None)
                hoisted.append({field: value})
            else:
                updated = self._hoisted(schema, value)
                new_schemas.append(updated.schema)
                hoisted.append(updated)
        return new_schemas, hoisted

    def close(self) -> None:
        self._schemas.clear()
