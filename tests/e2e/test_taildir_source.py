"""TailDirSource in a real connect-standalone: many files by glob, rotation, truncation, deletion, new files,
multiline events, and a kill -9 of the worker."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tests.logship import count_values, read_values
from tests.support import connect_standalone, wait_until, worker_properties, write_properties

pytestmark = pytest.mark.timeout(180)


def _worker(tmp: Path, **props: object):
    # the kill -9 test waits for a first periodic offset commit: half a second rather than the shipped 10 s
    cfg = worker_properties(tmp, offset_flush_interval_ms=500)
    connector = write_properties(tmp / "taildir.properties", {
        "name": "tail", "connector.class": "TailDirSource", "topic": "logs", "directory": tmp / "logs",
        "file.pattern": "*.log*", "scan.interval.ms": 100,
        # the events as plain JSON documents, which the tests read back (the shipped worker's JSON converter
        # would wrap each in a schema envelope); per connector, as Kafka Connect users set it
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
        **props})
    return cfg, connector


def _append(path: Path, lines: list[str]) -> None:
    with open(path, "a") as fh:
        fh.write("".join(line + "\n" for line in lines))


def _messages(tmp: Path) -> list[str]:
    return [e["message"] for e in read_values(tmp)]


def test_rotation_truncation_deletion_new_files_and_multiline_each_event_once(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    expected: list[str] = []

    def lines(name: str, start: int, n: int) -> list[str]:
        out = [f"2026-01-01 {name} line {i}" for i in range(start, start + n)]
        expected.extend(out)
        return out

    for k in range(5):
        _append(logs / f"app-{k}.log", lines(f"app-{k}", 0, 200))
    trace = ["2026-01-01 ERROR boom", "Traceback (most recent call last):", '  File "x.py", line 1, in <module>',
             "ValueError: bad"]
    _append(logs / "trace.log", [*trace, "2026-01-01 INFO after"])
    (logs / "ignored.txt").write_text("2026-01-01 not matched by the pattern\n")
    cfg, connector = _worker(tmp_path, **{"multiline.pattern": "^[0-9]{4}-", "multiline.timeout.ms": 200})
    worker = connect_standalone(tmp_path, cfg, connector)
    try:
        wait_until(lambda: count_values(tmp_path) == 1002, 30, what="the first 1,002 events")
        # rotation by rename, then a new file under the old name
        os.rename(logs / "app-0.log", logs / "app-0.log.1")
        _append(logs / "app-0.log.1", lines("app-0", 200, 10))
        _append(logs / "app-0.log", lines("app-0-new", 0, 50))
        # truncation (copytruncate), then new lines from the start
        os.truncate(logs / "app-1.log", 0)
        _append(logs / "app-1.log", lines("app-1-after-truncate", 0, 30))
        # the last lines of a file deleted right after they were written are still read
        _append(logs / "app-2.log", lines("app-2", 200, 20))
        os.remove(logs / "app-2.log")
        # a file created while running
        _append(logs / "app-9.log", lines("app-9", 0, 40))
        total = 1002 + 10 + 50 + 30 + 20 + 40
        wait_until(lambda: count_values(tmp_path) >= total, 30, what=f"{total} events")
    finally:
        assert worker.terminate() == 0, worker.log()
    events = read_values(tmp_path)
    messages = [e["message"] for e in events]
    multiline = "\n".join(trace)
    assert sorted(messages) == sorted([*expected, multiline, "2026-01-01 INFO after"])  # each exactly once
    files = {e["message"]: e["log"]["file"]["path"] for e in events}
    assert files[multiline] == str(logs / "trace.log")
    assert files["2026-01-01 app-0 line 205"].endswith("app-0.log.1")
    log = worker.log()
    assert "was truncated" in log and "(renamed; read on)" in log and "skips" not in log


def _committed_lines(tmp: Path, logs: Path) -> int:
    """Lines covered by the committed offsets, counting in each file (by inode) up to its position."""
    try:
        stored = json.loads((tmp / "connect.offsets").read_text())["offsets"]
    except (FileNotFoundError, json.JSONDecodeError):
        return 0
    by_id = {f"{st.st_dev}:{st.st_ino}": p for p in logs.iterdir() if (st := p.stat())}
    total = 0
    for key, value in stored.items():
        _, partition = json.loads(key)
        path = by_id.get(partition["file.id"])
        if path is not None:
            total += path.read_bytes()[:json.loads(value)["position"]].count(b"\n")
    return total


@pytest.mark.slow
def test_twenty_files_rotated_while_the_worker_is_killed_9_every_line_once_or_within_the_flush_bound(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    files, per_file = 20, 3000
    stop = threading.Event()
    written = [0]

    def writer() -> None:
        for chunk in range(0, per_file, 100):
            for k in range(files):
                _append(logs / f"svc-{k}.log", [f"svc-{k} line {i}" for i in range(chunk, chunk + 100)])
                if chunk == per_file // 2 and k % 4 == 0:  # rotate a fifth of them half-way
                    os.rename(logs / f"svc-{k}.log", logs / f"svc-{k}.log.1")
            written[0] += 100 * files
            if stop.wait(0.02):
                return

    cfg, connector = _worker(tmp_path)
    worker = connect_standalone(tmp_path, cfg, connector)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        wait_until(lambda: count_values(tmp_path) > 15_000 and (tmp_path / "connect.offsets").exists(), 60,
                   what="15,000 lines and a first offset commit")
        worker.kill9()
        bound = count_values(tmp_path) - _committed_lines(tmp_path, logs)
        assert bound >= 0
    finally:
        thread.join()
    worker = connect_standalone(tmp_path, cfg, connector)
    try:
        wait_until(lambda: len(set(_messages(tmp_path))) >= files * per_file, 90, interval=0.5, what="every line")
    finally:
        assert worker.terminate() == 0, worker.log()
    messages = _messages(tmp_path)
    expected = {f"svc-{k} line {i}" for k in range(files) for i in range(per_file)}
    assert set(messages) == expected
    duplicates = len(messages) - len(expected)
    print(f"taildir kill -9: {duplicates} duplicates, bound {bound}")
    assert duplicates <= bound
