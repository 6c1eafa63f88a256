"""Kafka Connect's ``Values`` utility: loose conversions between Connect values and their text form.

``parse_string`` infers a schema and value from text (booleans, the smallest
integer type that fits, floats, ``[...]`` arrays, ``{k:v}`` maps, ISO-8601
dates/times/timestamps, else the text itself); ``convert_to_string`` writes
the text form Kafka writes. SimpleHeaderConverter is built on the pair, so a
header written by Kafka reads back here with the same schema, and the other
way round. The ``convert_to_*`` functions coerce a value to one type.

The number formatters (``double_to_string``, ``float_to_string``,
``decimal_to_string``) reproduce Java's ``Double.toString``, ``Float.toString``
(JDK 19+, shortest form) and ``BigDecimal.toString``; the JSON converter uses
them too so its output matches Kafka's byte for byte.

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

import base64
import datetime as _dt
import decimal as _decimal
import math
import re
import struct
from collections.abc import Mapping
from typing import Any

from connect.api.errors import DataException
from connect.api.schema import (
    Date,
    Decimal,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
)

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
    "convert_to_string",
    "convert_to_struct",
    "convert_to_time",
    "convert_to_timestamp",
    "decimal_to_string",
    "double_to_string",
    "float_to_string",
    "infer_schema",
    "parse_string",
    "to_float32",
]

_MILLIS_PER_DAY = 86_400_000
_UTC = _dt.UTC

# --- Java number formatting ------------------------------------------------------------

_F32 = struct.Struct(">f")


def to_float32(value: float) -> float:
    """Round to the nearest 32-bit float, infinite beyond its range (Java's ``(float)`` cast)."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _digits_and_exponent(literal: str) -> tuple[str, int]:
    """Significant digits (no trailing zeros) and the power of ten of the first one."""
    _sign, digits, exponent = _decimal.Decimal(literal).as_tuple()
    text = "".join(map(str, digits))
    return text.rstrip("0") or "0", len(digits) - 1 + int(exponent)


def _java_layout(negative: bool, digits: str, exp10: int) -> str:
    # Java prints plainly for 1e-3 <= |x| < 1e7, else as d.dddE<n>; always a digit after the point.
    if -3 <= exp10 < 7:
        if exp10 >= 0:
            text = digits[: exp10 + 1].ljust(exp10 + 1, "0") + "." + (digits[exp10 + 1 :] or "0")
        else:
            text = "0." + "0" * (-exp10 - 1) + digits
    else:
        text = digits[0] + "." + (digits[1:] or "0") + "E" + str(exp10)
    return "-" + text if negative else text


def _non_finite(value: float) -> str | None:
    if value != value:
        return "NaN"
    if value == math.inf:
        return "Infinity"
    if value == -math.inf:
        return "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return None


def _prefer_two_digits(magnitude: float, literal: str, round_trip: Any) -> str:
    # Java considers two-digit decimals when one digit suffices and takes the closest; this only
    # changes the answer for the least precise subnormals (5e-324 prints as 4.9E-324).
    if len(_digits_and_exponent(literal)[0]) != 1:
        return literal
    candidate = f"{magnitude:.1e}"
    if round_trip(float(candidate)) != magnitude:
        return literal
    exact = _decimal.Decimal(magnitude)
    if abs(_decimal.Decimal(candidate) - exact) < abs(_decimal.Decimal(literal) - exact):
        return candidate
    return literal


def double_to_string(value: float) -> str:
    """Java's ``Double.toString``: ``1.0``, ``123.456``, ``1.0E10``, ``1.5E-5``, ``NaN``."""
    value = float(value)
    special = _non_finite(value)
    if special is not None:
        return special
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        return repr(value)  # Python's shortest repr is laid out exactly like Java's in this range
    literal = repr(magnitude)
    if magnitude < 1e-320:
        literal = _prefer_two_digits(magnitude, literal, float)
    digits, exp10 = _digits_and_exponent(literal)
    return _java_layout(value < 0, digits, exp10)


def float_to_string(value: float) -> str:
    """Java's ``Float.toString`` of ``value`` rounded to 32 bits: ``0.1``, ``3.4028235E38``."""
    single = to_float32(float(value))
    special = _non_finite(single)
    if special is not None:
        return special
    magnitude = abs(single)
    literal = repr(magnitude)
    for precision in range(9):
        candidate = f"{magnitude:.{precision}e}"
        if to_float32(float(candidate)) == magnitude:
            literal = candidate
            break
    if magnitude < 1e-43:
        literal = _prefer_two_digits(magnitude, literal, to_float32)
    digits, exp10 = _digits_and_exponent(literal)
    return _java_layout(single < 0, digits, exp10)


def decimal_to_string(value: _decimal.Decimal) -> str:
    """Java's ``BigDecimal.toString`` (the same rules as Python's, but with no negative zero)."""
    if not value.is_finite():
        raise DataException(f"Decimal value is not a finite number: {value}")
    if value.is_zero() and value.is_signed():
        value = value.copy_abs()
    return str(value)


# --- value to string ---------------------------------------------------------------------


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _timestamp_text(value: _dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(_UTC)
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:"
        f"{value.second:02d}.{value.microsecond // 1000:03d}Z"
    )


def _date_text(value: _dt.date) -> str:
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def _time_text(value: _dt.time) -> str:
    return f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond // 1000:03d}Z"


def _child(schema: Schema | None, type_: Type, attr: str) -> Schema | None:
    if schema is None or schema.type is not type_:
        return None
    return getattr(schema, attr)


def _append(out: list[str], schema: Schema | None, value: Any, embedded: bool) -> None:
    if value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        # the schema stands in for Java's boxed type: a FLOAT32 value prints as a Float
        is_float32 = schema is not None and schema.type is Type.FLOAT32
        out.append(float_to_string(value) if is_float32 else double_to_string(value))
    elif isinstance(value, _decimal.Decimal):
        out.append(decimal_to_string(value))
    elif isinstance(value, str):
        out.append('"' + _escape(value) + '"' if embedded else value)
    elif isinstance(value, bytes | bytearray | memoryview):
        text = base64.b64encode(value).decode("ascii")
        out.append('"' + text + '"' if embedded else text)
    elif isinstance(value, list | tuple):
        element_schema = _child(schema, Type.ARRAY, "value_schema")
        out.append("[")
        for i, element in enumerate(value):
            if i:
                out.append(",")
            _append(out, element_schema, element, True)
        out.append("]")
    elif isinstance(value, Mapping):
        key_schema = _child(schema, Type.MAP, "key_schema")
        value_schema = _child(schema, Type.MAP, "value_schema")
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            _append(out, key_schema, k, True)
            out.append(":")
            _append(out, value_schema, v, True)
        out.append("}")
    elif isinstance(value, Struct):
        out.append("{")
        for i, field in enumerate(value.schema.fields()):
            if i:
                out.append(",")
            _append(out, None, field.name, True)
            out.append(":")
            _append(out, field.schema, value.get(field), True)
        out.append("}")
    elif isinstance(value, _dt.datetime):
        out.append(_timestamp_text(value))
    elif isinstance(value, _dt.date):
        out.append(_date_text(value))
    elif isinstance(value, _dt.time):
        out.append(_time_text(value))
    else:
        raise DataException(f"Failed to serialize unexpected value type {type(value).__qualname__}: {value!r}")


def convert_to_string(schema: Schema | None, value: Any) -> str | None:
    """The text form Kafka gives ``value``; strings nested in arrays, maps and structs are quoted."""
    if value is None:
        return None
    out: list[str] = []
    _append(out, schema, value, False)
    return "".join(out)


# --- numeric coercion ----------------------------------------------------------------------

# Java's BigDecimal(String) grammar: no whitespace, no NaN/Infinity, no underscores
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _parse_big_decimal(text: str) -> _decimal.Decimal | None:
    if _NUMBER.fullmatch(text) is None:
        return None
    return _decimal.Decimal(text)


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
    name = schema.name if schema is not None else None
    if name == Date.LOGICAL_NAME and isinstance(value, _dt.date):
        return Date.from_logical(schema, value)  # type: ignore[arg-type]
    if name == Time.LOGICAL_NAME and isinstance(value, _dt.time | _dt.datetime):
        return Time.from_logical(schema, value)  # type: ignore[arg-type]
    if name == Timestamp.LOGICAL_NAME and isinstance(value, _dt.datetime):
        return Timestamp.from_logical(schema, value)  # type: ignore[arg-type]
    if name is None:
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
        parsed = _parse_big_decimal(value)
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
        parsed = _parse_big_decimal(value)
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
        parsed = _parse_big_decimal(value)
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


# --- schema inference ----------------------------------------------------------------------------


class _SchemaDetector:
    """Finds the one type shared by every non-null value, or gives up."""

    def __init__(self) -> None:
        self.known: Type | None = None
        self.optional = False

    def can_detect(self, value: Any) -> bool:
        if value is None:
            self.optional = True
            return True
        schema = infer_schema(value)
        if schema is None:
            return False
        if self.known is None:
            self.known = schema.type
        return self.known is schema.type

    def schema(self) -> Schema | None:
        return Schema(self.known, self.optional) if self.known is not None else None


def infer_schema(value: Any) -> Schema | None:
    """A schema for ``value``, or None when none can be told (null, empty or mixed collections)."""
    if isinstance(value, str):
        return Schema.STRING_SCHEMA
    if isinstance(value, bool):
        return Schema.BOOLEAN_SCHEMA
    if isinstance(value, int):
        return Schema.INT64_SCHEMA if -(2**63) <= value < 2**63 else None
    if isinstance(value, float):
        return Schema.FLOAT64_SCHEMA
    if isinstance(value, bytes | bytearray | memoryview):
        return Schema.BYTES_SCHEMA
    if isinstance(value, list | tuple):
        if not value:
            return None
        detector = _SchemaDetector()
        if not all(detector.can_detect(v) for v in value):
            return None
        element = detector.schema()
        return SchemaBuilder.array(element).build() if element is not None else None
    if isinstance(value, Mapping):
        if not value:
            return None
        keys, values = _SchemaDetector(), _SchemaDetector()
        if not all(keys.can_detect(k) and values.can_detect(v) for k, v in value.items()):
            return None
        key_schema, value_schema = keys.schema(), values.schema()
        if key_schema is None or value_schema is None:
            return None
        return SchemaBuilder.map(key_schema, value_schema).build()
    if isinstance(value, Struct):
        return value.schema
    return None


# --- parsing ----------------------------------------------------------------------------------------

# Java's String.trim() strips every char up to U+0020, not just whitespace
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))
_DELIMITERS = frozenset(':,{}[]"')
_NUMERIC_ORDER = {Type.INT8: 0, Type.INT16: 1, Type.INT32: 2, Type.INT64: 3, Type.FLOAT32: 4, Type.FLOAT64: 5}
_BIGGER_THAN_LONG = _decimal.Decimal("1e19")
_TRUE = SchemaAndValue(Schema.BOOLEAN_SCHEMA, True)
_FALSE = SchemaAndValue(Schema.BOOLEAN_SCHEMA, False)

