"""JsonConverter: Connect data as JSON, byte for byte what Kafka Connect's JsonConverter writes.

With ``schemas.enable`` (the default) every message is an envelope
``{"schema":<schema>,"payload":<value>}``; without it, the value's plain JSON.
The text follows Jackson's rules: no whitespace; schema keys in Kafka's order
(``type``, ``items``/``keys``+``values``/``fields``, ``optional``, ``name``,
``version``, ``doc``, ``parameters``, ``default``, and ``field`` last in a
struct's field entries); doubles and floats as Java prints them (``1.0``,
``1.0E10``); NaN and the infinities as the strings ``"NaN"``, ``"Infinity"``;
bytes as base64; Decimal as base64 of the unscaled two's-complement bytes or,
with ``decimal.format=NUMERIC``, as a JSON number; Date, Time and Timestamp as
their integers; maps whose keys are not strings as ``[[key,value],...]``.

Writing is the hot path: the envelope prefix is built once per schema (an LRU of
``schemas.cache.size``) and a string payload is quoted by the C JSON encoder.
Reading recognises the prefix of the last schema seen and then parses only the
payload.

Deliberate differences from Kafka:

- Reading is strict: a JSON value of the wrong kind for its schema (text for an
  int32, a fraction for an int64, a number out of the type's range) raises
  DataException, where Jackson silently reads 0, truncates or wraps around.
  Only the texts ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` are accepted
  for a float, as that is how they are written.
- Map entries are written in the dict's order; Java writes its HashMap's order.
"""

from __future__ import annotations

import base64
import binascii
import collections
import datetime as _dt
import decimal as _decimal
import json
import re
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring as _encode_basestring
from typing import Any

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    ConnectHeaders,
    Converter,
    DataException,
    Date,
    Decimal,
    HeaderConverter,
    Importance,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
    Width,
)
from connect.api.java_numbers import decimal_to_string, double_to_string, float_to_string, to_float32
from plugins.converters.string import converter_config_def, plugin_version, typed_configs

__all__ = ["JsonConverter"]

SCHEMAS_ENABLE_CONFIG = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.size"
DECIMAL_FORMAT_CONFIG = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"

ENVELOPE_REQUIRED_MESSAGE = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain '
    "additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in "
    "your converter configuration."
)
_READ_FAILED = "Converting byte[] to Kafka Connect data failed due to serialization error: "
_WRITE_FAILED = "Converting Kafka Connect data to byte[] failed due to serialization error: "

_CONFIG_DEF = (
    converter_config_def()
    .define(
        SCHEMAS_ENABLE_CONFIG,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.HIGH,
        documentation="Whether each key and value carries its schema in a {schema, payload} envelope.",
        group="Schemas",
        order_in_group=0,
        width=Width.MEDIUM,
        display_name="Enable Schemas",
    )
    .define(
        SCHEMAS_CACHE_SIZE_CONFIG,
        ConfigType.INT,
        1000,
        importance=Importance.HIGH,
        documentation="How many schemas this converter keeps in its caches, in each direction.",
        group="Schemas",
        order_in_group=1,
        width=Width.MEDIUM,
        display_name="Schema Cache Size",
    )
    .define(
        DECIMAL_FORMAT_CONFIG,
        ConfigType.STRING,
        "BASE64",
        CaseInsensitiveValidString.in_("BASE64", "NUMERIC"),
        importance=Importance.LOW,
        documentation="How Decimal values are written: BASE64 (the default) or NUMERIC, in any case.",
        group="Serialization",
        order_in_group=0,
        width=Width.MEDIUM,
        display_name="Decimal Format",
    )
    .define(
        REPLACE_NULL_WITH_DEFAULT_CONFIG,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.LOW,
        documentation="Whether a null field that has a default value is written and read as that default.",
        group="Serialization",
        order_in_group=1,
        width=Width.MEDIUM,
        display_name="Replace null with default",
    )
)

_TYPE_NAMES = {
    Type.BOOLEAN: "boolean",
    Type.INT8: "int8",
    Type.INT16: "int16",
    Type.INT32: "int32",
    Type.INT64: "int64",
    Type.FLOAT32: "float",
    Type.FLOAT64: "double",
    Type.BYTES: "bytes",
    Type.STRING: "string",
    Type.ARRAY: "array",
    Type.MAP: "map",
    Type.STRUCT: "struct",
}
_BUILDERS: dict[str, Callable[[], SchemaBuilder]] = {
    "boolean": SchemaBuilder.bool,
    "int8": SchemaBuilder.int8,
    "int16": SchemaBuilder.int16,
    "int32": SchemaBuilder.int32,
    "int64": SchemaBuilder.int64,
    "float": SchemaBuilder.float32,
    "double": SchemaBuilder.float64,
    "bytes": SchemaBuilder.bytes,
    "string": SchemaBuilder.string,
}
_INT_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}
_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}

