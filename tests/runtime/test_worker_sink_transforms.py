"""WorkerSinkTask with a transform chain: whole batches through built-in transforms, a bad record handled alone."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from connect.api import SinkRecordBatch, SinkTask
from connect.api.errors import ConnectException
from connect.runtime.transformation_chain import TransformationChain, TransformStage
from connect.runtime.worker_task import TaskConverters
from plugins.converters.json import JsonConverter
from plugins.converters.string import StringConverter
from plugins.transforms import InsertField, MaskField, ReplaceField, TimestampRouter
from tests.runtime.fakes import FakeClock, MemoryBackend, sink_task

T0 = 1_763_856_000_000  # 2025-11-23T00:00:00Z


class _KeepingSink(SinkTask):
    """Keeps every record put, and whether each put was handed a SinkRecordBatch."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str, int, Any]] = []
        self.batches: list[bool] = []

    def version(self) -> str:
        return "test"

    def start(self, props: Any) -> None:
        pass

    def put(self, records: Sequence[Any]) -> None:
        self.batches.append(isinstance(records, SinkRecordBatch))
        self.records += [(r.topic, r.original_topic, r.kafka_offset, r.value) for r in records]

    def stop(self) -> None:
        pass


def _chain() -> TransformationChain:
    insert, drop, route = InsertField.Value(), ReplaceField.Value(), TimestampRouter()
    insert.configure({"static.field": "src", "static.value": "bench"})
    drop.configure({"exclude": "secret"})
    route.configure({"topic.format": "${topic}-${timestamp}", "timestamp.format": "yyyyMMdd"})
    return TransformationChain([TransformStage("insert", insert), TransformStage("drop", drop),
                                TransformStage("route", route)])


def _started(values: list[Any], **connector_config: Any) -> tuple[Any, _KeepingSink]:
    clock = FakeClock()
    backend = MemoryBackend(clock)
    backend.log.append("lines", 0, [(None, json.dumps(v).encode(), T0 + i) for i, v in enumerate(values)])
    task = _KeepingSink()
    wt = sink_task(task, clock, backend, connector_config=connector_config)
    key, value, header = StringConverter(), JsonConverter(), StringConverter()
    key.configure({}, True)
    value.configure({"schemas.enable": "false"}, False)
    header.configure({})
    wt.converters = TaskConverters(key, value, header)
    wt.chain = _chain()
    wt.initialize_and_start()
    return wt, task


def test_a_chain_of_builtin_transforms_hands_put_columns_with_the_transformed_values():
    wt, task = _started([{"id": i, "secret": "s"} for i in range(5)])
    wt.iteration()
    assert task.batches == [True]
    assert task.records == [("lines-20251123", "lines", i, {"id": i, "src": "bench"}) for i in range(5)]
    assert wt.records_put == 5 and wt.errors.metrics.records_failed == 0


def test_a_record_failing_a_transform_mid_batch_goes_alone_to_the_error_handler():
    values: list[Any] = [{"id": 0}, {"id": 1}, "not a map", {"id": 3}, {"id": 4}]
    wt, task = _started(values, **{"errors.tolerance": "all"})
    wt.iteration()
    assert [(offset, value) for _, _, offset, value in task.records] == \
        [(i, {"id": i, "src": "bench"}) for i in (0, 1, 3, 4)]
    metrics = wt.errors.metrics
    assert metrics.records_failed == metrics.records_skipped == 1
    assert wt.records_put == 4 and wt.records_dropped == 0


def test_without_tolerance_the_task_fails_at_the_bad_record_and_puts_nothing_of_the_batch():
    wt, task = _started([{"id": 0}, {"id": 1}, "not a map", {"id": 3}])
    with pytest.raises(ConnectException, match="topic=lines partition=0 offset=2") as info:
        wt.iteration()
    assert "TRANSFORMATION" in str(info.value) and "InsertField.Value" in str(info.value)
    assert task.records == [] and wt.errors.metrics.records_failed == 1


def _realistic_chain() -> TransformationChain:
    """Issue #37's sink chain: a static field, a masked field (with a replacement, so a bool cannot be masked),
    renames."""
    insert, mask, rename = InsertField.Value(), MaskField.Value(), ReplaceField.Value()
    insert.configure({"static.field": "source", "static.value": "headrace"})
    mask.configure({"fields": "user", "replacement": "***"})
    rename.configure({"renames": "id:payment_id,country:cc"})
    return TransformationChain([TransformStage("insert", insert), TransformStage("mask", mask),
                                TransformStage("rename", rename)])


def _payment(i: int) -> dict[str, Any]:
    return {"id": i, "user": f"u{i}", "amount": i / 4, "country": "DE", "ts": T0 + i, "ok": i % 2 == 0}


def _masked(i: int) -> dict[str, Any]:
    return {"payment_id": i, "user": "***", "amount": i / 4, "cc": "DE", "ts": T0 + i, "ok": i % 2 == 0,
            "source": "headrace"}


def test_the_realistic_chain_skips_only_the_record_it_cannot_mask_and_puts_the_rest_as_columns():
    values: list[Any] = [_payment(0), _payment(1), {**_payment(2), "user": True}, None, _payment(4)]
    wt, task = _started(values, **{"errors.tolerance": "all"})
    wt.chain = _realistic_chain()
    wt.iteration()
    assert [(offset, value) for _, _, offset, value in task.records] == \
        [(0, _masked(0)), (1, _masked(1)), (3, None), (4, _masked(4))]
    metrics = wt.errors.metrics
    assert metrics.records_failed == metrics.records_skipped == 1
    assert wt.records_put == 4 and wt.records_dropped == 0


def test_a_batch_without_a_bad_record_goes_through_the_realistic_chain_whole_as_columns():
    wt, task = _started([_payment(i) for i in range(6)])
    wt.chain = _realistic_chain()
    wt.iteration()
    assert task.batches == [True]  # put was handed a SinkRecordBatch: no record made on the way
    assert [value for _, _, _, value in task.records] == [_masked(i) for i in range(6)]


def test_without_tolerance_the_realistic_chain_fails_the_task_naming_the_record_and_the_mask():
    wt, task = _started([_payment(0), {**_payment(1), "user": False}, _payment(2)])
    wt.chain = _realistic_chain()
    with pytest.raises(ConnectException, match="topic=lines partition=0 offset=1") as info:
        wt.iteration()
    assert "TRANSFORMATION" in str(info.value) and "MaskField.Value" in str(info.value)
    assert task.records == []
