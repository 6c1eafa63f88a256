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

Each read becomes one SourceRecordBatch per stream (one per run of entries with the same fields, when they
differ), which the runtime converts and appends in bulk. An entry is acknowledged (``XACK``) only once the log
has acknowledged every record of its batch (``commit_batch``), one XACK per stream at the next poll or offset
commit, so a crash replays at most what was read since (duplicates, never losses); a batch the log did not
take is never acknowledged. With ``redis.stream.delivery=at-most-once`` entries are read with NOACK instead:
nothing is replayed and a crash can lose what was read but not yet written.

An entry delivered more than ``redis.stream.max.deliveries`` times (it keeps failing to reach the log, e.g. a
transform rejects it and the task fails) goes to the topic ``redis.stream.dlq.topic`` instead, with the
headers ``redis.stream``, ``redis.stream.id`` and ``redis.delivery.count``; the SDK has no dead-letter queue
for sources, so the task writes that topic itself.

Record: key = the entry id (string); value = a Struct of the entry's fields (optional strings, bytes for
values that are not UTF-8) or, with ``redis.stream.body.field``, that one field's value; headers
``redis.stream`` and ``redis.stream.id`` (and ``redis.delivery.count`` on entries read again, from the own
pending list or a claim, that were delivered before); timestamp = the id's milliseconds; source partition ``{"stream"}``, offset ``{"id"}`` (informative:
the group's pending list is the real cursor).
"""

from __future__ import annotations

import collections
import logging
import operator
import re
import threading
import time
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    ConfigValue,
    ConnectException,
    Header,
    Importance,
    NonEmptyString,
    Range,
    Schema,
    SchemaBuilder,
    SourceConnector,
    SourceRecordBatch,
    SourceTask,
    Struct,
    Task,
)
from connect.api.version import distribution_version
from plugins.redis import _client
from plugins.redis._client import check_server, describe_error, masked_uri

if TYPE_CHECKING:  # imported where it is used: redis costs every worker start a tenth of a CPU-second
    import redis
    from redis.typing import KeyT, StreamIdT

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


_SURROGATE = re.compile("[\ud800-\udfff]")  # what surrogateescape makes of bytes that are not UTF-8
_NAMES = operator.itemgetter(slice(0, None, 2))  # an entry's field names, from its flat [name, value, ...]
_VALUES = operator.itemgetter(slice(1, None, 2))  # and its values


def _text(raw: bytes | str | int) -> str:
    """A name or id from a reply as text (redis-py types some reply fields as bytes, str or int)."""
    if isinstance(raw, str):
        return raw
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


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


class _EntryOffsets(Sequence[Mapping[str, str]]):
    """The source offsets ``{"id": entry id}`` of a batch, made when read: the runtime reads only the last."""

    __slots__ = ("_ids",)

    def __init__(self, ids: Sequence[str]) -> None:
        self._ids = ids

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return _EntryOffsets(self._ids[index])
        return {"id": self._ids[index]}


class RedisStreamSourceTask(SourceTask):
    """One consumer of the group; see the module documentation for the order of reads.

    Each stream's part of a reply becomes one SourceRecordBatch (keys = entry ids, which are also the
    ``redis.stream.id`` header column), so the runtime converts and appends it in bulk; ``commit_batch``
    queues its ids for one XACK per stream at the next poll or offset commit.
    """

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
        self._body_key = b""
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
        self._ready: collections.deque[SourceRecordBatch] = collections.deque()  # made, not yet polled
        # id(batch) -> batch: polled and not yet acknowledged (what a claim must not deliver twice)
        self._unacked: dict[int, SourceRecordBatch] = {}
        self._acks: collections.deque[SourceRecordBatch] = collections.deque()  # the log has them: XACK due
        self._ack_lock = threading.Lock()
        self._schemas: dict[tuple[Any, ...], Schema] = {}
        self._partitions: dict[str, dict[str, str]] = {}
        self._stream_headers: dict[str, tuple[Header, ...]] = {}
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
        from redis.exceptions import RedisError, ResponseError

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
        self._body_key = self._body_field.encode()
        self._claim_idle = int(config.get_long(CLAIM_IDLE_CONFIG) or 0)
        self._claim_interval = int(config.get_long(CLAIM_INTERVAL_CONFIG) or 30_000) / 1000
        self._max_deliveries = int(config.get_int(MAX_DELIVERIES_CONFIG) or 0)
        self._dlq_topic = str(config.get_string(DLQ_TOPIC_CONFIG) or "")
        self._name = str(props.get("name", ""))
        self._uri = masked_uri(str(config.get_string(_client.URI_CONFIG)))
        self._stopping.clear()
        self._ready.clear()
        # the blocking read must be able to wait its full block time on top of the command timeout
        # Replies are decoded to text by the client's parser (in C with hiredis) and come as Redis sends them:
        # each entry's fields one flat list, not a dict per entry. Bytes that are not UTF-8 come through as
        # lone surrogates (surrogateescape), which _add_batches finds with one check per batch.
        self._client = _client.connect(config, decode_responses=True, encoding_errors="surrogateescape")
        for command in ("XREADGROUP", "XAUTOCLAIM"):
            self._client.set_response_callback(command, _as_sent)
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
    def commit_batch(self, batch: SourceRecordBatch) -> None:
        """The log has every record of ``batch`` (or a transform dropped it): its entries may be acknowledged.

        Called on the thread that serves the log's acknowledgements: only queues the batch; the XACK is sent
        at the next poll or offset commit."""
        if self._at_least_once:
            self._acks.append(batch)

    def commit(self) -> None:
        """Offsets were committed: acknowledge what the log has (the poll loop also does, between commits)."""
        self._ack()

    def _ack(self) -> None:
        """XACK what the log has, on its own round trip (the read of new entries carries it otherwise)."""
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import RedisError

        taken, by_stream = self._take_acks()
        if not taken:
            return
        client = self._client
        try:
            if client is None:
                raise RedisConnectionError("the task is not started")
            pipe = client.pipeline(transaction=False)
            for stream, ids in by_stream.items():
                pipe.xack(stream, self._group, *ids)
            pipe.execute()
        except (RedisError, OSError) as exc:
            self._give_back(taken)
            if self._outage is not None:
                self._outage.down(exc, f"{sum(map(len, taken))} entries stay pending until it is back")
            return
        self._acked(taken, by_stream)

    def _take_acks(self) -> tuple[list[SourceRecordBatch], dict[str, list[str]]]:
        """The batches the log has, taken from the queue, and their ids per stream."""
        taken: list[SourceRecordBatch] = []
        by_stream: dict[str, list[str]] = {}
        if not self._acks:
            return taken, by_stream
        with self._ack_lock:
            while self._acks:
                taken.append(self._acks.popleft())
        for batch in taken:
            partition, ids = batch.source_partition, batch.keys
            assert partition is not None and ids is not None, "every batch of this task names its stream and ids"
            by_stream.setdefault(partition["stream"], []).extend(ids)
        return taken, by_stream

    def _give_back(self, taken: list[SourceRecordBatch]) -> None:
        """XACK failed: acknowledged later instead (replayed at worst, never lost; XACK twice is harmless)."""
        with self._ack_lock:
            self._acks.extendleft(reversed(taken))

    def _acked(self, taken: list[SourceRecordBatch], by_stream: Mapping[str, list[str]]) -> None:
        with self._ack_lock:
            for batch in taken:
                self._unacked.pop(id(batch), None)
            self.entries_acked += sum(map(len, by_stream.values()))

    # --- reading ----------------------------------------------------------------------------------------
    def poll(self) -> SourceRecordBatch | None:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import ResponseError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        if self._stopping.is_set() or self._client is None:
            return None
        try:
            if self._ready:
                self._ack()
            else:
                self._read()
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
        if not self._ready:
            return None
        batch = self._ready.popleft()
        if self._at_least_once:
            self._unacked[id(batch)] = batch
        return batch

    def _read(self) -> None:
        """Fill ``_ready``: own pending entries first, then (at its interval) a claim, else new entries."""
        if self._draining:
            self._ack()
            self._read_own_pending()
            if self._ready:
                return
        if time.monotonic() >= self._next_claim:
            self._next_claim = time.monotonic() + self._claim_interval
            self._ack()
            self._claim()
            if self._ready:
                return
        self._read_new()

    def _read_own_pending(self) -> None:
        """This consumer's pending entries (from an earlier run), in id order, one batch per call."""
        assert self._client is not None
        after: dict[KeyT, StreamIdT] = {name: last for name, last in self._draining.items()}  # redis-py's type
        reply = self._client.xreadgroup(self._group, self._consumer, after, count=self._batch)
        got: dict[str, list[Any]] = {}
        for raw_stream, entries in _per_stream(reply):
            got[_text(raw_stream)] = entries
        for stream in list(self._draining):
            entries = got.get(stream) or []
            if not entries:
                del self._draining[stream]
                log.info("%s drained its pending entries of stream %s; reading new entries", self, stream)
                continue
            self._draining[stream] = _text(entries[-1][0])
            self._add_batches(stream, entries, redelivered=True)

    def _read_new(self) -> None:
        """New entries, in the same round trip as the XACK of what the log has taken since the last read."""
        assert self._client is not None
        taken, by_stream = self._take_acks()
        pipe = self._client.pipeline(transaction=False)
        for stream, ids in by_stream.items():
            pipe.xack(stream, self._group, *ids)
        pipe.xreadgroup(self._group, self._consumer, dict.fromkeys(self._streams, ">"), count=self._batch,
                        block=self._block, noack=not self._at_least_once)
        try:
            *acks, reply = pipe.execute(raise_on_error=False)
        except BaseException:
            if taken:
                self._give_back(taken)
            raise
        if taken:
            if any(isinstance(result, Exception) for result in acks):
                self._give_back(taken)
            else:
                self._acked(taken, by_stream)
        if isinstance(reply, Exception):
            raise reply
        for raw_stream, entries in _per_stream(reply):
            self._add_batches(_text(raw_stream), entries, redelivered=False)

    def _claim(self) -> None:
        """Entries idle with any consumer longer than ``redis.stream.claim.idle.ms``, now this task's."""
        assert self._client is not None
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
            if not entries:
                continue
            in_flight = self._in_flight(stream)
            fresh = [e for e in entries if _text(e[0]) not in in_flight]
            if fresh:
                log.info("%s claimed %d entries of stream %s left pending longer than %d ms", self, len(fresh),
                         stream, self._claim_idle)
                self._add_batches(stream, fresh, redelivered=True)

    def _in_flight(self, stream: str) -> set[str]:
        """Ids of ``stream`` this task has made records of and not yet acknowledged (rarely asked: claims)."""
        ids: set[str] = set()
        for batch in [*self._ready, *list(self._unacked.values())]:
            if batch.source_partition is not None and batch.source_partition.get("stream") == stream:
                ids.update(batch.keys or ())
        return ids

    def _delivery_counts(self, stream: str, entries: Sequence[tuple[Any, Any]]) -> dict[str, int]:
        assert self._client is not None
        first, last = _text(entries[0][0]), _text(entries[-1][0])
        pending = self._client.xpending_range(stream, self._group, min=first, max=last, count=len(entries) + 1000,
                                              consumername=self._consumer)
        return {_text(p["message_id"]): int(p["times_delivered"]) for p in pending}

    def _add_batches(self, stream: str, entries: Sequence[Any], redelivered: bool) -> None:
        """Queue ``entries`` (``[id, [field, value, ...]]`` each) of ``stream`` as batches: one per run of entries
        with the same value schema (one in all, usually), those delivered too often apart, to the dead-letter
        topic."""
        if not entries:
            return
        raw_ids, flats = zip(*entries, strict=True)
        gone: list[str] = []
        if None in flats:  # deleted from the stream while pending: nothing to deliver
            gone = [entry_id for entry_id, fields in entries if fields is None]
            kept = [e for e in entries if e[1] is not None]
            raw_ids, flats = zip(*kept, strict=True) if kept else ((), ())
        ids: list[str] = list(raw_ids)
        # the milliseconds part of every id (each has one dash), in one pass over them all
        stamps = list(map(int, "-".join(ids).split("-")[0::2])) if ids else []
        values: list[Any] = []
        runs: list[tuple[int, Schema]] = []
        text = "".join(chain.from_iterable(flats))
        # one check for the whole batch: a lone surrogate stands for bytes that are not UTF-8 (isascii is a flag)
        if text.isascii() or _SURROGATE.search(text) is None:
            if flats:
                values, runs = self._values(flats)
        else:
            values, runs = self._values_with_bytes(flats)
        if gone and self._client is not None:
            self._client.xack(stream, self._group, *gone)
            log.warning("%s: %d pending entries of stream %s no longer exist (trimmed or deleted); acknowledged",
                        self, len(gone), stream)
        counts = self._delivery_counts(stream, entries) if redelivered and ids else {}
        topic = self._topic.replace("${stream}", stream)
        for n, (start, run_schema) in enumerate(runs):
            end = runs[n + 1][0] if n + 1 < len(runs) else len(values)
            run_ids, run_values, run_stamps = ((ids, values, stamps) if len(runs) == 1
                                               else (ids[start:end], values[start:end], stamps[start:end]))
            self.entries_read += len(run_ids)
            dead = ([i for i, entry_id in enumerate(run_ids) if counts.get(entry_id, 1) > self._max_deliveries]
                    if self._max_deliveries and counts else [])
            if not dead:
                self._ready.append(self._batch_of(stream, topic, run_schema, run_ids, run_values, run_stamps, counts))
                continue
            self.entries_dead += len(dead)
            log.warning("%s: %d entries of stream %s were delivered more than %d times; sending them to %s",
                        self, len(dead), stream, self._max_deliveries, self._dlq_topic)
            dead_set = set(dead)
            live = [i for i in range(len(run_ids)) if i not in dead_set]
            for target, chosen in ((topic, live), (self._dlq_topic, dead)):
                if chosen:
                    self._ready.append(self._batch_of(stream, target, run_schema, [run_ids[i] for i in chosen],
                                                      [run_values[i] for i in chosen],
                                                      [run_stamps[i] for i in chosen], counts))

    def _batch_of(self, stream: str, topic: str, schema: Schema | None, ids: list[str], values: list[Any],
                  stamps: list[int], counts: Mapping[str, int]) -> SourceRecordBatch:
        partition = self._partitions.get(stream)
        if partition is None:
            partition = self._partitions[stream] = {"stream": stream}
        headers = self._stream_headers.get(stream)
        if headers is None:
            headers = self._stream_headers[stream] = (Header(STREAM_HEADER, _STRING, stream),)
        columns: list[tuple[str, Schema | None, Sequence[Any]]] = [(ID_HEADER, _STRING, ids)]
        if counts and any(counts.get(i, 1) > 1 for i in ids):  # redelivered entries say how often
            columns.append((DELIVERY_COUNT_HEADER, _STRING, [str(counts.get(i, 1)) for i in ids]))
        return SourceRecordBatch(topic, values, value_schema=schema, source_partition=partition,
                                 source_offsets=_EntryOffsets(ids), keys=ids, key_schema=Schema.STRING_SCHEMA,
                                 timestamps=stamps, headers=headers, header_columns=columns)

    def _values(self, flats: Sequence[list[str]]) -> tuple[list[Any], list[tuple[int, Schema]]]:
        """The record values of entries whose fields are all text, and where each run of one schema starts."""
        if self._body_field:
            body = self._body_field
            values: list[Any] = []
            for flat in flats:
                names = flat[0::2]
                values.append(flat[2 * names.index(body) + 1] if body in names else None)
            return values, [(0, Schema.OPTIONAL_STRING_SCHEMA)]
        schemas = self._schemas
        all_names = list(map(_NAMES, flats))
        first = all_names[0]
        shape = tuple(first)
        schema = schemas.get(shape) or self._schema_of(shape, [Schema.OPTIONAL_STRING_SCHEMA] * len(first))
        if all_names.count(first) == len(all_names):  # the usual batch: every entry has the same fields
            # text fits the schema's optional strings as it is: no check per value
            return Struct.many_from_valid_values(schema, list(map(_VALUES, flats))), [(0, schema)]
        of_text = Struct.from_valid_values
        runs: list[tuple[int, Schema]] = [(0, schema)]
        values = []
        last_names = first
        for flat, names in zip(flats, all_names, strict=True):
            if names != last_names:
                shape = tuple(names)
                found = schemas.get(shape) or self._schema_of(shape, [Schema.OPTIONAL_STRING_SCHEMA] * len(names))
                if found is not schema:  # a new run: a batch holds values of one schema
                    runs.append((len(values), found))
                    schema = found
                last_names = names
            values.append(of_text(schema, flat[1::2]))
        return values, runs

    def _values_with_bytes(self, flats: Sequence[list[str]]) -> tuple[list[Any], list[tuple[int, Schema]]]:
        """The slow path of a batch with values that are not UTF-8: those become bytes (in BYTES fields of the
        Struct; replaced by U+FFFD in a body field), names that are not UTF-8 get U+FFFD."""
        runs: list[tuple[int, Schema]] = []
        values: list[Any] = []
        schema: Schema | None = None
        for flat in flats:
            names = [_clean(name) for name in flat[0::2]]
            raw = [_restore(v) for v in flat[1::2]]
            if self._body_field:
                value = names.index(self._body_field) if self._body_field in names else None
                values.append(_text(raw[value]) if value is not None else None)
                entry_schema = Schema.OPTIONAL_STRING_SCHEMA
            else:
                shape = (*names, *(type(v) is bytes for v in raw))
                entry_schema = self._schemas.get(shape) or self._schema_of(
                    shape, [Schema.OPTIONAL_BYTES_SCHEMA if type(v) is bytes else Schema.OPTIONAL_STRING_SCHEMA
                            for v in raw], names)
                values.append(Struct.of(entry_schema, raw))
            if entry_schema is not schema:
                runs.append((len(values) - 1, entry_schema))
                schema = entry_schema
        return values, runs

    def _schema_of(self, shape: tuple[Any, ...], types: Sequence[Schema], names: Sequence[str] | None = None
                   ) -> Schema:
        """The schema of entries of these field names (in order), kept for the next entries of the same shape."""
        builder = SchemaBuilder.struct()
        for name, field_schema in zip(names if names is not None else shape, types, strict=True):
            builder.field(name, field_schema)
        schema = builder.build()
        if len(self._schemas) < 10_000:
            self._schemas[shape] = schema
        return schema


def _as_sent(response: Any, **_options: Any) -> Any:
    """A response callback that leaves the reply as Redis sent it (already decoded by the parser)."""
    return response


def _per_stream(reply: Any) -> Any:
    """(stream, entries) of an XREADGROUP reply as sent: a map in RESP3, a list of pairs in RESP2."""
    if not reply:
        return ()
    return reply.items() if isinstance(reply, dict) else reply


def _restore(text: str) -> str | bytes:
    """A value decoded with surrogateescape: the text, or the bytes it was when they are not UTF-8."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape")
    return text


def _clean(text: str) -> str:
    """A name decoded with surrogateescape, with U+FFFD for the bytes that are not UTF-8."""
    restored = _restore(text)
    return restored.decode("utf-8", "replace") if isinstance(restored, bytes) else restored
