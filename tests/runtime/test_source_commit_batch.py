"""SourceTask.commit_batch: called exactly once per polled SourceRecordBatch, once its every record is in the log
or done with, on each of the runtime's paths (bulk, record by record with transforms, tolerated failures,
with commit_record too, exactly once); never for lists, never for a batch the log did not take."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from connect.api import DataException, Schema, SourceRecord, SourceRecordBatch, Transformation
from connect.api.config import ConfigDef
from connect.api.errors import ConnectException
from connect.log.api import LogError, RecordMetadata
from connect.runtime.connector_config import SourceConnectorConfig
from connect.runtime.error_handler import ErrorHandler
from connect.runtime.source_task import wants_acknowledgements
from connect.runtime.transformation_chain import TransformationChain, TransformStage
from tests.runtime.fakes import PARTITION, FakeClock, ScriptedSourceTask, source_task
from tests.runtime.test_exactly_once_source_task import _task as exactly_once_task
from tests.runtime.test_exactly_once_source_task import _visible


def _batch(start: int, count: int) -> SourceRecordBatch:
    return SourceRecordBatch("lines", [f"line-{i}" for i in range(start, start + count)],
                             value_schema=Schema.STRING_SCHEMA, source_partition=PARTITION,
                             source_offsets=[{"position": i + 1} for i in range(start, start + count)])


class BatchAcking(ScriptedSourceTask):
    def __init__(self, script: Sequence[Any] = ()) -> None:
        super().__init__(script)
        self.acked: list[Any] = []

    def commit_batch(self, batch: SourceRecordBatch) -> None:
        self.acked.append(batch)


class BothHooks(BatchAcking):
    def __init__(self, script: Sequence[Any] = ()) -> None:
        super().__init__(script)
        self.records: list[tuple[str, RecordMetadata | None]] = []

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        self.records.append((record.value, metadata))


class _DropOdd(Transformation):
    """Drops odd lines, fails on ``line-4``, passes the rest."""

    def configure(self, configs: Any) -> None:
        pass

    def apply(self, record: Any) -> Any:
        number = int(record.value.rsplit("-", 1)[1])
        if number == 4:
            raise DataException("line-4 is bad")
        return None if number % 2 else record

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        pass

    def version(self) -> str:
        return "test"


def _with_transform(wt: Any) -> Any:
    parsed = SourceConnectorConfig({"name": "src", "connector.class": "test", "errors.tolerance": "all"})
    wt.chain = TransformationChain([TransformStage("drop", _DropOdd())])
    wt.errors = ErrorHandler(parsed, "src", 0, threading.Event())
    return wt


def _started(task: ScriptedSourceTask) -> Any:
    wt = source_task(task, FakeClock())
    wt.initialize_and_start()
    return wt


def test_the_bulk_path_sends_one_batch_and_acknowledges_it_once_the_log_has_it():
    batch = _batch(0, 3)
    plugin = BatchAcking([batch])
    wt = _started(plugin)
    wt.iteration()
    assert wt.producer.unacked() == ["line-0", "line-1", "line-2"]
    assert wt.producer.batch_callbacks == 1 and plugin.acked == [], "not before the log acknowledged it"
    assert wt.commit_offsets()
    assert plugin.acked == [batch] and plugin.acked[0] is batch
    wt.commit_offsets()
    assert len(plugin.acked) == 1


def test_drops_and_tolerated_failures_count_towards_the_batch_on_the_per_record_path():
    batch = _batch(0, 6)  # 0, 2 sent; 1, 3, 5 dropped; 4 fails and is skipped
    plugin = BatchAcking([batch])
    wt = _with_transform(_started(plugin))
    wt.iteration()
    assert wt.producer.unacked() == ["line-0", "line-2"] and plugin.acked == []
    wt.commit_offsets()
    assert plugin.acked == [batch]
    assert wt.records_dropped == 3 and wt.errors.metrics.records_skipped == 1


def test_a_batch_wholly_dropped_is_acknowledged_at_once():
    batch = SourceRecordBatch("lines", ["line-1", "line-3"], value_schema=Schema.STRING_SCHEMA)
    plugin = BatchAcking([batch])
    wt = _with_transform(_started(plugin))
    wt.iteration()
    assert plugin.acked == [batch] and wt.producer.unacked() == []


def test_commit_record_still_runs_per_record_beside_commit_batch():
    batch = _batch(0, 2)
    plugin = BothHooks([batch])
    wt = _started(plugin)
    wt.iteration()
    assert wt.producer.batch_callbacks == 0, "commit_record needs each record's own callback"
    wt.commit_offsets()
    assert [(value, md.offset if md else None) for value, md in plugin.records] == [("line-0", 0), ("line-1", 1)]
    assert plugin.acked == [batch]


def test_lists_are_never_batch_acknowledged():
    plugin = BatchAcking([[SourceRecord(None, None, "lines", value_schema=Schema.STRING_SCHEMA, value="x")]])
    wt = _started(plugin)
    wt.iteration()
    wt.commit_offsets()
    assert plugin.acked == [] and wt.producer.log.values("lines") == ["x"]


def test_a_batch_the_log_failed_is_not_acknowledged_and_the_task_fails():
    plugin = BatchAcking([_batch(0, 2)])
    wt = _started(plugin)
    wt.iteration()
    wt.producer.fail_flush = LogError("disk full")
    with pytest.raises(ConnectException, match="disk full"):
        wt.commit_offsets()
    assert plugin.acked == []


def test_a_failing_delivery_reaches_the_task_not_the_hook():
    plugin = BatchAcking([_batch(0, 2)])
    wt = _started(plugin)
    original = wt.producer.send

    def send_failing(topic, value, key=None, partition=None, timestamp=None, headers=None, on_delivery=None):
        original(topic, value, key, partition, timestamp, headers,
                 (lambda err, md: on_delivery(LogError("broker gone"), None)) if on_delivery else None)

    wt.producer.send = send_failing
    wt.iteration()
    wt.producer.flush()
    assert plugin.acked == []
    with pytest.raises(ConnectException, match="broker gone"):
        wt.iteration()


def test_exactly_once_tasks_acknowledge_batches_too():
    batch = _batch(0, 3)
    plugin = BatchAcking([batch])
    wt = exactly_once_task(plugin, **{"transaction.boundary": "poll"})
    wt.iteration()
    assert _visible(wt) == ["line-0", "line-1", "line-2"]
    assert plugin.acked == [batch]


def test_a_task_with_either_hook_wants_delivery_reports():
    assert wants_acknowledgements(BatchAcking()) and wants_acknowledgements(BothHooks())
    assert not wants_acknowledgements(ScriptedSourceTask())
