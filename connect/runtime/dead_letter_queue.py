"""The dead-letter queue: failed records, with context headers, sent to ``errors.deadletterqueue.topic.name``.

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

import json
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from connect.api.errors import ConnectException
from connect.log.api import LogError, Producer, record_bytes
from connect.runtime.failure import ErrorMetrics, Failure

__all__ = ["ERROR_HEADER_PREFIX", "DeadLetterQueueReporter", "source_record_document"]

ERROR_HEADER_PREFIX = "__connect.errors."


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


def source_record_document(record: Any, max_text: int | None = None) -> bytes:
    """The DLQ value for a failed source record: a JSON document of the record as it was polled.

    ``max_text`` cuts the key, the value and each header value to that many characters, and marks the
    document ``"truncated": true`` if any was cut: a record refused for its size must fit the DLQ topic."""
    cut = False

    def text(value: Any) -> str | None:
        nonlocal cut
        out = _text(value)
        if max_text is not None and out is not None and len(out) > max_text:
            cut = True
            return out[:max_text]
        return out

    headers = [{"key": h.key, "value": text(h.value)} for h in record.headers] if record.has_headers() else []
    doc = {
        "topic": record.topic,
        "kafka_partition": record.kafka_partition,
        "source_partition": record.source_partition,
        "source_offset": record.source_offset,
        "timestamp": record.timestamp,
        "key": text(record.key),
        "value": text(record.value),
        "headers": headers,
    }
    if cut:
        doc["truncated"] = True
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
        self._room: int | None = None  # record_limit of the DLQ topic, less its overhead; -1: none known

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
        """A failed source record: its JSON document as the value (see the module docstring), its texts cut
        when the whole would be larger than the DLQ topic takes (a record refused for its size, say)."""
        document = source_record_document(failure.source_record)
        headers = self._context_headers(failure) if self.context_headers else ()
        room = self._record_room()
        if room is not None:
            room -= record_bytes(None, None, headers)
            # a character is at most 6 bytes of this JSON (a control character's \uXXXX): halve until it fits
            max_text = max(room // 6, 0)
            while len(document) > room and max_text > 0:
                document = source_record_document(failure.source_record, max_text)
                max_text //= 2
        self.report(failure, None, document, ())

    def _record_room(self) -> int | None:
        """The most ``record_bytes`` a DLQ record may have, once known."""
        if self._room is None:
            try:
                limit = self.producer.record_limit(self.topic)
            except LogError:
                return None
            self._room = limit.max_record_bytes if limit is not None else -1
        return self._room if self._room >= 0 else None

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
