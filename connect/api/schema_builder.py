"""SchemaBuilder: builds a Schema step by step, checking a default value against the schema so far."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from connect.api.errors import SchemaBuilderException
from connect.api.schema import Field, Schema, Type
from connect.api.struct import validate_value

__all__ = ["SchemaBuilder"]


class SchemaBuilder:
    """Fluent builder: ``SchemaBuilder.struct().name("x").field("a", Schema.STRING_SCHEMA).build()``."""

    def __init__(self, type: Type) -> None:
        self.type = type
        self._optional = False
        self._default: Any = None
        self._name: str | None = None
        self._version: int | None = None
        self._doc: str | None = None
        self._parameters: dict[str, str] = {}
        self._fields: dict[str, Field] = {}
        self._key_schema: Schema | None = None
        self._value_schema: Schema | None = None

    # constructors per type
    @staticmethod
    def int8() -> SchemaBuilder:
        return SchemaBuilder(Type.INT8)

    @staticmethod
    def int16() -> SchemaBuilder:
        return SchemaBuilder(Type.INT16)

    @staticmethod
    def int32() -> SchemaBuilder:
        return SchemaBuilder(Type.INT32)

    @staticmethod
    def int64() -> SchemaBuilder:
        return SchemaBuilder(Type.INT64)

    @staticmethod
    def float32() -> SchemaBuilder:
        return SchemaBuilder(Type.FLOAT32)

    @staticmethod
    def float64() -> SchemaBuilder:
        return SchemaBuilder(Type.FLOAT64)

    @staticmethod
    def bool() -> SchemaBuilder:
        return SchemaBuilder(Type.BOOLEAN)

    @staticmethod
    def string() -> SchemaBuilder:
        return SchemaBuilder(Type.STRING)

    @staticmethod
    def bytes() -> SchemaBuilder:
        return SchemaBuilder(Type.BYTES)

    @staticmethod
    def struct() -> SchemaBuilder:
        return SchemaBuilder(Type.STRUCT)

    @staticmethod
    def array(value_schema: Schema) -> SchemaBuilder:
        builder = SchemaBuilder(Type.ARRAY)
        builder._value_schema = value_schema
        return builder

    @staticmethod
    def map(key_schema: Schema, value_schema: Schema) -> SchemaBuilder:
        builder = SchemaBuilder(Type.MAP)
        builder._key_schema = key_schema
        builder._value_schema = value_schema
        return builder

    @staticmethod
    def type_of(type_: Type) -> SchemaBuilder:
        return SchemaBuilder(type_)

    # properties
    def optional(self) -> SchemaBuilder:
        self._optional = True
        return self

    def required(self) -> SchemaBuilder:
        self._optional = False
        return self

    def default_value(self, value: Any) -> SchemaBuilder:
        if self._default is not None:
            raise SchemaBuilderException("Invalid SchemaBuilder call: default has already been set.")
        validate_value(self._peek(), value)
        self._default = value
        return self

    def name(self, name: str) -> SchemaBuilder:
        if self._name is not None and self._name != name:
            raise SchemaBuilderException("Invalid SchemaBuilder call: name has already been set.")
        self._name = name
        return self

    def version(self, version: int) -> SchemaBuilder:
        self._version = version
        return self

    def doc(self, doc: str) -> SchemaBuilder:
        self._doc = doc
        return self

    def parameter(self, name: str, value: str) -> SchemaBuilder:
        self._parameters[name] = value
        return self

    def parameters(self, params: Mapping[str, str]) -> SchemaBuilder:
        self._parameters.update(params)
        return self

    def field(self, name: str, schema: Schema | SchemaBuilder) -> SchemaBuilder:
        if self.type is not Type.STRUCT:
            raise SchemaBuilderException("Cannot create fields on type " + self.type.name)
        if not name:
            raise SchemaBuilderException("fieldName cannot be null.")
        if name in self._fields:
            raise SchemaBuilderException(f"Cannot create field because of field name duplication {name}")
        built = schema.build() if isinstance(schema, SchemaBuilder) else schema
        self._fields[name] = Field(name, len(self._fields), built)
        return self

    @property
    def is_optional(self) -> builtins.bool:  # SchemaBuilder.bool() shadows the builtin here
        return self._optional

    def _peek(self) -> Schema:
        return Schema(
            self.type,
            True,
            None,
            self._name,
            self._version,
            self._doc,
            self._parameters or None,
            list(self._fields.values()),
            self._key_schema,
            self._value_schema,
        )

    def build(self) -> Schema:
        return Schema(
            self.type,
            self._optional,
            self._default,
            self._name,
            self._version,
            self._doc,
            self._parameters or None,
            list(self._fields.values()),
            self._key_schema,
            self._value_schema,
        )
