"""Kafka's ``Values.convertToString``: the text form of a Connect value.

Strings nested in arrays, maps and structs are quoted, bytes are base64, numbers
are written as Java writes them, and dates, times and timestamps in the format of
their Python type (Kafka picks the format from the millisecond value instead).
``connect.api.values.parse_string`` reads this text back.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal as _decimal
from collections.abc import Mapping
from typing import Any

from connect.api.errors import DataException
from connect.api.java_numbers import decimal_to_string, double_to_string, float_to_string
from connect.api.schema import Schema, Type
from connect.api.struct import Struct

__all__ = ["convert_to_string"]

_UTC = _dt.UTC


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
