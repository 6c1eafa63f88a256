"""JsonConverter: Connect data as JSON, byte for byte what Kafka Connect's JsonConverter writes.

With ``schemas.enable`` (the default) every message is an envelope
``{"schema":<schema>,"payload":<value>}``; without it, the value's plain JSON.
The JSON text follows Jackson's rules (``json_text``); schemas are written
and read by ``json_schemas``, values by ``json_values``, which also says
where reading is stricter than Kafka's. This module holds the converter: its
configuration and the envelope.

Writing is the hot path: the envelope prefix is built once per schema (an LRU of
``schemas.cache.size``), a string payload is quoted by the C JSON encoder, and any other value with a
schema is written by a writer compiled once for that schema (``json_writer``).
Reading recognises the prefix of the last schema seen and then parses only the
payload; without schemas, a value (or a whole batch) is parsed by orjson straight into its Connect
value, and only what orjson would read differently goes through the strict parser (``json_text``).
A batch of envelopes is read the same way: the payloads of a run of records with the last prefix by
orjson, an envelope of another text once per distinct schema text, and anything orjson would read
otherwise (a fraction, say) or the schema refuses by the per-record path, so each record reads as alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import methodcaller
from typing import Any, cast

import orjson

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigType,
    ConnectHeaders,
    DataException,
    Date,
    Decimal,
    Importance,
    Schema,
    SchemaAndValue,
    Struct,
    Time,
    Timestamp,
    Type,
    Width,
)
from plugins.converters._base import BuiltinConverter, converter_config_def
from plugins.converters.json_schemas import JsonSchemaConverter, SchemaTextCache
from plugins.converters.json_text import (
    MISSING,
    READ_FAILED,
    loads,
    loads_payload,
    loads_schemaless,
    loads_schemaless_batch,
    loads_whole_batch,
    quote,
    quote_lines,
)
from plugins.converters.json_values import JsonValueConverter
from plugins.converters.json_writer import CompiledJsonWriters, Writer

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

_UNSET: Any = object()
_BYTES_OR_NONE = frozenset((bytes, type(None)))
_STR_ONLY = {str}
_LOGICAL_NAMES = frozenset((Decimal.LOGICAL_NAME, Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME))
_INT_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}
# the field types a flat struct reader takes as they are, by the exact type of orjson's node
_FLAT_KINDS: dict[Type, type] = {
    Type.STRING: str,
    Type.BOOLEAN: bool,
    Type.INT8: int,
    Type.INT16: int,
    Type.INT32: int,
    Type.INT64: int,
}
_ENDS_ENVELOPE = methodcaller("endswith", b"}")


class JsonConverter(BuiltinConverter):
    """Converter and HeaderConverter for JSON, with or without schema envelopes."""

    def __init__(self) -> None:
        self._schemas_enable = True
        self._values = JsonValueConverter()
        self._schemas = JsonSchemaConverter(self._values, 1000)
        self._writers = CompiledJsonWriters(self._values, 1000)
        self._last_writer_schema: Any = _UNSET
        self._last_writer: Writer | None = None
        # the envelope prefix of the schema written last, and of the schema read last
        self._out_schema: Any = _UNSET
        self._out_prefix = ""
        self._in_prefix: bytes | None = None
        self._in_schema: Schema | None = None
        self._in_schemas = SchemaTextCache(1000)
        self._struct_readers: dict[Schema, tuple[Schema, Callable[[Schema, Any], Any]]] = {}

    # --- plugin --------------------------------------------------------------------------------

    CONFIG_DEF = _CONFIG_DEF

    def _configured(self, config: AbstractConfig) -> None:
        self._schemas_enable = bool(config.get_boolean(SCHEMAS_ENABLE_CONFIG))
        self._values = JsonValueConverter(
            numeric_decimals=str(config.get_string(DECIMAL_FORMAT_CONFIG)).upper() == "NUMERIC",
            replace_null=bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG)),
        )
        cache_size = int(config.get_int(SCHEMAS_CACHE_SIZE_CONFIG) or 0)
        self._schemas = JsonSchemaConverter(self._values, cache_size)
        self._writers = CompiledJsonWriters(self._values, cache_size)
        self._last_writer_schema, self._last_writer = _UNSET, None
        self._out_schema, self._out_prefix = _UNSET, ""
        self._in_prefix, self._in_schema = None, None
        self._in_schemas = SchemaTextCache(cache_size)
        self._struct_readers = {}

    # --- Converter / HeaderConverter -------------------------------------------------------------

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: ConnectHeaders | None = None
    ) -> bytes | None:
        if schema is None and value is None:
            return None
        if schema is None:
            payload = self._values.convert_to_json(None, value)
        elif type(value) is str and schema.type is Type.STRING:
            payload = quote(value)  # the common case, without a writer lookup
        else:
            payload = self._writer(schema)(value)
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

    def from_connect_batch(self, topic: str, schema: Schema | None, values: Sequence[Any]) -> list[bytes | None]:
        if schema is None:
            return super().from_connect_batch(topic, schema, values)
        if schema.type is Type.STRING and values and set(map(type, values)) == _STR_ONLY:
            # the usual batch of a text source: every line quoted in one pass
            if self._schemas_enable and schema is not self._out_schema:
                self._out_prefix = self._envelope_prefix(schema)
                self._out_schema = schema
            quoted = quote_lines(cast(list[str], list(values)), self._out_prefix if self._schemas_enable else "",
                                 "}" if self._schemas_enable else "")
            if quoted is not None:
                return cast(list[bytes | None], quoted)
        write = self._writer(schema)
        try:
            if self._schemas_enable:
                if schema is not self._out_schema:
                    self._out_prefix = self._envelope_prefix(schema)
                    self._out_schema = schema
                prefix = self._out_prefix
                return [(prefix + write(value) + "}").encode() for value in values]
            return [write(value).encode() for value in values]
        except UnicodeEncodeError as exc:  # a lone surrogate has no UTF-8 form
            raise DataException(_WRITE_FAILED + str(exc)) from exc

    def _writer(self, schema: Schema) -> Writer:
        if schema is not self._last_writer_schema:
            self._last_writer = self._writers.writer(schema)
            self._last_writer_schema = schema
        assert self._last_writer is not None
        return self._last_writer

    def to_connect_data(
        self, topic: str, value: bytes | None, headers: ConnectHeaders | None = None
    ) -> SchemaAndValue:
        try:
            return self._to_connect(value)
        except RecursionError as exc:  # JSON nested deeper than the Connect value can be built
            # from None: the thousand frames of the RecursionError say nothing more than its message
            raise DataException(READ_FAILED + "nesting too deep: " + str(exc)) from None

    def _to_connect(self, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(None, None)
        raw = value if type(value) is bytes else bytes(value)
        if not self._schemas_enable:
            return SchemaAndValue(None, loads_schemaless(raw))
        prefix = self._in_prefix
        if prefix is not None and raw.startswith(prefix) and raw.endswith(b"}"):
            # the same schema as last time: parse only the payload; if that is not one
            # complete JSON value the envelope is not well formed and the full parse says why
            try:
                payload = loads_payload(raw[len(prefix) : -1])
            except DataException:
                payload = MISSING
            if payload is not MISSING:
                return SchemaAndValue(self._in_schema, self._values.convert_to_connect(self._in_schema, payload))
        node = loads(raw)
        if not (isinstance(node, dict) and len(node) == 2 and "schema" in node and "payload" in node):
            raise DataException(ENVELOPE_REQUIRED_MESSAGE)
        schema = self._schemas.as_connect_schema(node["schema"])
        result = SchemaAndValue(schema, self._values.convert_to_connect(schema, node["payload"]))
        self._remember_prefix(raw, schema)
        return result

    def to_connect_batch(
        self, topic: str, values: Sequence[bytes | None]
    ) -> tuple[list[Schema | None], Sequence[Any]]:
        if set(map(type, values)) <= _BYTES_OR_NONE:  # the usual batch: no copy of each value needed
            raws = list(values)
        else:
            raws = [v if v is None or type(v) is bytes else bytes(v) for v in values]
        try:
            if self._schemas_enable:
                return self._read_envelopes(raws)
            # the usual batch, objects of one key set, comes as columns too (MapColumns), for the transforms
            # and sinks that work on them; anything else reads the maps as ever
            return [None] * len(raws), loads_schemaless_batch(raws)
        except RecursionError as exc:
            raise DataException(READ_FAILED + "nesting too deep: " + str(exc)) from None

    # --- reading a batch of envelopes ------------------------------------------------------------
    #
    # Each record gives what to_connect_data gives it, error included: whatever the bulk steps cannot
    # read exactly as the per-record path does (a fraction, a malformed envelope, a payload its schema
    # refuses) is read by that path, record by record, in order.

    def _read_envelopes(self, raws: list[bytes | None]) -> tuple[list[Schema | None], list[Any]]:
        count = len(raws)
        nulls = raws.count(None)
        if nulls == count:  # the usual key column: no key at all
            return [None] * count, [None] * count
        schemas: list[Schema | None] = [None] * count
        out: list[Any] = [None] * count
        start = 0
        while start < count:
            prefix = self._in_prefix
            if prefix is not None:
                carries = methodcaller("startswith", prefix)
                if nulls == 0 and start == 0 and all(map(carries, raws)):
                    end = count  # the usual value column: one schema, written as we write it
                else:
                    end = start
                    while end < count and (raws[end] is None or carries(raws[end])):
                        end += 1
                if end > start:
                    self._read_run(raws, start, end, schemas, out)
                    start = end
                    continue
            raw = raws[start]
            if raw is not None:
                schemas[start], out[start] = self._read_envelope(raw)
            start += 1
        return schemas, out

    def _read_run(
        self, raws: list[bytes | None], start: int, end: int, schemas: list[Schema | None], out: list[Any]
    ) -> None:
        """Records start..end, each None or an envelope with the prefix of ``self._in_schema``."""
        schema = self._in_schema
        cut = len(self._in_prefix or b"")
        run = raws[start:end]
        places = range(start, end) if None not in run else [i for i in range(start, end) if raws[i] is not None]
        present = cast(list[bytes], run if len(places) == len(run) else [raws[i] for i in places])
        nodes, exact = loads_whole_batch([raw[cut:-1] for raw in present])
        exact = exact and all(map(_ENDS_ENVELOPE, present))
        if schema is None:
            # orjson's exact nodes hold no fraction: they are already the schemaless Connect values
            converted: list[Any] = nodes
        elif exact and schema.type is Type.STRING and schema.name is None and set(map(type, nodes)) == _STR_ONLY:
            converted = nodes
        else:
            convert = self._flat_struct_reader(schema)
            try:
                converted = [MISSING if n is MISSING else convert(schema, n) for n in nodes]
            except DataException:  # the per-record path below finds which, and says why
                converted, exact = [MISSING] * len(nodes), False
        if exact and type(places) is range:
            schemas[start:end] = [schema] * (end - start)
            out[start:end] = converted
            return
        for i, raw, node, value in zip(places, present, nodes, converted, strict=True):
            if node is MISSING or value is MISSING or not raw.endswith(b"}"):
                read = self._to_connect(raw)
                schemas[i], out[i] = read.schema, read.value
            else:
                schemas[i], out[i] = schema, value

    def _flat_struct_reader(self, schema: Schema) -> Callable[[Schema, Any], Any]:
        """``convert_to_connect`` for ``schema``, quicker for the usual struct: fields of strings, integers
        and booleans, each present with a value of its type (anything else is read by ``convert_to_connect``)."""
        convert = self._values.convert_to_connect
        if schema.type is not Type.STRUCT or schema.name in _LOGICAL_NAMES:
            return convert
        try:
            found = self._struct_readers.get(schema)
        except TypeError:  # a default the schema cannot hash: read as ever
            return convert
        if found is not None and found[0] is schema:
            return found[1]
        fields = schema.fields()
        kinds = []
        ranges: list[tuple[int, int, int]] = []
        for place, field in enumerate(fields):
            kind = _FLAT_KINDS.get(field.schema.type)
            if kind is None or field.schema.name in _LOGICAL_NAMES:
                return convert
            kinds.append(kind)
            if kind is int:
                bits = _INT_BITS[field.schema.type]
                ranges.append((place, -(1 << (bits - 1)), 1 << (bits - 1)))
        names = [f.name for f in fields]
        expected = tuple(kinds)
        make = Struct.from_valid_values

        def read(schema: Schema, node: Any) -> Any:
            if type(node) is dict:
                values: list[Any] = list(map(node.get, names))
                if tuple(map(type, values)) == expected and all(lo <= values[p] < hi for p, lo, hi in ranges):
                    return make(schema, values)
            return convert(schema, node)

        if len(self._struct_readers) >= 1000:
            self._struct_readers.clear()
        self._struct_readers[schema] = (schema, read)
        return read

    def _read_envelope(self, raw: bytes) -> tuple[Schema | None, Any]:
        """One envelope whose prefix is not the last one read: its schema looked up by its text."""
        node = loads_whole_batch([raw])[0][0]
        key: bytes | None = None
        if type(node) is dict and len(node) == 2 and "schema" in node and "payload" in node:
            key = orjson.dumps(node["schema"], option=orjson.OPT_SORT_KEYS)
            known = self._in_schemas.lookup(key)
            if known is not None:
                schema, prefix = known
                try:
                    value = self._values.convert_to_connect(schema, node["payload"])
                except DataException:
                    pass  # the per-record path below says why
                else:
                    if prefix is not None and raw.startswith(prefix):
                        self._in_prefix, self._in_schema = prefix, schema
                    return schema, value
        read = self._to_connect(raw)
        if node is not MISSING and self._in_schema is read.schema and raw.startswith(self._in_prefix or b"\0"):
            prefix_seen: bytes | None = self._in_prefix
        else:
            prefix_seen = None
        if key is not None:
            self._in_schemas.store(key, (read.schema, prefix_seen))
        return read.schema, read.value

    # --- the envelope --------------------------------------------------------------------------

    def _envelope_prefix(self, schema: Schema | None) -> str:
        return '{"schema":' + self._schemas.as_json_schema(schema) + ',"payload":'

    def _remember_prefix(self, raw: bytes, schema: Schema | None) -> None:
        """Keep this message's envelope prefix if it is the one we write for its schema."""
        try:
            prefix = self._envelope_prefix(schema).encode()
        except (DataException, UnicodeEncodeError):
            return
        if raw.startswith(prefix):
            self._in_prefix, self._in_schema = prefix, schema

    # --- the conversions on their own, as Kafka's JsonConverter offers them --------------------

    def as_json_schema(self, schema: Schema | None) -> str:
        """The JSON text of ``schema`` (``null`` for None), cached per schema."""
        return self._schemas.as_json_schema(schema)

    def as_connect_schema(self, node: Any) -> Schema | None:
        """The Schema a parsed JSON schema describes (None for JSON null), cached."""
        return self._schemas.as_connect_schema(node)

    def convert_to_json(self, schema: Schema | None, value: Any) -> str:
        """The JSON text of ``value`` under ``schema`` (the payload, without an envelope)."""
        return self._values.convert_to_json(schema, value)

    def convert_to_connect(self, schema: Schema | None, node: Any) -> Any:
        """The Connect value of a parsed JSON ``node`` under ``schema`` (None: inferred)."""
        return self._values.convert_to_connect(schema, node)
