"""Error handling for records: retries with backoff, tolerance, error log and dead-letter queue.

The hot path stays a plain ``try`` per record; only a failure comes here.
``ErrorHandler.handle`` retries a RetriableException (with exponential
backoff, up to ``errors.retry.timeout``), then either tolerates the failure
(``errors.tolerance=all``: count it, log it, send it to the DLQ, skip the
record) or raises ToleranceExceededError, which fails the task.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from connect.api.errors import ConnectException, RetriableException
from connect.log.api import ConsumerRecord, Producer

__all__ = ["DeadLetterQueueReporter", "ErrorHandler", "ErrorMetrics", "Stage", "ToleranceExceededError"]

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
               headers: tuple[tuple[str, bytes | None], ...]) -> None:
        self.metrics.dlq_produce_requests += 1
        if self.context_headers:
            headers = headers + self._context_headers(failure)
        self.producer.send(self.topic, value, key=key, headers=headers, on_delivery=self._on_delivery)

    def _context_headers(self, failure: Failure) -> tuple[tuple[str, bytes | None], ...]:
        err = failure.error
        items: list[tuple[str, str]] = []
        if failure.consumed is not None:
            items += [
                ("topic", failure.consumed.topic),
                ("partition", str(failure.consumed.partition)),
                ("offset", str(failure.consumed.offset)),
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

    def flush(self, timeout: float | None) -> None:
        """Make DLQ records durable before the offsets of the records they replace are committed."""
        remaining = self.producer.flush(timeout)
        if self._failed is not None or remaining:
            raise ConnectException(f"Could not write to the dead letter queue topic {self.topic}: "
                                   f"{self._failed or f'{remaining} records unacknowledged'}")


class ErrorHandler:
    """Retry-with-tolerance for one task (Kafka Connect's RetryWithToleranceOperator)."""

    INITIAL_BACKOFF_MS = 300

    def __init__(
        self,
        config: Mapping[str, Any],
        connector: str,
        task_id: int,
        stop_event: threading.Event,
        dlq: DeadLetterQueueReporter | None = None,
        metrics: ErrorMetrics | None = None,
    ) -> None:
        self.retry_timeout_ms = int(config.get("errors.retry.timeout", 0))
        self.max_delay_ms = int(config.get("errors.retry.delay.max.ms", 60000))
        self.tolerate = config.get("errors.tolerance", "none") == "all"
        self.log_enabled = bool(config.get("errors.log.enable", False))
        self.log_messages = bool(config.get("errors.log.include.messages", False))
        self.connector = connector
        self.task_id = task_id
        self.stop_event = stop_event
        self.dlq = dlq
        self.metrics = metrics or ErrorMetrics()

    def retry(self, stage: Stage, plugin_class: str, operation: Callable[[], T], first_error: BaseException,
              consumed: ConsumerRecord | None = None, source_record: Any = None) -> T | None:
        """Called after ``operation`` raised ``first_error``: retry if retriable, else tolerate or raise.

        Returns the operation's result once it succeeds, or None when the record is skipped.
        """
        error = first_error
        if isinstance(error, RetriableException) and self.retry_timeout_ms != 0:
            deadline = None if self.retry_timeout_ms < 0 else time.monotonic() + self.retry_timeout_ms / 1000
            delay_ms = self.INITIAL_BACKOFF_MS
            while isinstance(error, RetriableException):
                if deadline is not None and time.monotonic() + delay_ms / 1000 > deadline:
                    break
                self.metrics.retries += 1
                log.info("%s task %d: retrying %s after %d ms: %s", self.connector, self.task_id, stage.value,
                         delay_ms, error)
                if self.stop_event.wait(delay_ms / 1000):
                    break
                try:
                    return operation()
                except Exception as exc:  # noqa: BLE001 - every plugin failure is handled here
                    error = exc
                delay_ms = min(delay_ms * 2, self.max_delay_ms)
        self.tolerate_or_raise(Failure(stage, plugin_class, error, consumed, source_record))
        return None

    def tolerate_or_raise(self, failure: Failure) -> None:
        self.metrics.records_failed += 1
        self._log(failure)
        if self.dlq is not None and failure.consumed is not None:
            rec = failure.consumed
            self.dlq.report(failure, rec.key, rec.value, rec.headers)
        if not self.tolerate:
            where = ""
            if failure.consumed is not None:
                c = failure.consumed
                where = f" while processing record topic={c.topic} partition={c.partition} offset={c.offset}"
            raise ToleranceExceededError(
                f"Tolerance exceeded in error handler{where} at stage {failure.stage.value} "
                f"({failure.plugin_class}): {failure.error}"
            ) from failure.error
        self.metrics.records_skipped += 1

    def _log(self, failure: Failure) -> None:
        if not self.log_enabled and self.tolerate:
            return
        self.metrics.errors_logged += 1
        what = ""
        if failure.consumed is not None:
            c = failure.consumed
            what = f" record topic={c.topic} partition={c.partition} offset={c.offset}"
            if self.log_messages:
                what += f" key={c.key!r} value={c.value!r}"
        elif failure.source_record is not None and self.log_messages:
            what = f" record {failure.source_record!r}"
        log.error("%s task %d: error at stage %s with class %s%s: %s", self.connector, self.task_id,
                  failure.stage.value, failure.plugin_class, what, failure.error)
