"""ByteArrayConverter: passes raw bytes through untouched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connect.api import (
    ConnectHeaders,
    DataException,
    Schema,
    SchemaAndValue,
    Type,
)
from plugins.converters._base import BuiltinConverter

__all__ = ["ByteArrayConverter"]

class ByteArrayConverter(BuiltinConverter):
    """Writes BYTES values as they are and reads any bytes back as an optional BYTES value."""

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: ConnectHeaders | None = None
    ) -> bytes | None:
        if schema is not None and schema.type is not Type.BYTES:
            raise DataException(f"Invalid schema type for ByteArrayConverter: {schema.type.name}")
        if value is None or type(value) is bytes:
            return value
        if isinstance(value, bytearray | memoryview):
            return bytes(value)
        raise DataException(f"ByteArrayConverter is not compatible with objects of type {type(value).__qualname__}")

    def to_connect_data(
        self, topic: str, value: bytes | None, headers: ConnectHeaders | None = None
    ) -> SchemaAndValue:
        return SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, value)

    def from_connect_batch(self, topic: str, schema: Schema | None, values: Sequence[Any]) -> list[bytes | None]:
        if schema is not None and schema.type is not Type.BYTES:
            raise DataException(f"Invalid schema type for ByteArrayConverter: {schema.type.name}")
        out = list(values)
        if all(type(v) is bytes or v is None for v in out):
            return out
        return [self.from_connect_data(topic, schema, v) for v in out]

    def to_connect_batch(self, topic: str, values: Sequence[bytes | None]) -> tuple[list[Schema | None], list[Any]]:
        return [Schema.OPTIONAL_BYTES_SCHEMA] * len(values), list(values)
