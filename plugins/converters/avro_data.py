"""Connect schemas and values to Avro and back, as Confluent's AvroData maps them.

Schemas: Struct -> record (an unnamed struct is ``io.confluent.connect.avro.ConnectDefault``, then
ConnectDefault2, ...); INT8/INT16 -> ``int`` with ``connect.type``; an optional schema -> ``["null", T]``
(``[T, "null"]`` when its default is not null, since an Avro default must match the first branch); Decimal ->
``bytes`` + ``decimal`` (precision from ``connect.decimal.precision``, else 64); Date -> ``int`` + ``date``;
Time -> ``int`` + ``time-millis``; Timestamp -> ``long`` + ``timestamp-millis``; a map with string keys -> Avro
map, any other map -> an array of ``MapEntry`` {key, value} records. With ``connect.meta.data`` the Connect
name, version, doc, default and parameters ride along as ``connect.*`` properties, so a schema read back is
the one written. Read from Avro: an enum is a STRING with ``io.confluent.connect.avro.Enum`` parameters, a
union of several non-null types a Struct ``io.confluent.connect.avro.Union`` with a field per branch.

Values go through functions compiled once per schema; a schema whose values fastavro takes as they are (flat
primitives, the logical types' Python values) needs none.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal as _decimal
import json
import uuid
from collections.abc import Callable
from typing import Any

from connect.api import DataException, Schema, SchemaBuilder, Struct, Type
from connect.api.logical_types import Date, Decimal, Time, Timestamp

__all__ = ["AvroSchemaMapper", "Converter", "reader_for", "writer_for"]

Converter = Callable[[Any], Any]

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_NAME = "ConnectDefault"
ENUM_PARAM = "io.confluent.connect.avro.Enum"
UNION_NAME = "io.confluent.connect.avro.Union"
MAP_ENTRY = "MapEntry"
PRECISION_PARAM = "connect.decimal.precision"
DEFAULT_PRECISION = 64

_PRIMITIVE_AVRO = {Type.INT8: "int", Type.INT16: "int", Type.INT32: "int", Type.INT64: "long",
                   Type.FLOAT32: "float", Type.FLOAT64: "double", Type.BOOLEAN: "boolean", Type.STRING: "string",
                   Type.BYTES: "bytes"}
_AVRO_PRIMITIVE = {"int": Type.INT32, "long": Type.INT64, "float": Type.FLOAT32, "double": Type.FLOAT64,
                   "boolean": Type.BOOLEAN, "string": Type.STRING, "bytes": Type.BYTES}
_LOGICAL_AVRO = {Date.LOGICAL_NAME: ("int", "date"), Time.LOGICAL_NAME: ("int", "time-millis"),
                 Timestamp.LOGICAL_NAME: ("long", "timestamp-millis")}
_AVRO_LOGICAL = {"date": Date.SCHEMA, "time-millis": Time.SCHEMA, "timestamp-millis": Timestamp.SCHEMA}
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def _split(full: str) -> tuple[str, str | None]:
    namespace, _, name = full.rpartition(".")
    return name, namespace or None


# --- Connect -> Avro schema ----------------------------------------------------------------------------
class _ToAvro:
    """One Connect schema to Avro JSON; named types are defined once and referred to by name after."""

    def __init__(self, meta: bool) -> None:
        self.meta = meta
        self.defined: dict[str, Schema] = {}
        self.unnamed = 0
        self.entries = 0

    def schema(self, schema: Schema, in_union: bool = False) -> Any:
        body = self._non_null(schema)
        if schema.optional and not in_union:
            if schema.default_value is not None:
                return [body, "null"]
            return ["null", body]
        return body

    def _props(self, schema: Schema, out: dict[str, Any], with_name: bool = True) -> dict[str, Any]:
        if not self.meta:
            return out
        if with_name and schema.name:
            out["connect.name"] = schema.name
        if schema.version is not None:
            out["connect.version"] = schema.version
        if schema.doc is not None and out.get("type") != "record":
            out["connect.doc"] = schema.doc
        if schema.parameters:
            out["connect.parameters"] = dict(schema.parameters)
        if schema.default_value is not None and schema.type is not Type.STRUCT:
            out["connect.default"] = default_json(schema, schema.default_value)
        return out

    def _non_null(self, schema: Schema) -> Any:
        t = schema.type
        if schema.name == Decimal.LOGICAL_NAME:
            params = schema.parameters or {}
            precision = int(params.get(PRECISION_PARAM, DEFAULT_PRECISION))
            return self._props(schema, {"type": "bytes", "scale": Decimal.scale(schema), "precision": precision,
                                        "logicalType": "decimal"})
        if schema.name in _LOGICAL_AVRO:
            base, logical = _LOGICAL_AVRO[schema.name]
            return self._props(schema, {"type": base, "logicalType": logical})
        if t is Type.STRING and schema.parameters and ENUM_PARAM in schema.parameters:
            return self._enum(schema)
        if t.is_primitive:
            out: dict[str, Any] = {"type": _PRIMITIVE_AVRO[t]}
            if self.meta and t in (Type.INT8, Type.INT16):
                out["connect.type"] = t.value
            self._props(schema, out)
            return out if len(out) > 1 else out["type"]
        if t is Type.ARRAY:
            assert schema.value_schema is not None
            return self._props(schema, {"type": "array", "items": self.schema(schema.value_schema)})
        if t is Type.MAP:
            return self._map(schema)
        if schema.name == UNION_NAME:
            return [self.schema(f.schema, in_union=True) for f in schema.fields()]
        return self._record(schema)

    def _enum(self, schema: Schema) -> Any:
        params = schema.parameters or {}
        full = params[ENUM_PARAM]
        if full in self.defined:
            return full
        self.defined[full] = schema
        name, namespace = _split(full)
        prefix = ENUM_PARAM + "."
        symbols = [v for k, v in params.items() if k.startswith(prefix)]
        out: dict[str, Any] = {"type": "enum", "name": name, "symbols": symbols}
        if namespace:
            out["namespace"] = namespace
        return self._props(schema, out)

    def _map(self, schema: Schema) -> Any:
        key, value = schema.key_schema, schema.value_schema
        assert key is not None and value is not None
        if key.type is Type.STRING and not key.optional and not key.name:
            return self._props(schema, {"type": "map", "values": self.schema(value)})
        self.entries += 1
        name = MAP_ENTRY if self.entries == 1 else f"{MAP_ENTRY}{self.entries}"
        entry = {"type": "record", "name": name, "namespace": NAMESPACE,
                 "fields": [{"name": "key", "type": self.schema(key)}, {"name": "value", "type": self.schema(value)}]}
        if self.meta:
            entry["connect.internal.type"] = MAP_ENTRY
        return self._props(schema, {"type": "array", "items": entry})

    def _record(self, schema: Schema) -> Any:
        if schema.name:
            full = schema.name
        else:
            self.unnamed += 1
            full = f"{NAMESPACE}.{DEFAULT_NAME}" + ("" if self.unnamed == 1 else str(self.unnamed))
        if full in self.defined:
            if self.defined[full] != schema:
                raise DataException(f"Struct name {full} is used by two different schemas; Avro needs one "
                                    "definition per name")
            return full
        self.defined[full] = schema
        name, namespace = _split(full)
        fields = []
        for field in schema.fields():
            entry: dict[str, Any] = {"name": field.name, "type": self.schema(field.schema)}
            if field.schema.default_value is not None:
                entry["default"] = default_json(field.schema, field.schema.default_value)
            elif field.schema.optional:
                entry["default"] = None
            if self.meta and field.schema.doc is not None:
                entry["doc"] = field.schema.doc
            fields.append(entry)
        out: dict[str, Any] = {"type": "record", "name": name}
        if namespace:
            out["namespace"] = namespace
        if schema.doc is not None:
            out["doc"] = schema.doc
        out["fields"] = fields
        return self._props(schema, out)


def default_json(schema: Schema, value: Any) -> Any:
    """A Connect default as the JSON an Avro schema's ``default`` holds (bytes as ISO-8859-1 text)."""
    if value is None:
        return None
    if schema.name == Decimal.LOGICAL_NAME:
        return Decimal.from_logical(schema, value).decode("latin-1")
    if schema.name == Date.LOGICAL_NAME:
        return Date.from_logical(schema, value)
    if schema.name == Time.LOGICAL_NAME:
        return Time.from_logical(schema, value)
    if schema.name == Timestamp.LOGICAL_NAME:
        return Timestamp.from_logical(schema, value)
    t = schema.type
    if t is Type.BYTES:
        return bytes(value).decode("latin-1")
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        return [default_json(schema.value_schema, v) for v in value]
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        if schema.key_schema.type is Type.STRING:
            return {k: default_json(schema.value_schema, v) for k, v in value.items()}
        return [{"key": default_json(schema.key_schema, k), "value": default_json(schema.value_schema, v)}
                for k, v in value.items()]
    if t is Type.STRUCT:
        return {f.name: default_json(f.schema, value.get(f)) for f in schema.fields()}
    return value


