"""RedisSinkConnector (also ``com.redis.kafka.connect.RedisSinkConnector``): records into Redis, one data type.

Layout (``redis.type``), with ``K`` the record key as text and ``KS`` the keyspace (``${topic}`` replaced):

============  =====================================================  ============================  ===========
type          write                                                  null value (tombstone)        replay
============  =====================================================  ============================  ===========
STRING        ``SET KS:K value``                                     ``DEL KS:K``                  idempotent
JSON          ``JSON.SET KS:K $ value`` (RedisJSON module needed)    ``DEL KS:K``                  idempotent
HASH          ``HSET KS:K field value ...`` (map/struct value)       ``DEL KS:K``                  idempotent
STREAM        ``XADD KS * field value ...`` (map/struct value)       nothing (skipped)             duplicates
LIST          ``RPUSH KS K``                                         ``LREM KS 0 K``               duplicates
SET           ``SADD KS K``                                          ``SREM KS K``                 idempotent
ZSET          ``ZADD KS score K`` (value = the score)                ``ZREM KS K``                 idempotent
============  =====================================================  ============================  ===========

``KS:K`` is ``KS + redis.separator + K``, or ``K`` alone when the keyspace is empty. A batch (one ``put``) is one
pipeline, one round trip; ``redis.multiexec=true`` wraps it in MULTI/EXEC; ``redis.wait.replicas`` adds a WAIT.
A record that cannot be written (a HASH fed a string, a ZSET score that is not a number, a key of another
type) is a DataException naming its topic, partition and offset, handed to the errant record reporter so
``errors.tolerance`` and the dead-letter queue decide; without a reporter the task fails with it, unless
``errors.tolerance=all``.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    ConfigValue,
    ConnectException,
    DataException,
    Importance,
    Range,
    RetriableException,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Struct,
    Task,
    TopicPartition,
)
from connect.api.version import distribution_version
from plugins.redis import _client
from plugins.redis._client import check_server, describe_error, masked_uri

if TYPE_CHECKING:  # imported where it is used: redis costs every worker start a tenth of a CPU-second
    import redis

__all__ = ["RedisSinkConnector", "RedisSinkTask"]

log = logging.getLogger(__name__)

TYPE_CONFIG = "redis.type"
KEYSPACE_CONFIG = "redis.keyspace"
SEPARATOR_CONFIG = "redis.separator"
KEY_TTL_CONFIG = "redis.key.ttl"
MULTIEXEC_CONFIG = "redis.multiexec"
WAIT_REPLICAS_CONFIG = "redis.wait.replicas"
WAIT_TIMEOUT_CONFIG = "redis.wait.timeout"

TYPES = ("STRING", "JSON", "HASH", "STREAM", "LIST", "SET", "ZSET")
KEYED_TYPES = frozenset({"STRING", "JSON", "HASH"})  # one Redis key per record key
IDEMPOTENT_TYPES = frozenset({"STRING", "JSON", "HASH", "SET", "ZSET"})

CONFIG_DEF = (
    _client.define_client(ConfigDef())
    .define(TYPE_CONFIG, ConfigType.STRING, "STREAM", CaseInsensitiveValidString.in_(*TYPES), Importance.HIGH,
            "The Redis data type records are written as: STRING, JSON, HASH, STREAM, LIST, SET or ZSET.", "Sink", 1)
    .define(KEYSPACE_CONFIG, ConfigType.STRING, "${topic}", None, Importance.MEDIUM,
            "STRING/JSON/HASH: the prefix of every key (keyspace + separator + record key; empty: the record key "
            "alone). STREAM/LIST/SET/ZSET: the key of the one collection. ${topic} is the record's topic.",
            "Sink", 2)
    .define(SEPARATOR_CONFIG, ConfigType.STRING, ":", None, Importance.LOW,
            "Between the keyspace and the record key.", "Sink", 3)
    .define(KEY_TTL_CONFIG, ConfigType.LONG, -1, Range.at_least(-1), Importance.LOW,
            "Seconds each written key lives (EXPIRE after the write); -1: for ever.", "Sink", 4)
    .define(MULTIEXEC_CONFIG, ConfigType.BOOLEAN, False, None, Importance.LOW,
            "Wrap each batch in MULTI/EXEC, so other clients see all of it or none of it (slower).", "Sink", 5)
    .define(WAIT_REPLICAS_CONFIG, ConfigType.INT, 0, Range.at_least(0), Importance.LOW,
            "After each batch, WAIT until this many replicas have it (0: do not wait). Fewer within "
            "redis.wait.timeout is a retriable failure: the batch is written again.", "Sink", 6)
    .define(WAIT_TIMEOUT_CONFIG, ConfigType.LONG, 1000, Range.at_least(0), Importance.LOW,
            "Milliseconds the WAIT of redis.wait.replicas may take.", "Sink", 7)
)


def _version() -> str:
    return distribution_version(__name__)


def _has_json_module(client: redis.Redis) -> bool:
    from redis.exceptions import RedisError

    try:
        return bool(client.execute_command("COMMAND", "INFO", "JSON.SET")[0])
    except (RedisError, IndexError, TypeError):
        return False


class RedisSinkConnector(SinkConnector):
    """Writes the records of its topics into Redis; every task writes with its own connection."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return _version()

    def config(self) -> ConfigDef:
        return ConfigDef(CONFIG_DEF)

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        values = self.config().validate(connector_configs)
        if any(cv.errors for cv in values.values()):
            return values  # a config that does not parse is not worth a connection attempt
        config = AbstractConfig(CONFIG_DEF, connector_configs)
        kind = str(config.get_string(TYPE_CONFIG)).upper()
        if kind not in KEYED_TYPES and not str(config.get_string(KEYSPACE_CONFIG)):
            values[KEYSPACE_CONFIG].add_error(f"redis.type={kind} writes one collection, whose key is the "
                                              "keyspace: it cannot be empty")
        client = check_server(config, values)
        if client is not None:
            try:
                if kind == "JSON" and not _has_json_module(client):
                    values[TYPE_CONFIG].add_error(
                        f"redis.type=JSON needs the RedisJSON module (JSON.SET), which the server at "
                        f"{masked_uri(str(config.get_string(_client.URI_CONFIG)))} does not have")
            finally:
                client.close()
        return values

    def start(self, props: Mapping[str, str]) -> None:
        AbstractConfig(CONFIG_DEF, props)  # a bad config fails here, before any task starts
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return RedisSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass  # nothing runs in the connector itself

    def alter_offsets(
        self, connector_config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        return True  # Redis keeps no offsets of the sink's


def _where(record: SinkRecord) -> str:
    return f"topic {record.topic} partition {record.kafka_partition} offset {record.kafka_offset}"


def _text(value: Any, what: str, record: SinkRecord) -> str:
    """A key or member as text: strings as they are, bytes as UTF-8, numbers in decimal."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise DataException(f"The {what} of the record at {_where(record)} is bytes that are not UTF-8") from None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        raise DataException(f"The record at {_where(record)} has no {what}; this redis.type needs one")
    raise DataException(f"The {what} of the record at {_where(record)} is a {type(value).__name__}; "
                        "a string, bytes or a number is needed")


def _field_value(value: Any) -> str | bytes:
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, Struct):
        return json.dumps(_plain(value), separators=(",", ":"))
    return json.dumps(_plain(value), separators=(",", ":"), default=str)


def _plain(value: Any) -> Any:
    """A Struct (nested) as dicts, for JSON text."""
    if isinstance(value, Struct):
        return {name: _plain(v) for name, v in value.items()}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _fields(value: Any, kind: str, record: SinkRecord) -> dict[str, str | bytes]:
    """A map or struct value as Redis fields (null fields left out); anything else is a DataException."""
    items: Iterable[tuple[Any, Any]]
    if isinstance(value, Struct | Mapping):
        items = value.items()
    else:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise DataException(f"redis.type={kind} needs a map or struct value, but the record at {_where(record)} "
                            f"(key {record.key!r}) has a {type(value).__name__}: {shown}")
    fields = {k if type(k) is str else str(k): v if type(v) is str else _field_value(v)
              for k, v in items if v is not None}
    if not fields:
        raise DataException(f"redis.type={kind}: the value of the record at {_where(record)} has no non-null field")
    return fields


def _score(value: Any, record: SinkRecord) -> float:
    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        score = float(value)
        if math.isnan(score):
            raise ValueError
        return score
    except (TypeError, ValueError, UnicodeDecodeError):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise DataException(f"redis.type=ZSET needs a number as the value (the score), but the record at "
                            f"{_where(record)} (member {record.key!r}) has {shown}") from None


def _json_text(value: Any, record: SinkRecord) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError as exc:
            raise DataException(f"redis.type=JSON: the value of the record at {_where(record)} is not JSON: "
                                f"{exc}") from None
        return value
    return json.dumps(_plain(value), separators=(",", ":"), default=str)


class RedisSinkTask(SinkTask):
    """Writes each batch as one pipeline of commands, one command (or two, with a TTL) per record."""

    def __init__(self) -> None:
        self._client: redis.Redis | None = None
        self._kind = "STREAM"
        self._keyspace = "${topic}"
        self._separator = ":"
        self._ttl = -1
        self._multiexec = False
        self._wait_replicas = 0
        self._wait_timeout = 1000
        self._tolerate_all = False
        self._name = ""
        self._uri = ""
        self._prefixes: dict[str, str] = {}
        self._collections: dict[str, str] = {}
        self._outage: _client.Outage | None = None
        self._lock = threading.Lock()
        self.records_written = 0
        self.records_failed = 0

    def version(self) -> str:
        return _version()

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(CONFIG_DEF, props)
        self._kind = str(config.get_string(TYPE_CONFIG)).upper()
        self._keyspace = str(config.get_string(KEYSPACE_CONFIG) or "")
        self._separator = str(config.get_string(SEPARATOR_CONFIG) or "")
        self._ttl = int(config.get_long(KEY_TTL_CONFIG) or -1)
        self._multiexec = bool(config.get_boolean(MULTIEXEC_CONFIG))
        self._wait_replicas = int(config.get_int(WAIT_REPLICAS_CONFIG) or 0)
        self._wait_timeout = int(config.get_long(WAIT_TIMEOUT_CONFIG) or 0)
        self._tolerate_all = str(props.get("errors.tolerance", "none")).strip().lower() == "all"
        self._name = str(props.get("name", ""))
        self._uri = masked_uri(str(config.get_string(_client.URI_CONFIG)))
        self._client = _client.connect(config)
        self._outage = _client.Outage(self, self._uri, log)
        log.info("RedisSinkTask of connector %s writing redis.type=%s to %s (keyspace '%s'%s%s)", self._name,
                 self._kind, self._uri, self._keyspace, ", MULTI/EXEC" if self._multiexec else "",
                 f", WAIT {self._wait_replicas}" if self._wait_replicas else "")

    def stop(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
        log.info("RedisSinkTask of connector %s stopped after %d records written (%d rejected)", self._name,
                 self.records_written, self.records_failed)

    # --- keys -------------------------------------------------------------------------------------------
    def _prefix(self, topic: str) -> str:
        prefix = self._prefixes.get(topic)
        if prefix is None:
            space = self._keyspace.replace("${topic}", topic)
            prefix = self._prefixes[topic] = space + self._separator if space else ""
        return prefix

    def _collection(self, topic: str) -> str:
        space = self._collections.get(topic)
        if space is None:
            space = self._collections[topic] = self._keyspace.replace("${topic}", topic)
        return space

    # --- put ----------------------------------------------------------------------------------------------
    def put(self, records: Sequence[SinkRecord]) -> None:
        if not records:
            return
        client = self._client
        if client is None:
            raise ConnectException(f"RedisSinkTask of connector {self._name} is stopped")
        pipe = client.pipeline(transaction=self._multiexec)
        owners: list[SinkRecord | None] = []  # the record behind each queued command
        add = self._adder(pipe, owners)
        expire: set[str] = set()
        with_ttl = self._ttl > 0
        for record in records:
            try:
                key = add(record)
            except DataException as exc:
                self._reject(record, exc)
                continue
            if with_ttl and key is not None:
                expire.add(key)
        for key in expire:  # once per key and batch, after its writes
            pipe.expire(key, self._ttl)
            owners.append(None)
        if not owners:
            return
        if self._wait_replicas and not self._multiexec:
            pipe.execute_command("WAIT", self._wait_replicas, self._wait_timeout)
            owners.append(None)
        results = self._execute(pipe, len(records))
        if self._multiexec and self._wait_replicas:
            results = [*results, self._execute_wait(client, len(records))]
            owners.append(None)
        self._check_results(results, owners)
        if self._wait_replicas:
            acked = results[-1]
            if not isinstance(acked, int) or acked < self._wait_replicas:
                raise RetriableException(
                    f"WAIT: {acked} of the {self._wait_replicas} replicas (redis.wait.replicas) acknowledged the "
                    f"batch within {self._wait_timeout} ms; writing it again")

    def _adder(self, pipe: Any, owners: list[SinkRecord | None]) -> Callable[[SinkRecord], str | None]:
        """The function that queues one record's command and returns the key it wrote (for the TTL)."""
        kind = self._kind
        mark = owners.append

        def keyed(record: SinkRecord) -> str:
            return self._prefix(record.topic) + _text(record.key, "key", record)

        if kind == "STRING":
            def add(record: SinkRecord) -> str | None:
                key = keyed(record)
                value = record.value
                if value is None:
                    pipe.delete(key)
                elif isinstance(value, str | bytes | int | float) and not isinstance(value, bool):
                    pipe.set(key, value)
                else:
                    raise DataException(f"redis.type=STRING needs a string, bytes or number value, but the record "
                                        f"at {_where(record)} (key {record.key!r}) has a {type(value).__name__}")
                mark(record)
                return key if value is not None else None
        elif kind == "JSON":
            def add(record: SinkRecord) -> str | None:
                key = keyed(record)
                if record.value is None:
                    pipe.delete(key)
                else:
                    pipe.execute_command("JSON.SET", key, "$", _json_text(record.value, record))
                mark(record)
                return key if record.value is not None else None
        elif kind == "HASH":
            prefixes = self._prefixes
            hset = pipe.hset

            def add(record: SinkRecord) -> str | None:
                raw_key = record.key
                key = (prefixes.get(record.topic) or self._prefix(record.topic)) + (
                    raw_key if type(raw_key) is str else _text(raw_key, "key", record))
                value = record.value
                if value is None:
                    pipe.delete(key)
                    mark(record)
                    return None
                hset(key, mapping=_fields(value, kind, record))
                mark(record)
                return key
        elif kind == "STREAM":
            streams = self._collections
            xadd = pipe.xadd

            def add(record: SinkRecord) -> str | None:
                value = record.value
                if value is None:
                    return None  # a stream entry cannot be taken back; a tombstone writes nothing
                stream = streams.get(record.topic) or self._collection(record.topic)
                xadd(stream, _fields(value, kind, record))
                mark(record)
                return stream
        else:
            def write(space: str, member: str, value: Any, record: SinkRecord) -> None:
                if kind == "LIST":
                    pipe.rpush(space, member)
                elif kind == "SET":
                    pipe.sadd(space, member)
                else:
                    pipe.zadd(space, {member: _score(value, record)})

            def remove(space: str, member: str) -> None:
                if kind == "LIST":
                    pipe.lrem(space, 0, member)
                elif kind == "SET":
                    pipe.srem(space, member)
                else:
                    pipe.zrem(space, member)

            def add(record: SinkRecord) -> str | None:
                member = _text(record.key, "key (the member)", record)
                space = self._collection(record.topic)
                if record.value is None:
                    remove(space, member)
                    mark(record)
                    return None
                write(space, member, record.value, record)
                mark(record)
                return space
        return add

    def __str__(self) -> str:
        return f"RedisSinkTask of connector {self._name}"

    def _execute(self, pipe: Any, count: int) -> list[Any]:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import ResponseError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        assert self._outage is not None
        try:
            results = pipe.execute(raise_on_error=False)
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise self._outage.down(exc, f"the batch of {count} records will be written again") from exc
        except ResponseError as exc:  # MULTI/EXEC aborted (EXECABORT) or similar: the whole batch failed
            raise ConnectException(f"Redis at {self._uri} refused the batch: {describe_error(exc)}") from exc
        self._outage.up()
        return list(results)

    def _execute_wait(self, client: redis.Redis, count: int) -> Any:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        assert self._outage is not None
        try:
            return client.execute_command("WAIT", self._wait_replicas, self._wait_timeout)
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise self._outage.down(exc, f"the batch of {count} records will be written again") from exc

    def _check_results(self, results: Sequence[Any], owners: list[SinkRecord | None]) -> None:
        rejected = 0
        # failed commands are rare: find them in one pass, then look only at those
        failed = [i for i, result in enumerate(results) if isinstance(result, Exception)]
        for i in failed:
            if i >= len(owners):
                continue
            result, record = results[i], owners[i]
            if record is None:
                raise ConnectException(f"Redis at {self._uri} failed a command of the batch: {describe_error(result)}")
            rejected += 1
            # the usual cause: the key already holds another type (WRONGTYPE); the rest of the batch is written
            self._reject(record, DataException(f"Redis refused the record at {_where(record)} (key {record.key!r}): "
                                               f"{describe_error(result)}"))
        self.records_written += len(owners) - owners.count(None) - rejected

    def _reject(self, record: SinkRecord, exc: DataException) -> None:
        """A record that cannot be written: to the errant record reporter, or fail, or (tolerance all) skip."""
        self.records_failed += 1
        reporter = self.context.errant_record_reporter() if hasattr(self, "context") else None
        if reporter is not None:
            reporter.report(record, exc)  # raises under errors.tolerance=none, which fails the task
            return
        if self._tolerate_all:
            log.warning("RedisSinkTask of connector %s skipped a record (errors.tolerance=all): %s", self._name, exc)
            return
        raise exc
