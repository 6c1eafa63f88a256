"""Error handling for records: retries with backoff, tolerance, error log and dead-letter queue.

The hot path stays a plain ``try`` per record; only a failure comes here.
``ErrorHandler.retry`` retries a RetriableException (exponential backoff
from 300 ms, each delay at most ``errors.retry.delay.max.ms``, for at most
``errors.retry.timeout`` in all; -1 retries until the task stops), then
either tolerates the failure (``errors.tolerance=all``: count it, log it
when ``errors.log.enable``, send it to the DLQ, skip the record) or raises
ToleranceExceededError, which fails the task with the record's coordinates
in its trace. A task asked to stop while retrying raises TaskStoppingError:
the record is neither skipped nor committed.

Sink dead-letter queue (as Kafka Connect): the record's original consumed
bytes (key, value, headers) go to ``errors.deadletterqueue.topic.name``;
with ``errors.deadletterqueue.context.headers.enable`` the headers
``__connect.errors.topic``, ``.partition``, ``.offset`` (where it was
consumed), ``.connector.name``, ``.task.id``, ``.stage``, ``.class.name``,
``.exception.class.name``, ``.exception.message`` and
``.exception.stacktrace`` are added, each as UTF-8 text. Records a sink
task rejects itself through ``SinkTaskContext.errant_record_reporter()``
take the same way at stage TASK_PUT (see ErrantRecordReporterImpl).

Source dead-letter queue (a Headrace extension; Kafka Connect has none): a
source connector may set the same three ``errors.deadletterqueue.*`` keys.
A polled record that fails a transform or a converter has no original
bytes, so the DLQ record's value is a UTF-8 JSON document of the record as
polled (before any transform)::

    {"topic": ..., "kafka_partition": ..., "source_partition": {...},
     "source_offset": {...}, "timestamp": ..., "key": "...", "value": "...",
     "headers": [{"key": ..., "value": "..."}]}

``key``, ``value`` and header values are best-effort text: strings as they
are, bytes decoded as UTF-8 (undecodable bytes as ``\\xNN`` escapes),
maps/lists/numbers as JSON, anything else (a Struct) as ``str()``. The DLQ
record has no key. Its context headers are those above except that
``__connect.errors.topic`` names the topic the record was meant for,
``.partition`` is present only when the record named one, there is no
``.offset``, and ``__connect.errors.source.partition`` /
``__connect.errors.source.offset`` carry the source partition and offset as
JSON. The record's source offset counts as processed once the DLQ write is
acknowledged (the DLQ producer is flushed before source offsets commit).
"""

from __future__ import annotations

import enum
import json
import logging
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import attrs

from connect.api.connector import ErrantRecordReporter
from connect.api.errors import ConnectException, RetriableException
from connect.api.records import SinkRecord
from connect.log.api import ConsumerRecord, Producer
from connect.runtime.connector_config import ConnectorConfig

__all__ = ["DeadLetterQueueReporter", "ErrantRecordReporterImpl", "ErrorHandler", "ErrorMetrics", "Stage",
           "TaskStoppingError", "ToleranceExceededError", "source_record_document"]

log = logging.getLogger(__name__)
T = TypeVar("T")

ERROR_HEADER_PREFIX = "__connect.errors."


class Stage(enum.Enum):
    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    TRANSFORMATION = "TRANSFORMATION"
    TASK_PUT = "TASK_PUT"
    TASK_POLL = "TASK_POLL"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


class ToleranceExceededError(ConnectException):
    """A record failed and ``errors.tolerance`` does not allow skipping it."""


class TaskStoppingError(ConnectException):
    """The task was asked to stop while an operation was being retried; nothing was skipped."""


@attrs.define
class ErrorMetrics:
    """Per-task counters, shown in logs and in task status."""

    records_failed: int = 0
    records_skipped: int = 0
    retries: int = 0
    errors_logged: int = 0
    dlq_produce_requests: int = 0
    dlq_produce_failures: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f: getattr(self, f) for f in _METRIC_FIELDS}


_METRIC_FIELDS = tuple(f.name for f in attrs.fields(ErrorMetrics))


@attrs.frozen
class Failure:
    stage: Stage
    plugin_class: str
    error: BaseException
    # what failed: the consumed record (sinks) or the source record (sources)
    consumed: ConsumerRecord | None = None
    source_record: Any = None


