"""Kafka Connect's ``Values`` utility: loose conversions between Connect values and their text form.

``parse_string`` infers a schema and value from text (booleans, the smallest
integer type that fits, floats, ``[...]`` arrays, ``{k:v}`` maps, ISO-8601
dates/times/timestamps, else the text itself); ``convert_to_string`` writes
the text form Kafka writes. SimpleHeaderConverter is built on the pair, so a
header written by Kafka reads back here with the same schema, and the other
way round. The ``convert_to_*`` functions coerce a value to one type.

This module holds the conversions (``convert_to`` and the ``convert_to_*``
functions), ``parse_string`` and the ``Values`` namespace. The other parts have
modules of their own: the parser in ``connect.api.value_parser``,
``convert_to_string`` in ``connect.api.value_text``, ``infer_schema`` in
``connect.api.schema_inference`` and Java's number formatting (which the JSON
converter uses too) in ``connect.api.java_numbers``.

Deliberate differences from Kafka, where Java's behaviour is an accident:

- Temporal text is parsed strictly (``yyyy-MM-dd``, ``HH:mm:ss.SSSZ``,
  ``yyyy-MM-ddTHH:mm:ss.SSSZ``, always UTC); Kafka's lenient SimpleDateFormat
  rolls ``25:00:00.000Z`` into a valid value, here it stays a string.
- Dates, times and timestamps are written in the format of their Python type.
  Kafka picks the format from the millisecond value, so it writes a midnight
  timestamp as a bare date and a date before 1970 as ``00:00:00.000Z``.
- Python has one ``int``: ``infer_schema`` gives INT64 for it (as the JSON
  converter's schemaless mode does) and ``float`` gives FLOAT64.
- Where Java would throw NullPointerException or NumberFormatException,
  DataException is raised.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import math
from collections.abc import Mapping
from typing import Any

from connect.api.errors import DataException
from connect.api.java_numbers import double_to_string, parse_big_decimal, to_float32
from connect.api.logical_types import Date, Decimal, Time, Timestamp
from connect.api.schema import Schema, SchemaAndValue, Type
from connect.api.schema_builder import SchemaBuilder
from connect.api.schema_inference import infer_schema
from connect.api.struct import Struct
from connect.api.value_parser import ValueParser
from connect.api.value_text import convert_to_string

__all__ = [
    "Values",
    "convert_to",
    "convert_to_boolean",
    "convert_to_byte",
    "convert_to_date",
    "convert_to_decimal",
    "convert_to_double",
    "convert_to_float",
    "convert_to_integer",
    "convert_to_list",
    "convert_to_long",
    "convert_to_map",
    "convert_to_short",
    "convert_to_struct",
    "convert_to_time",
    "convert_to_timestamp",
    "parse_string",
]

_MILLIS_PER_DAY = 86_400_000
_UTC = _dt.UTC

# --- numeric coercion ----------------------------------------------------------------------


def _wrap(value: int, bits: int) -> int:
    """Two's-complement narrowing, as Java's integer casts do."""
    modulus = 1 << bits
    value &= modulus - 1
    return value - modulus if value >= modulus >> 1 else value


def _double_to_long(value: float) -> int:
    # Java's (long) of a double: NaN is 0, out-of-range values saturate
    if value != value:
        return 0
    if value >= 2.0**63:
        return 2**63 - 1
    if value <= -(2.0**63):
        return -(2**63)
    return int(value)


def _temporal_millis(value: Any, schema: Schema | None) -> int | None:
    """A date, time or datetime as Connect's number, named by ``schema`` or else by its Python type."""
    if schema is not None and schema.name is not None:
        name = schema.name
        if name == Date.LOGICAL_NAME and isinstance(value, _dt.date):
            return Date.from_logical(schema, value)
        if name == Time.LOGICAL_NAME and isinstance(value, _dt.time | _dt.datetime):
            return Time.from_logical(schema, value)
        if name == Timestamp.LOGICAL_NAME and isinstance(value, _dt.datetime):
            return Timestamp.from_logical(schema, value)
        return None
    if isinstance(value, _dt.datetime):
        return Timestamp.from_logical(Timestamp.SCHEMA, value)
    if isinstance(value, _dt.date):
        return Date.from_logical(Date.SCHEMA, value)
    if isinstance(value, _dt.time):
        return Time.from_logical(Time.SCHEMA, value)
    return None


def _unconvertible(value: Any, target: object, cause: BaseException | None = None) -> DataException:
    error = DataException(f"Unable to convert {value} ({type(value).__qualname__}) to {target}")
    error.__cause__ = cause
    return error


