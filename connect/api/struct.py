"""Struct, the value of a STRUCT schema, and validate_value, which checks any value against its schema.

The two are one module because they call each other: every Struct.put validates, and validating a
struct validates its fields.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from connect.api.errors import DataException
from connect.api.java_text import java_to_string
from connect.api.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Field,
    Schema,
    Type,
)

__all__ = ["Struct", "validate_value"]

# id(schema) -> (schema, whether every field is STRING): text in such a schema needs no check per field. Keyed
# by identity, not equality: an equal schema built by another task (or the same task after a restart) would
# otherwise cost a full structural comparison on every lookup. The entry keeps its schema alive, so its id
# cannot be reused while the entry exists.
_TEXT_ONLY: dict[int, tuple[Schema, bool]] = {}


class Struct:
    """A value of a STRUCT schema; every put is checked against the field's schema."""

    __slots__ = ("schema", "_values")

    def __init__(self, schema: Schema) -> None:
        if schema.type is not Type.STRUCT:
            raise DataException("Not a struct schema: " + repr(schema))
        self.schema = schema
        self._values: list[Any] = [None] * len(schema.fields())

    @classmethod
    def of(cls, schema: Schema, values: Sequence[Any]) -> Struct:
        """A Struct of ``schema`` holding ``values`` in the schema's field order, each checked as ``put`` checks it.

        The way to build many Structs of one schema: no field is looked up by name, and a str in a STRING
        field (the common case of text sources) needs no further check.
        """
        if schema.type is not Type.STRUCT:
            raise DataException("Not a struct schema: " + repr(schema))
        fields = schema.fields()
        if len(values) != len(fields):
            raise DataException(f"{len(values)} values for the {len(fields)} fields of {schema!r}")
        known = _TEXT_ONLY.get(id(schema))
        if known is not None and known[0] is schema:
            text_only = known[1]
        else:
            text_only = all(f.schema.type is Type.STRING for f in fields)
            if len(_TEXT_ONLY) < 4096:
                _TEXT_ONLY[id(schema)] = (schema, text_only)
        if not text_only or any(v.__class__ is not str for v in values if v is not None) \
                or (None in values and any(not f.schema.optional for f in fields)):
            for f, value in zip(fields, values, strict=True):
                validate_value(f.schema, value, f.name)
        made = object.__new__(cls)
        made.schema = schema
        made._values = list(values)
        return made

    @classmethod
    def from_valid_values(cls, schema: Schema, values: list[Any]) -> Struct:
        """A struct of ``values`` (one per field, in field order) taken as they are, unchecked: for a converter
        whose decoder has already typed every value by the schema. The struct keeps the list."""
        if schema._fields is None or len(values) != len(schema._fields):
            raise DataException(f"{len(values)} value(s) do not fit struct schema {schema!r}")
        struct = cls.__new__(cls)
        struct.schema = schema
        struct._values = values
        return struct

    @classmethod
    def many_from_valid_values(cls, schema: Schema, rows: Sequence[list[Any]]) -> list[Struct]:
        """One struct per row of ``rows``, each taken as ``from_valid_values`` takes it (unchecked, the list
        kept): the bulk form for a source that has typed a whole batch of rows by the schema itself."""
        fields = schema._fields
        if fields is None or (rows and set(map(len, rows)) != {len(fields)}):
            raise DataException(f"a row does not fit the {len(fields or ())} fields of struct schema {schema!r}")
        new = cls.__new__
        made: list[Struct] = []
        add = made.append
        for row in rows:
            struct = new(cls)
            struct.schema = schema
            struct._values = row
            add(struct)
        return made

    def field_values(self) -> tuple[Any, ...]:
        """Every field's value in field order, as put (defaults not applied)."""
        return tuple(self._values)

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
        inner = ",".join(f"{f.name}={java_to_string(v)}" for f, v in zip(self.schema.fields(), self._values, strict=False)
                         if v is not None)
        return f"Struct{{{inner}}}"


_INT_BOUNDS = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}

_LOGICAL_PY_TYPES: dict[str, tuple[type, ...]] = {
    DECIMAL_LOGICAL_NAME: (_decimal.Decimal,),
    DATE_LOGICAL_NAME: (_dt.date,),
    TIME_LOGICAL_NAME: (_dt.time,),
    TIMESTAMP_LOGICAL_NAME: (_dt.datetime,),
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
