"""SetSchemaMetadata: set the name and/or version of the key or value schema."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    Importance,
    Schema,
    Struct,
    Type,
)
from plugins.transforms._base import KeyOrValueTransformation, key_value_variants
from plugins.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    define_replace_null_with_default,
    parse_config,
)
from plugins.transforms._requirements import require_schema
from plugins.transforms._schemas import SchemaCache, field_value

__all__ = ["SetSchemaMetadata"]

log = logging.getLogger(__name__)

SCHEMA_NAME = "schema.name"
SCHEMA_VERSION = "schema.version"

CONFIG_DEF = (
    ConfigDef()
    .define(SCHEMA_NAME, ConfigType.STRING, None, importance=Importance.HIGH, documentation="Schema name to set.")
    .define(SCHEMA_VERSION, ConfigType.INT, None, importance=Importance.HIGH, documentation="Schema version to set.")
)
define_replace_null_with_default(CONFIG_DEF)


@key_value_variants
class SetSchemaMetadata(KeyOrValueTransformation[ConnectRecord]):
    """Set the schema name, version or both on the record's key or value schema.

    Use ``SetSchemaMetadata.Key`` for the record key or ``SetSchemaMetadata.Value`` for the value.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._name: str | None = None
        self._version: int | None = None
        self._replace_null_with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._name = config.get_string(SCHEMA_NAME)
        self._version = config.get_int(SCHEMA_VERSION)
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        if self._name is None and self._version is None:
            raise ConfigException(
                message=f"Neither schema name nor version configured: set {SCHEMA_NAME} and/or {SCHEMA_VERSION}"
            )
        self._schemas.clear()

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = require_schema(self._operating_schema(record), "updating schema metadata")
        updated = self._schemas.get(schema)
        if updated is None:
            updated = self._renamed(schema)
            self._schemas.put(schema, updated)
            log.debug("SetSchemaMetadata: %r becomes %r", schema, updated)
        return self._new_record(record, updated, self._with_schema(self._operating_value(record), updated))

    def _renamed(self, schema: Schema) -> Schema:
        container = schema.type in (Type.ARRAY, Type.MAP)
        return Schema(
            schema.type,
            schema.optional,
            schema.default_value,
            self._name if self._name is not None else schema.name,
            self._version if self._version is not None else schema.version,
            schema.doc,
            schema.parameters,
            schema.fields() if schema.type is Type.STRUCT else None,
            schema.key_schema if schema.type is Type.MAP else None,
            schema.value_schema if container else None,
        )

    def _with_schema(self, value: Any, schema: Schema) -> Any:
        # A Struct carries its schema, so it must be rebuilt against the renamed one.
        if not isinstance(value, Struct):
            return value
        updated = Struct(schema)
        replace = self._replace_null_with_default
        for field in schema.fields():
            updated.put(field, field_value(value, field, replace))
        return updated

    def close(self) -> None:
        self._schemas.clear()