def _as_long(value: Any, schema: Schema | None) -> int:
    cause: BaseException | None = None
    if isinstance(value, bool):
        pass  # a Java Boolean is not a Number
    elif isinstance(value, int):
        return _wrap(value, 64)
    elif isinstance(value, float):
        return _double_to_long(value)
    elif isinstance(value, _decimal.Decimal):
        if value.is_finite():
            return _wrap(int(value), 64)
    elif isinstance(value, str):
        parsed = parse_big_decimal(value)
        if parsed is not None:
            return _wrap(int(parsed), 64)
        cause = ValueError(f"not a number: {value!r}")
    millis = _temporal_millis(value, schema)
    if millis is not None:
        return millis
    raise _unconvertible(value, schema if schema is not None else "a number", cause)


def _as_double(value: Any, schema: Schema | None) -> float:
    if isinstance(value, float):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            return math.copysign(math.inf, value)
    if isinstance(value, _decimal.Decimal):
        return float(value)
    if isinstance(value, str):
        parsed = parse_big_decimal(value)
        if parsed is not None:
            return float(parsed)
    return float(_as_long(value, schema))


def convert_to_boolean(schema: Schema | None, value: Any) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        parsed = parse_string(value)
        if parsed is not None and isinstance(parsed.value, bool):
            return parsed.value
    return _as_long(value, schema) != 0


def convert_to_byte(schema: Schema | None, value: Any) -> int | None:
    return None if value is None else _wrap(_as_long(value, schema), 8)


def convert_to_short(schema: Schema | None, value: Any) -> int | None:
    return None if value is None else _wrap(_as_long(value, schema), 16)


def convert_to_integer(schema: Schema | None, value: Any) -> int | None:
    return None if value is None else _wrap(_as_long(value, schema), 32)


def convert_to_long(schema: Schema | None, value: Any) -> int | None:
    return None if value is None else _as_long(value, schema)


def convert_to_float(schema: Schema | None, value: Any) -> float | None:
    return None if value is None else to_float32(_as_double(value, schema))


def convert_to_double(schema: Schema | None, value: Any) -> float | None:
    return None if value is None else _as_double(value, schema)


# --- logical and structured coercion ----------------------------------------------------------

_ARRAY_SELECTOR = SchemaBuilder.array(Schema.STRING_SCHEMA).build()
_MAP_SELECTOR = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build()
_STRUCT_SELECTOR = SchemaBuilder.struct().build()


def _require(value: Any) -> None:
    if value is None:
        raise DataException("Unable to convert a null value to a schema that requires a value")


def _parsed_value(text: str) -> Any:
    parsed = parse_string(text)
    return parsed.value if parsed is not None else None


def _parsed_if_text(value: Any) -> Any:
    """Text parsed into the value it denotes (which must not be null); anything else as it is."""
    if isinstance(value, str):
        value = _parsed_value(value)
        _require(value)
    return value


def _to_date(to_schema: Schema, from_schema: Schema | None, value: Any) -> _dt.date:
    value = _parsed_if_text(value)
    if isinstance(value, _dt.datetime):
        millis = Timestamp.from_logical(Timestamp.SCHEMA, value)
        days = abs(millis) // _MILLIS_PER_DAY  # Java's integer division truncates toward zero
        return Date.to_logical(to_schema, days if millis >= 0 else -days)
    if isinstance(value, _dt.date):
        return value
    return Date.to_logical(to_schema, _wrap(_as_long(value, from_schema), 32))


def _to_time(to_schema: Schema, from_schema: Schema | None, value: Any) -> _dt.time:
    value = _parsed_if_text(value)
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_UTC)
        return value.time().replace(tzinfo=None)
    if isinstance(value, _dt.time):
        return value
    return Time.to_logical(to_schema, _wrap(_as_long(value, from_schema), 32))


def _to_timestamp(to_schema: Schema, from_schema: Schema | None, value: Any) -> _dt.datetime:
    value = _parsed_if_text(value)
    if isinstance(value, _dt.datetime):
        return value
    if isinstance(value, _dt.date):
        return Timestamp.to_logical(to_schema, Date.from_logical(Date.SCHEMA, value) * _MILLIS_PER_DAY)
    if isinstance(value, _dt.time):
        return Timestamp.to_logical(to_schema, Time.from_logical(Time.SCHEMA, value))
    return Timestamp.to_logical(to_schema, _as_long(value, from_schema))


def _to_decimal(to_schema: Schema, value: Any) -> _decimal.Decimal:
    if isinstance(value, bytes | bytearray | memoryview):
        return Decimal.to_logical(to_schema, bytes(value))
    if isinstance(value, _decimal.Decimal):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        # Java goes through BigDecimal.valueOf(double), i.e. the double's shortest text
        return _decimal.Decimal(double_to_string(_as_double(value, None)))
    if isinstance(value, str):
        parsed = parse_big_decimal(value)
        if parsed is not None:
            return parsed
    raise _unconvertible(value, to_schema)


def _to_bytes(to_schema: Schema, value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, _decimal.Decimal):
        return Decimal.from_logical(to_schema, value)
    raise _unconvertible(value, to_schema)


def _to_list(to_schema: Schema, value: Any) -> list[Any]:
    _require(value)
    if isinstance(value, str):
        value = _parsed_value(value)
    if isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    raise _unconvertible(value, to_schema)


