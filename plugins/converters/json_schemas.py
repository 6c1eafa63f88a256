"""Connect schemas to the JSON of the ``schema`` envelope field and back, each direction cached.

The JSON has Kafka's key order: ``type``, ``items``/``keys``+``values``/``fields``,
``optional``, ``name``, ``version``, ``doc``, ``parameters``, ``default``, and
``field`` last in a struct's field entries. Each direction keeps an LRU of
``schemas.cache.size`` schemas.
"""

from __future__ import annotations

import collections
import decimal as _decimal
from collections.abc import Callable
from typing import Any

from connect.api import DataException, Schema, SchemaBuilder, Type
from plugins.converters.json_text import is_int, quote
from plugins.converters.json_values import JsonValueConverter

__all__ = ["JsonSchemaConverter", "SchemaTextCache"]

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


def _freeze(node: Any) -> Any:
    """A hashable key equal for equal JSON (object key order ignored, true distinct from 1)."""
    if isinstance(node, dict):
        return ("{", tuple(sorted((k, _freeze(v)) for k, v in node.items())))
    if isinstance(node, list):
        return ("[", tuple(_freeze(v) for v in node))
    if isinstance(node, bool | _decimal.Decimal):
        return (type(node).__name__, str(node))
    return node


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


class SchemaTextCache(_LRU):
    """Schemas read, keyed by a canonical text of their JSON (orjson's, keys sorted), with the envelope
    prefix that schema's records carry when they are written as this converter writes them (or None).

    The key costs one call in C, where ``as_connect_schema``'s key walks the parsed schema in Python.
    """

    def lookup(self, key: bytes) -> tuple[Schema | None, bytes | None] | None:
        return super().lookup(key)  # type: ignore[no-any-return]


class JsonSchemaConverter:
    """Connect schemas <-> JSON; the defaults in schemas are converted by ``values``."""

    def __init__(self, values: JsonValueConverter, cache_size: int = 1000) -> None:
        self._values = values
        self._to_json_cache = _LRU(cache_size)
        self._to_connect_cache = _LRU(cache_size)

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
                self.as_json_schema(f.schema)[:-1] + ',"field":' + quote(f.name) + "}" for f in schema.fields()
            ]
            parts += [',"fields":[', ",".join(entries), "]"]
        parts.append(',"optional":true' if schema.optional else ',"optional":false')
        if schema.name is not None:
            parts += [',"name":', quote(schema.name)]
        if schema.version is not None:
            parts += [',"version":', str(int(schema.version))]
        if schema.doc is not None:
            parts += [',"doc":', quote(schema.doc)]
        if schema.parameters is not None:
            params = ",".join(quote(k) + ":" + quote(str(v)) for k, v in schema.parameters.items())
            parts += [',"parameters":{', params, "}"]
        if schema.default_value is not None:
            parts += [',"default":', self._values.convert_to_json(schema, schema.default_value)]
        parts.append("}")
        text = "".join(parts)
        self._to_json_cache.store(schema, text)
        return text

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
        if is_int(version):
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
            default = self._values.convert_to_connect(builder.build(), node["default"])
            if default is not None:
                builder.default_value(default)
        return builder.build()