# --- JSON text the way Jackson writes it ------------------------------------------------

# Python writes these controls as \u00xx with lowercase hex; Jackson uses uppercase
_NEEDS_JACKSON_ESCAPES = re.compile("[\x00-\x07\x0b\x0e-\x1f]")
_JACKSON_ESCAPES = {code: f"\\u{code:04X}" for code in range(0x20)}
_JACKSON_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"})
_JACKSON_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\"})


def _quote(text: str) -> str:
    """``text`` as a JSON string literal, escaped as Jackson escapes it."""
    if text.isprintable() or _NEEDS_JACKSON_ESCAPES.search(text) is None:
        return _encode_basestring(text)
    return '"' + text.translate(_JACKSON_ESCAPES) + '"'


def _number_text(text: str) -> str:
    # Jackson quotes the non-finite doubles by default (QUOTE_NON_NUMERIC_NUMBERS)
    return text if text[-1].isdigit() else '"' + text + '"'


def _base64(data: bytes | bytearray | memoryview) -> str:
    return '"' + base64.b64encode(data).decode("ascii") + '"'


def _unscaled_bytes(schema: Schema, value: _decimal.Decimal) -> bytes:
    """Decimal's unscaled value in BigInteger.toByteArray form (the shortest two's complement)."""
    unscaled = int.from_bytes(Decimal.from_logical(schema, value), "big", signed=True)
    magnitude = unscaled if unscaled >= 0 else ~unscaled
    return unscaled.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)


