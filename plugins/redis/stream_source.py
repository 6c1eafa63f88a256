"""RedisStreamSourceConnector (also ``com.redis.kafka.connect.RedisStreamSourceConnector``): Redis Streams into
topics through a consumer group, at least once.

Each task is one consumer of the group ``redis.stream.consumer.group`` (created with ``XGROUP CREATE ...
MKSTREAM`` at ``redis.stream.offset`` if missing), under a name that stays the same across restarts
(``redis.stream.consumer.name``, ``${task}`` = the task number). A task:

1. first reads its own pending entries (``XREADGROUP ... 0``): what it read before a crash or a restart and
   never acknowledged;
2. then new entries (``XREADGROUP ... >``, blocking ``redis.stream.block`` ms);
3. every ``redis.stream.claim.interval.ms`` takes over entries that another consumer (a task that is gone)
   left pending for longer than ``redis.stream.claim.idle.ms`` (``XAUTOCLAIM``).

An entry is acknowledged (``XACK``) only once the log has acknowledged its record (``commit_record``), in
batches at the next poll or offset commit, so a crash replays at most what was read since (duplicates, never
losses). With ``redis.stream.delivery=at-most-once`` entries are read with NOACK instead: nothing is replayed
and a crash can lose what was read but not yet written.

An entry delivered more than ``redis.stream.max.deliveries`` times (it keeps failing to reach the log, e.g. a
transform rejects it and the task fails) goes to the topic ``redis.stream.dlq.topic`` instead, with the
headers ``redis.stream``, ``redis.stream.id`` and ``redis.delivery.count``; the SDK has no dead-letter queue
for sources, so the task writes that topic itself.

Record: key = the entry id (string); value = a Struct of the entry's fields (optional strings, bytes for
values that are not UTF-8) or, with ``redis.stream.body.field``, that one field's value; headers
``redis.stream`` and ``redis.stream.id``; source partition ``{"stream"}``, offset ``{"id"}`` (informative:
the group's pending list is the real cursor).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

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
    SchemaBuilder,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Struct,
    Task,
)
from connect.api.version import distribution_version
from plugins.redis import _client
from plugins.redis._client import check_server, describe_error, masked_uri

__all__ = ["RedisStreamSourceConnector", "RedisStreamSourceTask"]

log = logging.getLogger(__name__)

STREAM_NAME_CONFIG = "redis.stream.name"
OFFSET_CONFIG = "redis.stream.offset"
BLOCK_CONFIG = "redis.stream.block"
GROUP_CONFIG = "redis.stream.consumer.group"
CONSUMER_CONFIG = "redis.stream.consumer.name"
DELIVERY_CONFIG = "redis.stream.delivery"
CLAIM_IDLE_CONFIG = "redis.stream.claim.idle.ms"
CLAIM_INTERVAL_CONFIG = "redis.stream.claim.interval.ms"
MAX_DELIVERIES_CONFIG = "redis.stream.max.deliveries"
DLQ_TOPIC_CONFIG = "redis.stream.dlq.topic"
BODY_FIELD_CONFIG = "redis.stream.body.field"
TOPIC_CONFIG = "topic"
BATCH_SIZE_CONFIG = "batch.size"
TASK_NUMBER_CONFIG = "redis.stream.task"  # set by task_configs

AT_LEAST_ONCE = "at-least-once"
AT_MOST_ONCE = "at-most-once"

STREAM_HEADER = "redis.stream"
ID_HEADER = "redis.stream.id"
DELIVERY_COUNT_HEADER = "redis.delivery.count"

_STRING = Schema.OPTIONAL_STRING_SCHEMA
_G = "Stream"
CONFIG_DEF = (
    _client.define_client(ConfigDef())
    .define(STREAM_NAME_CONFIG, ConfigType.LIST, validator=NonEmptyString(), importance=Importance.HIGH,
            documentation="The stream (or comma-separated streams) to read.", group=_G, order_in_group=1)
    .define(OFFSET_CONFIG, ConfigType.STRING, "0-0", NonEmptyString(), Importance.MEDIUM,
            "Where a group created by the connector starts: 0-0 the whole stream, $ only new entries, or an "
            "entry id. An existing group keeps its own position.", _G, 2)
    .define(GROUP_CONFIG, ConfigType.STRING, "kafka-consumer-group", NonEmptyString(), Importance.MEDIUM,
            "The consumer group every task of the connector reads through.", _G, 3)
    .define(CONSUMER_CONFIG, ConfigType.STRING, "consumer-${task}", NonEmptyString(), Importance.MEDIUM,
            "The consumer name of a task; ${task} is the task number. It must stay the same across restarts, "
            "or the entries pending under the old name wait for redis.stream.claim.idle.ms.", _G, 4)
    .define(DELIVERY_CONFIG, ConfigType.STRING, AT_LEAST_ONCE, CaseInsensitiveValidString.in_(AT_LEAST_ONCE,
                                                                                             AT_MOST_ONCE),
            Importance.MEDIUM, "at-least-once: XACK once the log has the record; at-most-once: read with NOACK.",
            _G, 5)
    .define(BLOCK_CONFIG, ConfigType.LONG, 100, Range.between(1, 1000), Importance.LOW,
            "Milliseconds a read waits for new entries.", _G, 6)
    .define(BATCH_SIZE_CONFIG, ConfigType.INT, 500, Range.at_least(1), Importance.LOW,
            "The most entries one read returns (per stream).", _G, 7)
    .define(TOPIC_CONFIG, ConfigType.STRING, "${stream}", NonEmptyString(), Importance.HIGH,
            "The topic records go to; ${stream} is the stream's name.", _G, 8)
    .define(CLAIM_IDLE_CONFIG, ConfigType.LONG, 300_000, Range.at_least(0), Importance.LOW,
            "Entries pending with any consumer for longer than this many ms are claimed (XAUTOCLAIM) and "
            "delivered again; 0: never claim. Keep it well above offset.flush.interval.ms, or entries still "
            "on their way are claimed too.", _G, 9)
    .define(CLAIM_INTERVAL_CONFIG, ConfigType.LONG, 30_000, Range.at_least(100), Importance.LOW,
            "How often a task looks for entries to claim.", _G, 10)
    .define(MAX_DELIVERIES_CONFIG, ConfigType.INT, 0, Range.at_least(0), Importance.LOW,
            "An entry delivered more often than this goes to redis.stream.dlq.topic instead; 0: no limit.", _G,
            11)
    .define(DLQ_TOPIC_CONFIG, ConfigType.STRING, "", None, Importance.LOW,
            "The dead-letter topic of redis.stream.max.deliveries (required with it).", _G, 12)
    .define(BODY_FIELD_CONFIG, ConfigType.STRING, "", None, Importance.LOW,
            "When set, the record value is this field's value (a string) instead of a Struct of all fields; "
            "entries without it get a null value.", _G, 13)
    .define_internal(TASK_NUMBER_CONFIG, ConfigType.INT, 0)
)


def _version() -> str:
    return distribution_version(__name__)


def _text(raw: bytes | str) -> str:
    return raw if isinstance(raw, str) else raw.decode("utf-8", "replace")


class RedisStreamSourceConnector(SourceConnector):
    """Splits nothing: every task joins the same consumer group, and Redis shares the entries among them."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return _version()

    def config(self) -> ConfigDef:
        return ConfigDef(CONFIG_DEF)

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        values = self.config().validate(connector_configs)
        if any(cv.errors for cv in values.values()):
            return values
        config = AbstractConfig(CONFIG_DEF, connector_configs)
        if (config.get_int(MAX_DELIVERIES_CONFIG) or 0) > 0 and not config.get_string(DLQ_TOPIC_CONFIG):
            values[DLQ_TOPIC_CONFIG].add_error(f"{MAX_DELIVERIES_CONFIG} is set: name the topic where entries "
                                               "delivered too often go")
        client = check_server(config, values)
        if client is not None:
            client.close()
        return values

    def start(self, props: Mapping[str, str]) -> None:
        AbstractConfig(CONFIG_DEF, props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return RedisStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._props, TASK_NUMBER_CONFIG: str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        pass

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[Any, Mapping[str, Any] | None]) -> bool:
        # the consumer group is the cursor: an offset change would not move it
        raise ConnectException("The Redis stream source resumes from its consumer group, not from offsets: "
                               "use XGROUP SETID to move the group")


