"""Issue #35 item 3: an event under ``max.event.bytes`` whose converted record is over the log's record limit.

Each test runs the shipped worker config (JsonConverter with schemas, the embedded log and its 1 MiB record limit)
and one source, and sends a normal event, then one that converts to more than the log takes (emoji, which
JsonConverter writes as 12-byte ``\\uXXXX`` pairs, or a body that becomes base64), then a normal one. The
oversized event must be refused alone: the sender told so where the protocol can tell it, the task still
RUNNING, the topic holding exactly the normal events, and the task's counts saying what happened.
"""

from __future__ import annotations

import base64
import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from connect.log import open_log_reader
from connect.runtime.properties import load_config_file
from tests.edge.harness import CONFIGS, EdgeWorker, answered_within, connector_file
from tests.flume_support import AvroClient
from tests.support import free_port, wait_until, write_properties

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# A worker and one source settle far below this; a refused record kept somewhere (a queue, a ticket, a retry
# loop) would not, at about 3 MB of converted record per refusal.
RSS_BOUND = 600 * 1024 * 1024
EMOJI = "\U0001F600"  # 4 bytes in UTF-8, 12 bytes as JsonConverter writes it ("\ud83d\ude00")
BIG_TEXT = EMOJI * 200_000  # 800 KB of UTF-8: under max.event.bytes=1 MiB, 2.4 MB once converted
RECORD_LIMIT = 1048576  # the producer's max.request.size default, below the topic's max.message.bytes


def big_event() -> bytes:
    """One log event of BIG_TEXT as a sender writes it: raw UTF-8, 800 KB."""
    return json.dumps({"message": BIG_TEXT}, ensure_ascii=False).encode()


def connector_config(tmp: Path, shipped: str, changes: dict[str, Any]) -> Path:
    """``connector_file`` for changes that include the connector's ``name``."""
    props = load_config_file(CONFIGS / shipped)
    props.update({k: str(v) for k, v in changes.items()})
    return write_properties(tmp / f"{props['name']}.properties", props)


def topic_values(tmp: Path, topic: str) -> list[dict[str, Any]]:
    """The JSON payloads of every record of ``topic`` in the worker's embedded log (the shipped config puts it in
    ``headrace-data`` of the working directory)."""
    reader = open_log_reader({"embedded.log.dir": str(tmp / "headrace-data")})
    out: list[dict[str, Any]] = []
    try:
        for tp, (start, end) in reader.partition_offsets([topic]).items():
            position = start
            while position < end:
                found = reader.read(tp.topic, tp.partition, position, end)
                for batch in found.batches:
                    out.extend(json.loads(v)["payload"] for v in batch.values if v is not None)
                if found.next_offset <= position:
                    break
                position = found.next_offset
    finally:
        reader.close()
    return out


def task_metrics(worker: EdgeWorker, connector: str) -> dict[str, int]:
    return dict(worker.status(connector)["tasks"][0].get("metrics") or {})


def wait_counts(worker: EdgeWorker, connector: str, written: int, failed: int) -> dict[str, int]:
    """The task's counters once they say ``written`` records written and ``failed`` failed (status views are
    cached for a moment)."""
    def reached() -> dict[str, int] | None:
        m = task_metrics(worker, connector)
        return m if m.get("records_written") == written and m.get("records_failed") == failed else None

    try:
        return wait_until(reached, 20, interval=0.3, what="the task's counts")
    except AssertionError:
        raise AssertionError(f"counts {task_metrics(worker, connector)}, expected written={written} "
                             f"failed={failed}") from None


def check_alive_and_small(worker: EdgeWorker, connector: str) -> None:
    worker.assert_running(connector)
    answered_within(2.0, lambda: worker.status(connector))
    assert worker.rss_bytes() < RSS_BOUND, worker.rss_bytes()


def start_worker(tmp_path: Path) -> EdgeWorker:
    return EdgeWorker(tmp_path).start()