# --- Avro -> Connect schema ----------------------------------------------------------------------------
class _ToConnect:
    def __init__(self) -> None:
        self.named: dict[str, Any] = {}  # full name -> Avro definition, for references by name

    def schema(self, avro: Any, namespace: str | None = None, optional: bool = False, default: Any = None,
               has_default: bool = False) -> Schema:
        builder = self.builder(avro, namespace)
        if optional:
            builder.optional()
        if has_default and default is not None:
            builder.default_value(default)
        return builder.build()

    def builder(self, avro: Any, namespace: str | None) -> SchemaBuilder:
        if isinstance(avro, list):
            return self._union(avro, namespace)
        if isinstance(avro, str):
            if avro in _AVRO_PRIMITIVE:
                return SchemaBuilder.type_of(_AVRO_PRIMITIVE[avro])
            full = avro if "." in avro or avro in self.named else (f"{namespace}.{avro}" if namespace else avro)
            if full not in self.named and avro in self.named:
                full = avro
            if full not in self.named:
                raise DataException(f"Avro schema refers to unknown type {avro}")
            return self.builder(self.named[full], _split(full)[1])
        if not isinstance(avro, dict):
            raise DataException(f"Not an Avro schema: {avro!r}")
        kind = avro.get("type")
        if isinstance(kind, dict | list):
            return self.builder(kind, namespace)
        if kind == "record":
            return self._record(avro, namespace)
        if kind == "enum":
            return self._enum(avro, namespace)
        if kind == "fixed":
            full = self._full(avro, namespace)
            self.named[full] = avro
            return self._meta(SchemaBuilder.bytes().parameter("connect.fixed.size", str(avro["size"])), avro)
        if kind == "array":
            items = avro["items"]
            if isinstance(items, dict) and items.get("type") == "record" and \
                    (items.get("connect.internal.type") == MAP_ENTRY or _is_map_entry(items)):
                self.named[self._full(items, namespace)] = items
                key_field, value_field = items["fields"]
                key = self._field_schema(key_field, namespace)
                value = self._field_schema(value_field, namespace)
                return self._meta(SchemaBuilder.map(key, value), avro)
            return self._meta(SchemaBuilder.array(self.schema(items, namespace)), avro)
        if kind == "map":
            return self._meta(SchemaBuilder.map(Schema.STRING_SCHEMA, self.schema(avro["values"], namespace)), avro)
        logical = avro.get("logicalType")
        if logical == "decimal" and kind == "bytes":
            builder = Decimal.builder(int(avro.get("scale", 0)))
            if "connect.parameters" not in avro:
                builder.parameter(PRECISION_PARAM, str(avro.get("precision", DEFAULT_PRECISION)))
            return self._meta(builder, avro)
        if logical in _AVRO_LOGICAL and kind == _LOGICAL_AVRO[_AVRO_LOGICAL[logical].name or ""][0]:
            logical_schema = _AVRO_LOGICAL[logical]
            return self._meta(SchemaBuilder.type_of(logical_schema.type).name(logical_schema.name or "")
                              .version(1), avro)
        if kind in _AVRO_PRIMITIVE:
            connect_type = avro.get("connect.type")
            base = Type(connect_type) if connect_type in ("int8", "int16") else _AVRO_PRIMITIVE[kind]
            return self._meta(SchemaBuilder.type_of(base), avro)
        if kind in self.named or isinstance(kind, str) and kind not in ("null",):
            return self.builder(kind, namespace)
        raise DataException(f"Avro type {kind!r} has no Connect equivalent")

    def _meta(self, builder: SchemaBuilder, avro: dict) -> SchemaBuilder:
        name = avro.get("connect.name")
        if name and builder.build().name is None:
            builder.name(str(name))
        if "connect.doc" in avro:
            builder.doc(str(avro["connect.doc"]))
        return _version_and_parameters(builder, avro)

    @staticmethod
    def _full(avro: dict, namespace: str | None) -> str:
        name = str(avro["name"])
        space = avro.get("namespace", namespace)
        return name if "." in name or not space else f"{space}.{name}"

    def _enum(self, avro: dict, namespace: str | None) -> SchemaBuilder:
        full = self._full(avro, namespace)
        self.named[full] = avro
        builder = SchemaBuilder.string().parameter(ENUM_PARAM, full)
        for symbol in avro["symbols"]:
            builder.parameter(f"{ENUM_PARAM}.{symbol}", symbol)
        builder = self._meta(builder, avro)
        if avro.get("doc"):
            builder.doc(str(avro["doc"]))
        return builder

    def _field_schema(self, field: dict, namespace: str | None) -> Schema:
        avro = field["type"]
        has_default = "default" in field
        optional = False
        if isinstance(avro, list) and "null" in avro and len(avro) == 2:
            optional = True
            avro = next(b for b in avro if b != "null")
        builder = self.builder(avro, namespace)
        if optional:
            builder.optional()
        if has_default and field["default"] is not None:
            builder.default_value(avro_default_to_connect(builder.build(), field["default"]))
        if field.get("doc") and builder.build().doc is None:
            builder.doc(str(field["doc"]))
        return builder.build()

    def _record(self, avro: dict, namespace: str | None) -> SchemaBuilder:
        full = self._full(avro, namespace)
        self.named[full] = avro
        own_namespace = _split(full)[1]
        builder = SchemaBuilder.struct()
        name = avro.get("connect.name")
        if name:
            builder.name(str(name))
        elif not (_split(full)[1] == NAMESPACE and _split(full)[0].startswith(DEFAULT_NAME)):
            builder.name(full)
        for field in avro["fields"]:
            builder.field(field["name"], self._field_schema(field, own_namespace))
        if avro.get("doc"):
            builder.doc(str(avro["doc"]))
        return _version_and_parameters(builder, avro)

    def _union(self, branches: list, namespace: str | None) -> SchemaBuilder:
        others = [b for b in branches if b != "null"]
        if len(others) == 1:
            return self.builder(others[0], namespace).optional()
        builder = SchemaBuilder.struct().name(UNION_NAME)
        for branch in others:
            builder.field(_branch_name(branch, namespace), self.schema(branch, namespace, optional=True))
        if len(others) < len(branches):
            builder.optional()
        return builder