class RedisStreamSourceTask(SourceTask):
    """One consumer of the group; see the module documentation for the order of reads."""

    def __init__(self) -> None:
        self._client: redis.Redis | None = None
        self._streams: list[str] = []
        self._group = ""
        self._consumer = ""
        self._at_least_once = True
        self._block = 100
        self._batch = 500
        self._topic = "${stream}"
        self._body_field = ""
        self._claim_idle = 0
        self._claim_interval = 30.0
        self._next_claim = 0.0
        self._claim_cursor: dict[str, str] = {}
        self._max_deliveries = 0
        self._dlq_topic = ""
        self._name = ""
        self._uri = ""
        # streams still being drained of this consumer's own pending entries -> the id read up to
        self._draining: dict[str, str] = {}
        self._in_flight: set[tuple[str, str]] = set()  # delivered by poll, not yet acknowledged
        self._acks: collections.deque[tuple[str, str]] = collections.deque()  # the log has them: XACK due
        self._ack_lock = threading.Lock()
        self._schemas: dict[tuple[Any, ...], Schema] = {}
        self._partitions: dict[str, dict[str, str]] = {}
        self._stopping = threading.Event()
        self._outage: _client.Outage | None = None
        self._offset = "0-0"
        self.entries_read = 0
        self.entries_acked = 0
        self.entries_dead = 0

    def version(self) -> str:
        return _version()

    # --- life cycle ----------------------------------------------------------------------------------
    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(CONFIG_DEF, props)
        self._streams = [s for s in config.get_list(STREAM_NAME_CONFIG) if s]
        self._group = str(config.get_string(GROUP_CONFIG))
        task = str(config.get_int(TASK_NUMBER_CONFIG) or 0)
        self._consumer = str(config.get_string(CONSUMER_CONFIG)).replace("${task}", task)
        self._at_least_once = str(config.get_string(DELIVERY_CONFIG)).lower() == AT_LEAST_ONCE
        self._block = int(config.get_long(BLOCK_CONFIG) or 100)
        self._batch = int(config.get_int(BATCH_SIZE_CONFIG) or 500)
        self._topic = str(config.get_string(TOPIC_CONFIG))
        self._body_field = str(config.get_string(BODY_FIELD_CONFIG) or "")
        self._claim_idle = int(config.get_long(CLAIM_IDLE_CONFIG) or 0)
        self._claim_interval = int(config.get_long(CLAIM_INTERVAL_CONFIG) or 30_000) / 1000
        self._max_deliveries = int(config.get_int(MAX_DELIVERIES_CONFIG) or 0)
        self._dlq_topic = str(config.get_string(DLQ_TOPIC_CONFIG) or "")
        self._name = str(props.get("name", ""))
        self._uri = masked_uri(str(config.get_string(_client.URI_CONFIG)))
        self._stopping.clear()
        # the blocking read must be able to wait its full block time on top of the command timeout
        self._client = _client.connect(config)
        self._outage = _client.Outage(self, self._uri, log)
        offset = self._offset = str(config.get_string(OFFSET_CONFIG))
        try:
            for stream in self._streams:
                try:
                    self._client.xgroup_create(stream, self._group, id=offset, mkstream=True)
                    log.info("%s created consumer group %s on stream %s at %s", self, self._group, stream, offset)
                except ResponseError as exc:
                    if "BUSYGROUP" not in str(exc):
                        raise
        except RedisError as exc:
            raise ConnectException(f"{self}: cannot create consumer group {self._group} at {self._uri}: "
                                   f"{describe_error(exc)}") from exc
        self._draining = {s: "0-0" for s in self._streams} if self._at_least_once else {}
        self._next_claim = time.monotonic() if self._claim_idle and self._at_least_once else float("inf")
        log.info("%s reading %s as consumer %s of group %s at %s (%s)", self, ", ".join(self._streams),
                 self._consumer, self._group, self._uri, AT_LEAST_ONCE if self._at_least_once else AT_MOST_ONCE)

    def __str__(self) -> str:
        return f"RedisStreamSourceTask of connector {self._name} ({self._consumer})"

    def stop(self) -> None:
        self._stopping.set()  # the read under way returns within redis.stream.block ms
        log.info("%s stopping: %d entries read, %d acknowledged, %d sent to the dead-letter topic", self,
                 self.entries_read, self.entries_acked, self.entries_dead)

    # --- acknowledgements --------------------------------------------------------------------------------
    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        """The log has ``record`` (or a transform dropped it): its entry may be acknowledged."""
        if not self._at_least_once:
            return
        offset = record.source_offset
        stream = record.source_partition.get("stream") if record.source_partition else None
        if stream is not None and offset is not None:
            self._acks.append((stream, offset["id"]))

    def commit(self) -> None:
        """Offsets were committed: acknowledge what the log has (the poll loop also does, between commits)."""
        self._ack()

    def _ack(self) -> None:
        if not self._acks:
            return
        with self._ack_lock:
            taken: list[tuple[str, str]] = []
            while self._acks:
                taken.append(self._acks.popleft())
            if not taken:
                return
            by_stream: dict[str, list[str]] = {}
            for stream, entry in taken:
                by_stream.setdefault(stream, []).append(entry)
            client = self._client
            try:
                if client is None:
                    raise RedisConnectionError("the task is not started")
                pipe = client.pipeline(transaction=False)
                for stream, ids in by_stream.items():
                    pipe.xack(stream, self._group, *ids)
                pipe.execute()
            except (RedisError, OSError) as exc:
                self._acks.extendleft(reversed(taken))  # acknowledged later: replayed at worst, never lost
                if self._outage is not None:
                    self._outage.down(exc, f"{len(taken)} entries stay pending until it is back")
                return
            self._in_flight.difference_update(taken)
            self.entries_acked += len(taken)

    # --- reading ----------------------------------------------------------------------------------------
    def poll(self) -> Sequence[SourceRecord] | None:
        if self._stopping.is_set() or self._client is None:
            return None
        try:
            self._ack()
            if self._draining:
                records = self._read_own_pending()
                if records:
                    return records
            if time.monotonic() >= self._next_claim:
                self._next_claim = time.monotonic() + self._claim_interval
                records = self._claim()
                if records:
                    return records
            records = self._read_new()
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            assert self._outage is not None
            self._stopping.wait(0.5)  # no busy loop while Redis is away
            raise self._outage.down(exc, "reading again once it is back") from exc
        except ResponseError as exc:
            if "NOGROUP" in str(exc):  # the group (or the stream) was deleted under us: make it again
                log.warning("%s: %s; creating the group again at %s (redis.stream.offset)", self, describe_error(exc),
                            self._offset)
                for stream in self._streams:
                    try:
                        self._client.xgroup_create(stream, self._group, id=self._offset, mkstream=True)
                    except ResponseError as again:
                        if "BUSYGROUP" not in str(again):
                            raise ConnectException(f"{self}: {describe_error(again)}") from again
                return None
            raise ConnectException(f"{self}: Redis at {self._uri} refused a read: {describe_error(exc)}") from exc
        if self._outage is not None:
            self._outage.up()
        return records or None

    def _read_own_pending(self) -> list[SourceRecord]:
        """This consumer's pending entries (from an earlier run), in id order, one batch per call."""
        assert self._client is not None
        reply = self._client.xreadgroup(self._group, self._consumer, dict(self._draining), count=self._batch)
        records: list[SourceRecord] = []
        got: dict[str, list[tuple[bytes, Any]]] = {}
        for raw_stream, entries in reply or []:
            got[_text(raw_stream)] = entries
        for stream in list(self._draining):
            entries = got.get(stream) or []
            if not entries:
                del self._draining[stream]
                log.info("%s drained its pending entries of stream %s; reading new entries", self, stream)
                continue
            self._draining[stream] = _text(entries[-1][0])
            records.extend(self._records(stream, entries, redelivered=True))
        return records

    def _read_new(self) -> list[SourceRecord]:
        assert self._client is not None
        reply = self._client.xreadgroup(self._group, self._consumer, dict.fromkeys(self._streams, ">"),
                                        count=self._batch, block=self._block, noack=not self._at_least_once)
        records: list[SourceRecord] = []
        for raw_stream, entries in reply or []:
            records.extend(self._records(_text(raw_stream), entries, redelivered=False))
        return records

    def _claim(self) -> list[SourceRecord]:
        """Entries idle with any consumer longer than ``redis.stream.claim.idle.ms``, now this task's."""
        assert self._client is not None
        records: list[SourceRecord] = []
        for stream in self._streams:
            cursor = self._claim_cursor.get(stream, "0-0")
            reply = self._client.xautoclaim(stream, self._group, self._consumer, self._claim_idle, cursor,
                                            count=self._batch)
            next_cursor, entries = _text(reply[0]), reply[1]
            deleted = reply[2] if len(reply) > 2 else []
            self._claim_cursor[stream] = next_cursor
            if deleted:  # trimmed from the stream while pending: nothing to deliver, only to forget
                self._client.xack(stream, self._group, *deleted)
                log.warning("%s: %d pending entries of stream %s were trimmed away before delivery; acknowledged",
                            self, len(deleted), stream)
            fresh = [e for e in entries if (stream, _text(e[0])) not in self._in_flight]
            if fresh:
                log.info("%s claimed %d entries of stream %s left pending longer than %d ms", self, len(fresh),
                         stream, self._claim_idle)
                records.extend(self._records(stream, fresh, redelivered=True))
        return records

    def _delivery_counts(self, stream: str, entries: Sequence[tuple[Any, Any]]) -> dict[str, int]:
        assert self._client is not None
        first, last = _text(entries[0][0]), _text(entries[-1][0])
        pending = self._client.xpending_range(stream, self._group, min=first, max=last, count=len(entries) + 1000,
                                              consumername=self._consumer)
        return {_text(p["message_id"]): int(p["times_delivered"]) for p in pending}

    def _records(self, stream: str, entries: Sequence[tuple[Any, Any]], redelivered: bool) -> list[SourceRecord]:
        if not entries:
            return []
        counts = self._delivery_counts(stream, entries) if redelivered else {}
        topic = self._topic.replace("${stream}", stream)
        partition = self._partitions.get(stream)
        if partition is None:
            partition = self._partitions[stream] = {"stream": stream}
        records: list[SourceRecord] = []
        stream_header = Header(STREAM_HEADER, _STRING, stream)
        gone: list[str] = []
        dead = 0
        for raw_id, fields in entries:
            entry_id = _text(raw_id)
            if fields is None:  # deleted from the stream while pending
                gone.append(entry_id)
                continue
            schema, value = self._value(fields)
            headers = ConnectHeaders((stream_header, Header(ID_HEADER, _STRING, entry_id)))
            target = topic
            count = counts.get(entry_id, 1)
            if redelivered and count > 1:
                headers.add_string(DELIVERY_COUNT_HEADER, str(count))
            if self._max_deliveries and count > self._max_deliveries:
                target = self._dlq_topic
                dead += 1
            records.append(SourceRecord(partition, {"id": entry_id}, target, None, Schema.STRING_SCHEMA, entry_id,
                                        schema, value, int(entry_id.split("-", 1)[0]), headers))
            if self._at_least_once:
                self._in_flight.add((stream, entry_id))
        if gone and self._client is not None:
            self._client.xack(stream, self._group, *gone)
            log.warning("%s: %d pending entries of stream %s no longer exist (trimmed or deleted); acknowledged",
                        self, len(gone), stream)
        if dead:
            self.entries_dead += dead
            log.warning("%s: %d entries of stream %s were delivered more than %d times; sending them to %s", self,
                        dead, stream, self._max_deliveries, self._dlq_topic)
        self.entries_read += len(records)
        return records

    def _value(self, fields: Mapping[Any, Any]) -> tuple[Schema | None, Any]:
        if self._body_field:
            for name, raw in fields.items():
                if _text(name) == self._body_field:
                    return Schema.OPTIONAL_STRING_SCHEMA, _text(raw)
            return Schema.OPTIONAL_STRING_SCHEMA, None
        try:  # the usual entry: every value is UTF-8 text
            values: list[str | bytes] = [v.decode() if type(v) is bytes else v for v in fields.values()]
            shape: tuple[Any, ...] = tuple(fields)
        except UnicodeDecodeError:
            values = []
            for raw in fields.values():
                try:
                    values.append(raw.decode() if type(raw) is bytes else raw)
                except UnicodeDecodeError:
                    values.append(raw)  # kept as bytes: its field is BYTES
            shape = (*fields, *(type(v) is bytes for v in values))
        schema = self._schemas.get(shape)
        if schema is None:
            schema = self._schema_of(list(fields), values)
            if len(self._schemas) < 10_000:
                self._schemas[shape] = schema
        return schema, Struct.of(schema, values)

    @staticmethod
    def _schema_of(names: list[Any], values: list[str | bytes]) -> Schema:
        builder = SchemaBuilder.struct()
        for name, value in zip(names, values, strict=True):
            builder.field(_text(name), Schema.OPTIONAL_BYTES_SCHEMA if type(value) is bytes
                          else Schema.OPTIONAL_STRING_SCHEMA)
        return builder.build()