def test_http_source_answers_413_for_the_oversized_event_alone(tmp_path: Path) -> None:
    port = free_port()
    path = connector_file(tmp_path, "connect-http-source.properties", listeners=f"http://127.0.0.1:{port}")
    worker = start_worker(tmp_path)
    try:
        name = worker.create(path)
        url = f"http://127.0.0.1:{port}/"
        with httpx.Client(timeout=60) as client:
            assert client.post(url, content=b'{"message": "first"}').status_code == 200
            refused = client.post(url, content=big_event())
            assert refused.status_code == 413, refused.text
            error = refused.json()["error"]
            assert "event 0" in error and "bytes" in error and str(RECORD_LIMIT) in error, error
            assert refused.json()["accepted"] == 0
            # one request with the oversized event between two normal ones: those two are written, and said so
            mixed = b'{"message": "second"}\n' + big_event() + b'\n{"message": "third"}'
            answer = client.post(url, content=mixed)
            assert answer.status_code == 413, answer.text
            assert answer.json()["accepted"] == 2 and [r["event"] for r in answer.json()["refused"]] == [1]
            assert client.post(url, content=b'{"message": "fourth"}').status_code == 200
        check_alive_and_small(worker, name)
        assert [v["message"] for v in topic_values(tmp_path, "app-logs")] == ["first", "second", "third", "fourth"]
        counts = wait_counts(worker, name, written=4, failed=2)
        assert counts["records_polled"] == 6, counts
    finally:
        log = worker.stop()
    assert "refused_too_large_for_log=2" in log, log[-3000:]


def test_flume_http_source_answers_413_for_the_oversized_event_alone(tmp_path: Path) -> None:
    port = free_port()
    path = connector_config(tmp_path, "connect-http-source.properties",
                            {"name": "flume-http", "connector.class": "FlumeHttpSource",
                             "listeners": f"http://127.0.0.1:{port}", "topic": "flume-events"})
    worker = start_worker(tmp_path)
    try:
        name = worker.create(path)
        url = f"http://127.0.0.1:{port}/"
        big = "x" * 900_000  # 900 KB body: base64 in the JSON record, 1.2 MB
        with httpx.Client(timeout=60) as client:
            assert client.post(url, json=[{"headers": {"h": "1"}, "body": "first"}]).status_code == 200
            refused = client.post(url, json=[{"headers": {}, "body": "second"}, {"headers": {}, "body": big}])
            assert refused.status_code == 413, refused.text
            assert refused.json()["accepted"] == 1 and [r["event"] for r in refused.json()["refused"]] == [1]
            error = refused.json()["error"]
            assert "event 1" in error and str(RECORD_LIMIT) in error, error
            assert client.post(url, json=[{"headers": {}, "body": "third"}]).status_code == 200
        check_alive_and_small(worker, name)
        bodies = [base64.b64decode(v) for v in topic_values(tmp_path, "flume-events")]
        assert bodies == [b"first", b"second", b"third"]
        wait_counts(worker, name, written=3, failed=1)
    finally:
        worker.stop()


def test_flume_avro_source_answers_an_error_for_the_oversized_event(tmp_path: Path) -> None:
    port = free_port()
    path = connector_config(tmp_path, "connect-tcp-json-source.properties",
                            {"name": "flume-avro", "connector.class": "FlumeAvroSource",
                             "listeners": f"tcp://127.0.0.1:{port}", "topic": "flume-events"})
    worker = start_worker(tmp_path)
    try:
        name = worker.create(path)
        client = AvroClient(port, timeout=60)
        try:
            assert client.append_batch([{"headers": {}, "body": b"first"}], first=True) == (False, "OK")
            error, answer = client.append_batch([{"headers": {}, "body": b"second"},
                                                 {"headers": {}, "body": b"y" * 900_000}])
            assert error, answer
            assert "event 1" in answer and str(RECORD_LIMIT) in answer, answer
            assert client.append_batch([{"headers": {}, "body": b"third"}]) == (False, "OK")
        finally:
            client.close()
        check_alive_and_small(worker, name)
        bodies = [base64.b64decode(v) for v in topic_values(tmp_path, "flume-events")]
        assert bodies == [b"first", b"second", b"third"]
        wait_counts(worker, name, written=3, failed=1)
    finally:
        worker.stop()