def _is_map_entry(record: dict) -> bool:
    names = [f.get("name") for f in record.get("fields", ())]
    return record.get("name", "").startswith(MAP_ENTRY) and record.get("namespace") == NAMESPACE and \
        names == ["key", "value"]


def _branch_name(branch: Any, namespace: str | None) -> str:
    if isinstance(branch, str):
        return branch.rpartition(".")[2]
    if isinstance(branch, dict):
        if branch.get("type") in ("record", "enum", "fixed"):
            return str(branch["name"]).rpartition(".")[2]
        if isinstance(branch.get("type"), str):
            return str(branch.get("logicalType") or branch["type"]).replace("-", "_")
    return "branch"


def avro_default_to_connect(schema: Schema, value: Any) -> Any:
    """An Avro ``default`` (JSON) as the Connect value of ``schema``."""
    if value is None:
        return None
    if schema.name == Decimal.LOGICAL_NAME:
        return Decimal.to_logical(schema, str(value).encode("latin-1"))
    if schema.name == Date.LOGICAL_NAME:
        return Date.to_logical(schema, int(value))
    if schema.name == Time.LOGICAL_NAME:
        return Time.to_logical(schema, int(value))
    if schema.name == Timestamp.LOGICAL_NAME:
        return Timestamp.to_logical(schema, int(value))
    t = schema.type
    if t is Type.BYTES:
        return str(value).encode("latin-1")
    if t in (Type.FLOAT32, Type.FLOAT64):
        return float(value)
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        return [avro_default_to_connect(schema.value_schema, v) for v in value]
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        if isinstance(value, list):
            return {avro_default_to_connect(schema.key_schema, e["key"]):
                    avro_default_to_connect(schema.value_schema, e["value"]) for e in value}
        return {k: avro_default_to_connect(schema.value_schema, v) for k, v in value.items()}
    if t is Type.STRUCT:
        struct = Struct(schema)
        for f in schema.fields():
            struct.put(f, avro_default_to_connect(f.schema, value.get(f.name)))
        return struct
    return value


