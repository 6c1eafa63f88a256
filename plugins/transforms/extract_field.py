"""ExtractField: replace the key or value with one of its fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import ConfigDef, ConfigType, ConnectRecord, DataException, Importance, Schema
from plugins.transforms._base import KeyOrValueTransformation, key_value_variants
from plugins.transforms._config import (
    FIELD_SYNTAX_VERSION_CONFIG,
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    define_field_syntax_version,
    define_replace_null_with_default,
    parse_config,
)
from plugins.transforms._field_path import SingleFieldPath
from plugins.transforms._requirements import require_map_or_none, require_struct_or_none

__all__ = ["ExtractField"]

FIELD = "field"

_PURPOSE = "field extraction"

CONFIG_DEF = ConfigDef().define(
    FIELD, ConfigType.STRING, importance=Importance.MEDIUM, documentation="Field name to extract."
)
define_replace_null_with_default(CONFIG_DEF)
define_field_syntax_version(CONFIG_DEF)


@key_value_variants
class ExtractField(KeyOrValueTransformation[ConnectRecord]):
    """Extract the specified field from a Struct when schema present, or a Map in the case of schemaless data.

    Null values pass through unmodified. With ``field.syntax.version=V2`` the
    field may be a dotted path into nested structs or maps.
    Use ``ExtractField.Key`` for the record key or ``ExtractField.Value`` for the value.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._path = SingleFieldPath("")
        self._original_path = ""
        self._replace_null_with_default = True

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._original_path = config.get_string(FIELD) or ""
        self._path = SingleFieldPath(self._original_path, config.get_string(FIELD_SYNTAX_VERSION_CONFIG) or "V1")
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema, value = self._extracted(self._operating_schema(record), self._operating_value(record))
        return self._new_record(record, schema, value)

    def _extracted(self, schema: Schema | None, value: Any) -> tuple[Schema | None, Any]:
        if schema is None:
            return None, self._path.value_from_map(require_map_or_none(value, _PURPOSE))
        struct = require_struct_or_none(value, _PURPOSE)
        field = self._path.field_from(schema)
        if field is None:
            raise DataException(f"Unknown field: {self._original_path}")
        return field.schema, self._path.value_from_struct(struct, self._replace_null_with_default)

    def _transform_column(
        self, schemas: list[Schema | None], values: list[Any]
    ) -> tuple[list[Schema | None] | None, list[Any]] | None:
        extracted = list(map(self._extracted, schemas, values))
        return [schema for schema, _ in extracted], [value for _, value in extracted]
