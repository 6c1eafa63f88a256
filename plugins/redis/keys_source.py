"""RedisKeysSourceConnector (also ``com.redis.kafka.connect.RedisKeysSourceConnector``): the keys matching a
pattern, as a snapshot then live changes, from keyspace notifications. At most once, one task.

The task subscribes to ``__keyspace@<db>__:<redis.keys.pattern>`` first, then (``mode=LIVE``) walks the
existing keys with SCAN, then turns each notification into a record holding the key's value as it is when
read. Keyspace notifications ride on Pub/Sub: nothing is stored, a notification sent while the task is not
connected (a restart, an outage, a subscriber dropped for a full output buffer) is lost, and a key changed
twice between reads is read once. Hence **at most once**, and no offsets. Notifications go to every
subscriber, so a second task would only duplicate the first: ``tasks.max`` > 1 is refused at validation.
The server must have notifications on (``notify-keyspace-events`` with ``K`` and ``A``, e.g. ``KEA``);
validation refuses a server without them.

Record: key = the Redis key; value = its value, schemaless: a string, a map (hash), a list (list), a sorted
list (set), a map of member to score (sorted set), the entry count (stream); null once the key is gone
(deleted, expired, evicted). Headers ``redis.key.event`` (the command, ``snapshot`` for the initial walk) and
``redis.key.type``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    ConfigValue,
    ConnectException,
    ConnectHeaders,
    Header,
    Importance,
    NonEmptyString,
    Range,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)
from connect.api.version import distribution_version
from plugins.redis import _client
from plugins.redis._client import check_server, describe_error, masked_uri

if TYPE_CHECKING:  # imported where it is used: redis costs every worker start a tenth of a CPU-second
    import redis

__all__ = ["RedisKeysSourceConnector", "RedisKeysSourceTask"]

log = logging.getLogger(__name__)

PATTERN_CONFIG = "redis.keys.pattern"
MODE_CONFIG = "mode"
TOPIC_CONFIG = "topic"
BATCH_SIZE_CONFIG = "batch.size"
LIVE = "LIVE"
LIVEONLY = "LIVEONLY"
EVENT_HEADER = "redis.key.event"
TYPE_HEADER = "redis.key.type"
_STRING = Schema.OPTIONAL_STRING_SCHEMA

CONFIG_DEF = (
    _client.define_client(ConfigDef())
    .define(PATTERN_CONFIG, ConfigType.STRING, "*", NonEmptyString(), Importance.HIGH,
            "The keys to follow (a glob, as in KEYS and PSUBSCRIBE).", "Keys", 1)
    .define(MODE_CONFIG, ConfigType.STRING, LIVE, CaseInsensitiveValidString.in_(LIVE, LIVEONLY), Importance.MEDIUM,
            "LIVE: every existing key first (SCAN), then the changes; LIVEONLY: only the changes.", "Keys", 2)
    .define(TOPIC_CONFIG, ConfigType.STRING, "rediskeys", NonEmptyString(), Importance.HIGH,
            "The topic every record goes to.", "Keys", 3)
    .define(BATCH_SIZE_CONFIG, ConfigType.INT, 500, Range.at_least(1), Importance.LOW,
            "The most keys one poll reads.", "Keys", 4)
)


def _version() -> str:
    return distribution_version(__name__)


def _text(raw: bytes | str) -> str:
    return raw if isinstance(raw, str) else raw.decode("utf-8", "replace")


def _notifications_on(client: redis.Redis) -> bool:
    flags = _text(client.config_get("notify-keyspace-events").get("notify-keyspace-events") or "")
    return "K" in flags and ("A" in flags or all(c in flags for c in "g$lshzxe"))


class RedisKeysSourceConnector(SourceConnector):
    """One task, always: keyspace notifications are broadcast to every subscriber."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return _version()

    def config(self) -> ConfigDef:
        return ConfigDef(CONFIG_DEF)

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        from redis.exceptions import RedisError

        values = self.config().validate(connector_configs)
        tasks = str(connector_configs.get("tasks.max", "1")).strip()
        if tasks.isascii() and tasks.isdigit() and int(tasks) > 1:
            values["tasks.max"] = ConfigValue("tasks.max", tasks, errors=[
                "RedisKeysSourceConnector runs one task only: keyspace notifications go to every subscriber, so "
                "more tasks would only send each change several times"])
        if any(cv.errors for name, cv in values.items() if name != "tasks.max"):
            return values
        config = AbstractConfig(CONFIG_DEF, connector_configs)
        client = check_server(config, values)
        if client is not None:
            try:
                if not _notifications_on(client):
                    values[PATTERN_CONFIG].add_error(
                        f"Redis at {masked_uri(str(config.get_string(_client.URI_CONFIG)))} does not send keyspace "
                        "notifications: set notify-keyspace-events to KEA (CONFIG SET notify-keyspace-events KEA)")
            except RedisError as exc:
                values[PATTERN_CONFIG].add_error(f"Cannot read notify-keyspace-events: {describe_error(exc)}")
            finally:
                client.close()
        return values

    def start(self, props: Mapping[str, str]) -> None:
        AbstractConfig(CONFIG_DEF, props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return RedisKeysSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        pass


class RedisKeysSourceTask(SourceTask):
    """Subscribes, walks the existing keys (LIVE), then reads each changed key once per poll."""

    def __init__(self) -> None:
        self._client: redis.Redis | None = None
        self._pubsub: Any = None
        self._topic = "rediskeys"
        self._pattern = "*"
        self._batch = 500
        self._scan_cursor: int | None = None  # None: the snapshot is done (or not wanted)
        self._name = ""
        self._uri = ""
        self._stopping = threading.Event()
        self._outage: _client.Outage | None = None
        self._prefix = ""
        self.records = 0

    def version(self) -> str:
        return _version()

    def __str__(self) -> str:
        return f"RedisKeysSourceTask of connector {self._name}"

    def start(self, props: Mapping[str, str]) -> None:
        from redis.exceptions import RedisError

        config = AbstractConfig(CONFIG_DEF, props)
        self._topic = str(config.get_string(TOPIC_CONFIG))
        self._pattern = str(config.get_string(PATTERN_CONFIG))
        self._batch = int(config.get_int(BATCH_SIZE_CONFIG) or 500)
        self._name = str(props.get("name", ""))
        self._uri = masked_uri(str(config.get_string(_client.URI_CONFIG)))
        self._stopping.clear()
        self._client = _client.connect(config)
        self._outage = _client.Outage(self, self._uri, log)
        db = int(self._client.connection_pool.connection_kwargs.get("db", 0) or 0)
        self._prefix = f"__keyspace@{db}__:"
        try:
            self._pubsub = self._client.pubsub(ignore_subscribe_messages=True)
            self._pubsub.psubscribe(self._prefix + self._pattern)  # before the walk: no change falls between
        except RedisError as exc:
            raise ConnectException(f"{self}: cannot subscribe at {self._uri}: {describe_error(exc)}") from exc
        live = str(config.get_string(MODE_CONFIG)).upper() == LIVEONLY
        self._scan_cursor = None if live else 0
        log.info("%s following keys %s at %s (%s, at most once)", self, self._pattern, self._uri,
                 LIVEONLY if live else "snapshot, then live")

    def stop(self) -> None:
        self._stopping.set()
        log.info("%s stopping after %d records", self, self.records)

    def poll(self) -> Sequence[SourceRecord] | None:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        if self._stopping.is_set() or self._client is None:
            return None
        try:
            if self._scan_cursor is not None:
                records = self._snapshot()
            else:
                records = self._changes()
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            assert self._outage is not None
            self._stopping.wait(0.5)  # no busy loop while Redis is away
            raise self._outage.down(exc, "changes made until it is back are lost") from exc
        if self._outage is not None:
            self._outage.up()
        self.records += len(records)
        return records or None

    def _snapshot(self) -> list[SourceRecord]:
        assert self._client is not None and self._scan_cursor is not None
        cursor, keys = self._client.scan(self._scan_cursor, match=self._pattern, count=self._batch)
        self._scan_cursor = int(cursor) or None
        if self._scan_cursor is None:
            log.info("%s finished the snapshot of %s; following changes", self, self._pattern)
        return self._read({_text(k): "snapshot" for k in keys})

    def _changes(self) -> list[SourceRecord]:
        events: dict[str, str] = {}  # key -> last event; a key changed twice is read once
        deadline = time.monotonic() + 0.5
        while len(events) < self._batch and not self._stopping.is_set():
            message = self._pubsub.get_message(timeout=max(0.0, deadline - time.monotonic()) if not events else 0)
            if message is None:
                if events or time.monotonic() >= deadline:
                    break
                continue
            if message.get("type") != "pmessage":
                continue
            key = _text(message["channel"])[len(self._prefix):]
            events.pop(key, None)
            events[key] = _text(message["data"])
        return self._read(events)

    def _read(self, events: Mapping[str, str]) -> list[SourceRecord]:
        """The current value of each key: one pipeline of TYPE, one of the reads."""
        if not events:
            return []
        assert self._client is not None
        keys = list(events)
        pipe = self._client.pipeline(transaction=False)
        for key in keys:
            pipe.type(key)
        types = [_text(t) for t in pipe.execute()]
        pipe = self._client.pipeline(transaction=False)
        for key, kind in zip(keys, types, strict=True):
            if kind == "string":
                pipe.get(key)
            elif kind == "hash":
                pipe.hgetall(key)
            elif kind == "list":
                pipe.lrange(key, 0, -1)
            elif kind == "set":
                pipe.smembers(key)
            elif kind == "zset":
                pipe.zrange(key, 0, -1, withscores=True)
            elif kind == "stream":
                pipe.xlen(key)
            else:  # none: gone by the time it was read
                pipe.exists(key)
        raw_values = pipe.execute(raise_on_error=False)
        records = []
        now = int(time.time() * 1000)
        for key, kind, raw in zip(keys, types, raw_values, strict=True):
            if isinstance(raw, Exception):  # changed type between TYPE and the read: the next event reads it
                continue
            value = _value(kind, raw)
            headers = ConnectHeaders((Header(EVENT_HEADER, _STRING, events[key]), Header(TYPE_HEADER, _STRING, kind)))
            records.append(SourceRecord(None, None, self._topic, None, _STRING, key, None, value, now, headers))
        return records


def _value(kind: str, raw: Any) -> Any:
    if kind == "string":
        return _text(raw) if raw is not None else None
    if kind == "hash":
        return {_text(k): _text(v) for k, v in raw.items()}
    if kind == "list":
        return [_text(v) for v in raw]
    if kind == "set":
        return sorted(_text(v) for v in raw)
    if kind == "zset":
        return {_text(m): float(s) for m, s in raw}
    if kind == "stream":
        return int(raw)
    return None
