"""Schemas, structs and logical types: Kafka Connect's data model in Python.

Value mapping: INT8..INT64 -> int, FLOAT32/FLOAT64 -> float, BOOLEAN -> bool,
STRING -> str, BYTES -> bytes, ARRAY -> list, MAP -> dict, STRUCT -> Struct.
Logical types: Decimal -> decimal.Decimal, Date -> datetime.date,
Time -> datetime.time, Timestamp -> datetime.datetime (UTC).
"""

from __future__ import annotations

import builtins
import datetime as _dt
import decimal as _decimal
import enum
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from connect.api.errors import DataException, SchemaBuilderException

__all__ = [
    "Date",
    "Decimal",
    "Field",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "Struct",
    "Time",
    "Timestamp",
    "Type",
    "validate_value",
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


_INT_BOUNDS = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}


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


class SchemaAndValue(NamedTuple):
    schema: Schema | None
    value: Any


SchemaAndValue.NULL = SchemaAndValue(None, None)  # type: ignore[attr-defined]


class Struct:
    """A value of a STRUCT schema; every put is checked against the field's schema."""

    __slots__ = ("schema", "_values")

    def __init__(self, schema: Schema) -> None:
        if schema.type is not Type.STRUCT:
            raise DataException("Not a struct schema: " + repr(schema))
        self.schema = schema
        self._values: list[Any] = [None] * len(schema.fields())

    def _field(self, name: str) -> Field:
        field = self.schema.field(name)
        if field is None:
            raise DataException(f"{name} is not a valid field name")
        return field

    def put(self, field: str | Field, value: Any) -> Struct:
        f = self._field(field) if isinstance(field, str) else field
        validate_value(f.schema, value, f.name)
        self._values[f.index] = value
        return self

    def get(self, field: str | Field) -> Any:
        f = self._field(field) if isinstance(field, str) else field
        value = self._values[f.index]
        if value is None and f.schema.default_value is not None:
            return f.schema.default_value
        return value

    def get_without_default(self, name: str) -> Any:
        return self._values[self._field(name).index]

    # typed getters, for parity with Kafka's Struct API
    def get_string(self, name: str) -> str | None:
        return self.get(name)

    def get_int32(self, name: str) -> int | None:
        return self.get(name)

    def get_int64(self, name: str) -> int | None:
        return self.get(name)

    def get_struct(self, name: str) -> Struct | None:
        return self.get(name)

    def validate(self) -> None:
        for f in self.schema.fields():
            validate_value(f.schema, self._values[f.index], f.name)

    def items(self) -> Iterator[tuple[str, Any]]:
        for f in self.schema.fields():
            yield f.name, self.get(f)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Struct) and self.schema == other.schema and self._values == other._values

    def __hash__(self) -> int:
        return hash((self.schema, tuple(repr(v) for v in self._values)))

    def __repr__(self) -> str:
        inner = ",".join(f"{name}={value!r}" for name, value in self.items())
        return f"Struct{{{inner}}}"

    def __str__(self) -> str:
        """Kafka's Struct.toString (what FileStreamSink writes): ``Struct{a=x,b=1}``, null fields left out."""
        inner = ",".join(f"{f.name}={_java_text(v)}" for f, v in zip(self.schema.fields(), self._values, strict=False)
                         if v is not None)
        return f"Struct{{{inner}}}"


