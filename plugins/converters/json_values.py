"""Connect values to JSON text and parsed JSON back to Connect values, under a schema or without one.

Writing gives the payload text the JsonConverter puts in its envelope:
Decimal as base64 of the unscaled two's-complement bytes or, with
``numeric_decimals``, as a JSON number; Date, Time and Timestamp as their
integers; maps whose keys are not strings as ``[[key,value],...]``; map
entries in the dict's order (Java writes its HashMap's order).

Reading is strict, unlike Jackson: a JSON value of the wrong kind for its
schema (text for an int32, a fraction for an int64, a number out of the
type's range) raises DataException, where Jackson silently reads 0,
truncates or wraps around. Only the texts ``"NaN"``, ``"Infinity"`` and
``"-Infinity"`` are accepted for a float, as that is how they are written.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import decimal as _decimal
import json
from collections.abc import Callable, Mapping
from typing import Any

from connect.api import DataException, Date, Decimal, Schema, Struct, Time, Timestamp, Type
from connect.api.java_numbers import decimal_to_string, double_to_string, float_to_string, to_float32
from plugins.converters.json_text import (
    MISSING,
    base64_text,
    is_int,
    node_type,
    number_text,
    quote,
    schemaless_value,
)

__all__ = ["JsonValueConverter"]

_INT_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}
_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _unscaled_bytes(schema: Schema, value: _decimal.Decimal) -> bytes:
    """Decimal's unscaled value in BigInteger.toByteArray form (the shortest two's complement)."""
    unscaled = int.from_bytes(Decimal.from_logical(schema, value), "big", signed=True)
    magnitude = unscaled if unscaled >= 0 else ~unscaled
    return unscaled.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)


def _type_error(schema: Schema, value: Any) -> DataException:
    return DataException(f"Invalid type for {schema.type.name}: {type(value).__qualname__}")


def _read_base64(node: str, what: str) -> bytes:
    try:
        return base64.b64decode(node, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DataException(what) from exc


class JsonValueConverter:
    """Connect values <-> JSON, with the JsonConverter's decimal.format and replace.null.with.default."""

    def __init__(self, numeric_decimals: bool = False, replace_null: bool = True) -> None:
        self._numeric_decimals = numeric_decimals
        self._replace_null = replace_null
        self._writers: dict[Type, Callable[[Schema, Any], str]] = {
            Type.INT8: self._write_int,
            Type.INT16: self._write_int,
            Type.INT32: self._write_int,
            Type.INT64: self._write_int,
            Type.FLOAT32: self._write_float32,
            Type.FLOAT64: self._write_float64,
            Type.BOOLEAN: self._write_boolean,
            Type.STRING: self._write_string,
            Type.BYTES: self._write_bytes,
            Type.ARRAY: self._write_array,
            Type.MAP: self._write_map,
            Type.STRUCT: self._write_struct,
        }
        self._readers: dict[Type, Callable[[Schema, Any], Any]] = {
            Type.INT8: self._read_int,
            Type.INT16: self._read_int,
            Type.INT32: self._read_int,
            Type.INT64: self._read_int,
            Type.FLOAT32: self._read_float,
            Type.FLOAT64: self._read_float,
            Type.BOOLEAN: self._read_boolean,
            Type.STRING: self._read_string,
            Type.BYTES: self._read_bytes,
            Type.ARRAY: self._read_array,
            Type.MAP: self._read_map,
            Type.STRUCT: self._read_struct,
        }
        self._logical_writers: dict[str, Callable[[Schema, Any], str]] = {
            Decimal.LOGICAL_NAME: self._write_decimal,
            Date.LOGICAL_NAME: self._write_date,
            Time.LOGICAL_NAME: self._write_time,
            Timestamp.LOGICAL_NAME: self._write_timestamp,
        }
        self._logical_readers: dict[str, Callable[[Schema, Any], Any]] = {
            Decimal.LOGICAL_NAME: self._read_decimal,
            Date.LOGICAL_NAME: self._read_date,
            Time.LOGICAL_NAME: self._read_time,
            Timestamp.LOGICAL_NAME: self._read_timestamp,
        }

    # --- values to JSON --------------------------------------------------------------------------

    def convert_to_json(self, schema: Schema | None, value: Any) -> str:
        """The JSON text of ``value`` under ``schema`` (the payload, without an envelope)."""
        if value is None:
            if schema is None:
                return "null"
            if schema.default_value is not None and self._replace_null:
                return self.convert_to_json(schema, schema.default_value)
            if schema.optional:
                return "null"
            raise DataException("Conversion error: null value for field that is required and has no default value")
        if schema is None:
            return self._write_schemaless(value)
        if schema.name is not None:
            logical = self._logical_writers.get(schema.name)
            if logical is not None:
                return logical(schema, value)
        return self._writers[schema.type](schema, value)

    def _write_schemaless(self, value: Any) -> str:
        if isinstance(value, str):
            return quote(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return number_text(double_to_string(value))
        if isinstance(value, bytes | bytearray | memoryview):
            return base64_text(value)
        if isinstance(value, list | tuple):
            return "[" + ",".join([self.convert_to_json(None, v) for v in value]) + "]"
        if isinstance(value, Mapping):
            if all(isinstance(k, str) for k in value):
                return "{" + ",".join([quote(k) + ":" + self.convert_to_json(None, v) for k, v in value.items()]) + "}"
            return self._map_as_pairs(None, None, value)
        if isinstance(value, Struct):
            raise DataException("Mismatching schema.")  # a struct needs its schema passed alongside
        raise DataException(f"Python type {type(value).__qualname__} does not have corresponding schema type.")

    def _write_int(self, schema: Schema, value: Any) -> str:
        if not is_int(value):
            raise _type_error(schema, value)
        return str(value)

    def _write_float32(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, float | int) or isinstance(value, bool):
            raise _type_error(schema, value)
        return number_text(float_to_string(value))

    def _write_float64(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, float | int) or isinstance(value, bool):
            raise _type_error(schema, value)
        return number_text(double_to_string(value))

    def _write_boolean(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, bool):
            raise _type_error(schema, value)
        return "true" if value else "false"

    def _write_string(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, str):
            raise _type_error(schema, value)
        return quote(value)

    def _write_bytes(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise DataException(f"Invalid type for bytes type: {type(value).__qualname__}")
        return base64_text(value)

    def _write_array(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, list | tuple):
            raise _type_error(schema, value)
        element = schema.value_schema
        return "[" + ",".join([self.convert_to_json(element, v) for v in value]) + "]"

    def _write_map(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, Mapping):
            raise _type_error(schema, value)
        keys, values = schema.key_schema, schema.value_schema
        if keys is not None and keys.type is not Type.STRING:
            return self._map_as_pairs(keys, values, value)
        entries = []
        for k, v in value.items():
            if isinstance(k, str):
                name = k
            else:  # Jackson uses the key node's text: "null", or a default's text
                key_json = self.convert_to_json(keys, k)
                name = json.loads(key_json) if key_json.startswith('"') else key_json
            entries.append(quote(name) + ":" + self.convert_to_json(values, v))
        return "{" + ",".join(entries) + "}"

    def _map_as_pairs(self, keys: Schema | None, values: Schema | None, value: Mapping[Any, Any]) -> str:
        pairs = [
            "[" + self.convert_to_json(keys, k) + "," + self.convert_to_json(values, v) + "]" for k, v in value.items()
        ]
        return "[" + ",".join(pairs) + "]"

    def _write_struct(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, Struct) or (value.schema is not schema and value.schema != schema):
            raise DataException("Mismatching schema.")
        # the raw field value: convert_to_json applies the default only if replace.null.with.default
        fields = [
            quote(f.name) + ":" + self.convert_to_json(f.schema, value.get_without_default(f.name))
            for f in schema.fields()
        ]
        return "{" + ",".join(fields) + "}"

    def _write_decimal(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, _decimal.Decimal):
            raise DataException(f"Invalid type for Decimal, expected Decimal but was {type(value).__qualname__}")
        if self._numeric_decimals:
            return decimal_to_string(value)
        return base64_text(_unscaled_bytes(schema, value))

    def _write_date(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, _dt.date):
            raise DataException(f"Invalid type for Date, expected date but was {type(value).__qualname__}")
        return str(Date.from_logical(schema, value))

    def _write_time(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, _dt.time | _dt.datetime):
            raise DataException(f"Invalid type for Time, expected time but was {type(value).__qualname__}")
        return str(Time.from_logical(schema, value))

    def _write_timestamp(self, schema: Schema, value: Any) -> str:
        if isinstance(value, _dt.datetime):
            return str(Timestamp.from_logical(schema, value))
        if isinstance(value, _dt.date):  # a date is the timestamp of its midnight, UTC
            return str(Date.from_logical(Date.SCHEMA, value) * 86_400_000)
        raise DataException(f"Invalid type for Timestamp, expected datetime but was {type(value).__qualname__}")

    # --- JSON to values ------------------------------------------------------------------------------

    def convert_to_connect(self, schema: Schema | None, node: Any) -> Any:
        """The Connect value of a parsed JSON ``node`` under ``schema`` (None: inferred)."""
        if schema is None:
            return self._read_schemaless(node)
        if node is None or node is MISSING:
            if schema.default_value is not None and self._replace_null:
                return schema.default_value
            if schema.optional:
                return None
            raise DataException(f"Invalid null value for required {schema.type.name} field")
        if schema.name is not None:
            logical = self._logical_readers.get(schema.name)
            if logical is not None:
                return logical(schema, node)
        return self._readers[schema.type](schema, node)

    @staticmethod
    def _read_schemaless(node: Any) -> Any:
        return schemaless_value(node)  # Jackson's doubleValue(): schemaless numbers with a fraction are FLOAT64

    @staticmethod
    def _mismatch(schema: Schema, node: Any) -> DataException:
        return DataException(f"Invalid {node_type(node)} value for {schema.type.name} schema: {node!r}")

    def _read_boolean(self, schema: Schema, node: Any) -> bool:
        if not isinstance(node, bool):
            raise self._mismatch(schema, node)
        return node

    def _read_int(self, schema: Schema, node: Any) -> int:
        if isinstance(node, _decimal.Decimal) and node.is_finite() and node == node.to_integral_value():
            if node.adjusted() >= 19:  # beyond every int type: say so before making an int of (maybe) 10^10^8
                raise DataException(f"Value {node} out of range for schema type {schema.type.name}")
            node = int(node)
        if not is_int(node):
            raise self._mismatch(schema, node)
        bits = _INT_BITS[schema.type]
        if not -(1 << (bits - 1)) <= node < 1 << (bits - 1):
            raise DataException(f"Value {node} out of range for schema type {schema.type.name}")
        return node

    def _read_float(self, schema: Schema, node: Any) -> float:
        if isinstance(node, str) and node in _NON_FINITE:
            value = _NON_FINITE[node]
        elif isinstance(node, int | _decimal.Decimal) and not isinstance(node, bool):
            value = float(node)
        else:
            raise self._mismatch(schema, node)
        return to_float32(value) if schema.type is Type.FLOAT32 else value

    def _read_string(self, schema: Schema, node: Any) -> str:
        if not isinstance(node, str):
            raise self._mismatch(schema, node)
        return node

    def _read_bytes(self, schema: Schema, node: Any) -> bytes:
        if not isinstance(node, str):
            raise self._mismatch(schema, node)
        return _read_base64(node, "Invalid bytes field")

    def _read_array(self, schema: Schema, node: Any) -> list[Any]:
        if not isinstance(node, list):
            raise self._mismatch(schema, node)
        element = schema.value_schema
        return [self.convert_to_connect(element, v) for v in node]

    def _read_map(self, schema: Schema, node: Any) -> dict[Any, Any]:
        keys, values = schema.key_schema, schema.value_schema
        if keys is None or keys.type is Type.STRING:
            if not isinstance(node, dict):
                raise DataException(
                    f"Maps with string fields should be encoded as JSON objects, but found {node_type(node)}"
                )
            return {k: self.convert_to_connect(values, v) for k, v in node.items()}
        if not isinstance(node, list):
            raise DataException(
                f"Maps with non-string fields should be encoded as JSON array of tuples, but found {node_type(node)}"
            )
        result: dict[Any, Any] = {}
        for entry in node:
            if not isinstance(entry, list):
                raise DataException(f"Found invalid map entry instead of array tuple: {node_type(entry)}")
            if len(entry) != 2:
                raise DataException(f"Found invalid map entry, expected length 2 but found :{len(entry)}")
            key = self.convert_to_connect(keys, entry[0])
            try:
                result[key] = self.convert_to_connect(values, entry[1])
            except TypeError as exc:  # a list or map key: Python cannot hash it
                raise DataException(f"Map key of type {type(key).__qualname__} is not supported") from exc
        return result

    def _read_struct(self, schema: Schema, node: Any) -> Struct:
        if not isinstance(node, dict):
            raise DataException(f"Structs should be encoded as JSON objects, but found {node_type(node)}")
        struct = Struct(schema)
        for field in schema.fields():
            struct.put(field, self.convert_to_connect(field.schema, node.get(field.name)))
        return struct

    def _read_decimal(self, schema: Schema, node: Any) -> _decimal.Decimal:
        if isinstance(node, _decimal.Decimal) and not node.is_finite():  # an exponent beyond Decimal's range
            raise DataException(f"Value {node} out of range for Decimal")
        if isinstance(node, int | _decimal.Decimal) and not isinstance(node, bool):
            return _decimal.Decimal(node)
        if isinstance(node, str):
            return Decimal.to_logical(schema, _read_base64(node, "Invalid bytes for Decimal field"))
        raise DataException(
            f"Invalid type for Decimal, underlying representation should be numeric or bytes but was {node_type(node)}"
        )

    @staticmethod
    def _int32_node(node: Any, logical: str) -> int:
        if not is_int(node) or not -(2**31) <= node < 2**31:
            raise DataException(
                f"Invalid type for {logical}, underlying representation should be integer but was {node_type(node)}"
            )
        return node

    def _read_date(self, schema: Schema, node: Any) -> _dt.date:
        return Date.to_logical(schema, self._int32_node(node, "Date"))

    def _read_time(self, schema: Schema, node: Any) -> _dt.time:
        return Time.to_logical(schema, self._int32_node(node, "Time"))

    def _read_timestamp(self, schema: Schema, node: Any) -> _dt.datetime:
        if not is_int(node):
            raise DataException(
                f"Invalid type for Timestamp, underlying representation should be integral but was {node_type(node)}"
            )
        return Timestamp.to_logical(schema, node)
