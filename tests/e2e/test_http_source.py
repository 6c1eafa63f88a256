"""HttpSource in a real connect-standalone: every body shape, the answers, bad input, auth, backpressure."""

from __future__ import annotations

import base64
import gzip
import json
import socket

import httpx
import pytest

from tests.logship import SourceWorker, count_values, read_values
from tests.support import rest_ready, wait_until

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def worker(tmp_path):
    w = SourceWorker(tmp_path).start()
    yield w
    w.stop()


def test_bodies_of_every_shape_arrive_as_log_events(worker, tmp_path):
    with httpx.Client(timeout=10) as client:
        one = {"@timestamp": "2026-01-02T03:04:05.000Z", "log.level": "ERROR", "log.logger": "org.Shop",
               "process.thread.name": "main", "message": "one", "error.type": "java.lang.IllegalStateException",
               "error.message": "bad", "error.stack_trace": "java.lang.IllegalStateException: bad\n\tat Shop.x",
               "ecs.version": "1.2.0", "user": "ada"}
        r = client.post(worker.url, content=json.dumps(one, indent=2))  # one object over several lines
        assert r.status_code == 200 and r.json() == {"accepted": 1}
        ndjson = "".join(json.dumps({"message": f"nd-{i}", "log": {"level": "INFO"}}) + "\n" for i in range(3))
        assert client.post(worker.url, content="\n" + ndjson + "\n").json() == {"accepted": 3}
        flume = [{"headers": {"host": "h1", "timestamp": "1700000000000", "app": "x"}, "body": "flume-body"}]
        assert client.post(worker.url, json=flume).json() == {"accepted": 1}
        gelf = {"version": "1.1", "host": "g1", "short_message": "gelf", "timestamp": 1700000000.25, "level": 4,
                "_logger": "L", "_thread": "T", "_extra": 5}
        zipped = gzip.compress(json.dumps([gelf]).encode())
        r = client.post(worker.url, content=zipped, headers={"Content-Encoding": "gzip"})
        assert r.json() == {"accepted": 1}
    events = read_values(tmp_path)  # a 200 means the log already has them: no waiting
    assert [e["message"] for e in events] == ["one", "nd-0", "nd-1", "nd-2", "flume-body", "gelf"]
    first = events[0]
    assert first["@timestamp"] == "2026-01-02T03:04:05.000Z"
    assert first["log"]["level"] == "ERROR" and first["log"]["logger"] == "org.Shop"
    assert first["process"]["thread"]["name"] == "main"
    assert first["error"] == {"type": "java.lang.IllegalStateException", "message": "bad",
                              "stack_trace": "java.lang.IllegalStateException: bad\n\tat Shop.x"}
    assert first["labels"] == {"user": "ada"}
    assert events[4]["host"]["hostname"] == "h1" and events[4]["labels"] == {"app": "x"}
    assert events[4]["@timestamp"].startswith("2023-11-14T22:13:20")
    gelf_event = events[5]
    assert gelf_event["log"] == {"level": "WARN", "logger": "L", "origin": None, "syslog": None, "file": None}
    assert gelf_event["process"]["thread"]["name"] == "T" and gelf_event["labels"] == {"extra": "5"}
    assert "HttpSource[logs-in|task-0] listening on" in worker.log()


@pytest.mark.slow  # the fast suite's time budget: tests/plugins/test_http_source_task.py has the fast checks
def test_bad_input_is_refused_naming_the_line_and_nothing_of_it_is_written(tmp_path):
    worker = SourceWorker(tmp_path, max_event_bytes=2048, max_request_bytes=65536).start()
    good = json.dumps({"message": "ok"})
    with httpx.Client(timeout=10) as client:
        cases = {
            f"{good}\n[1, 2]\n": "line 2: a log event must be a JSON object, got an array",
            f"{good}\n{good}\n\"text\"\n": "line 3: a log event must be a JSON object, got str",
            f"{good}\n{{\"message\": \"x\"\n": "line 2: not JSON",
            "": "line 1: the body is empty",
            "[]": "the array has no events",
            '[{"message": "a"}, 7]': "element 1: a log event must be a JSON object, got int",
            '{"message": "a", "labels": "flat"}': "line 1: field 'labels' must be an object",
            json.dumps({"message": "x" * 3000}): "line 1: the event is 3015 bytes, more than max.event.bytes=2048",
        }
        for body, error in cases.items():
            r = client.post(worker.url, content=body)
            assert r.status_code == 400, (body, r.text)
            assert error in r.json()["error"], (body, r.json())
        r = client.post(worker.url, content=good.encode() + b'\n{"message": "caf\xe9"}\n')
        assert r.status_code == 400 and r.json()["error"] == "line 2: invalid UTF-8 at byte 16"
        r = client.post(worker.url, content=b"x" * 70_000)
        assert r.status_code == 413 and "max.request.bytes=65536" in r.json()["error"]
        bomb = gzip.compress(b" " * 200_000)
        r = client.post(worker.url, content=bomb, headers={"Content-Encoding": "gzip"})
        assert r.status_code == 413, r.text
        assert client.get(worker.url).status_code == 405
        assert client.post(worker.url, content=good).status_code == 200
    assert [e["message"] for e in read_values(tmp_path)] == ["ok"]
    log = worker.stop()
    assert "refused a request from 127.0.0.1: line 2: a log event must be a JSON object" in log
    assert "rejected_oversized_events=1" in log and "rejected_too_large=2" in log and "rejected_requests=9" in log