def _to_map(to_schema: Schema, value: Any) -> Mapping[Any, Any]:
    _require(value)
    if isinstance(value, str):
        value = _parsed_value(value)
    if isinstance(value, Mapping):
        return value
    raise _unconvertible(value, to_schema)


def _to_struct(to_schema: Schema, value: Any) -> Struct:
    _require(value)
    if isinstance(value, Struct):
        return value
    raise _unconvertible(value, to_schema)


def convert_to_list(schema: Schema | None, value: Any) -> list[Any]:
    return _to_list(_ARRAY_SELECTOR, value)


def convert_to_map(schema: Schema | None, value: Any) -> Mapping[Any, Any]:
    return _to_map(_MAP_SELECTOR, value)


def convert_to_struct(schema: Schema | None, value: Any) -> Struct:
    return _to_struct(_STRUCT_SELECTOR, value)


def convert_to_time(schema: Schema | None, value: Any) -> _dt.time:
    _require(value)
    return _to_time(Time.SCHEMA, schema, value)


def convert_to_date(schema: Schema | None, value: Any) -> _dt.date:
    _require(value)
    return _to_date(Date.SCHEMA, schema, value)


def convert_to_timestamp(schema: Schema | None, value: Any) -> _dt.datetime:
    _require(value)
    return _to_timestamp(Timestamp.SCHEMA, schema, value)


def convert_to_decimal(schema: Schema | None, value: Any, scale: int) -> _decimal.Decimal:
    _require(value)
    return _to_decimal(Decimal.schema(scale), value)


def convert_to(to_schema: Schema, from_schema: Schema | None, value: Any) -> Any:
    """Coerce ``value`` (described by ``from_schema``, if known) to ``to_schema``."""
    if value is None:
        if to_schema.optional:
            return None
        raise DataException("Unable to convert a null value to a schema that requires a value")
    type_ = to_schema.type
    name = to_schema.name
    if type_ is Type.BYTES:
        return _to_decimal(to_schema, value) if name == Decimal.LOGICAL_NAME else _to_bytes(to_schema, value)
    if type_ is Type.STRING:
        return convert_to_string(from_schema, value)
    if type_ is Type.BOOLEAN:
        return convert_to_boolean(from_schema, value)
    if type_ is Type.INT8:
        return convert_to_byte(from_schema, value)
    if type_ is Type.INT16:
        return convert_to_short(from_schema, value)
    if type_ is Type.INT32:
        if name == Date.LOGICAL_NAME:
            return _to_date(to_schema, from_schema, value)
        if name == Time.LOGICAL_NAME:
            return _to_time(to_schema, from_schema, value)
        return convert_to_integer(from_schema, value)
    if type_ is Type.INT64:
        if name == Timestamp.LOGICAL_NAME:
            return _to_timestamp(to_schema, from_schema, value)
        return convert_to_long(from_schema, value)
    if type_ is Type.FLOAT32:
        return convert_to_float(from_schema, value)
    if type_ is Type.FLOAT64:
        return convert_to_double(from_schema, value)
    if type_ is Type.ARRAY:
        return _to_list(to_schema, value)
    if type_ is Type.MAP:
        return _to_map(to_schema, value)
    return _to_struct(to_schema, value)


# --- parsing ----------------------------------------------------------------------------------------


def parse_string(value: str | None) -> SchemaAndValue | None:
    """Infer a schema and value from text written by ``convert_to_string`` (or by hand).

    Returns ``SchemaAndValue(None, None)`` for None and, as Kafka does, None for the
    literal ``null``.
    """
    if value is None:
        return SchemaAndValue(None, None)
    if not value:
        return SchemaAndValue(Schema.STRING_SCHEMA, value)
    return ValueParser(value, convert_to).parse(False)


class Values:
    """Kafka's ``Values`` as one namespace, for code ported from Java."""

    parse_string = staticmethod(parse_string)
    infer_schema = staticmethod(infer_schema)
    convert_to = staticmethod(convert_to)
    convert_to_string = staticmethod(convert_to_string)
    convert_to_boolean = staticmethod(convert_to_boolean)
    convert_to_byte = staticmethod(convert_to_byte)
    convert_to_short = staticmethod(convert_to_short)
    convert_to_integer = staticmethod(convert_to_integer)
    convert_to_long = staticmethod(convert_to_long)
    convert_to_float = staticmethod(convert_to_float)
    convert_to_double = staticmethod(convert_to_double)
    convert_to_list = staticmethod(convert_to_list)
    convert_to_map = staticmethod(convert_to_map)
    convert_to_struct = staticmethod(convert_to_struct)
    convert_to_time = staticmethod(convert_to_time)
    convert_to_date = staticmethod(convert_to_date)
    convert_to_timestamp = staticmethod(convert_to_timestamp)
    convert_to_decimal = staticmethod(convert_to_decimal)