_TIME_RE = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z")
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIMESTAMP_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z")


def _trim(text: str) -> str:
    return text.strip(_JAVA_TRIM)


def _is_blank(text: str) -> bool:
    return not text.strip(_JAVA_TRIM)


def _parse_temporal(token: str) -> SchemaAndValue | None:
    token = token.replace("\\:", ":")  # colons may have been escaped to keep the token whole
    length = len(token)
    try:
        if length == 13:
            m = _TIME_RE.fullmatch(token)
            if m:
                h, mi, s, ms = map(int, m.groups())
                return SchemaAndValue(Time.SCHEMA, _dt.time(h, mi, s, ms * 1000))
        elif length == 24:
            m = _TIMESTAMP_RE.fullmatch(token)
            if m:
                y, mo, d, h, mi, s, ms = map(int, m.groups())
                return SchemaAndValue(Timestamp.SCHEMA, _dt.datetime(y, mo, d, h, mi, s, ms * 1000, tzinfo=_UTC))
        elif length == 10:
            m = _DATE_RE.fullmatch(token)
            if m:
                return SchemaAndValue(Date.SCHEMA, _dt.date(*map(int, m.groups())))
    except ValueError:  # a field out of range: not a date after all
        return None
    return None


def _exact_integer(number: _decimal.Decimal) -> SchemaAndValue | None:
    magnitude = abs(number)
    if magnitude > _BIGGER_THAN_LONG or (magnitude < 1 and not number.is_zero()):
        return None
    if number != number.to_integral_value():
        return None
    integral = int(number)
    if not -(2**63) <= integral < 2**63:
        return None
    if -(2**7) <= integral < 2**7:
        return SchemaAndValue(Schema.INT8_SCHEMA, integral)
    if -(2**15) <= integral < 2**15:
        return SchemaAndValue(Schema.INT16_SCHEMA, integral)
    if -(2**31) <= integral < 2**31:
        return SchemaAndValue(Schema.INT32_SCHEMA, integral)
    return SchemaAndValue(Schema.INT64_SCHEMA, integral)


