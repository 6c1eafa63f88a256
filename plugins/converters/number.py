"""Converters for single numbers and booleans, in the big-endian layouts of Kafka's serializers.

Double: 8-byte IEEE 754; Float: 4-byte IEEE 754; Integer: 4 bytes; Long: 8;
Short: 2; Boolean: one byte, 0x01 or 0x00. Reading gives the optional schema
of the type, with a null value for a null record.
"""

from __future__ import annotations

import abc
import struct
from typing import Any, ClassVar

from connect.api import (
    ConnectHeaders,
    DataException,
    Schema,
    SchemaAndValue,
    Type,
)
from connect.api.java_numbers import to_float32
from plugins.converters._base import BuiltinConverter

__all__ = [
    "BooleanConverter",
    "DoubleConverter",
    "FloatConverter",
    "IntegerConverter",
    "LongConverter",
    "ShortConverter",
]

class _SerializationError(Exception):
    pass


class _NumberConverter(BuiltinConverter):
    """One fixed-width number. Like Kafka, the schema of the value is not checked."""

    type_name: ClassVar[str]
    schema: ClassVar[Schema]
    layout: ClassVar[struct.Struct]
    deserializer_name: ClassVar[str]

    @abc.abstractmethod
    def _coerce(self, value: Any) -> int | float:
        """The value to pack; raise _SerializationError if it is not of this converter's type."""

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: ConnectHeaders | None = None
    ) -> bytes | None:
        if value is None:
            return None
        try:
            return self.layout.pack(self._coerce(value))
        except (_SerializationError, struct.error) as exc:
            raise DataException(
                f"Failed to serialize to {self.type_name} (was {type(value).__qualname__}): {exc}"
            ) from exc

    def to_connect_data(
        self, topic: str, value: bytes | None, headers: ConnectHeaders | None = None
    ) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(self.schema, None)
        if len(value) != self.layout.size:
            raise DataException(
                f"Failed to deserialize {self.type_name}: Size of data received by "
                f"{self.deserializer_name} is not {self.layout.size}"
            )
        return SchemaAndValue(self.schema, self.layout.unpack(value)[0])


class _IntegralConverter(_NumberConverter):
    bits: ClassVar[int]

    def _coerce(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _SerializationError(f"not an integer: {value!r}")
        if not -(1 << (self.bits - 1)) <= value < 1 << (self.bits - 1):
            raise _SerializationError(f"{value} does not fit in {self.bits} bits")
        return value


class _FloatingConverter(_NumberConverter):
    def _coerce(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _SerializationError(f"not a number: {value!r}")
        return float(value)


class DoubleConverter(_FloatingConverter):
    type_name = "double"
    schema = Schema.OPTIONAL_FLOAT64_SCHEMA
    layout = struct.Struct(">d")
    deserializer_name = "DoubleDeserializer"


class FloatConverter(_FloatingConverter):
    type_name = "float"
    schema = Schema.OPTIONAL_FLOAT32_SCHEMA
    layout = struct.Struct(">f")
    deserializer_name = "FloatDeserializer"

    def _coerce(self, value: Any) -> float:
        # Java's float cast turns a too-large double into infinity; struct would refuse it
        return to_float32(super()._coerce(value))


class IntegerConverter(_IntegralConverter):
    type_name = "integer"
    schema = Schema.OPTIONAL_INT32_SCHEMA
    layout = struct.Struct(">i")
    deserializer_name = "IntegerDeserializer"
    bits = 32


class LongConverter(_IntegralConverter):
    type_name = "long"
    schema = Schema.OPTIONAL_INT64_SCHEMA
    layout = struct.Struct(">q")
    deserializer_name = "LongDeserializer"
    bits = 64


class ShortConverter(_IntegralConverter):
    type_name = "short"
    schema = Schema.OPTIONAL_INT16_SCHEMA
    layout = struct.Struct(">h")
    deserializer_name = "ShortDeserializer"
    bits = 16


class BooleanConverter(BuiltinConverter):
    """A boolean as one byte: 0x01 for true, 0x00 for false."""

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: ConnectHeaders | None = None
    ) -> bytes | None:
        if schema is not None and schema.type is not Type.BOOLEAN:
            raise DataException(f"Invalid schema type for BooleanConverter: {schema.type.name}")
        if value is None:
            return None
        if not isinstance(value, bool):
            raise DataException(f"BooleanConverter is not compatible with objects of type {type(value).__qualname__}")
        return b"\x01" if value else b"\x00"

    def to_connect_data(
        self, topic: str, value: bytes | None, headers: ConnectHeaders | None = None
    ) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, None)
        if len(value) != 1:
            raise DataException("Failed to deserialize boolean: Size of data received by BooleanDeserializer is not 1")
        if value[0] not in (0, 1):
            raise DataException(
                f"Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: {value[0]}"
            )
        return SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, value[0] == 1)
