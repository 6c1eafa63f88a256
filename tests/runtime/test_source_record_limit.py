"""A source record that converts to more than the log takes one record (issue #35 item 3): refused alone, on each
of the runtime's send paths, before anything of its batch is sent, and never counted as written.

The producer is the in-memory fake with a record limit: without the check it refuses such a record as the
embedded log does (``send_batch`` raises, ``send`` fails it at flush), which fails the task.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from connect.api import Schema, SourceRecord, SourceRecordBatch, Transformation
from connect.api.config import ConfigDef
from connect.log.api import RecordMetadata
from connect.runtime.connector_config import SourceConnectorConfig
from connect.runtime.dead_letter_queue import DeadLetterQueueReporter
from connect.runtime.error_handler import ErrorHandler, ErrorMetrics, Failure, Stage, ToleranceExceededError
from connect.runtime.source_task import RecordTooLargeError
from connect.runtime.transformation_chain import TransformationChain, TransformStage
from tests.runtime.fakes import (
    PARTITION,
    FakeClock,
    MemoryLog,
    MemoryProducer,
    ScriptedSourceTask,
    source_task,
)

LIMIT = 100
BIG = "b" * 150


class Refusing(ScriptedSourceTask):
    """A task told of refused records (``refuse_record``) and of finished batches (``commit_batch``)."""

    def __init__(self, script: Sequence[Any] = ()) -> None:
        super().__init__(script)
        self.refused: list[tuple[Any, int, str]] = []
        self.acked: list[Any] = []

    def refuse_record(self, polled: Sequence[SourceRecord], index: int, reason: str) -> None:
        self.refused.append((polled, index, reason))

    def commit_batch(self, batch: SourceRecordBatch) -> None:
        self.acked.append(batch)


class RecordAcking(ScriptedSourceTask):
    """Kafka Connect's kind of task: ``commit_record`` only."""

    def __init__(self, script: Sequence[Any] = ()) -> None:
        super().__init__(script)
        self.records: list[tuple[str, RecordMetadata | None]] = []

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        self.records.append((record.value, metadata))


class _Upper(Transformation):
    def configure(self, configs: Any) -> None:
        pass

    def apply(self, record: Any) -> Any:
        return record.new_record(value=record.value.upper())

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        pass

    def version(self) -> str:
        return "test"


def _batch(*values: str) -> SourceRecordBatch:
    return SourceRecordBatch("lines", list(values), value_schema=Schema.STRING_SCHEMA, source_partition=PARTITION,
                             source_offsets=[{"position": i + 1} for i in range(len(values))])


def _record(value: str, position: int) -> SourceRecord:
    return SourceRecord(PARTITION, {"position": position}, "lines", value_schema=Schema.STRING_SCHEMA, value=value)


def _started(task: ScriptedSourceTask, tolerance: str = "none") -> Any:
    wt = source_task(task, FakeClock())
    wt.producer.max_record_bytes = LIMIT
    parsed = SourceConnectorConfig({"name": "src", "connector.class": "test", "errors.tolerance": tolerance})
    wt.errors = ErrorHandler(parsed, "src", 0, threading.Event())
    wt.initialize_and_start()
    return wt


def test_the_bulk_path_refuses_the_oversized_record_alone_and_tells_the_task():
    batch = _batch("small-0", BIG, "small-2")
    plugin = Refusing([batch])
    wt = _started(plugin)
    wt.iteration()
    assert [(polled is batch, index) for polled, index, _ in plugin.refused] == [(True, 1)]
    reason = plugin.refused[0][2]
    assert "150 bytes" in reason and f"{LIMIT}-byte limit" in reason and "max.request.size" in reason, reason
    assert wt.producer.batch_callbacks == 1, "the rest still goes as one batch"
    assert plugin.acked == [], "the batch is done only once the log has its other records"
    assert wt.commit_offsets()
    assert plugin.acked == [batch]
    assert wt.producer.log.values("lines") == ["small-0", "small-2"]
    assert wt.records_sent == 2 and wt.records_polled == 3
    assert wt.errors.metrics.records_failed == 1 and wt.errors.metrics.records_skipped == 1
    assert wt.offset_store.get("src", PARTITION) == {"position": 3}, "the refused record is done with"


