"""What a failed record is (Failure), where in a task it failed (Stage), and the per-task error counters.

error_handler.py decides what a failure does (retry, skip, fail the task); dead_letter_queue.py writes what
was skipped to the dead letter queue. Both name failures by these types, which therefore live apart from
either, so that the handler may import the queue and not the other way round.
"""

from __future__ import annotations

import enum
import operator
from typing import Any

import attrs

from connect.log.api import ConsumerRecord

__all__ = ["ErrorMetrics", "Failure", "Stage"]


class Stage(enum.Enum):
    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    TRANSFORMATION = "TRANSFORMATION"
    TASK_PUT = "TASK_PUT"
    TASK_POLL = "TASK_POLL"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


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

    def signature(self) -> tuple[int, ...]:
        """The values of ``as_dict()`` in order, read in one C call (status listings read it often)."""
        return _read_metric_fields(self)  # type: ignore[no-any-return]  # attrgetter of several names is typed as returning Any


_METRIC_FIELDS = tuple(f.name for f in attrs.fields(ErrorMetrics))
_read_metric_fields = operator.attrgetter(*_METRIC_FIELDS)


@attrs.frozen
class Failure:
    stage: Stage
    plugin_class: str
    error: BaseException
    # what failed: the consumed record (sinks) or the source record (sources)
    consumed: ConsumerRecord | None = None
    source_record: Any = None
