"""HttpSourceTask on a real socket with no runtime polling it: the 503 answers under backpressure, and a
request answered 200 only once the batch holding its records was acknowledged (commit_batch)."""

from __future__ import annotations

import threading

import httpx
import pytest

from connect.api import SourceRecordBatch
from plugins.ingest.http import BadInput, HttpSourceTask, parse_events
from tests.plugins.task_contexts import SourceContext
from tests.support import free_port, wait_until


def _task(**props):
    port = free_port()
    config = {"name": "t", "topic": "logs", "listeners": f"http://127.0.0.1:{port}", **props}
    task = HttpSourceTask()
    task.initialize(SourceContext(config))
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
        batch = wait_until(task.poll, 10, what="the records polled")
        assert isinstance(batch, SourceRecordBatch) and batch.topic == "logs"
        assert [r.value.get("message") for r in batch] == ["a", "b"]
        # polled but not yet acknowledged: the request waits (no answer yet, the batch still due)
        poster.join(0.2)
        assert not answers and len(task._waiting) == 1
        task.commit_batch(batch)
        poster.join(10)
        assert answers[0].status_code == 200 and answers[0].json() == {"accepted": 2}
        assert not task._waiting
    finally:
        task.stop()


GOOD = b'{"message": "ok"}'


@pytest.mark.parametrize("body, error", [
    (GOOD + b"\n[1, 2]\n", "line 2: a log event must be a JSON object, got an array"),
    (GOOD + b"\n" + GOOD + b'\n"text"\n', "line 3: a log event must be a JSON object, got str"),
    (GOOD + b'\n{"message": "x"\n', "line 2: not JSON"),
    (b"", "line 1: the body is empty"),
    (b"  \n\n", "line 1: the body is empty"),
    (b"[]", "line 1: the array has no events"),
    (b'[{"message": "a"}, 7]', "element 1: a log event must be a JSON object, got int"),
    (b'[{"headers": 3, "body": "b"}]', "element 0: Flume 'headers' must be an object"),
    (b'{"message": "a", "labels": "flat"}', "line 1: field 'labels' must be an object"),
    (b'{"message": "' + b"x" * 3000 + b'"}', "line 1: the event is 3015 bytes, more than max.event.bytes=2048"),
    (b'[{"message": "' + b"x" * 3000 + b'"}]', "element 0: the event is 3014 bytes, more than max.event.bytes=2048"),
    (GOOD + b'\n{"message": "caf\xe9"}\n', "line 2: invalid UTF-8 at byte 16"),
    (b'[{"message": "caf\xe9"}]', "line 1: invalid UTF-8 at byte 17 of the body"),
])
def test_bad_bodies_are_refused_naming_the_line(body, error):
    with pytest.raises(BadInput) as caught:
        parse_events(body, 2048)
    assert str(caught.value).startswith(error), str(caught.value)


def test_body_shapes():
    assert [e.get("message") for e in parse_events(b'{\n  "message": "pretty"\n}\n', 2048)] == ["pretty"]
    flume = parse_events(b'[{"headers": {"host": "h", "timestamp": "0"}, "body": "b"}]', 2048)[0]
    assert flume.get("message") == "b" and flume.get("host").get("hostname") == "h"
    assert flume.get("@timestamp") == "1970-01-01T00:00:00.000000Z"
    assert len(parse_events(b"\n".join([GOOD] * 1000), 2048)) == 1000


def test_requests_queued_together_share_one_batch_and_one_acknowledgement():
    task, url = _task()
    answers: list[httpx.Response] = []
    try:
        posters = [threading.Thread(target=lambda body=body: answers.append(httpx.post(url, content=body, timeout=10)))
                   for body in ('{"message": "a"}\n', '{"message": "b"}\n{"message": "c"}\n')]
        for poster in posters:
            poster.start()
        wait_until(lambda: task._queued == 3, 10, what="both requests queued")
        batch = task.poll()
        assert isinstance(batch, SourceRecordBatch) and sorted(r.value.get("message") for r in batch) == ["a", "b", "c"]
        assert len(task._waiting) == 1 and not answers
        task.commit_batch(batch)
        for poster in posters:
            poster.join(10)
        assert sorted(a.json()["accepted"] for a in answers) == [1, 2]
    finally:
        task.stop()


def test_stopping_fails_the_requests_of_a_batch_the_log_has_not_acknowledged():
    task, url = _task()
    answers: list[httpx.Response] = []
    poster = threading.Thread(target=lambda: answers.append(httpx.post(url, content=b'{"message": "a"}', timeout=10)))
    poster.start()
    batch = wait_until(task.poll, 10, what="the request polled")
    task.stop()
    poster.join(10)
    assert answers[0].status_code == 503 and "the source is stopping" in answers[0].json()["error"]
    task.commit_batch(batch)  # an acknowledgement after the stop changes nothing
    assert not task._waiting


def test_a_ticket_with_records_needs_per_record_acknowledgement():
    from plugins.ingest._common import Ticket
    from plugins.ingest.tcp_json import TcpJsonSourceTask

    with pytest.raises(TypeError, match="AcknowledgesRecords"):
        TcpJsonSourceTask().offer([], Ticket(0))
