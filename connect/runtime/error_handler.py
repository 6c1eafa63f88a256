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

The dead-letter queue itself is in ``connect/runtime/dead_letter_queue.py``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from connect.api.connector import ErrantRecordReporter
from connect.api.errors import ConnectException, RetriableException
from connect.api.records import SinkRecord
from connect.log.api import ConsumerRecord
from connect.runtime.clock import SYSTEM_CLOCK, Clock
from connect.runtime.connector_config import ConnectorConfig
from connect.runtime.failure import ErrorMetrics, Failure, Stage

if TYPE_CHECKING:
    from connect.runtime.dead_letter_queue import DeadLetterQueueReporter

__all__ = ["ErrantRecordReporterImpl", "ErrorHandler", "ErrorMetrics", "Failure", "Stage", "TaskStoppingError",
           "ToleranceExceededError"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class ToleranceExceededError(ConnectException):
    """A record failed and ``errors.tolerance`` does not allow skipping it."""


class TaskStoppingError(ConnectException):
    """The task was asked to stop while an operation was being retried; nothing was skipped."""


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
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``config``: the connector's parsed config, whose ``errors.*`` keys say how failures are handled."""
        self._clock = clock
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
            deadline = None if self.retry_timeout_ms < 0 else self._clock.monotonic() + self.retry_timeout_ms / 1000
            attempt = 0
            while isinstance(error, RetriableException):
                now = self._clock.monotonic()
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
                except Exception as exc:  # every plugin failure is handled here
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

    def refused(self, failure: Failure) -> None:
        """A source record refused to its sender (see ``SourceTask.refuse_record``): counted, logged and
        dead-lettered as a tolerated failure, whatever ``errors.tolerance`` says, since the task goes on."""
        self.metrics.records_failed += 1
        self._log(failure)
        if self.dlq is not None and failure.source_record is not None:
            self.dlq.report_source(failure)
        self.metrics.records_skipped += 1

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
