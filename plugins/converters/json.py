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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigType,
    ConnectHeaders,
    DataException,
    Importance,
    Schema,
    SchemaAndValue,
    Type,
    Width,
)
from plugins.converters._base import BuiltinConverter, converter_config_def
from plugins.converters.json_schemas import JsonSchemaConverter
from plugins.converters.json_text import (
    MISSING,
    READ_FAILED,
    loads,
    loads_payload,
    loads_schemaless,
    loads_schemaless_batch,
    quote,
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

    def to_connect_batch(self, topic: str, values: Sequence[bytes | None]) -> tuple[list[Schema | None], list[Any]]:
        if self._schemas_enable:
            return super().to_connect_batch(topic, values)
        if set(map(type, values)) <= _BYTES_OR_NONE:  # the usual batch: no copy of each value needed
            raws = list(values)
        else:
            raws = [v if v is None or type(v) is bytes else bytes(v) for v in values]
        try:
            return [None] * len(raws), loads_schemaless_batch(raws)
        except RecursionError as exc:
            raise DataException(READ_FAILED + "nesting too deep: " + str(exc)) from None

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
