"""AvroConverter: Connect data as Avro in Confluent's wire format, with schemas kept in a schema registry.

Also found under Confluent's class name ``io.confluent.connect.avro.AvroConverter``, with its config keys.
A value is ``0x00``, the schema id (4 bytes, big-endian), then the Avro binary body; on reading, the id may
instead come from the ``__value_schema_id`` / ``__key_schema_id`` header (then the value is the bare body).
Schemas map as ``avro_data`` says; bytes are written and read by fastavro, a whole batch into one buffer.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import fastavro

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectHeaders,
    Converter,
    DataException,
    Importance,
    Password,
    Schema,
    SchemaAndValue,
    ValidString,
)
from connect.api.version import distribution_version
from plugins.converters.avro_data import AvroSchemaMapper, debug_bytes, reader_for, writer_for
from plugins.converters.avro_registry import RegistryClient

__all__ = ["AvroConverter"]

MAGIC = 0
_ID = struct.Struct(">I")
_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
_DEFAULT_STRATEGY = "io.confluent.kafka.serializers.subject.TopicNameStrategy"


def _strategy(value: str | None) -> str | None:
    name = str(value or "").strip().replace("$", ".").rpartition(".")[2]
    return None if name in _STRATEGIES else f"must name one of {', '.join(_STRATEGIES)} (Confluent's class names)"


def _config_def() -> ConfigDef:
    d = ConfigDef()
    d.define("schema.registry.url", ConfigType.LIST, None, importance=Importance.HIGH,
             documentation="Comma-separated URLs of the schema registry (Headrace's own: the worker's "
                           "/schema-registry/ or `headrace schema-registry`).")
    d.define("auto.register.schemas", ConfigType.BOOLEAN, True, importance=Importance.MEDIUM,
             documentation="Register the schema of each record if the subject does not have it yet.")
    d.define("use.latest.version", ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
             documentation="Write with the subject's latest schema instead of the record's own.")
    d.define("latest.compatibility.strict", ConfigType.BOOLEAN, True, importance=Importance.LOW,
             documentation="Accepted for compatibility; the write fails if the latest schema cannot hold the value.")
    d.define("latest.cache.ttl.sec", ConfigType.LONG, -1, importance=Importance.LOW,
             documentation="How long the latest version of a subject is cached (-1: until restart).")
    d.define("use.schema.id", ConfigType.INT, -1, importance=Importance.LOW,
             documentation="Write every record with this schema id (-1: look it up or register it).")
    d.define("normalize.schemas", ConfigType.BOOLEAN, False, importance=Importance.LOW,
             documentation="Ask the registry to normalize schemas when registering.")
    for side in ("key", "value"):
        d.define(f"{side}.subject.name.strategy", ConfigType.STRING, _DEFAULT_STRATEGY,
                 importance=Importance.MEDIUM,
                 documentation=f"How the {side} subject is named: TopicNameStrategy (<topic>-{side}), "
                               "RecordNameStrategy (the record's full name), TopicRecordNameStrategy "
                               "(<topic>-<record full name>).")
    d.define("schemas.cache.config", ConfigType.INT, 1000, importance=Importance.LOW,
             documentation="How many schemas are cached in each direction.")
    d.define("connect.meta.data", ConfigType.BOOLEAN, True, importance=Importance.LOW,
             documentation="Keep the Connect schema's name, version, doc, default and parameters as connect.* "
                           "properties of the Avro schema.")
    d.define("enhanced.avro.schema.support", ConfigType.BOOLEAN, False, importance=Importance.LOW,
             documentation="Accepted for compatibility: enum symbols and full names are always kept.")
    d.define("basic.auth.credentials.source", ConfigType.STRING, "URL",
             ValidString.in_("URL", "USER_INFO"), importance=Importance.MEDIUM,
             documentation="Where the registry's basic authentication comes from: the URL's user info or "
                           "basic.auth.user.info.")
    d.define("basic.auth.user.info", ConfigType.PASSWORD, None, importance=Importance.MEDIUM,
             documentation="user:password for the registry, with basic.auth.credentials.source=USER_INFO.")
    return d


def _urls_and_auth(config: AbstractConfig) -> tuple[list[str], tuple[str, str] | None]:
    urls = [str(u) for u in config.get_list("schema.registry.url")]
    if not urls:
        raise ConfigException("schema.registry.url", None, "Missing required configuration "
                              "\"schema.registry.url\" which has no default value.")
    auth = None
    clean = []
    for url in urls:
        parts = urlsplit(url.strip())
        if parts.username is not None:
            if config.get("basic.auth.credentials.source") == "URL":
                auth = (unquote(parts.username), unquote(parts.password or ""))
            host_and_port = parts.netloc.rpartition("@")[2]  # as written: an IPv6 host keeps its brackets
            if not parts.hostname:
                raise ConfigException("schema.registry.url", f"{parts.scheme}://[hidden]@{host_and_port}",
                                      "a registry URL with user info needs a host after the @")
            parts = parts._replace(netloc=host_and_port)
        clean.append(urlunsplit(parts))
    if config.get("basic.auth.credentials.source") == "USER_INFO":
        secret = config.get("basic.auth.user.info")
        text = secret.value() if isinstance(secret, Password) else str(secret or "")
        if ":" not in text:
            raise ConfigException("basic.auth.user.info", "[hidden]", "must be user:password with "
                                  "basic.auth.credentials.source=USER_INFO")
        user, _, password = text.partition(":")
        auth = (user, password)
    return clean, auth


class _Writer:
    __slots__ = ("convert", "parsed", "prefix")

    def __init__(self, schema_id: int, parsed: Any, convert: Any) -> None:
        self.prefix = bytes([MAGIC]) + _ID.pack(schema_id)
        self.parsed = parsed
        self.convert = convert


class _Reader:
    __slots__ = ("connect", "convert", "parsed")

    def __init__(self, parsed: Any, connect: Schema, convert: Any) -> None:
        self.parsed = parsed
        self.connect = connect
        self.convert = convert


class AvroConverter(Converter):
    CONFIG_DEF = _config_def()

    def __init__(self) -> None:
        self._client: RegistryClient | None = None
        self._mapper = AvroSchemaMapper()
        self._writers: dict[tuple[str, Schema], _Writer] = {}
        self._readers: dict[int, _Reader] = {}
        self._is_key = False
        self._header = "__value_schema_id"

    def version(self) -> str:
        return distribution_version(__name__)

    def config(self) -> ConfigDef:
        return ConfigDef(self.CONFIG_DEF)

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        # Confluent's clients also take the registry keys with a "schema.registry." prefix
        merged = dict(configs)
        for key in ("basic.auth.user.info", "basic.auth.credentials.source"):
            if f"schema.registry.{key}" in merged and key not in merged:
                merged[key] = merged[f"schema.registry.{key}"]
        config = AbstractConfig(self.CONFIG_DEF, merged)
        side = "key" if is_key else "value"
        problem = _strategy(config.get(f"{side}.subject.name.strategy"))
        if problem:
            raise ConfigException(f"{side}.subject.name.strategy", config.get(f"{side}.subject.name.strategy"),
                                  problem)
        self._strategy = str(config.get(f"{side}.subject.name.strategy")).replace("$", ".").rpartition(".")[2]
        self._is_key = is_key
        self._side = side
        self._header = f"__{side}_schema_id"
        self._auto_register = bool(config.get("auto.register.schemas"))
        self._use_latest = bool(config.get("use.latest.version"))
        self._use_id = int(config.get("use.schema.id"))
        self._normalize = bool(config.get("normalize.schemas"))
        cache = int(config.get("schemas.cache.config"))
        self._cache_size = max(1, cache)
        self._mapper = AvroSchemaMapper(bool(config.get("connect.meta.data")), cache)
        urls, auth = _urls_and_auth(config)
        self._client = RegistryClient(urls, auth, cache, float(config.get("latest.cache.ttl.sec")))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    # --- writing -------------------------------------------------------------------------------
    def _subject(self, topic: str, avro: Any) -> str:
        if self._strategy == "TopicNameStrategy":
            return f"{topic}-{self._side}"
        if not isinstance(avro, dict) or avro.get("type") != "record":
            raise DataException(f"{self._strategy} needs a record (struct) schema for the {self._side} of topic "
                                f"'{topic}'")
        full = avro["name"] if not avro.get("namespace") else f"{avro['namespace']}.{avro['name']}"
        return full if self._strategy == "RecordNameStrategy" else f"{topic}-{full}"

    def _writer(self, topic: str, schema: Schema) -> _Writer:
        found = self._writers.get((topic, schema))
        if found is not None:
            return found
        client = self._client
        if client is None:
            raise DataException("AvroConverter was not configured")
        avro = self._mapper.to_avro(schema)
        subject = self._subject(topic, avro)
        text = _json(avro)
        if self._use_id >= 0:
            schema_id, text = self._use_id, client.schema(self._use_id)
        elif self._use_latest:
            schema_id, text = client.latest(subject)
        elif self._auto_register:
            schema_id = client.register(subject, text, self._normalize)
        else:
            schema_id = client.lookup(subject, text)
        try:
            parsed = fastavro.parse_schema(_loads(text), named_schemas={})
        except Exception as exc:  # fastavro raises several kinds for a schema it cannot use
            raise DataException(f"Schema id {schema_id} of subject '{subject}' cannot be used: {exc}") from None
        found = _Writer(schema_id, parsed, writer_for(schema))
        if len(self._writers) >= self._cache_size:
            self._writers.pop(next(iter(self._writers)))
        self._writers[(topic, schema)] = found
        return found

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: ConnectHeaders | None = None) -> bytes | None:
        if value is None and (schema is None or schema.optional or schema.default_value is None):
            return None
        if schema is None:
            raise DataException(f"AvroConverter needs a schema for the {self._side} of topic '{topic}'; "
                                "this record has none")
        writer = self._writer(topic, schema)
        buffer = io.BytesIO()
        buffer.write(writer.prefix)
        self._write(buffer, writer, value, topic)
        return buffer.getvalue()

    def _write(self, buffer: io.BytesIO, writer: _Writer, value: Any, topic: str) -> None:
        try:
            fastavro.schemaless_writer(buffer, writer.parsed,
                                       writer.convert(value) if writer.convert is not None else value)
        except DataException:
            raise
        except Exception as exc:  # fastavro's ValueError/TypeError/AttributeError for a value that does not fit
            raise DataException(f"Failed to serialize the {self._side} for topic '{topic}' to Avro: {exc}") from None

    def from_connect_batch(self, topic: str, schema: Schema | None, values: Sequence[Any]) -> list[bytes | None]:
        if schema is None:
            return [self.from_connect_data(topic, schema, v) for v in values]
        writer = self._writer(topic, schema)
        buffer = io.BytesIO()
        ends: list[int] = []
        parsed, convert, prefix = writer.parsed, writer.convert, writer.prefix
        write, tell = fastavro.schemaless_writer, buffer.tell
        try:
            if convert is None:
                for value in values:
                    write(buffer, parsed, value)
                    ends.append(tell())
            else:
                for value in values:
                    write(buffer, parsed, convert(value) if value is not None else None)
                    ends.append(tell())
        except Exception as exc:
            raise DataException(f"Failed to serialize a batch for topic '{topic}' to Avro: {exc}") from None
        data = buffer.getbuffer()
        out: list[bytes | None] = []
        start = 0
        for value, end in zip(values, ends, strict=True):
            out.append(None if value is None and schema.optional else prefix + data[start:end])
            start = end
        data.release()
        return out

    # --- reading -------------------------------------------------------------------------------
    def _reader(self, schema_id: int, topic: str) -> _Reader:
        found = self._readers.get(schema_id)
        if found is not None:
            return found
        client = self._client
        if client is None:
            raise DataException("AvroConverter was not configured")
        try:
            text = client.schema(schema_id)
        except DataException as exc:
            raise DataException(f"Failed to deserialize the {self._side} of a record of topic '{topic}': "
                                f"schema id {schema_id} is unknown to the registry ({exc})") from None
        try:
            parsed = fastavro.parse_schema(_loads(text), named_schemas={})
        except Exception as exc:
            raise DataException(f"Schema id {schema_id} cannot be read: {exc}") from None
        connect = self._mapper.to_connect(text)
        found = _Reader(parsed, connect, reader_for(connect))
        if len(self._readers) >= self._cache_size:
            self._readers.pop(next(iter(self._readers)))
        self._readers[schema_id] = found
        return found

    def _header_id(self, headers: ConnectHeaders | None, topic: str) -> int | None:
        if not headers:
            return None
        header = headers.last_with_name(self._header)
        if header is None or header.value is None:
            return None
        raw = header.value
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, str):
            if raw.strip().isascii() and raw.strip().isdigit():
                return int(raw)
            raw = raw.encode("latin-1", "replace")
        data = bytes(raw) if isinstance(raw, bytes | bytearray | memoryview) else b""
        if len(data) == 5 and data[0] == MAGIC:
            return int(_ID.unpack_from(data, 1)[0])
        if len(data) == 4:
            return int(_ID.unpack(data)[0])
        raise DataException(f"Header {self._header} of a record of topic '{topic}' holds no schema id this "
                            f"converter reads ({debug_bytes(data)}): it reads 0x00 + a 4-byte id (use "
                            "header.converter=ByteArrayConverter for binary ids) or the id as text; GUID ids "
                            "are not supported")

    def to_connect_data(self, topic: str, value: bytes | None, headers: ConnectHeaders | None = None
                        ) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(None, None)
        schema_id = self._header_id(headers, topic)
        start = 0
        if schema_id is None:
            if len(value) < 5 or value[0] != MAGIC:
                raise DataException(f"Failed to deserialize the {self._side} of a record of topic '{topic}': "
                                    f"unknown magic byte (Confluent's Avro starts with 0x00 and a 4-byte schema "
                                    f"id; got {debug_bytes(bytes(value))})")
            schema_id, start = _ID.unpack_from(value, 1)[0], 5
        reader = self._reader(schema_id, topic)
        buffer = io.BytesIO(value)
        buffer.seek(start)
        try:
            datum = fastavro.schemaless_reader(buffer, reader.parsed, None)
            return SchemaAndValue(reader.connect, reader.convert(datum) if reader.convert is not None else datum)
        except DataException:
            raise
        except Exception as exc:
            raise DataException(f"Failed to deserialize the {self._side} of a record of topic '{topic}' with "
                                f"schema id {schema_id}: {exc}") from None

    def to_connect_batch(self, topic: str, values: Sequence[bytes | None]) -> tuple[list[Schema | None], list[Any]]:
        schemas: list[Schema | None] = []
        out: list[Any] = []
        read = fastavro.schemaless_reader
        unpack = _ID.unpack_from
        last_id = -1
        reader: _Reader | None = None
        for value in values:
            if value is None:
                schemas.append(None)
                out.append(None)
                continue
            if len(value) < 5 or value[0] != MAGIC:
                raise DataException(f"Record of topic '{topic}' does not start with the Avro magic byte")
            schema_id = unpack(value, 1)[0]
            if schema_id != last_id or reader is None:
                reader, last_id = self._reader(schema_id, topic), schema_id
            buffer = io.BytesIO(value)
            buffer.seek(5)
            datum = read(buffer, reader.parsed, None)
            schemas.append(reader.connect)
            out.append(reader.convert(datum) if reader.convert is not None else datum)
        return schemas, out


def _json(avro: Any) -> str:
    return json.dumps(avro, separators=(",", ":"))


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise DataException(f"Schema from the registry is not JSON: {exc}") from None
