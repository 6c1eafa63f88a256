"""The source task's one send route (issue #39 item 7): records that go as columns are converted a column at a
time; when one column's bulk conversion fails, that column is converted record by record (where the error
handling sees each record) and the columns already converted are not converted again."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from connect.api import Header, Schema, SourceRecord, SourceRecordBatch
from connect.api.errors import DataException
from connect.runtime.connector_config import SourceConnectorConfig
from connect.runtime.error_handler import ErrorHandler
from connect.runtime.worker_task import TaskConverters
from plugins.converters.string import StringConverter
from tests.runtime.fakes import PARTITION, FakeClock, ScriptedSourceTask, source_task

OS = Schema.OPTIONAL_STRING_SCHEMA


class _Counting(StringConverter):
    """Counts every value it converts; refuses bulk conversion when ``bulk_fails``, and the value ``bad``."""

    def __init__(self, bulk_fails: bool = False) -> None:
        super().__init__()
        self.bulk_fails = bulk_fails
        self.converted: Counter[Any] = Counter()

    def from_connect_data(self, topic: str, schema: Any, value: Any, headers: Any = None) -> bytes | None:
        self.converted[value] += 1
        if value == "bad":
            raise DataException("bad value")
        return super().from_connect_data(topic, schema, value, headers)

    def from_connect_batch(self, topic: str, schema: Any, values: Sequence[Any]) -> list[bytes | None]:
        if self.bulk_fails:
            raise DataException("not in bulk")
        return [self.from_connect_data(topic, schema, v) for v in values]


class _CountingHeaders(StringConverter):
    def __init__(self) -> None:
        super().__init__()
        self.converted: Counter[Any] = Counter()

    def from_connect_header(self, topic: str, header_key: str, schema: Any, value: Any) -> bytes | None:
        self.converted[(header_key, value)] += 1
        if value == "bad":
            raise DataException("bad header")
        return super().from_connect_header(topic, header_key, schema, value)


def _run(polled: Sequence[SourceRecord], value_bulk_fails: bool, tolerance: str = "none") -> tuple[Any, ...]:
    wt = source_task(ScriptedSourceTask([polled]), FakeClock())
    parsed = SourceConnectorConfig({"name": "src", "connector.class": "test", "errors.tolerance": tolerance})
    wt.errors = ErrorHandler(parsed, "src", 0, threading.Event())
    key, value, header = _Counting(), _Counting(bulk_fails=value_bulk_fails), _CountingHeaders()
    key.configure({}, True)
    value.configure({}, False)
    header.configure({})
    wt.converters = TaskConverters(key, value, header)
    wt.initialize_and_start()
    written: list[tuple[Any, ...]] = []

    def send(topic, value, key=None, partition=None, timestamp=None, headers=None, on_delivery=None):
        written.append((key, value, tuple(headers or ())))

    def send_batch(topic, partition, values, keys=None, timestamps=None, headers=None, on_delivery=None):
        for i, v in enumerate(values):
            written.append((keys[i] if keys else None, v, tuple(headers[i]) if headers else ()))

    wt.producer.send, wt.producer.send_batch = send, send_batch
    wt.iteration()
    return wt, key, value, header, written


def _batch(values: list[str]) -> SourceRecordBatch:
    ids = [f"k{i}" for i in range(len(values))]
    return SourceRecordBatch("t", values, value_schema=OS, source_partition=PARTITION,
                             source_offsets=[{"i": i} for i in range(len(values))], keys=ids, key_schema=OS,
                             headers=[Header("shared", OS, "s")], header_columns=[("id", OS, ids)])


def test_a_failed_bulk_value_conversion_keeps_the_keys_and_headers_already_converted():
    wt, key, value, header, written = _run(_batch(["a", "b", "c"]), value_bulk_fails=True)
    assert written == [(f"k{i}".encode(), v.encode(), (("shared", b"s"), ("id", f"k{i}".encode())))
                       for i, v in enumerate("abc")]
    assert key.converted == {"k0": 1, "k1": 1, "k2": 1}  # converted in bulk, not again one by one
    assert header.converted == {("shared", "s"): 1, ("id", "k0"): 1, ("id", "k1"): 1, ("id", "k2"): 1}
    assert value.converted == {"a": 1, "b": 1, "c": 1}  # one by one, once each
    assert wt.records_sent == 3
    assert [offset for _, offset in wt._pending.values()] == [{"i": 2}]


def test_a_uniform_list_whose_bulk_conversion_fails_is_converted_once_per_record():
    records = [SourceRecord(PARTITION, {"i": i}, "t", value_schema=OS, value=v) for i, v in enumerate(["x", "y"])]
    wt, key, value, header, written = _run(records, value_bulk_fails=True)
    assert written == [(None, b"x", ()), (None, b"y", ())]
    assert value.converted == {"x": 1, "y": 1}
    assert key.converted == {None: 1}  # every key None: converted once for the whole list
    assert wt.records_sent == 2 and [offset for _, offset in wt._pending.values()] == [{"i": 1}]


def test_a_bad_value_is_skipped_alone_under_tolerance_all_and_the_others_convert_once():
    wt, key, value, header, written = _run(_batch(["a", "bad", "c"]), value_bulk_fails=False, tolerance="all")
    assert [v for _, v, _ in written] == [b"a", b"c"]
    assert [k for k, _, _ in written] == [b"k0", b"k2"]
    assert key.converted == {"k0": 1, "k1": 1, "k2": 1}
    assert header.converted == {("shared", "s"): 1, ("id", "k0"): 1, ("id", "k1"): 1, ("id", "k2"): 1}
    # the bulk pass stopped at "bad"; then one by one: only values fail, so only values are converted again
    assert value.converted == {"a": 2, "bad": 2, "c": 1}
    assert wt.errors.metrics.records_skipped == 1 and wt.records_sent == 2
    assert [offset for _, offset in wt._pending.values()] == [{"i": 2}]


def test_a_bad_header_fails_its_record_alone_and_the_keys_and_values_convert_once():
    batch = SourceRecordBatch("t", ["a", "b"], value_schema=OS, source_partition=PARTITION,
                              source_offsets=[{"i": 0}, {"i": 1}], keys=["k0", "k1"], key_schema=OS,
                              header_columns=[("id", OS, ["ok", "bad"])])
    wt, key, value, header, written = _run(batch, value_bulk_fails=False, tolerance="all")
    assert written == [(b"k0", b"a", (("id", b"ok"),))]
    assert key.converted == {"k0": 1, "k1": 1} and value.converted == {"a": 1, "b": 1}
    assert wt.errors.metrics.records_skipped == 1 and wt.records_sent == 1
    assert [offset for _, offset in wt._pending.values()] == [{"i": 1}]
