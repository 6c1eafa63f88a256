"""HeadraceHandler: a logging handler that ships records as log events without ever holding up the app.

The application thread does little: it skips records of excluded loggers (the handler's own clients) and
of the shipper thread itself, formats the message (its arguments may change later), snapshots the
contextvars context and appends to a bounded queue. One background thread, ``headrace-log-shipper``,
turns records into events (``connect.api.log_event``'s schema, as nested JSON) and sends them in batches.

When the queue is full the caller waits at most ``block_ms`` for room, then drops by ``drop_policy``
(``newest``: this record; ``oldest``: the oldest queued one). Every dropped event is counted in
``dropped`` and reported on stderr at most every ``report_interval`` seconds and at close.

When the target is down the shipper keeps the batch and retries with exponential back-off (up to
``retry_max`` seconds); the queue absorbs what comes meanwhile. With ``buffer_dir`` the shipper first
moves every event to a file buffer (``connect.appender.spool``) and sends from there, so an outage of the
target, or a restart of the app, loses nothing until the buffer reaches ``buffer_max_bytes``.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import itertools
import logging
import socket
import sys
import threading
import time
import traceback
import weakref
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from threading import get_ident
from types import MappingProxyType
from typing import Any

import orjson

from connect.api.log_event import iso_timestamp
from connect.appender.spool import Spool
from connect.appender.transport import BadBatch, HttpTransport, TopicTransport, Transport

__all__ = ["HeadraceHandler", "log_context", "bind"]

# loggers of the handler's own clients: their records never come back into the handler
DEFAULT_EXCLUDED = ("httpx", "httpcore", "connect", "confluent_kafka", "kafka", "urllib3")

_CONTEXT: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "headrace_log_context", default=MappingProxyType({}))

# attributes every LogRecord has: anything else on a record came from ``extra=``
_PLAIN_RECORD = vars(logging.LogRecord("", 0, "", 0, "", None, None))
_RECORD_ATTRS = frozenset(_PLAIN_RECORD) | {"message", "asctime", "taskName"}
_PLAIN_RECORD_SIZE = len(_PLAIN_RECORD)  # a record with no more attributes than this has no extra fields


class IsoStamps:
    """``iso_timestamp`` for a stream of record times: the text up to the second is made once per second.

    Gives exactly ``iso_timestamp(seconds)`` (microseconds rounded half to even, as ``datetime`` rounds
    them) at a fraction of its cost, which the shipper thread pays for every record.
    """

    __slots__ = ("_second", "_prefix")

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def __call__(self, seconds: float) -> str:
        if seconds < 0:
            return iso_timestamp(seconds)
        whole = int(seconds)
        micros = round((seconds - whole) * 1e6)
        if micros >= 1_000_000:
            whole += 1
            micros -= 1_000_000
        if whole != self._second:
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
            self._second = whole
        return f"{self._prefix}.{micros:06d}Z"


def log_context() -> Mapping[str, Any]:
    """The context the current task or thread logs with (shipped as the event's ``context``)."""
    return _CONTEXT.get()


@contextlib.contextmanager
def bind(**fields: Any) -> Iterator[None]:
    """Add fields to the log context for the ``with`` block (per thread and asyncio task, by contextvars)."""
    token = _CONTEXT.set({**_CONTEXT.get(), **fields})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


_live: weakref.WeakSet[HeadraceHandler] = weakref.WeakSet()


@atexit.register
def _close_all_at_exit() -> None:
    # before logging's own atexit hook (atexit runs last-registered first, and this module is imported later)
    for handler in list(_live):
        handler.close()


class HeadraceHandler(logging.Handler):
    """Ship log records to a Headrace HttpSource (``url``) or straight to a topic (``worker_config`` + ``topic``).

    Usable from ``dictConfig`` (``"class": "connect.appender.HeadraceHandler", "url": ...``) and from a
    ``fileConfig`` ``.ini`` (``args=('http://127.0.0.1:8070/',)`` or ``kwargs={...}``).
    """

    def __init__(
        self,
        url: str | None = None,
        level: int | str = logging.NOTSET,
        *,
        worker_config: str | Mapping[str, Any] | None = None,
        topic: str | None = None,
        queue_size: int = 10_000,
        block_ms: float = 0.0,
        drop_policy: str = "newest",
        batch_size: int = 1000,
        linger_ms: float = 100.0,
        timeout: float = 5.0,
        close_timeout: float = 5.0,
        retry_max: float = 10.0,
        buffer_dir: str | None = None,
        buffer_max_bytes: int = 256 << 20,
        service_name: str | None = None,
        auth: Sequence[str] | None = None,
        verify: bool | str = True,
        excluded_loggers: Sequence[str] = DEFAULT_EXCLUDED,
        report_interval: float = 10.0,
    ) -> None:
        super().__init__(level)
        if (url is None) == (worker_config is None):
            raise ValueError("HeadraceHandler needs either url= (an HttpSource) or worker_config= and topic=")
        if worker_config is not None and not topic:
            raise ValueError("HeadraceHandler(worker_config=...) needs topic=")
        if drop_policy not in ("newest", "oldest"):
            raise ValueError(f"drop_policy must be 'newest' or 'oldest', got {drop_policy!r}")
        if queue_size < 1 or batch_size < 1:
            raise ValueError("queue_size and batch_size must be at least 1")
        self.queue_size = int(queue_size)
        self.block = max(0.0, float(block_ms)) / 1000.0
        self.drop_oldest = drop_policy == "oldest"
        self.batch_size = int(batch_size)
        self.linger = max(0.0, float(linger_ms)) / 1000.0
        self.close_timeout = float(close_timeout)
        self.retry_max = float(retry_max)
        self.report_interval = float(report_interval)
        self.service_name = service_name
        self.hostname = socket.gethostname()
        self._excluded = tuple(excluded_loggers)
        self._excluded_dots = tuple(name + "." for name in excluded_loggers)
        self._excluded_names: dict[str, bool] = {}  # logger name -> excluded, worked out once per name
        self._stamp = IsoStamps()
        self._host = {"hostname": self.hostname}
        self._queue: deque[tuple[logging.LogRecord, str, Mapping[str, Any]]] = deque()
        self._wake = threading.Event()
        self._space = threading.Condition(threading.Lock())
        self._blocked = 0
        self._drop_lock = threading.Lock()
        self.dropped = 0  # events lost: queue full, buffer full, refused as bad, or undelivered at close
        self._reported_dropped = 0
        self.sent = 0  # events the target acknowledged
        self._sequence = itertools.count(1)
        self._closing = threading.Event()
        self._closed = False
        self._idle = threading.Condition(threading.Lock())  # flush() waits on it
        # events taken from the queue, not yet acknowledged or moved to the buffer; and the buffer's unsent
        # bytes. Both change under _idle together with the queue's pops, so flush() never sees an event
        # in none of the three places.
        self._in_hand = 0
        self._spool_left = 0
        self.transport: Transport
        if url is not None:
            self.transport = HttpTransport(url, timeout, tuple(auth) if auth else None, verify)  # type: ignore[arg-type]
        else:
            props = _load_worker_config(worker_config)  # type: ignore[arg-type]
            self.transport = TopicTransport(props, str(topic))
        self.spool = Spool(buffer_dir, max_bytes=buffer_max_bytes) if buffer_dir else None
        if self.spool is not None:
            self._spool_left = self.spool.unsent_bytes()  # what an earlier handler on the directory left
        self._thread = threading.Thread(target=self._run, name="headrace-log-shipper", daemon=True)
        self._thread.start()
        self._shipper_ident = self._thread.ident
        _live.add(self)

    # --- the application's side -----------------------------------------------------------------------------

    def handle(self, record: logging.LogRecord) -> bool:  # type: ignore[override]
        # no handler lock: emit only appends to a thread-safe deque
        if not self.filters:  # the common case, without Filterer.filter's call
            self.emit(record)
            return True
        rv = self.filter(record)
        if rv:
            self.emit(rv if isinstance(rv, logging.LogRecord) else record)
        return bool(rv)

    def emit(self, record: logging.LogRecord) -> None:
        name = record.name
        excluded = self._excluded_names.get(name)
        if excluded is None:
            excluded = self._excluded_names[name] = self._is_excluded(name)
        if excluded or get_ident() == self._shipper_ident or self._closed:
            return
        try:
            message = record.getMessage()
        except Exception:  # a bad format string is the app's bug; logging reports it as usual
            self.handleError(record)
            return
        queue = self._queue
        if len(queue) >= self.queue_size and not self._make_room():
            return
        queue.append((record, message, _CONTEXT.get()))
        if len(queue) == 1:
            self._wake.set()

    def _is_excluded(self, name: str) -> bool:
        if len(self._excluded_names) > 10_000:
            self._excluded_names.clear()  # loggers named per request: keep the memo bounded
        return name in self._excluded or name.startswith(self._excluded_dots)

    def _make_room(self) -> bool:
        """Wait up to ``block_ms`` for room; then drop (this record, or the oldest). True to go on queueing."""
        if self.block > 0:
            deadline = time.monotonic() + self.block
            with self._space:
                self._blocked += 1
                try:
                    while len(self._queue) >= self.queue_size:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break
                        self._space.wait(left)
                finally:
                    self._blocked -= 1
            if len(self._queue) < self.queue_size:
                return True
        self._count_dropped(1)
        if self.drop_oldest:
            with contextlib.suppress(IndexError):
                self._queue.popleft()
            return True
        return False

    def _count_dropped(self, n: int) -> None:
        with self._drop_lock:
            self.dropped += n

    def flush(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        """Wait until everything queued so far is acknowledged (or in the file buffer); False on timeout."""
        deadline = time.monotonic() + (self.close_timeout if timeout is None else timeout)
        self._wake.set()
        with self._idle:
            while self._queue or self._in_hand or self._spool_left:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._wake.set()
                self._idle.wait(min(left, 0.05))
        return True

    def close(self) -> None:
        """Deliver what is queued within ``close_timeout``, then stop; what is left is counted as dropped
        (with a file buffer it stays there and is sent by the next handler on the same directory)."""
        if self._closed:
            return
        self.flush(self.close_timeout)
        self._closed = True
        self._closing.set()
        self._wake.set()
        self._thread.join(max(1.0, self.close_timeout))
        if self.spool is None:
            left = len(self._queue) + self._in_hand
            if left:
                self._count_dropped(left)
        else:
            self.spool.close()
        self._queue.clear()
        self._report(final=True)
        try:
            self.transport.close()
        except Exception as exc:  # noqa: BLE001 - closing must not raise into logging.shutdown
            print(f"HeadraceHandler: error closing {self.transport.describe()}: {exc}", file=sys.stderr)
        _live.discard(self)
        super().close()

    # --- the shipper thread -----------------------------------------------------------------------------------

    def _take(self, limit: int) -> list[tuple[logging.LogRecord, str, Mapping[str, Any]]]:
        queue = self._queue
        items: list[tuple[logging.LogRecord, str, Mapping[str, Any]]] = []
        pop = queue.popleft
        with contextlib.suppress(IndexError):
            while len(items) < limit:
                items.append(pop())
        if items and self._blocked:
            with self._space:
                self._space.notify_all()
        return items

    def _encode(self, item: tuple[logging.LogRecord, str, Mapping[str, Any]]) -> bytes:
        record, message, context = item
        event: dict[str, Any] = {
            "@timestamp": self._stamp(record.created),
            "message": message,
            "log": {"level": record.levelname, "logger": record.name,
                    "origin": {"file": {"name": record.filename, "line": record.lineno},
                               "function": record.funcName}},
            "process": {"pid": record.process, "name": record.processName,
                        "thread": {"name": record.threadName, "id": record.thread}},
            "host": self._host,
            "event": {"sequence": next(self._sequence)},
        }
        if self.service_name:
            event["service"] = {"name": self.service_name}
        if record.exc_info and record.exc_info[0] is not None:
            exc_type, exc, tb = record.exc_info
            module = getattr(exc_type, "__module__", "builtins")
            qualname = getattr(exc_type, "__qualname__", str(exc_type))
            event["error"] = {"type": qualname if module == "builtins" else f"{module}.{qualname}",
                              "message": str(exc),
                              "stack_trace": "".join(traceback.format_exception(exc_type, exc, tb)).rstrip("\n")}
        elif record.exc_text:
            event["error"] = {"stack_trace": record.exc_text}
        attrs = record.__dict__
        labels = ({k: v for k, v in attrs.items() if k not in _RECORD_ATTRS} if len(attrs) > _PLAIN_RECORD_SIZE
                  else {})
        if record.stack_info:
            labels["stack_info"] = record.stack_info
        if labels:
            event["labels"] = labels
        if context:
            event["context"] = dict(context)
        return orjson.dumps(event, default=str)

    def _run(self) -> None:
        backoff = 0.0
        next_try = 0.0
        batch: list[bytes] = []  # the batch in hand, sent until acknowledged
        cursor: tuple[int, int] | None = None  # with the buffer: where the batch in hand ends in it
        last_report = time.monotonic()
        failing_since: float | None = None
        while True:
            if self._closing.is_set():
                if self.spool is not None:
                    self._to_spool()  # kept for the next handler on this directory
                return
            if self.spool is not None:
                self._to_spool()
                if not batch:
                    batch, cursor = self.spool.peek(self.batch_size)
            elif not batch and self._queue:
                if len(self._queue) < self.batch_size and self.linger and failing_since is None:
                    self._wake.clear()
                    self._wake.wait(self.linger)  # a fuller batch costs the target less; flush() cuts it short
                with self._idle:
                    items = self._take(self.batch_size)
                    self._in_hand = len(items)
                batch = [self._encode(i) for i in items]
            now = time.monotonic()
            if batch and now >= next_try:
                if self._send(batch):
                    self.sent += len(batch)
                    if self.spool is not None and cursor is not None:
                        self.spool.commit(cursor)
                    batch, cursor = [], None
                    with self._idle:
                        self._in_hand = 0
                        if self.spool is not None:
                            self._spool_left = self.spool.unsent_bytes()
                    backoff = 0.0
                    if failing_since is not None:
                        print(f"HeadraceHandler: {self.transport.describe()} is back after "
                              f"{now - failing_since:.1f} s", file=sys.stderr)
                        failing_since = None
                else:
                    if failing_since is None:
                        failing_since = now
                        print(f"HeadraceHandler: cannot ship to {self.transport.describe()} "
                              f"({self.transport.last_error}); retrying", file=sys.stderr)
                    backoff = min(self.retry_max, max(0.05, backoff * 2))
                    next_try = now + backoff
            if self.report_interval and now - last_report >= self.report_interval:
                self._report()
                last_report = now
            with self._idle:
                self._idle.notify_all()
            if batch and time.monotonic() < next_try:
                # waiting to retry; with the buffer, keep moving new events to disk meanwhile
                self._wake.clear()
                self._wake.wait(min(next_try - time.monotonic(), 0.05 if self.spool is not None else 0.5))
            elif not batch and not self._queue:
                self._wake.clear()
                if not self._queue:
                    self._wake.wait(0.5)

    def _to_spool(self) -> None:
        assert self.spool is not None
        while self._queue:
            with self._idle:
                items = self._take(10_000)
                self._in_hand = len(items)
            self.spool.append([self._encode(i) for i in items])
            with self._idle:
                self._in_hand = 0
                self._spool_left = self.spool.unsent_bytes()
        if self.spool.dropped:
            self._count_dropped(self.spool.dropped)
            self.spool.dropped = 0

    def _send(self, batch: list[bytes]) -> bool:
        try:
            return self.transport.send(batch)
        except BadBatch as exc:
            # resending cannot help: count the batch as dropped rather than block everything behind it
            self._count_dropped(len(batch))
            print(f"HeadraceHandler: {self.transport.describe()} refused {len(batch)} events: {exc}",
                  file=sys.stderr)
            return True
        except Exception as exc:  # noqa: BLE001 - the shipper thread must survive its client's surprises
            self.transport.last_error = f"{type(exc).__name__}: {exc}"
            return False

    def _report(self, final: bool = False) -> None:
        with self._drop_lock:
            dropped = self.dropped
        if dropped != self._reported_dropped or (final and dropped):
            new = dropped - self._reported_dropped
            self._reported_dropped = dropped
            print(f"HeadraceHandler: dropped {dropped} log events in all ({new} since the last report) "
                  f"shipping to {self.transport.describe()}", file=sys.stderr)


def _load_worker_config(worker_config: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(worker_config, Mapping):
        return dict(worker_config)
    from connect.runtime.properties import load_config_file

    # a relative embedded.log.dir is taken from the current directory, as the worker and the headrace tools do
    return load_config_file(worker_config)