def test_a_batch_wholly_refused_sends_nothing_and_is_done_at_once():
    batch = _batch(BIG, BIG)
    plugin = Refusing([batch])
    wt = _started(plugin)
    wt.iteration()
    assert [index for _, index, _ in plugin.refused] == [0, 1] and plugin.acked == [batch]
    assert wt.producer.unacked() == [] and wt.records_sent == 0


def test_small_records_cost_one_limit_lookup_per_topic():
    plugin = Refusing([_batch("a", "b"), _batch("c")])
    wt = _started(plugin)
    wt.iteration()
    wt.iteration()
    assert wt.producer.limit_asked == ["lines"] and plugin.refused == []
    assert wt.producer.unacked() == ["a", "b", "c"]


def test_a_task_without_the_hook_fails_under_tolerance_none_before_sending_any_of_the_batch():
    wt = _started(ScriptedSourceTask([[_record("small", 1), _record(BIG, 2)]]))
    with pytest.raises(ToleranceExceededError) as failure:
        wt.iteration()
    assert isinstance(failure.value.__cause__, RecordTooLargeError)
    text = str(failure.value)
    assert "KAFKA_PRODUCE" in text and "Record 1 of a polled batch for topic lines" in text and "150 bytes" in text
    assert wt.producer.unacked() == [] and wt.records_sent == 0


def test_a_task_without_the_hook_skips_it_under_tolerance_all_and_commit_record_says_so():
    plugin = RecordAcking([[_record("small", 1), _record(BIG, 2), _record("after", 3)]])
    wt = _started(plugin, tolerance="all")
    wt.iteration()
    wt.commit_offsets()
    assert [(value, md.offset if md else None) for value, md in plugin.records] == [
        (BIG, None), ("small", 0), ("after", 1)]
    assert wt.producer.log.values("lines") == ["small", "after"]
    assert wt.records_sent == 2 and wt.errors.metrics.records_skipped == 1


def test_the_per_record_path_checks_the_transformed_record_and_names_the_polled_index():
    records = [_record("a" * 90, 1), _record("small", 2)]
    plugin = Refusing([records])
    wt = _started(plugin)
    wt.chain = TransformationChain([TransformStage("upper", _Upper())])
    wt.producer.max_record_bytes = 60
    wt.iteration()
    assert [(polled is records, index) for polled, index, _ in plugin.refused] == [(True, 0)]
    wt.commit_offsets()
    assert wt.producer.log.values("lines") == ["SMALL"] and wt.records_sent == 1


def test_keys_and_headers_count_towards_the_limit():
    batch = SourceRecordBatch("lines", ["v1", "v2"], value_schema=Schema.STRING_SCHEMA, keys=["k" * 95, "k"],
                              key_schema=Schema.STRING_SCHEMA,
                              header_columns=[("h", Schema.STRING_SCHEMA, ["x", "y" * 90])])
    plugin = Refusing([batch])
    wt = _started(plugin)
    wt.producer.max_record_bytes = 90
    wt.iteration()
    assert sorted(index for _, index, _ in plugin.refused) == [0, 1]
    assert plugin.acked == [batch] and wt.producer.unacked() == []


def test_a_source_dead_letter_record_is_cut_to_fit_the_dead_letter_topic():
    producer = MemoryProducer(MemoryLog())
    producer.max_record_bytes = 2000
    metrics = ErrorMetrics()
    dlq = DeadLetterQueueReporter(producer, "dlq", "src", 0, True, metrics)
    record = _record("\u0001" * 5000, 1)  # 30000 bytes of JSON text: each is \u0001 there
    failure = Failure(Stage.KAFKA_PRODUCE, "EmbeddedProducer", RecordTooLargeError("too large"), source_record=record)
    dlq.report_source(failure)
    dlq.flush(1.0)
    (stored,) = producer.log.values("dlq")
    assert stored is not None and len(stored.encode()) <= 2000 and '"truncated": true' in stored