@pytest.mark.slow  # the fast suite's time budget: tests/plugins/test_http_source_task.py has the fast checks
def test_basic_auth_and_idle_or_silent_connections_that_neither_block_nor_leak(tmp_path):
    worker = SourceWorker(tmp_path, http_idle_timeout_ms=500, http_threads=4, http_basic_auth_user="shipper",
                          http_basic_auth_password="s3cret").start()
    try:
        body = '{"message": "authorized"}'
        assert httpx.post(worker.url, content=body).status_code == 401
        assert httpx.post(worker.url, content=body, auth=("shipper", "wrong")).status_code == 401
        bad = {"Authorization": "Basic " + base64.b64encode(b"no-colon").decode()}
        assert httpx.post(worker.url, content=body, headers=bad).status_code == 401
        assert httpx.post(worker.url, content=body, auth=("shipper", "s3cret")).status_code == 200
        idle = [socket.create_connection(("127.0.0.1", worker.port)) for _ in range(1000)]
        half = socket.create_connection(("127.0.0.1", worker.port))
        half.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"mess")  # and then nothing
        r = httpx.post(worker.url, content='{"message": "through"}', timeout=5, auth=("shipper", "s3cret"))
        assert r.status_code == 200
        # the server closes a connection that stays silent past http.idle.timeout.ms
        assert _closed_by_server(half) and _closed_by_server(idle[0])
        for s in idle:
            s.close()
        half.close()
    finally:
        worker.stop()
    assert [e["message"] for e in read_values(tmp_path)] == ["authorized", "through"]


def _closed_by_server(sock: socket.socket) -> bool:
    """Reads until the server closes (an error response before that is allowed); False after 10 s."""
    sock.settimeout(10)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


@pytest.mark.slow  # the REST API's start-up; tests/plugins/test_http_source_task.py checks the 503s in the fast suite
def test_paused_task_answers_503_with_retry_after_then_takes_the_events(tmp_path):
    worker = SourceWorker(tmp_path, rest=True, max_pending_events=1, http_ack_timeout_ms=300,
                          http_retry_after_seconds=2).start()
    rest = f"http://127.0.0.1:{worker.rest_port}"
    try:
        assert worker.rest_port is not None
        wait_until(lambda: rest_ready(worker.rest_port), 30, what="REST")
        assert httpx.put(f"{rest}/connectors/logs-in/pause").status_code == 202
        wait_until(lambda: httpx.get(f"{rest}/connectors/logs-in/status").json()["tasks"][0]["state"] == "PAUSED",
                   30, what="paused")
        first = httpx.post(worker.url, content='{"message": "waits"}', timeout=10)
        assert first.status_code == 503 and first.headers["Retry-After"] == "2"
        assert "did not acknowledge" in first.json()["error"]
        second = httpx.post(worker.url, content='{"message": "refused"}', timeout=10)
        assert second.status_code == 503 and "too many events waiting" in second.json()["error"]
        assert httpx.put(f"{rest}/connectors/logs-in/resume").status_code == 202
        # the first request's event was queued: it reaches the log once the task runs again
        wait_until(lambda: count_values(tmp_path) == 1, 30, what="the queued event")
        assert httpx.post(worker.url, content='{"message": "after"}', timeout=10).status_code == 200
    finally:
        worker.stop()
    assert [e["message"] for e in read_values(tmp_path)] == ["waits", "after"]


@pytest.mark.slow  # the fast suite's time budget; tests/plugins/test_ingest_configs.py checks the validation
def test_invalid_configs_are_refused_before_anything_runs(tmp_path):
    # one case through the CLI; tests/plugins/test_ingest_configs.py has the rest
    for props, error in [({"listeners": "http://example.com:80"}, "must be an IP address or localhost")]:
        w = SourceWorker(tmp_path, **{k.replace(".", "_"): v for k, v in props.items()})
        w.start(ready=False)
        assert w.proc is not None
        wait_until(lambda w=w: not w.proc.alive(), 60, what="the worker to refuse the config")
        assert w.proc.proc is not None and w.proc.proc.returncode != 0
        assert error in w.log(), w.log()
