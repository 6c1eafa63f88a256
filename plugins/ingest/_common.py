"""What the ingestion sources share: listener URLs, the hand-over queue between network threads and the
task thread, and acknowledgement of records once the log has them.

Network threads (cheroot's pool, the asyncio loop) parse input and hand it over; the task thread takes
it in ``poll``. Stream sources ``offer`` SourceRecords (some carry a parse-error header). A source that
acknowledges its senders passes a ``Ticket``, completed once the log has every record of it (on the
embedded log, once the batch is written to the segment file, which survives kill -9), in one of two ways:

- values of one schema (log events from HttpSource through ``offer_events``, line bodies from NetcatSource)
  go through ``offer_values``: ``poll`` joins the queued requests of one schema into one
  ``SourceRecordBatch``, which the runtime converts and appends in bulk, and its ``commit_batch`` for the
  batch completes the ticket of every request in it;
- records that need more than a SourceRecordBatch holds (headers: FlumeAvroSource) go through ``offer``
  with a ticket, in a task that also inherits ``AcknowledgesRecords``: the runtime then sends each record
  with its own delivery callback and calls ``commit_record`` for it (Kafka Connect's ``commitRecord``).

A record the log cannot take (converted, it is larger than the log's record limit) is refused alone: the
runtime calls ``refuse_record`` for it, which notes the refusal on its request's ticket (``Ticket.refused``:
the sources answer the sender naming the event) and counts it; the other events of the request are written.
Sources without tickets (TCP, syslog) only count it; the runtime logs it and sends it to the dead-letter
queue if the connector has one. The task goes on either way.
"""

from __future__ import annotations

import asyncio
import collections
import ipaddress
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    Importance,
    LambdaValidator,
    NonEmptyString,
    Range,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceRecordBatch,
    SourceTask,
    Task,
)
from connect.api.log_event import LOG_EVENT_SCHEMA
from connect.api.version import distribution_version

log = logging.getLogger(__name__)

LISTENERS_CONFIG = "listeners"
TOPIC_CONFIG = "topic"
MAX_EVENT_BYTES_CONFIG = "max.event.bytes"
MAX_PENDING_CONFIG = "max.pending.events"
BATCH_SIZE_CONFIG = "batch.size"
TASK_ID_CONFIG = "task.id"


def version() -> str:
    return distribution_version(__name__)


@attrs.frozen
class Listener:
    scheme: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def parse_listeners(value: Any, schemes: Sequence[str]) -> list[Listener]:
    """``scheme://host:port`` items of a comma list (or list); an empty host means 127.0.0.1, never all."""
    items = value if isinstance(value, list) else [v for v in str(value or "").split(",")]
    out: list[Listener] = []
    for raw in (i.strip() for i in items):
        if not raw:
            continue
        parts = urlsplit(raw)
        if parts.scheme not in schemes:
            raise ValueError(f"'{raw}' must start with one of {', '.join(s + '://' for s in schemes)}")
        if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
            raise ValueError(f"'{raw}' must be just scheme://host:port")
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"'{raw}' has no valid port") from None
        if port is None:
            raise ValueError(f"'{raw}' needs a port (0 picks a free one)")
        host = parts.hostname or "127.0.0.1"
        if host != "localhost":
            try:
                ipaddress.ip_address(host)
            except ValueError:
                raise ValueError(f"'{raw}': the host must be an IP address or localhost") from None
        out.append(Listener(parts.scheme, host, port))
    if not out:
        raise ValueError("at least one listener is needed")
    return out


def listeners_validator(schemes: Sequence[str]) -> LambdaValidator:
    def check(_name: str, value: Any) -> str | None:
        try:
            parse_listeners(value, schemes)
        except ValueError as exc:
            return str(exc)
        return None

    return LambdaValidator(check, f"comma list of {'|'.join(schemes)}://host:port")