def _send_lines(port: int, *lines: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        for line in lines:
            s.sendall(line + b"\n")


def test_tcp_json_source_refuses_the_oversized_event_and_dead_letters_it(tmp_path: Path) -> None:
    port = free_port()
    # the shipped errors.tolerance (none) stays: a listener survives any single event; the DLQ keeps the refused one
    path = connector_file(tmp_path, "connect-tcp-json-source.properties", listeners=f"tcp://127.0.0.1:{port}",
                          **{"errors.deadletterqueue.topic.name": "tcp-dlq",
                             "errors.deadletterqueue.context.headers.enable": "true"})
    worker = start_worker(tmp_path)
    try:
        name = worker.create(path)
        _send_lines(port, b'{"message": "first"}')
        wait_until(lambda: len(topic_values(tmp_path, "app-logs")) == 1, 20, what="the first event")
        _send_lines(port, big_event(), b'{"message": "second"}')
        wait_until(lambda: len(topic_values(tmp_path, "app-logs")) == 2, 30, what="the event after the big one")
        _send_lines(port, b'{"message": "third"}')
        wait_until(lambda: len(topic_values(tmp_path, "app-logs")) == 3, 20, what="the third event")
        check_alive_and_small(worker, name)
        assert [v["message"] for v in topic_values(tmp_path, "app-logs")] == ["first", "second", "third"]
        wait_counts(worker, name, written=3, failed=1)
        dead = _dead_letters(tmp_path, "tcp-dlq")
        assert len(dead) == 1 and EMOJI in dead[0][0], dead[0][0][:200]
        assert str(RECORD_LIMIT) in dead[0][1]["__connect.errors.exception.message"]
        assert dead[0][1]["__connect.errors.stage"] == "KAFKA_PRODUCE"
    finally:
        log = worker.stop()
    assert "refused_too_large_for_log=1" in log, log[-3000:]


def _dead_letters(tmp: Path, topic: str) -> list[tuple[str, dict[str, str]]]:
    reader = open_log_reader({"embedded.log.dir": str(tmp / "headrace-data")})
    out: list[tuple[str, dict[str, str]]] = []
    try:
        for tp, (start, end) in reader.partition_offsets([topic]).items():
            found = reader.read(tp.topic, tp.partition, start, end)
            for batch in found.batches:
                for i, value in enumerate(batch.values):
                    headers = batch.headers[i] if batch.headers is not None else ()
                    out.append(((value or b"").decode(), {k: (v or b"").decode() for k, v in headers}))
    finally:
        reader.close()
    return out


def test_syslog_source_refuses_the_oversized_message(tmp_path: Path) -> None:
    port = free_port()
    path = connector_file(tmp_path, "connect-syslog-source.properties", listeners=f"tcp://127.0.0.1:{port}",
                          **{"max.event.bytes": 1048576})
    worker = start_worker(tmp_path)
    try:
        name = worker.create(path)

        def message(text: str) -> bytes:
            return f"<14>1 2026-01-01T00:00:00Z host app - - - {text}".encode()

        _send_lines(port, message("first"))
        wait_until(lambda: len(topic_values(tmp_path, "syslog")) == 1, 20, what="the first message")
        _send_lines(port, message(BIG_TEXT), message("second"))
        wait_until(lambda: len(topic_values(tmp_path, "syslog")) == 2, 30, what="the message after the big one")
        check_alive_and_small(worker, name)
        assert [v["message"] for v in topic_values(tmp_path, "syslog")] == ["first", "second"]
        wait_counts(worker, name, written=2, failed=1)
    finally:
        log = worker.stop()
    assert "refused_too_large_for_log=1" in log, log[-3000:]