def _parse_number(token: str) -> SchemaAndValue | None:
    number = _parse_big_decimal(token)
    if number is None:
        return None
    exact = _exact_integer(number)
    if exact is not None:
        return exact
    scale = -int(number.as_tuple().exponent)
    as_double = float(number)
    as_float = to_float32(as_double)
    if scale != 0 and not math.isinf(as_float):
        return SchemaAndValue(Schema.FLOAT32_SCHEMA, as_float)
    if scale != 0 and not math.isinf(as_double):
        return SchemaAndValue(Schema.FLOAT64_SCHEMA, as_double)
    return SchemaAndValue(Decimal.schema(scale), number)


def _merge_schemas(previous: Schema, latest: Schema) -> Schema | None:
    """A schema for values of both, widening numbers; None when there is none."""
    if previous.type is not latest.type:
        old_rank = _NUMERIC_ORDER.get(previous.type)
        new_rank = _NUMERIC_ORDER.get(latest.type)
        if old_rank is None or new_rank is None:
            return None
        return latest if new_rank > old_rank else previous
    if previous.optional == latest.optional:
        return previous if previous.optional else latest
    return None  # same type, one optional and one not: never equal


class _SchemaMerger:
    def __init__(self) -> None:
        self.common: Schema | None = None
        self.compatible = True

    def merge(self, latest: SchemaAndValue | None) -> None:
        if latest is None or latest.schema is None or not self.compatible:
            return
        if self.common is None:
            self.common = latest.schema
        else:
            self.common = _merge_schemas(self.common, latest.schema)
            self.compatible = self.common is not None


