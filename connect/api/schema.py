"""Schemas: Kafka Connect's data model in Python.

Value mapping: INT8..INT64 -> int, FLOAT32/FLOAT64 -> float, BOOLEAN -> bool,
STRING -> str, BYTES -> bytes, ARRAY -> list, MAP -> dict, STRUCT -> Struct.
Logical types: Decimal -> decimal.Decimal, Date -> datetime.date,
Time -> datetime.time, Timestamp -> datetime.datetime (UTC).

SchemaBuilder is in connect.api.schema_builder, Struct and validate_value in
connect.api.struct, the logical types in connect.api.logical_types.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, NamedTuple

from connect.api.errors import DataException

__all__ = [
    "DATE_LOGICAL_NAME",
    "DECIMAL_LOGICAL_NAME",
    "TIMESTAMP_LOGICAL_NAME",
    "TIME_LOGICAL_NAME",
    "Field",
    "Schema",
    "SchemaAndValue",
    "Type",
]


class Type(enum.Enum):
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    # members are singletons compared by identity: hash them by identity too (Enum's own __hash__ is
    # Python code, and Type keys the dict lookups of every Struct.put and converter call)
    __hash__ = object.__hash__

    @property
    def is_primitive(self) -> bool:
        return self not in (Type.ARRAY, Type.MAP, Type.STRUCT)


# The schema names that mark Connect's logical types. They live here rather than on the classes in
# connect.api.logical_types so that validate_value can recognise logical values without importing those
# classes, which are built with SchemaBuilder, which validates: the imports stay one-way.
DECIMAL_LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
DATE_LOGICAL_NAME = "org.apache.kafka.connect.data.Date"
TIME_LOGICAL_NAME = "org.apache.kafka.connect.data.Time"
TIMESTAMP_LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"


class Field(NamedTuple):
    name: str
    # Kafka's Field has index(); the tuple method of that name is shadowed on purpose
    index: int  # type: ignore[assignment]
    schema: Schema


class Schema:
    """An immutable schema. Build one with SchemaBuilder or use the constants below."""

    __slots__ = (
        "type",
        "optional",
        "default_value",
        "name",
        "version",
        "doc",
        "parameters",
        "_fields",
        "_fields_by_name",
        "key_schema",
        "value_schema",
        "_hash",
    )

    INT8_SCHEMA: Schema
    INT16_SCHEMA: Schema
    INT32_SCHEMA: Schema
    INT64_SCHEMA: Schema
    FLOAT32_SCHEMA: Schema
    FLOAT64_SCHEMA: Schema
    BOOLEAN_SCHEMA: Schema
    STRING_SCHEMA: Schema
    BYTES_SCHEMA: Schema
    OPTIONAL_INT8_SCHEMA: Schema
    OPTIONAL_INT16_SCHEMA: Schema
    OPTIONAL_INT32_SCHEMA: Schema
    OPTIONAL_INT64_SCHEMA: Schema
    OPTIONAL_FLOAT32_SCHEMA: Schema
    OPTIONAL_FLOAT64_SCHEMA: Schema
    OPTIONAL_BOOLEAN_SCHEMA: Schema
    OPTIONAL_STRING_SCHEMA: Schema
    OPTIONAL_BYTES_SCHEMA: Schema

    def __init__(
        self,
        type: Type,
        optional: bool = False,
        default_value: Any = None,
        name: str | None = None,
        version: int | None = None,
        doc: str | None = None,
        parameters: Mapping[str, str] | None = None,
        fields: list[Field] | None = None,
        key_schema: Schema | None = None,
        value_schema: Schema | None = None,
    ) -> None:
        self.type = type
        self.optional = optional
        self.default_value = default_value
        self.name = name
        self.version = version
        self.doc = doc
        self.parameters = dict(parameters) if parameters else None
        self._fields = list(fields or ()) if type is Type.STRUCT else None
        self._fields_by_name = {f.name: f for f in self._fields} if self._fields is not None else None
        self.key_schema = key_schema
        self.value_schema = value_schema
        self._hash: int | None = None

    def fields(self) -> list[Field]:
        if self._fields is None:
            raise DataException("Cannot list fields on non-struct type")
        return list(self._fields)

    def field(self, name: str) -> Field | None:
        if self._fields_by_name is None:
            raise DataException("Cannot look up fields on non-struct type")
        return self._fields_by_name.get(name)

    def schema(self) -> Schema:
        return self

    def _identity(self) -> tuple:
        params = tuple(sorted(self.parameters.items())) if self.parameters else None
        fields = (
            tuple((f.name, f.index, f.schema) for f in self._fields) if self._fields is not None else None
        )
        default = self.default_value
        if isinstance(default, dict | list):
            default = repr(default)
        return (
            self.type,
            self.optional,
            default,
            self.name,
            self.version,
            self.doc,
            params,
            fields,
            self.key_schema,
            self.value_schema,
        )

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return isinstance(other, Schema) and self._identity() == other._identity()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self._identity())
        return self._hash

    def __repr__(self) -> str:
        label = f"Schema{{{self.name + ':' if self.name else ''}{self.type.name}}}"
        return label if not self.optional else label[:-1] + ",optional}"


def _primitive(type_: Type, optional: bool = False) -> Schema:
    return Schema(type_, optional)


for _t in (
    Type.INT8,
    Type.INT16,
    Type.INT32,
    Type.INT64,
    Type.FLOAT32,
    Type.FLOAT64,
    Type.BOOLEAN,
    Type.STRING,
    Type.BYTES,
):
    setattr(Schema, f"{_t.name}_SCHEMA", _primitive(_t))
    setattr(Schema, f"OPTIONAL_{_t.name}_SCHEMA", _primitive(_t, True))


class SchemaAndValue(NamedTuple):
    schema: Schema | None
    value: Any


SchemaAndValue.NULL = SchemaAndValue(None, None)  # type: ignore[attr-defined]