def base_config(schemes: Sequence[str], default_listener: str, what: str) -> ConfigDef:
    return (
        ConfigDef()
        .define(LISTENERS_CONFIG, ConfigType.LIST, default_listener, listeners_validator(schemes),
                importance=Importance.HIGH,
                documentation=f"Where to listen for {what}: a comma list of {', '.join(s + '://' for s in schemes)}"
                "host:port URLs. Loopback by default; a non-loopback address exposes the source to the network.")
        .define(TOPIC_CONFIG, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
                documentation="The topic every event is written to.")
        .define(MAX_EVENT_BYTES_CONFIG, ConfigType.INT, 1 << 20, Range.between(64, 64 << 20),
                importance=Importance.MEDIUM,
                documentation="The largest event accepted, in bytes; a larger one is refused with an error "
                "naming it, and counted.")
        .define(MAX_PENDING_CONFIG, ConfigType.INT, 100_000, Range.at_least(1),
                importance=Importance.LOW,
                documentation="How many received events may wait for the task to hand them to the log; "
                "beyond it HTTP answers 503 and TCP stops reading (UDP drops, counted).")
        .define(BATCH_SIZE_CONFIG, ConfigType.INT, 5000, Range.at_least(1), importance=Importance.LOW,
                documentation="The most events one poll of the task returns.")
    )


class Ticket:
    """One acknowledged request: done when the log acknowledged each of its ``count`` records (a refused one
    is acknowledged too, after its ``refuse``: it is done with)."""

    __slots__ = ("remaining", "done", "failed", "refused")

    def __init__(self, count: int) -> None:
        self.remaining = count
        self.done = threading.Event()
        self.failed: str | None = None
        # (index of the event in the request, why the log refused it), for each event that is not in the log
        self.refused: list[tuple[int, str]] = []
        if count == 0:
            self.done.set()

    def refuse(self, index: int, reason: str) -> None:
        """Event ``index`` of the request will not be in the log, for ``reason``; it is still acknowledged."""
        self.refused.append((index, reason))

    def ack(self, n: int = 1) -> None:
        self.remaining -= n
        if self.remaining <= 0:
            self.done.set()

    def fail(self, reason: str) -> None:
        self.failed = reason
        self.done.set()


