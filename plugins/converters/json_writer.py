"""Compiled JSON writers: one function per Schema, built once, that writes a value as ``JsonValueConverter``
would, byte for byte, without its per-value dispatch.

The generic writer (``json_values``) looks up each value's writer by the schema's type and logical name,
and a struct's fields by name, for every value it writes. A source that sends many values of one schema
(every ingestion source, every FileStream/JDBC-style source with a Struct value) pays that for each field
of each record. Here the plan is made once per schema: each struct field's quoted name with its colon, its
null text (``null``, or the JSON of its default with ``replace.null.with.default``), and a writer chosen
by its type; a struct's writer then reads the Struct's values by position.

Anything unusual goes to the generic writer, which gives the same text or raises the same DataException:
a value of an unexpected Python type (a ``str`` subclass, an int where a string is due), a struct of
another schema, a map with non-string keys, a required null, and every logical type and float (whose
text follows Java's rules, already in the generic writer).

A struct writer is generated Python source (``exec``), so that each field costs one inline test rather
than a function call. The source holds only generated names (``v0``, ``P0``, ``W0``...): field names,
defaults and schemas are bound as values in the function's namespace, never written into the source, so
nothing a schema says is ever compiled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from connect.api import DataException, Schema, Struct, Type
from plugins.converters.json_text import quote
from plugins.converters.json_values import JsonValueConverter

__all__ = ["CompiledJsonWriters"]

Writer = Callable[[Any], str]

_INT_TYPES = frozenset({Type.INT8, Type.INT16, Type.INT32, Type.INT64})
_LOGICAL_NAMES = frozenset({
    "org.apache.kafka.connect.data.Decimal",
    "org.apache.kafka.connect.data.Date",
    "org.apache.kafka.connect.data.Time",
    "org.apache.kafka.connect.data.Timestamp",
})


class CompiledJsonWriters:
    """Writers per schema for one JsonValueConverter (its decimal format and replace.null.with.default).

    ``writer(schema)`` returns a function of one value giving ``values.convert_to_json(schema, value)``.
    At most ``capacity`` schemas are kept; past that the cache starts again (schemas rarely change).
    """

    def __init__(self, values: JsonValueConverter, capacity: int = 1000) -> None:
        self._values = values
        self._replace_null = values._replace_null
        self._capacity = max(1, capacity)
        self._cache: dict[Schema, Writer] = {}

    def writer(self, schema: Schema) -> Writer:
        try:
            found = self._cache.get(schema)
        except TypeError:  # a default the schema cannot hash (a tuple holding a list): not cached, not compiled
            return self._generic(schema)
        if found is None:
            if len(self._cache) >= self._capacity:
                self._cache.clear()
            found = self._cache[schema] = self._compile(schema, {})
        return found

    # --- the plan ------------------------------------------------------------------------------------------

    def _generic(self, schema: Schema) -> Writer:
        convert = self._values.convert_to_json
        return lambda value: convert(schema, value)

    def _null_text(self, schema: Schema) -> str | None:
        """What a null of ``schema`` is written as; None when the generic writer must decide (it raises)."""
        if schema.default_value is not None and self._replace_null:
            try:
                return self._values.convert_to_json(schema, schema.default_value)
            except DataException:
                return None
        return "null" if schema.optional else None

    def _compile(self, schema: Schema, building: dict[int, Writer]) -> Writer:
        if schema.name is not None and schema.name in _LOGICAL_NAMES:
            return self._generic(schema)
        kind = schema.type
        if kind is Type.STRUCT:
            return self._struct(schema, building)
        if kind is Type.ARRAY:
            return self._array(schema, building)
        if kind is Type.MAP:
            return self._map(schema, building)
        generic = self._generic(schema)
        null = self._null_text(schema)
        if kind is Type.STRING:
            def write_string(value: Any) -> str:
                if value.__class__ is str:
                    return quote(value)
                if value is None and null is not None:
                    return null
                return generic(value)
            return write_string
        if kind in _INT_TYPES:
            def write_int(value: Any) -> str:
                if value.__class__ is int:
                    return str(value)
                if value is None and null is not None:
                    return null
                return generic(value)
            return write_int
        if kind is Type.BOOLEAN:
            def write_boolean(value: Any) -> str:
                if value is True:
                    return "true"
                if value is False:
                    return "false"
                if value is None and null is not None:
                    return null
                return generic(value)
            return write_boolean
        return generic  # floats (Java's number text) and bytes: the generic writer is already direct

    def _array(self, schema: Schema, building: dict[int, Writer]) -> Writer:
        generic = self._generic(schema)
        element = self._compile(schema.value_schema, building) if schema.value_schema is not None else None
        null = self._null_text(schema)
        if element is None:
            return generic

        def write_array(value: Any) -> str:
            cls = value.__class__
            if cls is list or cls is tuple:
                return "[" + ",".join([element(v) for v in value]) + "]"
            if value is None and null is not None:
                return null
            return generic(value)
        return write_array

    def _map(self, schema: Schema, building: dict[int, Writer]) -> Writer:
        generic = self._generic(schema)
        keys = schema.key_schema
        if (keys is not None and keys.type is not Type.STRING) or schema.value_schema is None:
            return generic  # written as [[key,value],...] or without a value schema: rare, left to the generic
        entry = self._compile(schema.value_schema, building)
        null = self._null_text(schema)

        def write_map(value: Any) -> str:
            if value.__class__ is dict:
                parts = []
                for k, v in value.items():
                    if k.__class__ is not str:
                        return generic(value)  # Jackson's text of a non-string key: the generic writer knows it
                    parts.append(quote(k) + ":" + entry(v))
                return "{" + ",".join(parts) + "}"
            if value is None and null is not None:
                return null
            return generic(value)
        return write_map

    def _struct(self, schema: Schema, building: dict[int, Writer]) -> Writer:
        known = building.get(id(schema))
        if known is not None:
            return known
        fields = schema.fields()
        # a self-referencing schema cannot be built with SchemaBuilder, but a recursion guard costs nothing
        namespace: dict[str, Any] = {"Struct": Struct, "S": schema, "G": self._values.convert_to_json,
                                     "Q": quote}

        def late(value: Any) -> str:  # stands in for this struct's writer while its fields compile
            return namespace["write_struct"](value)

        building[id(schema)] = late
        pieces: list[str] = []
        for i, field in enumerate(fields):
            fs = field.schema
            prefix = ("{" if i == 0 else ",") + quote(field.name) + ":"
            namespace[f"P{i}"] = prefix
            namespace[f"W{i}"] = self._compile(fs, building)
            null = self._null_text(fs)
            namespace[f"N{i}"] = null
            v = f"v{i}"
            if fs.name is not None and fs.name in _LOGICAL_NAMES:
                inline = None
            elif fs.type is Type.STRING:
                inline = f"Q({v}) if {v}.__class__ is str else "
            elif fs.type in _INT_TYPES:
                inline = f"str({v}) if {v}.__class__ is int else "
            else:
                inline = None
            expr = f"W{i}({v})"
            if inline is not None:
                expr = inline + expr
            if null is not None:
                expr = f"N{i} if {v} is None else " + expr
            pieces.append(f"{{P{i}}}{{{expr}}}")
        names = ", ".join(f"v{i}" for i in range(len(fields)))
        if fields:
            body = f"    {names}, = s._values\n    return f'{''.join(pieces)}}}}}'\n"
        else:
            body = "    return '{}'\n"
        source = (
            "def write_struct(s):\n"
            "    if s.__class__ is not Struct or (s.schema is not S and s.schema != S):\n"
            "        return G(S, s)\n" + body
        )
        exec(compile(source, "<compiled JSON struct writer>", "exec"), namespace)  # noqa: S102 - see the module doc
        write: Writer = namespace["write_struct"]
        building[id(schema)] = write
        return write