def _type_error(schema: Schema, value: Any) -> DataException:
    return DataException(f"Invalid type for {schema.type.name}: {type(value).__qualname__}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- reading helpers ---------------------------------------------------------------------------

_MISSING: Any = object()  # empty input: Jackson's MissingNode


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Non-standard token '{name}': NaN and Infinity are not JSON numbers")


# built once: json.loads with options would build a decoder per call
_DECODER = json.JSONDecoder(parse_float=_decimal.Decimal, parse_constant=_reject_constant)


def _loads(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
        if not text or text.isspace():
            return _MISSING
        return _DECODER.decode(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DataException(_READ_FAILED + str(exc)) from exc


# what a JSON string needs no decoding for: no quote, backslash or (invalid) raw control byte
_NOT_PLAIN_STRING = re.compile(rb'[\x00-\x1f"\\]')


def _loads_payload(body: bytes) -> Any:
    """Like _loads, with a shortcut for the common payload: a string literal without escapes."""
    end = len(body) - 1
    if end > 0 and body[0] == 0x22 and body[end] == 0x22 and _NOT_PLAIN_STRING.search(body, 1, end) is None:
        try:
            return body[1:end].decode("utf-8")
        except UnicodeDecodeError:
            pass  # let the full parser report it
    return _loads(body)


def _node_type(node: Any) -> str:
    """The name Jackson gives this kind of node, for error messages."""
    if node is None:
        return "NULL"
    if node is _MISSING:
        return "MISSING"
    if isinstance(node, bool):
        return "BOOLEAN"
    if isinstance(node, int | _decimal.Decimal):
        return "NUMBER"
    if isinstance(node, str):
        return "STRING"
    if isinstance(node, list):
        return "ARRAY"
    return "OBJECT"


def _freeze(node: Any) -> Any:
    """A hashable key equal for equal JSON (object key order ignored, true distinct from 1)."""
    if isinstance(node, dict):
        return ("{", tuple(sorted((k, _freeze(v)) for k, v in node.items())))
    if isinstance(node, list):
        return ("[", tuple(_freeze(v) for v in node))
    if isinstance(node, bool | _decimal.Decimal):
        return (type(node).__name__, str(node))
    return node


def _read_base64(node: str, what: str) -> bytes:
    try:
        return base64.b64decode(node, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DataException(what) from exc


class _LRU(collections.OrderedDict[Any, Any]):
    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = max(capacity, 0)

    def lookup(self, key: Any) -> Any:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def store(self, key: Any, value: Any) -> None:
        if self.capacity == 0:
            return
        self[key] = value
        if len(self) > self.capacity:
            self.popitem(last=False)


_UNSET: Any = object()


class JsonConverter(Converter, HeaderConverter):
    """Converter and HeaderConverter for JSON, with or without schema envelopes."""

    def __init__(self) -> None:
        self._schemas_enable = True
        self._numeric_decimals = False
        self._replace_null = True
        self._to_json_cache = _LRU(1000)
        self._to_connect_cache = _LRU(1000)
        # the envelope prefix of the schema written last, and of the schema read last
        self._out_schema: Any = _UNSET
        self._out_prefix = ""
        self._in_prefix: bytes | None = None
        self._in_schema: Schema | None = None
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

    # --- plugin --------------------------------------------------------------------------------

    def version(self) -> str:
        return plugin_version()

    def config(self) -> ConfigDef:
        return ConfigDef(_CONFIG_DEF)

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        config = AbstractConfig(_CONFIG_DEF, typed_configs(configs, is_key))
        self._schemas_enable = bool(config.get_boolean(SCHEMAS_ENABLE_CONFIG))
        self._numeric_decimals = str(config.get_string(DECIMAL_FORMAT_CONFIG)).upper() == "NUMERIC"
        self._replace_null = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        cache_size = int(config.get_int(SCHEMAS_CACHE_SIZE_CONFIG) or 0)
        self._to_json_cache = _LRU(cache_size)
        self._to_connect_cache = _LRU(cache_size)
        self._out_schema, self._out_prefix = _UNSET, ""
        self._in_prefix, self._in_schema = None, None

    # --- Converter / HeaderConverter -------------------------------------------------------------

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: ConnectHeaders | None = None
    ) -> bytes | None:
        if schema is None and value is None:
            return None
        if schema is not None and type(value) is str and schema.type is Type.STRING:
            payload = _quote(value)  # the common case, without the dispatch below
        else:
            payload = self.convert_to_json(schema, value)
        if self._schemas_enable:
            if schema is not self._out_schema:
                self._out_prefix = self._envelope_prefix(schema)
                self._out_schema = schema
            text = self._out_prefix + payload + "}"
        else:
            text = payload
        try:
            return text.encode()
        except UnicodeEncodeError as exc:  # a lone surrogate has no UTF-8 form
            raise DataException(_WRITE_FAILED + str(exc)) from exc

    def to_connect_data(
        self, topic: str, value: bytes | None, headers: ConnectHeaders | None = None
    ) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(None, None)
        raw = value if type(value) is bytes else bytes(value)
        if not self._schemas_enable:
            return SchemaAndValue(None, self.convert_to_connect(None, _loads(raw)))
        prefix = self._in_prefix
        if prefix is not None and raw.startswith(prefix) and raw.endswith(b"}"):
            # the same schema as last time: parse only the payload; if that is not one
            # complete JSON value the envelope is not well formed and the full parse says why
            try:
                payload = _loads_payload(raw[len(prefix) : -1])
            except DataException:
                payload = _MISSING
            if payload is not _MISSING:
                return SchemaAndValue(self._in_schema, self.convert_to_connect(self._in_schema, payload))
        node = _loads(raw)
        if not (isinstance(node, dict) and len(node) == 2 and "schema" in node and "payload" in node):
            raise DataException(ENVELOPE_REQUIRED_MESSAGE)
        schema = self.as_connect_schema(node["schema"])
        result = SchemaAndValue(schema, self.convert_to_connect(schema, node["payload"]))
        self._remember_prefix(raw, schema)
        return result

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

    # --- schemas to JSON -------------------------------------------------------------------------

    def as_json_schema(self, schema: Schema | None) -> str:
        """The JSON text of ``schema`` (``null`` for None), cached per schema."""
        if schema is None:
            return "null"
        cached = self._to_json_cache.lookup(schema)
        if cached is not None:
            return cached
        parts = ['{"type":"', _TYPE_NAMES[schema.type], '"']
        if schema.type is Type.ARRAY:
            parts += [',"items":', self.as_json_schema(schema.value_schema)]
        elif schema.type is Type.MAP:
            parts += [',"keys":', self.as_json_schema(schema.key_schema)]
            parts += [',"values":', self.as_json_schema(schema.value_schema)]
        elif schema.type is Type.STRUCT:
            # each field entry is the field's schema with "field":<name> added as its last key
            entries = [
                self.as_json_schema(f.schema)[:-1] + ',"field":' + _quote(f.name) + "}" for f in schema.fields()
            ]
            parts += [',"fields":[', ",".join(entries), "]"]
        parts.append(',"optional":true' if schema.optional else ',"optional":false')
        if schema.name is not None:
            parts += [',"name":', _quote(schema.name)]
        if schema.version is not None:
            parts += [',"version":', str(int(schema.version))]
        if schema.doc is not None:
            parts += [',"doc":', _quote(schema.doc)]
        if schema.parameters is not None:
            params = ",".join(_quote(k) + ":" + _quote(str(v)) for k, v in schema.parameters.items())
            parts += [',"parameters":{', params, "}"]
        if schema.default_value is not None:
            parts += [',"default":', self.convert_to_json(schema, schema.default_value)]
        parts.append("}")
        text = "".join(parts)
        self._to_json_cache.store(schema, text)
        return text

    def _envelope_prefix(self, schema: Schema | None) -> str:
        return '{"schema":' + self.as_json_schema(schema) + ',"payload":'

    def _remember_prefix(self, raw: bytes, schema: Schema | None) -> None:
        """Keep this message's envelope prefix if it is the one we write for its schema."""
        try:
            prefix = self._envelope_prefix(schema).encode()
        except (DataException, UnicodeEncodeError):
            return
        if raw.startswith(prefix):
            self._in_prefix, self._in_schema = prefix, schema

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
            return _quote(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return _number_text(double_to_string(value))
        if isinstance(value, bytes | bytearray | memoryview):
            return _base64(value)
        if isinstance(value, list | tuple):
            return "[" + ",".join([self.convert_to_json(None, v) for v in value]) + "]"
        if isinstance(value, Mapping):
            if all(isinstance(k, str) for k in value):
                return "{" + ",".join([_quote(k) + ":" + self.convert_to_json(None, v) for k, v in value.items()]) + "}"
            return self._map_as_pairs(None, None, value)
        if isinstance(value, Struct):
            raise DataException("Mismatching schema.")  # a struct needs its schema passed alongside
        raise DataException(f"Python type {type(value).__qualname__} does not have corresponding schema type.")

    def _write_int(self, schema: Schema, value: Any) -> str:
        if not _is_int(value):
            raise _type_error(schema, value)
        return str(value)

    def _write_float32(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, float | int) or isinstance(value, bool):
            raise _type_error(schema, value)
        return _number_text(float_to_string(value))

    def _write_float64(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, float | int) or isinstance(value, bool):
            raise _type_error(schema, value)
        return _number_text(double_to_string(value))

    def _write_boolean(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, bool):
            raise _type_error(schema, value)
        return "true" if value else "false"

    def _write_string(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, str):
            raise _type_error(schema, value)
        return _quote(value)

    def _write_bytes(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise DataException(f"Invalid type for bytes type: {type(value).__qualname__}")
        return _base64(value)

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
            entries.append(_quote(name) + ":" + self.convert_to_json(values, v))
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
            _quote(f.name) + ":" + self.convert_to_json(f.schema, value.get_without_default(f.name))
            for f in schema.fields()
        ]
        return "{" + ",".join(fields) + "}"

    def _write_decimal(self, schema: Schema, value: Any) -> str:
        if not isinstance(value, _decimal.Decimal):
            raise DataException(f"Invalid type for Decimal, expected Decimal but was {type(value).__qualname__}")
        if self._numeric_decimals:
            return decimal_to_string(value)
        return _base64(_unscaled_bytes(schema, value))

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

    # --- JSON to schemas ---------------------------------------------------------------------------

    def as_connect_schema(self, node: Any) -> Schema | None:
        """The Schema a parsed JSON schema describes (None for JSON null), cached."""
        if node is None:
            return None
        key = _freeze(node)
        cached = self._to_connect_cache.lookup(key)
        if cached is not None:
            return cached
        schema = self._build_schema(node)
        self._to_connect_cache.store(key, schema)
        return schema

    def _build_schema(self, node: Any) -> Schema:
        type_name = node.get("type") if isinstance(node, dict) else None
        if not isinstance(type_name, str):
            raise DataException("Schema must contain 'type' field")
        if type_name in _BUILDERS:
            builder = _BUILDERS[type_name]()
        elif type_name == "array":
            items = node.get("items")
            if items is None:
                raise DataException("Array schema did not specify the element type")
            builder = SchemaBuilder.array(self.as_connect_schema(items))  # type: ignore[arg-type]
        elif type_name == "map":
            if "keys" not in node:
                raise DataException("Map schema did not specify the key type")
            if "values" not in node:
                raise DataException("Map schema did not specify the value type")
            builder = SchemaBuilder.map(
                self.as_connect_schema(node["keys"]),  # type: ignore[arg-type]
                self.as_connect_schema(node["values"]),  # type: ignore[arg-type]
            )
        elif type_name == "struct":
            fields = node.get("fields")
            if not isinstance(fields, list):
                raise DataException('Struct schema\'s "fields" argument is not an array.')
            builder = SchemaBuilder.struct()
            for field in fields:
                name = field.get("field") if isinstance(field, dict) else None
                if not isinstance(name, str):
                    raise DataException("Struct schema's field name not specified properly")
                builder.field(name, self.as_connect_schema(field))  # type: ignore[arg-type]
        else:
            raise DataException(f"Unknown schema type: {type_name}")

        if node.get("optional") is True:
            builder.optional()
        else:
            builder.required()
        name = node.get("name")
        if isinstance(name, str):
            builder.name(name)
        version = node.get("version")
        if _is_int(version):
            builder.version(version)
        doc = node.get("doc")
        if isinstance(doc, str):
            builder.doc(doc)
        params = node.get("parameters")
        if isinstance(params, dict):
            for key, param in params.items():
                if not isinstance(param, str):
                    raise DataException("Schema parameters must have string values.")
                builder.parameter(key, param)
        if "default" in node:
            default = self.convert_to_connect(builder.build(), node["default"])
            if default is not None:
                builder.default_value(default)
        return builder.build()

    # --- JSON to values ------------------------------------------------------------------------------

    def convert_to_connect(self, schema: Schema | None, node: Any) -> Any:
        """The Connect value of a parsed JSON ``node`` under ``schema`` (None: inferred)."""
        if schema is None:
            return self._read_schemaless(node)
        if node is None or node is _MISSING:
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

    def _read_schemaless(self, node: Any) -> Any:
        if node is None or node is _MISSING or isinstance(node, bool | int | str):
            return None if node is _MISSING else node
        if isinstance(node, _decimal.Decimal):
            return float(node)  # Jackson's doubleValue(): schemaless numbers with a fraction are FLOAT64
        if isinstance(node, list):
            return [self._read_schemaless(v) for v in node]
        return {k: self._read_schemaless(v) for k, v in node.items()}

    @staticmethod
    def _mismatch(schema: Schema, node: Any) -> DataException:
        return DataException(f"Invalid {_node_type(node)} value for {schema.type.name} schema: {node!r}")

    def _read_boolean(self, schema: Schema, node: Any) -> bool:
        if not isinstance(node, bool):
            raise self._mismatch(schema, node)
        return node

    def _read_int(self, schema: Schema, node: Any) -> int:
        if isinstance(node, _decimal.Decimal) and node.is_finite() and node == node.to_integral_value():
            node = int(node)
        if not _is_int(node):
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
                    f"Maps with string fields should be encoded as JSON objects, but found {_node_type(node)}"
                )
            return {k: self.convert_to_connect(values, v) for k, v in node.items()}
        if not isinstance(node, list):
            raise DataException(
                f"Maps with non-string fields should be encoded as JSON array of tuples, but found {_node_type(node)}"
            )
        result: dict[Any, Any] = {}
        for entry in node:
            if not isinstance(entry, list):
                raise DataException(f"Found invalid map entry instead of array tuple: {_node_type(entry)}")
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
            raise DataException(f"Structs should be encoded as JSON objects, but found {_node_type(node)}")
        struct = Struct(schema)
        for field in schema.fields():
            struct.put(field, self.convert_to_connect(field.schema, node.get(field.name)))
        return struct

    def _read_decimal(self, schema: Schema, node: Any) -> _decimal.Decimal:
        if isinstance(node, int | _decimal.Decimal) and not isinstance(node, bool):
            return _decimal.Decimal(node)
        if isinstance(node, str):
            return Decimal.to_logical(schema, _read_base64(node, "Invalid bytes for Decimal field"))
        raise DataException(
            f"Invalid type for Decimal, underlying representation should be numeric or bytes but was {_node_type(node)}"
        )

    @staticmethod
    def _int32_node(node: Any, logical: str) -> int:
        if not _is_int(node) or not -(2**31) <= node < 2**31:
            raise DataException(
                f"Invalid type for {logical}, underlying representation should be integer but was {_node_type(node)}"
            )
        return node

    def _read_date(self, schema: Schema, node: Any) -> _dt.date:
        return Date.to_logical(schema, self._int32_node(node, "Date"))

    def _read_time(self, schema: Schema, node: Any) -> _dt.time:
        return Time.to_logical(schema, self._int32_node(node, "Time"))

    def _read_timestamp(self, schema: Schema, node: Any) -> _dt.datetime:
        if not _is_int(node):
            raise DataException(
                f"Invalid type for Timestamp, underlying representation should be integral but was {_node_type(node)}"
            )
        return Timestamp.to_logical(schema, node)