class _Tokenizer:
    """Splits text at unescaped ``: , { } [ ] "``; each delimiter is a token of its own.

    A backslash escapes the next character and stays in the token, as in Kafka.
    """

    __slots__ = ("text", "pos", "peeked", "previous")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.peeked: str | None = None
        self.previous: str | None = None

    def mark(self) -> int:
        return self.pos - (len(self.peeked) if self.peeked is not None else 0)

    def rewind(self, position: int) -> None:
        self.pos = position
        self.peeked = None
        self.previous = None

    def has_next(self) -> bool:
        return self.peeked is not None or self.pos < len(self.text)

    def _scan(self) -> str:
        text = self.text
        start = i = self.pos
        end = len(text)
        escaped = False
        while i < end:
            char = text[i]
            if char == "\\":
                escaped = not escaped
            elif char in _DELIMITERS and not escaped:
                if start < i:
                    self.pos = i
                    return text[start:i]
                self.pos = i + 1
                return char
            else:
                escaped = False
            i += 1
        self.pos = end
        return text[start:end]

    def next(self) -> str:
        if self.peeked is not None:
            token, self.peeked = self.peeked, None
        else:
            token = self._scan()
        self.previous = token
        return token

    def next_text(self, count: int) -> str | None:
        """The raw text of the next ``count`` tokens, or None (and no move) if there are fewer."""
        start = self.mark()
        for _ in range(count):
            if not self.has_next():
                self.rewind(start)
                return None
            self.next()
        return self.text[start : self.pos]

    def can_consume(self, expected: str) -> bool:
        """Take the next token if, trimmed, it is ``expected``; blank tokens before it are dropped."""
        if self.peeked is None:
            if self.pos >= len(self.text):
                return False
            self.peeked = self._scan()
        while _is_blank(self.peeked) and self.pos < len(self.text):
            self.peeked = self._scan()
        if _trim(self.peeked) == expected:
            self.peeked = None
            return True
        return False