class AvroSchemaMapper:
    """Connect <-> Avro schemas, with ``connect.meta.data`` and a bounded cache in each direction."""

    def __init__(self, connect_meta_data: bool = True, cache_size: int = 1000) -> None:
        self.meta = connect_meta_data
        self.cache_size = max(1, cache_size)
        self._to_avro: dict[Schema, Any] = {}
        self._to_connect: dict[str, Schema] = {}

    def to_avro(self, schema: Schema) -> Any:
        found = self._to_avro.get(schema)
        if found is None:
            found = _ToAvro(self.meta).schema(schema)
            if len(self._to_avro) >= self.cache_size:
                self._to_avro.pop(next(iter(self._to_avro)))
            self._to_avro[schema] = found
        return found

    def to_connect(self, avro_text: str) -> Schema:
        found = self._to_connect.get(avro_text)
        if found is None:
            try:
                avro = json.loads(avro_text)
            except ValueError as exc:
                raise DataException(f"Avro schema is not JSON: {exc}") from None
            found = _ToConnect().schema(avro)
            if len(self._to_connect) >= self.cache_size:
                self._to_connect.pop(next(iter(self._to_connect)))
            self._to_connect[avro_text] = found
        return found


# --- values ----------------------------------------------------------------------------------------------
def writer_for(schema: Schema) -> Converter | None:
    """Connect value -> what fastavro writes for ``to_avro(schema)``; None when it takes the value as it is."""
    inner = _writer(schema)
    if inner is None:
        return None
    if schema.optional or schema.default_value is not None:
        default = schema.default_value
        return lambda v: inner(default if v is None else v) if (v is not None or default is not None) else None
    return inner