def _text(value: Any) -> str | None:
    """Best-effort text of a key, value or header value for the source DLQ document."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, dict | list | tuple | int | float | bool):
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            pass
    return str(value)


def source_record_document(record: Any) -> bytes:
    """The DLQ value for a failed source record: a JSON document of the record as it was polled."""
    headers = [{"key": h.key, "value": _text(h.value)} for h in record.headers] if record.has_headers() else []
    doc = {
        "topic": record.topic,
        "kafka_partition": record.kafka_partition,
        "source_partition": record.source_partition,
        "source_offset": record.source_offset,
        "timestamp": record.timestamp,
        "key": _text(record.key),
        "value": _text(record.value),
        "headers": headers,
    }
    return json.dumps(doc, ensure_ascii=False, default=str).encode("utf-8")


class _DeliveryFuture(Future):  # type: ignore[type-arg]
    """Completes when the DLQ producer's delivery callback runs; waiting on it flushes the producer first,
    so a sink task may block on it inside ``put`` without waiting for the next offset commit."""

    def __init__(self, producer: Producer) -> None:
        super().__init__()
        self._producer = producer

    def result(self, timeout: float | None = None) -> None:
        if not self.done():
            self._producer.flush(timeout)
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self.done():
            self._producer.flush(timeout)
        return super().exception(timeout)


class DeadLetterQueueReporter:
    """Sends failed consumed records, as their original bytes, to a DLQ topic with context headers."""

    def __init__(self, producer: Producer, topic: str, connector: str, task_id: int, context_headers: bool,
                 metrics: ErrorMetrics) -> None:
        self.producer = producer
        self.topic = topic
        self.connector = connector
        self.task_id = task_id
        self.context_headers = context_headers
        self.metrics = metrics
        self._failed: BaseException | None = None

    def report(self, failure: Failure, key: bytes | None, value: bytes | None,
               headers: tuple[tuple[str, bytes | None], ...], want_future: bool = False) -> Future[None] | None:
        """Queue one DLQ record; with ``want_future`` the returned Future completes once the log acknowledged it."""
        self.metrics.dlq_produce_requests += 1
        if self.context_headers:
            headers = tuple(headers) + self._context_headers(failure)
        future: Future[None] | None = None
        on_delivery: Callable[[Exception | None, object], None] = self._on_delivery
        if want_future:
            future = _DeliveryFuture(self.producer)
            on_delivery = self._delivery_with(future)
        self.producer.send(self.topic, value, key=key, headers=headers, on_delivery=on_delivery)
        return future

    def report_source(self, failure: Failure) -> None:
        """A failed source record: its JSON document as the value (see the module docstring)."""
        self.report(failure, None, source_record_document(failure.source_record), ())

    def _context_headers(self, failure: Failure) -> tuple[tuple[str, bytes | None], ...]:
        err = failure.error
        items: list[tuple[str, str]] = []
        if failure.consumed is not None:
            items += [
                ("topic", failure.consumed.topic),
                ("partition", str(failure.consumed.partition)),
                ("offset", str(failure.consumed.offset)),
            ]
        elif failure.source_record is not None:
            rec = failure.source_record
            items.append(("topic", str(rec.topic)))
            if rec.kafka_partition is not None:
                items.append(("partition", str(rec.kafka_partition)))
            items += [
                ("source.partition", json.dumps(rec.source_partition, default=str)),
                ("source.offset", json.dumps(rec.source_offset, default=str)),
            ]
        items += [
            ("connector.name", self.connector),
            ("task.id", str(self.task_id)),
            ("stage", failure.stage.value),
            ("class.name", failure.plugin_class),
            ("exception.class.name", f"{type(err).__module__}.{type(err).__qualname__}"),
            ("exception.message", str(err)),
            ("exception.stacktrace", "".join(traceback.format_exception(err))),
        ]
        return tuple((ERROR_HEADER_PREFIX + k, v.encode("utf-8")) for k, v in items)

    def _on_delivery(self, err: Exception | None, _metadata: object) -> None:
        if err is not None:
            self.metrics.dlq_produce_failures += 1
            self._failed = err

    def _delivery_with(self, future: Future[None]) -> Callable[[Exception | None, object], None]:
        def on_delivery(err: Exception | None, metadata: object) -> None:
            self._on_delivery(err, metadata)
            if err is None:
                future.set_result(None)
            else:
                future.set_exception(ConnectException(f"Could not write to the dead letter queue topic "
                                                      f"{self.topic}: {err}"))
        return on_delivery

    def flush(self, timeout: float | None) -> None:
        """Make DLQ records durable before the offsets of the records they replace are committed."""
        remaining = self.producer.flush(timeout)
        failed, self._failed = self._failed, None
        if failed is not None or remaining:
            raise ConnectException(f"Could not write to the dead letter queue topic {self.topic}: "
                                   f"{failed or f'{remaining} records unacknowledged'}")


class ErrorHandler:
    """Retry-with-tolerance for one task (Kafka Connect's RetryWithToleranceOperator)."""

    INITIAL_BACKOFF_MS = 300

    def __init__(
        self,
        config: ConnectorConfig,
        connector: str,
        task_id: int,
        stop_event: threading.Event,
        dlq: DeadLetterQueueReporter | None = None,
        metrics: ErrorMetrics | None = None,
    ) -> None:
        """``config``: the connector's parsed config, whose ``errors.*`` keys say how failures are handled."""
        self.retry_timeout_ms = config.errors_retry_timeout_ms
        self.max_delay_ms = config.errors_retry_delay_max_ms
        self.tolerate = config.errors_tolerance_all
        self.log_enabled = config.errors_log_enable
        self.log_messages = config.errors_log_include_messages
        self.connector = connector
        self.task_id = task_id
        self.stop_event = stop_event
        self.dlq = dlq
        self.metrics = metrics or ErrorMetrics()

    def backoff_ms(self, attempt: int) -> int:
        """Delay before retry ``attempt`` (0-based): 300 ms doubling, capped at ``errors.retry.delay.max.ms``."""
        return min(self.INITIAL_BACKOFF_MS << min(attempt, 32), self.max_delay_ms)

    def retry(self, stage: Stage, plugin_class: str, operation: Callable[[], T], first_error: BaseException,
              consumed: ConsumerRecord | None = None, source_record: Any = None) -> T | None:
        """Called after ``operation`` raised ``first_error``: retry if retriable, else tolerate or raise.

        A RetriableException is retried with backoff while ``errors.retry.timeout`` (counted from this
        call) allows; the last wait is shortened to end at the deadline. Returns the operation's result once
        it succeeds (None if a transform then dropped the record), or None when the record is skipped.
        """
        error = first_error
        if isinstance(error, RetriableException) and self.retry_timeout_ms != 0:
            deadline = None if self.retry_timeout_ms < 0 else time.monotonic() + self.retry_timeout_ms / 1000
            attempt = 0
            while isinstance(error, RetriableException):
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                delay = self.backoff_ms(attempt) / 1000
                if deadline is not None:
                    delay = min(delay, deadline - now)
                attempt += 1
                self.metrics.retries += 1
                log.info("%s task %d: retrying %s (%s) in %.0f ms after: %s", self.connector, self.task_id,
                         stage.value, plugin_class, delay * 1000, error)
                if self.stop_event.wait(delay):
                    raise TaskStoppingError(f"Task stopped while retrying {stage.value} ({plugin_class})") from error
                try:
                    return operation()
                except Exception as exc:  # noqa: BLE001 - every plugin failure is handled here
                    error = exc
        self.tolerate_or_raise(Failure(stage, plugin_class, error, consumed, source_record))
        return None

    def tolerate_or_raise(self, failure: Failure, want_future: bool = False) -> Future[None] | None:
        """Count, log and dead-letter a failed record; skip it under tolerance ``all``, else raise.

        With ``want_future`` (the errant-record reporter) returns a Future of the DLQ write.
        """
        self.metrics.records_failed += 1
        self._log(failure)
        future: Future[None] | None = None
        if self.dlq is not None:
            if failure.consumed is not None:
                rec = failure.consumed
                future = self.dlq.report(failure, rec.key, rec.value, rec.headers, want_future)
            elif failure.source_record is not None:
                self.dlq.report_source(failure)
        if not self.tolerate:
            raise ToleranceExceededError(
                f"Tolerance exceeded in error handler{describe(failure)} at stage {failure.stage.value} "
                f"({failure.plugin_class}): {type(failure.error).__name__}: {failure.error}"
            ) from failure.error
        self.metrics.records_skipped += 1
        if want_future and future is None:
            future = Future()
            future.set_result(None)
        return future

    def _log(self, failure: Failure) -> None:
        if not self.log_enabled:
            return
        self.metrics.errors_logged += 1
        what = describe(failure)
        if self.log_messages:
            if failure.consumed is not None:
                c = failure.consumed
                what += f" key={c.key!r} value={c.value!r} headers={c.headers!r}"
            elif failure.source_record is not None:
                what += f" record={failure.source_record!r}"
        log.error("Error in task %s-%d at stage %s with class %s%s: %s: %s", self.connector, self.task_id,
                  failure.stage.value, failure.plugin_class, what, type(failure.error).__name__, failure.error)


def describe(failure: Failure) -> str:
    """Where the failed record came from, for messages and traces."""
    if failure.consumed is not None:
        c = failure.consumed
        return f" while processing record topic={c.topic} partition={c.partition} offset={c.offset}"
    rec = failure.source_record
    if rec is not None:
        return (f" while processing source record topic={rec.topic} source_partition={rec.source_partition} "
                f"source_offset={rec.source_offset}")
    return ""


class ErrantRecordReporterImpl(ErrantRecordReporter):
    """SinkTaskContext.errant_record_reporter(): a record the sink task rejects goes the way of a failed one.

    ``lookup`` finds the consumed record (original bytes) behind a SinkRecord of the batch being put; for a
    record it cannot find (one the task kept from an earlier batch) ``serialize`` converts the SinkRecord
    back to bytes with the task's converters, as Kafka Connect does. Under ``errors.tolerance=none``
    ``report`` raises, which fails the task.
    """

    def __init__(self, handler: ErrorHandler, plugin_class: str,
                 lookup: Callable[[SinkRecord], ConsumerRecord | None],
                 serialize: Callable[[SinkRecord], ConsumerRecord]) -> None:
        self.handler = handler
        self.plugin_class = plugin_class
        self._lookup = lookup
        self._serialize = serialize

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        consumed = self._lookup(record)
        if consumed is None:
            consumed = self._serialize(record)
        future = self.handler.tolerate_or_raise(Failure(Stage.TASK_PUT, self.plugin_class, error, consumed),
                                                want_future=True)
        assert future is not None
        return future