class _ValueParser:
    def __init__(self, text: str) -> None:
        self.original = text
        self.tokens = _Tokenizer(text)

    def parse(self, embedded: bool) -> SchemaAndValue | None:
        tokens = self.tokens
        if not tokens.has_next():
            return None
        if embedded and tokens.can_consume('"'):
            return self._quoted_string()
        if self._literal(embedded, "null"):
            return None
        if self._literal(embedded, "true"):
            return _TRUE
        if self._literal(embedded, "false"):
            return _FALSE
        start = tokens.mark()
        try:
            if tokens.can_consume("["):
                return self._array()
            if tokens.can_consume("{"):
                return self._map()
        except DataException:
            tokens.rewind(start)  # not a well-formed array or map: read it as a plain token
        token = tokens.next()
        if _is_blank(token):
            return SchemaAndValue(Schema.STRING_SCHEMA, token)
        return self._scalar(embedded, _trim(token))

    def _literal(self, embedded: bool, literal: str) -> bool:
        # at the top level a literal counts only if nothing follows it: "true}" is a string
        tokens = self.tokens
        start = tokens.mark()
        if tokens.can_consume(literal) and (embedded or not tokens.has_next()):
            return True
        tokens.rewind(start)
        return False

    def _scalar(self, embedded: bool, token: str) -> SchemaAndValue:
        first = token[0]
        starts_with_digit = first.isdecimal()
        if starts_with_digit:
            temporal = self._temporal(token)
            if temporal is not None:
                return temporal
        if starts_with_digit or first in "+-":
            number = _parse_number(token)
            if number is not None:
                return number
        if embedded:
            raise DataException("Failed to parse embedded value")
        return SchemaAndValue(Schema.STRING_SCHEMA, self.original)

    def _temporal(self, token: str) -> SchemaAndValue | None:
        # unescaped colons split a time into five tokens, so try the token with the next four first
        tokens = self.tokens
        position = tokens.mark()
        remainder = tokens.next_text(4)
        if remainder is not None:
            temporal = _parse_temporal(token + remainder)
            if temporal is not None:
                return temporal
        tokens.rewind(position)
        return _parse_temporal(token)

    def _quoted_string(self) -> SchemaAndValue:
        tokens = self.tokens
        parts: list[str] = []
        while tokens.has_next():
            if tokens.can_consume('"'):
                break
            parts.append(tokens.next())
        content = "".join(parts)
        return _parse_temporal(content) or SchemaAndValue(Schema.STRING_SCHEMA, content)

    def _array(self) -> SchemaAndValue:
        tokens = self.tokens
        result: list[Any] = []
        merger = _SchemaMerger()
        while tokens.has_next():
            if tokens.can_consume("]"):
                if merger.common is None:
                    return SchemaAndValue(Schema(Type.ARRAY), result)  # every element is null
                aligned = [convert_to(merger.common, None, v) for v in result]
                return SchemaAndValue(SchemaBuilder.array(merger.common).build(), aligned)
            if tokens.can_consume(","):
                raise DataException("Unable to parse an empty array element: " + self.original)
            element = self.parse(True)
            merger.merge(element)
            result.append(element.value if element is not None else None)
            position = tokens.mark()
            if tokens.can_consume("]"):
                tokens.rewind(position)
            elif not tokens.can_consume(","):
                raise DataException("Array elements missing ',' delimiter")
        if tokens.previous == ",":
            raise DataException("Array is missing element after ',': " + self.original)
        raise DataException("Array is missing terminating ']': " + self.original)

    def _map(self) -> SchemaAndValue:
        tokens = self.tokens
        result: dict[Any, Any] = {}
        keys, values = _SchemaMerger(), _SchemaMerger()
        while tokens.has_next():
            if tokens.can_consume("}"):
                return self._typed_map(result, keys.common, values.common)
            if tokens.can_consume(","):
                raise DataException("Unable to parse a map entry with no key or value: " + self.original)
            key = self.parse(True)
            if key is None or key.value is None:
                raise DataException("Map entry may not have a null key: " + self.original)
            if not tokens.can_consume(":"):
                raise DataException(f"Map entry is missing ':' at {tokens.pos} in {self.original}")
            value = self.parse(True)
            try:
                result[key.value] = value.value if value is not None else None
            except TypeError as exc:  # a list or map as a key: Python cannot hash it
                raise DataException(f"Map key is not hashable: {self.original}") from exc
            tokens.can_consume(",")
            keys.merge(key)
            values.merge(value)
        if tokens.previous == ",":
            raise DataException("Map is missing element after ',': " + self.original)
        raise DataException("Map is missing terminating '}': " + self.original)

    @staticmethod
    def _typed_map(result: dict[Any, Any], key: Schema | None, value: Schema | None) -> SchemaAndValue:
        if key is not None and value is not None:
            aligned = {convert_to(key, None, k): convert_to(value, None, v) for k, v in result.items()}
            return SchemaAndValue(SchemaBuilder.map(key, value).build(), aligned)
        if key is not None:
            aligned = {convert_to(key, None, k): v for k, v in result.items()}
            return SchemaAndValue(Schema(Type.MAP, key_schema=key), aligned)
        return SchemaAndValue(Schema(Type.MAP), result)


def parse_string(value: str | None) -> SchemaAndValue | None:
    """Infer a schema and value from text written by ``convert_to_string`` (or by hand).

    Returns ``SchemaAndValue(None, None)`` for None and, as Kafka does, None for the
    literal ``null``.
    """
    if value is None:
        return SchemaAndValue(None, None)
    if not value:
        return SchemaAndValue(Schema.STRING_SCHEMA, value)
    return _ValueParser(value).parse(False)


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
