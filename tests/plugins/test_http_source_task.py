"""HttpSourceTask on a real socket with no runtime polling it: the 503 answers under backpressure, and a
request answered 200 only once every record of it was acknowledged (commit_record)."""

from __future__ import annotations

import threading

import httpx

from connect.api import OffsetStorageReader, SourceTaskContext
from plugins.ingest.http import HttpSourceTask
from tests.support import free_port, wait_until


class _Offsets(OffsetStorageReader):
    def offset(self, partition):
        return None


class _Context(SourceTaskContext):
    """The task's context, faked: this test plays the runtime itself."""

    def __init__(self, configs):
        self._configs = configs

    def configs(self):
        return self._configs

    def offset_storage_reader(self):
        return _Offsets()


def _task(**props):
    port = free_port()
    config = {"name": "t", "topic": "logs", "listeners": f"http://127.0.0.1:{port}", **props}
    task = HttpSourceTask()
    task.initialize(_Context(config))
    task.start(config)
    return task, f"http://127.0.0.1:{port}/"


def test_backpressure_answers_503_with_retry_after():
    task, url = _task(**{"max.pending.events": "2", "http.ack.timeout.ms": "200", "http.retry.after.seconds": "3"})
    try:
        first = httpx.post(url, content='{"message": "a"}\n{"message": "b"}\n', timeout=5)  # queued, never polled
        assert first.status_code == 503 and first.headers["Retry-After"] == "3"
        assert "did not acknowledge within 0.2 s" in first.json()["error"]
        second = httpx.post(url, content='{"message": "c"}', timeout=5)
        assert second.status_code == 503 and "too many events waiting for the log" in second.json()["error"]
    finally:
        task.stop()
    assert "rejected_busy=1" in task.counters.text() and "unacknowledged_requests=1" in task.counters.text()


def test_200_only_after_every_record_is_acknowledged():
    task, url = _task()
    answers: list[httpx.Response] = []
    try:
        poster = threading.Thread(target=lambda: answers.append(
            httpx.post(url, content='{"message": "a"}\n{"message": "b"}\n', timeout=10)))
        poster.start()
        records = wait_until(task.poll, 10, what="the records polled")
        assert [r.value.get("message") for r in records] == ["a", "b"]
        task.commit_record(records[0], None)
        # the request still waits for the second record (no answer yet, one record unacknowledged)
        assert not answers and len(task._waiting) == 1
        task.commit_record(records[1], None)
        poster.join(10)
        assert answers[0].status_code == 200 and answers[0].json() == {"accepted": 2}
    finally:
        task.stop()