def _checked_logical(convert: Callable[[Schema, Any], Any], schema: Schema) -> Converter:
    return lambda v: convert(schema, v)


def _writer(schema: Schema) -> Converter | None:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return _checked_logical(Decimal.from_logical, schema)
    if name == Date.LOGICAL_NAME:
        return _checked_logical(Date.from_logical, schema)
    if name == Time.LOGICAL_NAME:
        return _checked_logical(Time.from_logical, schema)
    if name == Timestamp.LOGICAL_NAME:
        return _checked_logical(Timestamp.from_logical, schema)
    t = schema.type
    if t.is_primitive:
        return None
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        item = writer_for(schema.value_schema)
        return None if item is None else (lambda v: [item(x) for x in v])
    if t is Type.MAP:
        return _map_writer(schema)
    if name == UNION_NAME:
        return _union_writer(schema)
    return _struct_writer(schema)


def _map_writer(schema: Schema) -> Converter | None:
    assert schema.key_schema is not None and schema.value_schema is not None
    key = writer_for(schema.key_schema)
    value = writer_for(schema.value_schema)
    k = key or (lambda x: x)
    v = value or (lambda x: x)
    if schema.key_schema.type is Type.STRING and not schema.key_schema.optional and not schema.key_schema.name:
        return None if value is None else (lambda m: {a: v(b) for a, b in m.items()})
    return lambda m: [{"key": k(a), "value": v(b)} for a, b in m.items()]


def _union_writer(schema: Schema) -> Converter:
    fields = [(f, writer_for(f.schema)) for f in schema.fields()]

    def write(struct: Struct) -> Any:
        for field, convert in fields:
            value = struct.get(field)
            if value is not None:
                return convert(value) if convert is not None else value
        return None
    return write


def _struct_writer(schema: Schema) -> Converter:
    fields = schema.fields()
    names = [f.name for f in fields]
    plan = [(f.name, writer_for(f.schema), f.schema.default_value) for f in fields]
    if all(convert is None and default is None for _, convert, default in plan):
        def flat(struct: Struct) -> dict[str, Any]:
            if struct.schema is not schema and struct.schema != schema:
                raise DataException(f"Struct of schema {struct.schema!r} given for {schema!r}")
            return dict(zip(names, struct.field_values(), strict=True))
        return flat

    def nested(struct: Struct) -> dict[str, Any]:
        if struct.schema is not schema and struct.schema != schema:
            raise DataException(f"Struct of schema {struct.schema!r} given for {schema!r}")
        out = {}
        for (name, convert, default), value in zip(plan, struct.field_values(), strict=True):
            if value is None:
                value = default
            out[name] = convert(value) if convert is not None and value is not None else value
        return out
    return nested