def _java_text(value: Any) -> str:
    """A value as Java's toString would print it inside a Struct."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_java_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_java_text(k)}={_java_text(v)}" for k, v in value.items()) + "}"
    return str(value)


# --- logical types ---------------------------------------------------------

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MS_PER_DAY = 86_400_000


class Decimal:
    LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
    SCALE_FIELD = "scale"

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        return (
            SchemaBuilder.bytes()
            .name(Decimal.LOGICAL_NAME)
            .parameter(Decimal.SCALE_FIELD, str(scale))
            .version(1)
        )

    @staticmethod
    def schema(scale: int) -> Schema:
        return Decimal.builder(scale).build()

    @staticmethod
    def scale(schema: Schema) -> int:
        try:
            return int((schema.parameters or {})[Decimal.SCALE_FIELD])
        except (KeyError, ValueError):
            raise DataException("Invalid Decimal schema: scale parameter not found.") from None

    @staticmethod
    def from_logical(schema: Schema, value: _decimal.Decimal) -> bytes:
        """The minimal big-endian two's-complement bytes of the unscaled value, as Java's BigInteger writes."""
        scale = Decimal.scale(schema)
        exponent = value.as_tuple().exponent
        if not isinstance(exponent, int) or exponent != -scale:
            raise DataException("Decimal value has mismatching scale for given Decimal schema")
        unscaled = int(value.scaleb(scale))
        length = ((unscaled if unscaled >= 0 else ~unscaled).bit_length() + 8) // 8
        return unscaled.to_bytes(length, "big", signed=True)

    @staticmethod
    def to_logical(schema: Schema, value: bytes) -> _decimal.Decimal:
        unscaled = int.from_bytes(value, "big", signed=True)
        return _decimal.Decimal(unscaled).scaleb(-Decimal.scale(schema))


class Date:
    LOGICAL_NAME = "org.apache.kafka.connect.data.Date"

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Date.LOGICAL_NAME).version(1)

    SCHEMA: Schema

    @staticmethod
    def from_logical(schema: Schema, value: _dt.date) -> int:
        if isinstance(value, _dt.datetime):
            if value.time() != _dt.time(0) and value.tzinfo is not None:
                raise DataException(
                    "Kafka Connect Date type should not have any time fields set to non-zero values."
                )
            value = value.date()
        return (value - _EPOCH_DATE).days

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.date:
        return _EPOCH_DATE + _dt.timedelta(days=value)


class Time:
    LOGICAL_NAME = "org.apache.kafka.connect.data.Time"

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Time.LOGICAL_NAME).version(1)

    SCHEMA: Schema

    @staticmethod
    def from_logical(schema: Schema, value: _dt.time) -> int:
        if isinstance(value, _dt.datetime):
            value = value.time()
        millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        if not 0 <= millis < _MS_PER_DAY:
            raise DataException(
                "Kafka Connect Time type should not have any date fields set to non-zero values."
            )
        return millis

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.time:
        if not 0 <= value < _MS_PER_DAY:
            raise DataException(
                "Time values must use number of milliseconds greater than 0 and less than 86400000"
            )
        seconds, ms = divmod(value, 1000)
        minutes, sec = divmod(seconds, 60)
        hours, minute = divmod(minutes, 60)
        return _dt.time(hours, minute, sec, ms * 1000)


class Timestamp:
    LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int64().name(Timestamp.LOGICAL_NAME).version(1)

    SCHEMA: Schema

    @staticmethod
    def from_logical(schema: Schema, value: _dt.datetime) -> int:
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.datetime:
        return _EPOCH + _dt.timedelta(milliseconds=value)


Date.SCHEMA = Date.builder().build()
Time.SCHEMA = Time.builder().build()
Timestamp.SCHEMA = Timestamp.builder().build()

LOGICAL_TYPES: dict[str, type] = {
    Decimal.LOGICAL_NAME: Decimal,
    Date.LOGICAL_NAME: Date,
    Time.LOGICAL_NAME: Time,
    Timestamp.LOGICAL_NAME: Timestamp,
}

_LOGICAL_PY_TYPES: dict[str, tuple[type, ...]] = {
    Decimal.LOGICAL_NAME: (_decimal.Decimal,),
    Date.LOGICAL_NAME: (_dt.date,),
    Time.LOGICAL_NAME: (_dt.time,),
    Timestamp.LOGICAL_NAME: (_dt.datetime,),
}

_PY_TYPES: dict[Type, tuple[type, ...]] = {
    Type.INT8: (int,),
    Type.INT16: (int,),
    Type.INT32: (int,),
    Type.INT64: (int,),
    Type.FLOAT32: (float, int),
    Type.FLOAT64: (float, int),
    Type.BOOLEAN: (bool,),
    Type.STRING: (str,),
    Type.BYTES: (bytes, bytearray, memoryview),
    Type.ARRAY: (list, tuple),
    Type.MAP: (dict, Mapping),
    Type.STRUCT: (Struct,),
}


def _where(field_name: str | None) -> str:
    # only built when a value is wrong: validate_value runs for every Struct.put
    return f' for field: "{field_name}"' if field_name else ""


def validate_value(schema: Schema, value: Any, field_name: str | None = None) -> None:
    """Raise DataException if ``value`` does not fit ``schema``."""
    if value is None:
        if not schema.optional and schema.default_value is None:
            raise DataException(
                f"Invalid value: null used for required field{_where(field_name)}, schema type: {schema.type.name}"
            )
        return
    if schema.name in _LOGICAL_PY_TYPES:
        if isinstance(value, _LOGICAL_PY_TYPES[schema.name]):
            return
    expected = _PY_TYPES[schema.type]
    checked: Any = value  # the isinstance check below would narrow value to object
    if not isinstance(value, expected) or (schema.type in _INT_BOUNDS and isinstance(value, bool)):
        raise DataException(
            f"Invalid Java object for schema with type {schema.type.name}: {type(value).__name__}{_where(field_name)}"
        )
    if schema.type in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[schema.type]
        if not lo <= checked <= hi:
            raise DataException(f"Value {value} out of range for schema type {schema.type.name}{_where(field_name)}")
    elif schema.type is Type.STRUCT:
        if checked.schema != schema:
            raise DataException(f"Struct schemas do not match{_where(field_name)}.")
        checked.validate()
    elif schema.type is Type.ARRAY and schema.value_schema is not None:
        for item in checked:
            validate_value(schema.value_schema, item, field_name)
    elif schema.type is Type.MAP and schema.key_schema is not None and schema.value_schema is not None:
        for k, v in checked.items():
            validate_value(schema.key_schema, k, field_name)
            validate_value(schema.value_schema, v, field_name)