class AsyncTicket(Ticket):
    """A Ticket whose completion also resolves a future on a connection's event loop, for sources that answer
    their senders from asyncio."""

    __slots__ = ("_loop", "future")

    def __init__(self, count: int, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.future: asyncio.Future[None] = loop.create_future()
        super().__init__(count)
        if count == 0:
            self.future.set_result(None)

    def ack(self, n: int = 1) -> None:
        super().ack(n)
        if self.remaining <= 0:
            self._resolve()

    def fail(self, reason: str) -> None:
        super().fail(reason)
        self._resolve()

    def _resolve(self) -> None:
        try:
            self._loop.call_soon_threadsafe(_settle, self.future)
        except RuntimeError:  # the loop is closed: the source stopped, nobody waits any more
            pass


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Counters:
    """Numbers a source logs when it stops (and a test reads); updated by several threads under a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.values: dict[str, int] = collections.defaultdict(int)

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.values[name] += n

    def text(self) -> str:
        with self._lock:
            return ", ".join(f"{k}={v}" for k, v in sorted(self.values.items())) or "nothing"


class RateLimitedLog:
    """At most one WARNING per interval for each kind of bad input (each message format); the rest are
    counted and summarised in the next one."""

    def __init__(self, logger: logging.Logger, interval: float = 5.0) -> None:
        self._log = logger
        self._interval = interval
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}
        self._lock = threading.Lock()

    def warning(self, msg: str, *args: Any) -> None:
        with self._lock:
            now = time.monotonic()
            if now - self._last.get(msg, -1e9) < self._interval:
                self._suppressed[msg] = self._suppressed.get(msg, 0) + 1
                return
            self._last[msg] = now
            suppressed = self._suppressed.pop(msg, 0)
        if suppressed:
            msg += " (%d similar warnings suppressed)"
            args = (*args, suppressed)
        self._log.warning(msg, *args)


class IngestConnector(SourceConnector):
    """One task: a listener address can be bound once."""

    CONFIG: ConfigDef
    TASK: type[Task]

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return version()

    def config(self) -> ConfigDef:
        return ConfigDef(self.CONFIG)

    def start(self, props: Mapping[str, str]) -> None:
        AbstractConfig(self.CONFIG, props)  # a bad config fails here, before any task starts
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return self.TASK

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props, **{TASK_ID_CONFIG: "0"})]

    def stop(self) -> None:
        pass


class QueueingSourceTask(SourceTask):
    """A SourceTask fed by network threads through a bounded queue, acknowledging through tickets."""

    KIND = "IngestSource"

    def __init__(self) -> None:
        self.topic = ""
        self.max_event_bytes = 1 << 20
        self._max_pending = 100_000
        self._batch_size = 5000
        # (values, their request's ticket, the values' schema) from offer_values; (SourceRecords, ticket, None)
        # from offer
        self._queue: collections.deque[tuple[list[Any], Ticket | None, Schema | None]] = collections.deque()
        self._queued = 0
        self._cond = threading.Condition()
        # id(polled batch) -> (the batch, kept alive; (ticket, index of its first event in the batch, its event
        # count)...), until commit_batch
        self._waiting: dict[int, tuple[SourceRecordBatch, list[tuple[Ticket, int, int]]]] = {}
        # id(polled record) -> (the record, kept alive; its ticket; its index in the ticket's request), until
        # commit_record (AcknowledgesRecords)
        self._waiting_records: dict[int, tuple[SourceRecord, Ticket, int]] = {}
        self._waiting_lock = threading.Lock()
        self._stopping = threading.Event()
        self.counters = Counters()
        self.name = "?"

    def version(self) -> str:
        return version()

    def configure_common(self, config: AbstractConfig, props: Mapping[str, str]) -> None:
        self.topic = str(config.get_string(TOPIC_CONFIG))
        self.max_event_bytes = int(config.get_int(MAX_EVENT_BYTES_CONFIG) or 0)
        self._max_pending = int(config.get_int(MAX_PENDING_CONFIG) or 1)
        self._batch_size = int(config.get_int(BATCH_SIZE_CONFIG) or 1)
        self.name = f"{self.KIND}[{props.get('name', '?')}|task-{props.get(TASK_ID_CONFIG, '0')}]"
        self._stopping.clear()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def offer(self, records: list[SourceRecord], ticket: Ticket | None = None, wait: float = 0.0) -> bool:
        """Queue records for the log; False (nothing queued) when the queue is full for ``wait`` s or stopping.

        A ticket is completed record by record, through ``commit_record``: only a task that inherits
        ``AcknowledgesRecords`` may pass one.
        """
        if ticket is not None and not isinstance(self, AcknowledgesRecords):
            raise TypeError(f"{type(self).__name__} offers records with a ticket but does not acknowledge records: "
                            "inherit AcknowledgesRecords, or offer_events")
        return self._put(records, ticket, None, wait)

    def offer_events(self, events: list[Any], ticket: Ticket | None, wait: float = 0.0) -> bool:
        """Queue log event values (Structs of the log event schema) for ``topic``; ``ticket`` completes once
        the log has all of them. False (nothing queued) when the queue is full for ``wait`` s or stopping."""
        return self._put(events, ticket, LOG_EVENT_SCHEMA, wait)

    def offer_values(self, values: list[Any], schema: Schema, ticket: Ticket | None, wait: float = 0.0) -> bool:
        """``offer_events`` for values of any ``schema`` (one object per kind of value: consecutive requests
        of the same schema object share a polled batch)."""
        return self._put(values, ticket, schema, wait)

    def _put(self, items: list[Any], ticket: Ticket | None, schema: Schema | None, wait: float) -> bool:
        deadline = time.monotonic() + wait
        with self._cond:
            while True:
                if self._stopping.is_set():
                    return False
                # a batch larger than the whole capacity is taken when the queue is empty, or it never fits
                if self._queued == 0 or self._queued + len(items) <= self._max_pending:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.1))
            self._queue.append((items, ticket, schema))
            self._queued += len(items)
            self._cond.notify_all()
        return True

    def poll(self) -> list[SourceRecord] | SourceRecordBatch | None:
        # acknowledgements are served by the runtime between polls, so wait briefly while any are due
        timeout = 0.001 if self._waiting or self._waiting_records else 0.5
        taken: list[Any] = []
        tickets: list[tuple[Ticket, int, int]] = []  # of event values: each request's ticket, start and count
        record_tickets: list[tuple[list[SourceRecord], Ticket]] = []  # of records: acknowledged one by one
        schema: Schema | None = None
        with self._cond:
            if not self._queue and not self._stopping.is_set():
                self._cond.wait(timeout)
            queue = self._queue
            if queue:
                schema = queue[0][2]
                # one kind per poll: values of one schema become one batch, records a list
                while queue and len(taken) < self._batch_size and queue[0][2] is schema:
                    items, ticket, _ = queue.popleft()
                    self._queued -= len(items)
                    if ticket is not None:
                        if schema is not None:
                            tickets.append((ticket, len(taken), len(items)))
                        else:
                            record_tickets.append((items, ticket))
                    taken.extend(items)
                self._cond.notify_all()  # room for blocked offers
        if not taken:
            return None
        if schema is None:
            if record_tickets:
                with self._waiting_lock:
                    for records, ticket in record_tickets:
                        for index, record in enumerate(records):
                            self._waiting_records[id(record)] = (record, ticket, index)
            return taken
        batch = SourceRecordBatch(self.topic, taken, value_schema=schema,
                                  timestamp=int(time.time() * 1000))
        if tickets:
            with self._waiting_lock:
                self._waiting[id(batch)] = (batch, tickets)
        return batch

    def commit_batch(self, batch: SourceRecordBatch) -> None:
        with self._waiting_lock:
            entry = self._waiting.pop(id(batch), None)
        if entry is not None:
            for ticket, _, count in entry[1]:
                ticket.ack(count)

    def refuse_record(self, polled: Sequence[SourceRecord], index: int, reason: str) -> None:
        """The runtime's word that record ``index`` of a polled batch or list is too large for the log: noted on
        its request's ticket (the request's answer names it) and counted; the task goes on."""
        self.counters.add("refused_too_large_for_log")
        with self._waiting_lock:
            if isinstance(polled, SourceRecordBatch):
                entry = self._waiting.get(id(polled))
                if entry is not None and entry[0] is polled:
                    for ticket, start, count in entry[1]:
                        if start <= index < start + count:
                            ticket.refuse(index - start, reason)  # commit_batch acknowledges it with the rest
                            break
                return
            waiting = self._waiting_records.pop(id(polled[index]), None)
        if waiting is not None:
            _, ticket, position = waiting
            ticket.refuse(position, reason)
            ticket.ack()  # no commit_record comes for it

    def stop_queue(self) -> None:
        """Refuse new input and fail every request still waiting for the log."""
        self._stopping.set()
        with self._cond:
            pending = [t for _, t, _ in self._queue if t is not None]
            self._queue.clear()
            self._queued = 0
            self._cond.notify_all()
        with self._waiting_lock:
            for _, tickets in self._waiting.values():
                pending += [t for t, _, _ in tickets]
            self._waiting.clear()
            pending += [t for _, t, _ in self._waiting_records.values()]
            self._waiting_records.clear()
        for ticket in pending:
            ticket.fail("the source is stopping")


class AcknowledgesRecords:
    """Mixin (first among the bases) for a QueueingSourceTask whose ``offer`` passes tickets: each polled
    record is acknowledged on its own, as Kafka Connect's ``commitRecord``. The runtime then sends every
    record of the task with its own delivery callback, which costs more than ``offer_events``'s batches:
    use it only for records a SourceRecordBatch cannot hold (with headers)."""

    _waiting_lock: threading.Lock
    _waiting_records: dict[int, tuple[SourceRecord, Ticket, int]]

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        with self._waiting_lock:
            entry = self._waiting_records.pop(id(record), None)
        if entry is not None:
            entry[1].ack()