def reader_for(schema: Schema) -> Converter | None:
    """What fastavro read (logical types already as Python values) -> the Connect value of ``schema``."""
    t = schema.type
    if schema.name in (Decimal.LOGICAL_NAME, Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
        return None
    if t.is_primitive:
        if t is Type.STRING:
            return _text  # an enum symbol or a uuid arrives as str or UUID
        return _plain_number if t in (Type.INT64, Type.INT32) else None
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        item = _nullable(reader_for(schema.value_schema))
        return None if item is None else (lambda v: [item(x) for x in v])
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        key = _nullable(reader_for(schema.key_schema)) or (lambda x: x)
        value = _nullable(reader_for(schema.value_schema)) or (lambda x: x)

        def read_map(m: Any) -> dict:
            if isinstance(m, list):
                return {key(e["key"]): value(e["value"]) for e in m}
            return {a: value(b) for a, b in m.items()}
        return read_map
    if schema.name == UNION_NAME:
        return _union_reader(schema)
    plan = [(f.name, _nullable(reader_for(f.schema))) for f in schema.fields()]
    if all(convert is None for _, convert in plan):
        names = [name for name, _ in plan]
        return lambda d: Struct.from_valid_values(schema, [d[n] for n in names])
    return lambda d: Struct.from_valid_values(
        schema, [d[name] if convert is None else convert(d[name]) for name, convert in plan])


def _nullable(convert: Converter | None) -> Converter | None:
    if convert is None:
        return None
    return lambda v: None if v is None else convert(v)


def _text(value: Any) -> Any:
    return str(value) if isinstance(value, uuid.UUID) else value


def _plain_number(value: Any) -> Any:
    # logical types Connect has no type for (timestamp-micros, time-micros, local-timestamp-*) stay numbers
    if isinstance(value, _dt.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=_dt.UTC)
        delta = moment - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, _dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    if isinstance(value, _dt.date):
        return (value - _EPOCH.date()).days
    return value


def _union_reader(schema: Schema) -> Converter:
    branches = [(f, _nullable(reader_for(f.schema)), _accepts(f.schema)) for f in schema.fields()]

    def read(value: Any) -> Struct:
        values: list[Any] = [None] * len(branches)
        for i, (_, convert, accepts) in enumerate(branches):
            if accepts(value):
                values[i] = convert(value) if convert is not None else value
                return Struct.from_valid_values(schema, values)
        raise DataException(f"Value {value!r} fits no branch of the union")
    return read


def _accepts(schema: Schema) -> Callable[[Any], bool]:
    t = schema.type
    if schema.name == Decimal.LOGICAL_NAME:
        return lambda v: isinstance(v, _decimal.Decimal)
    if t is Type.BOOLEAN:
        return lambda v: isinstance(v, bool)
    if t in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
        return lambda v: isinstance(v, int | _dt.date | _dt.time) and not isinstance(v, bool)
    if t in (Type.FLOAT32, Type.FLOAT64):
        return lambda v: isinstance(v, float)
    if t is Type.STRING:
        return lambda v: isinstance(v, str | uuid.UUID)
    if t is Type.BYTES:
        return lambda v: isinstance(v, bytes | bytearray)
    if t is Type.ARRAY:
        return lambda v: isinstance(v, list)
    return lambda v: isinstance(v, dict)


def debug_bytes(value: bytes) -> str:
    """The first bytes of a value, for an error message."""
    return base64.b16encode(value[:16]).decode() + ("..." if len(value) > 16 else "")


def _version_and_parameters(builder: SchemaBuilder, avro: dict) -> SchemaBuilder:
    """The ``connect.version`` and ``connect.parameters`` an Avro schema carries, onto ``builder``."""
    if "connect.version" in avro:
        builder.version(int(avro["connect.version"]))
    params = avro.get("connect.parameters")
    if isinstance(params, dict):
        builder.parameters({str(k): str(v) for k, v in params.items()})
    return builder
