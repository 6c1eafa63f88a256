"""A SourceRecordBatch with keys, per-record timestamps and headers (shared and per-record columns) goes out in
one ``send_batch`` with exactly the keys, timestamps and headers the record-by-record path writes for it."""

from __future__ import annotations

from typing import Any

from connect.api import Header, Schema, SourceRecordBatch
from tests.runtime.fakes import PARTITION, FakeClock, ScriptedSourceTask, source_task

OS = Schema.OPTIONAL_STRING_SCHEMA


def _batch() -> SourceRecordBatch:
    ids = ["1-0", "1-1", "2-0"]
    return SourceRecordBatch("events", ["a", "b", "c"], value_schema=OS, source_partition=PARTITION,
                             source_offsets=[{"id": i} for i in ids], keys=ids, key_schema=Schema.STRING_SCHEMA,
                             timestamps=[1, 1, 2], headers=[Header("redis.stream", OS, "events")],
                             header_columns=[("redis.stream.id", OS, ids), ("n", Schema.INT32_SCHEMA, [1, 2, 3])])


def _written(script: list[Any]) -> tuple[list[tuple[Any, ...]], int, Any]:
    """(topic, key, value, timestamp, headers) of every record the runtime sent, the ``send_batch`` calls, the
    task's committed offsets."""
    wt = source_task(ScriptedSourceTask(script), FakeClock())
    wt.initialize_and_start()
    written: list[tuple[Any, ...]] = []
    batches = 0
    producer = wt.producer

    def send(topic, value, key=None, partition=None, timestamp=None, headers=None, on_delivery=None):
        written.append((topic, key, value, timestamp, tuple(headers or ())))

    def send_batch(topic, partition, values, keys=None, timestamps=None, headers=None, on_delivery=None):
        nonlocal batches
        batches += 1
        for i, value in enumerate(values):
            written.append((topic, keys[i] if keys else None, value, timestamps[i] if timestamps else None,
                            tuple(headers[i]) if headers else ()))

    producer.send, producer.send_batch = send, send_batch
    wt.iteration()
    return written, batches, wt._pending


def test_keys_timestamps_and_headers_go_out_in_bulk_as_the_per_record_path_writes_them():
    bulk, calls, pending = _written([_batch()])
    one_by_one, one_by_one_calls, _ = _written([list(_batch())])
    assert calls == 1 and one_by_one_calls == 0  # the list path sends each keyed record on its own
    assert bulk == one_by_one
    assert bulk[0] == ("events", b"1-0", b"a", 1, (("redis.stream", b"events"), ("redis.stream.id", b"1-0"),
                                                  ("n", b"1")))
    assert [r[3] for r in bulk] == [1, 1, 2]
    assert [offset for _, offset in pending.values()] == [{"id": "2-0"}]


def test_shared_headers_alone_and_no_headers_at_all():
    shared = SourceRecordBatch("t", ["x", "y"], value_schema=OS, keys=["k1", None], key_schema=OS,
                               headers=[Header("h", OS, "v")])
    plain = SourceRecordBatch("t", ["z"], value_schema=OS, timestamp=5)
    written, calls, _ = _written([shared, plain])
    assert calls == 1
    written2, calls2, _ = _written([plain])
    assert calls2 == 1 and written2 == [("t", None, b"z", 5, ())]
    assert written == [("t", b"k1", b"x", None, (("h", b"v"),)), ("t", None, b"y", None, (("h", b"v"),))]
