"""``rest.separate.process=true``: a real ``connect-standalone`` whose listeners are served by its REST front
process, driven over HTTP; the front answers status reads itself, everything else reaches the worker, and
each process notices when the other is killed."""

from __future__ import annotations

import os
import signal
import socket
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tests.support import RestWorker, connect_standalone, rest_ready, wait_until, worker_properties

pytestmark = pytest.mark.timeout(180)


def _front_pid(worker_pid: int) -> int:
    children = Path(f"/proc/{worker_pid}/task/{worker_pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _sink(c: httpx.Client, name: str, tmp: Path) -> None:
    r = c.post("/connectors", json={"name": name, "config": {
        "connector.class": "FileStreamSink", "topics": f"t-{name}", "file": str(tmp / f"{name}.txt")}})
    assert r.status_code == 201, r.text


@pytest.fixture
def worker(tmp_path: Path):
    w = RestWorker(tmp_path, rest_separate_process="true", connector_allowed_paths=str(tmp_path)).start()
    yield w
    w.stop()


def test_status_reads_are_answered_by_the_front_and_a_client_reads_its_own_writes(worker: RestWorker,
                                                                                  tmp_path: Path) -> None:
    with worker.http() as c:
        for i in range(15):
            # each read right after the write it follows: the front must not answer from an older snapshot
            _sink(c, f"s{i}", tmp_path)
            r = c.get(f"/connectors/s{i}/status")
            assert r.status_code == 200 and r.json()["name"] == f"s{i}", r.text
            assert f"s{i}" in c.get("/connectors?expand=status").json()
        for i in range(0, 15, 2):
            assert c.delete(f"/connectors/s{i}").status_code == 204
            r = c.get(f"/connectors/s{i}/status")
            assert r.status_code == 404 and r.json()["message"] == f"Connector s{i} not found"
            assert f"s{i}" not in c.get("/connectors?expand=status").json()
        # a state the task reaches after the request was answered arrives through the worker's snapshots
        assert c.put("/connectors/s1/pause").status_code == 202
        wait_until(lambda: c.get("/connectors/s1/status").json()["tasks"][0]["state"] == "PAUSED", 10,
                   what="the task PAUSED")
        listing = c.get("/connectors?expand=status").json()
        assert sorted(listing) == sorted(f"s{i}" for i in range(1, 15, 2))
        assert listing["s1"]["status"]["connector"]["state"] == "PAUSED"
        # served by the front once its snapshot is newer than the last write (the worker sends one within a
        # quarter of a second): its access log line is there, and the worker's own is not
        time.sleep(0.5)
        for path in ("/connectors/s3/status", "/connectors?expand=status"):
            r = c.get(path, headers={"User-Agent": f"probe{path}"})
            assert r.status_code == 200
        # everything else reaches the worker, Location built from the Host the client used
        r = c.post("/connectors", json={"name": "late", "config": {
            "connector.class": "FileStreamSink", "topics": "late", "file": str(tmp_path / "late.txt")}})
        assert r.status_code == 201 and r.headers["Location"] == f"{worker.url}/connectors/late"
        assert c.get("/connectors/late/config").json()["topics"] == "late"
        assert c.get("/connector-plugins").status_code == 200
    log = worker.proc.log() if worker.proc else ""
    for path in ("/connectors/s3/status", "/connectors?expand=status"):
        lines = [line for line in log.splitlines() if f'"probe{path}"' in line]
        assert len(lines) == 1 and "rest-front: 127.0.0.1 \"GET" in lines[0], lines
    posted = [line for line in log.splitlines() if '"POST /connectors HTTP/1.1" 201' in line]
    assert posted and all("rest-front:" not in line and line.split("INFO ")[1].startswith("127.0.0.1") for line in posted)


@pytest.mark.slow
def test_the_front_stops_by_itself_when_the_worker_is_killed(tmp_path: Path) -> None:
    w = RestWorker(tmp_path, rest_separate_process="true").start()
    assert w.proc is not None and w.proc.proc is not None
    worker_pid = w.proc.proc.pid
    front = _front_pid(worker_pid)
    os.kill(worker_pid, signal.SIGKILL)
    w.proc.proc.wait(10)
    wait_until(lambda: _gone(front), 20, what="the front process to exit")
    assert not rest_ready(w.port)
    with socket.socket() as s:  # its listener is free for the next worker
        s.bind(("127.0.0.1", w.port))


@pytest.mark.slow
def test_the_worker_stops_when_its_front_is_killed_and_says_why(tmp_path: Path) -> None:
    w = RestWorker(tmp_path, rest_separate_process="true").start()
    assert w.proc is not None and w.proc.proc is not None
    os.kill(_front_pid(w.proc.proc.pid), signal.SIGKILL)
    assert w.proc.proc.wait(30) != 0
    assert "The REST front process exited (code -9)" in w.proc.log()


@pytest.mark.slow
def test_a_listener_in_use_is_one_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cfg = worker_properties(tmp_path, port, rest_separate_process="true")
        proc = connect_standalone(tmp_path, cfg)
        assert proc.proc is not None
        assert proc.proc.wait(60) != 0
    log = proc.log()
    assert f"Cannot listen on http://127.0.0.1:{port} for the REST API" in log
    assert "Traceback" not in log


@pytest.mark.slow
def test_sigterm_stops_both_and_leaves_no_socket_behind(tmp_path: Path) -> None:
    before = {p.name for p in Path(tempfile.gettempdir()).glob("headrace-rest-*")}
    w = RestWorker(tmp_path, rest_separate_process="true").start()
    assert w.proc is not None and w.proc.proc is not None
    front = _front_pid(w.proc.proc.pid)
    started = time.monotonic()
    w.stop()
    assert _gone(front) and time.monotonic() - started < 15
    assert {p.name for p in Path(tempfile.gettempdir()).glob("headrace-rest-*")} <= before
