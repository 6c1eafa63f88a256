"""Damage on disk and shared log directories, seen through a real connect-standalone worker."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from connect.api.topic_partition import TopicPartition
from connect.log.api import NewTopic
from connect.log.embedded.backend import EmbeddedBackend
from tests.support import (
    STRING_CONVERTERS,
    connect_standalone,
    free_port,
    line_count,
    rest_ready,
    run_cli,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(180)

BATCHES = 5
PER_BATCH = 100


def _sink(tmp: Path, name: str = "sink") -> Path:
    # the topic holds the raw lines _fill wrote, not the shipped JSON converter's envelopes
    return write_properties(tmp / f"{name}.properties", {
        "name": name, "connector.class": "FileStreamSink", "tasks.max": 1, "file": tmp / "out.txt", "topics": "in",
        **STRING_CONVERTERS,
    })


def _fill(tmp: Path) -> Path:
    """Topic ``in``: five batches of 100 lines in one segment; returns that segment."""
    backend = EmbeddedBackend(str(tmp / "data"))
    backend.admin().create_topic(NewTopic("in", 1))
    producer = backend.producer()
    for b in range(BATCHES):
        producer.send_batch("in", 0, [f"line-{b * PER_BATCH + i:04d}".encode() for i in range(PER_BATCH)])
        producer.flush()
    producer.close()
    backend.close()
    return tmp / "data" / "in-0" / "00000000000000000000.log"


def test_a_sink_gets_every_record_but_the_damaged_batch_and_the_worker_logs_the_gap(tmp_path) -> None:
    seg = _fill(tmp_path)
    data = bytearray(seg.read_bytes())
    batch = len(data) // BATCHES
    data[2 * batch + batch // 2] ^= 0x01  # one flipped bit in the middle batch
    seg.write_bytes(bytes(data))

    worker = connect_standalone(tmp_path, worker_properties(tmp_path), _sink(tmp_path))
    try:
        wait_until(lambda: line_count(tmp_path / "out.txt") >= 400 or not worker.alive(), 60, what="400 lines")
        assert worker.alive(), worker.log()
    finally:
        assert worker.terminate() == 0, worker.log()
    lost = range(2 * PER_BATCH, 3 * PER_BATCH)
    assert (tmp_path / "out.txt").read_text().splitlines() == [
        f"line-{i:04d}" for i in range(BATCHES * PER_BATCH) if i not in lost]
    log = worker.log()
    gap_lines = [line for line in log.splitlines() if "ERROR" in line and "offsets 200..299" in line]
    assert any("Gap in in-0" in line and str(seg) in line for line in gap_lines), log
    assert any("Skipping offsets 200..299 of in-0" in line for line in gap_lines), log


def test_a_committed_offset_past_the_log_end_fails_the_sink_task_with_a_clear_message(tmp_path) -> None:
    _fill(tmp_path)
    backend = EmbeddedBackend(str(tmp_path / "data"))
    backend.admin().alter_group_offsets("connect-sink", {TopicPartition("in", 0): 2000})
    backend.close()
    port = free_port()
    worker = connect_standalone(tmp_path, worker_properties(tmp_path, port), _sink(tmp_path))
    try:
        wait_until(lambda: rest_ready(port) or not worker.alive(), 60, what="REST")

        def failed_task() -> dict | None:
            r = httpx.get(f"http://127.0.0.1:{port}/connectors/sink/status", timeout=10)
            tasks = r.json().get("tasks") if r.status_code == 200 else None
            return tasks[0] if tasks and tasks[0]["state"] == "FAILED" else None

        task = wait_until(failed_task, 60, what="sink task FAILED")
    finally:
        assert worker.terminate() == 0, worker.log()
    assert "committed offset 2000 of group connect-sink for in-0 is past the log end 500" in task["trace"]
    assert line_count(tmp_path / "out.txt") == 0  # nothing re-delivered from the start


def test_a_second_worker_on_the_same_log_directory_is_refused_in_one_line(tmp_path) -> None:
    first = connect_standalone(tmp_path, worker_properties(tmp_path, free_port()))
    try:
        wait_until(lambda: "worker started" in first.log(), 60, what="first worker")
        other = tmp_path / "other"
        other.mkdir()
        props = worker_properties(other, free_port(), embedded_log_dir=tmp_path / "data")
        res = run_cli(["connect-standalone", str(props)], cwd=other, timeout=30)
        assert res.returncode != 0
        errors = [line for line in res.stderr.decode().splitlines() if line.startswith("ERROR")]
        assert len(errors) == 1, res.stderr
        assert f"pid {first.proc.pid}" in errors[0] and str(tmp_path / "data") in errors[0]
        assert first.alive()
        # the read-only tools still work beside the worker
        res = run_cli(["headrace", "topics", "list", "-c", str(tmp_path / "worker.properties"),
                       "--include-internal"])
        assert res.returncode == 0, res.stderr
    finally:
        assert first.terminate() == 0, first.log()
