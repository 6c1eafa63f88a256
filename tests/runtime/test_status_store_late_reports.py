"""The distributed status store as every worker reads it: a report that arrives late (its worker was cut off from
the broker when it wrote it) must not hide the state of the task's new owner."""

from __future__ import annotations

import json

from connect.runtime.herder import ConnectorTaskId, State
from connect.runtime.storage.status_backing_store import KafkaStatusBackingStore
from tests.runtime.fakes import MemoryBackend


def _record(state: str, worker: str, generation: int, trace: str | None = None) -> bytes:
    return json.dumps({"state": state, "trace": trace, "worker_id": worker, "generation": generation}).encode()


def test_a_failed_report_of_an_older_generation_from_another_worker_does_not_hide_the_new_owners_running():
    store = KafkaStatusBackingStore(MemoryBackend(), "connect-status", "w3:8083")
    task = ConnectorTaskId("eos-in", 0)
    store._on_record(b"status-task-eos-in-0", _record("RUNNING", "w1:8083", 4), 0, 0)
    store._on_record(b"status-connector-eos-in", _record("RUNNING", "w1:8083", 4), 1, 0)
    # the cut worker's task failed its commit; before that report got through, the task moved to w2
    store._on_record(b"status-task-eos-in-0", _record("RUNNING", "w2:8083", 6), 0, 1)
    store._on_record(b"status-connector-eos-in", _record("RUNNING", "w2:8083", 6), 1, 1)
    store._on_record(b"status-task-eos-in-0", _record("FAILED", "w1:8083", 4, "commit timed out"), 0, 2)
    store._on_record(b"status-connector-eos-in", _record("UNASSIGNED", "w1:8083", 4), 1, 2)
    assert (store.task(task).state, store.task(task).worker_id) == (State.RUNNING, "w2:8083")
    assert (store.connector("eos-in").state, store.connector("eos-in").worker_id) == (State.RUNNING, "w2:8083")


def test_reports_of_the_same_worker_or_a_newer_generation_still_apply():
    store = KafkaStatusBackingStore(MemoryBackend(), "connect-status", "w3:8083")
    task = ConnectorTaskId("c", 0)
    store._on_record(b"status-task-c-0", _record("RUNNING", "w2:8083", 6), 0, 0)
    store._on_record(b"status-task-c-0", _record("FAILED", "w2:8083", 6, "boom"), 0, 1)  # its own task failed
    assert store.task(task).state is State.FAILED
    store._on_record(b"status-task-c-0", _record("UNASSIGNED", "w1:8083", 7), 0, 2)  # a newer generation
    assert store.task(task).state is State.UNASSIGNED
    store._on_record(b"status-task-c-0", _record("RUNNING", "w1:8083", 5), 0, 3)  # a start is always shown
    assert (store.task(task).state, store.task(task).worker_id) == (State.RUNNING, "w1:8083")
