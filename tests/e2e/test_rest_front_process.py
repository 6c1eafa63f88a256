"""``rest.separate.process=true``: a real ``connect-standalone`` whose listeners are served by its REST front
process, driven over HTTP; the front answers status reads itself, everything else reaches the worker, and
each process notices when the other is killed."""

from __future__ import annotations

import os
import re
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest

from tests.support import RestWorker, connect_standalone, rest_ready, wait_until, worker_properties

pytestmark = pytest.mark.timeout(180)


def _front_pid(worker_pid: int) -> int:
    children = [child for child in Path(f"/proc/{worker_pid}/task/{worker_pid}/children").read_text().split()
                # the task hosts' fork server (connect.runtime.host_forkserver) is the worker's other child
                if Path(f"/proc/{child}/comm").read_text().strip() != "task-host-fork"]
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
        # served by the front once its listing is newer than the last write: its access log line is there, and
        # the worker's own is not
        assert worker.proc is not None
        proc = worker.proc
        probes = iter(range(1000))

        def answered_by_the_front(path: str) -> bool:
            agent = f"probe-{next(probes)}{path}"
            assert c.get(path, headers={"User-Agent": agent}).status_code == 200
            # an access line is written once its answer is sent, so possibly after the client has it
            wait_until(lambda: f'rest-front: 127.0.0.1 "GET {path} HTTP/1.1" 200' in proc.log()
                       and f'"{agent}"' in proc.log(), 10, what="the front's access line")
            time.sleep(0.1)
            lines = [line for line in proc.log().splitlines() if f'"{agent}"' in line]
            return len(lines) == 1 and "rest-front: " in lines[0]

        for path in ("/connectors/s3/status", "/connectors?expand=status"):
            wait_until(lambda p=path: answered_by_the_front(p), 10, what=f"{path} answered by the front alone")
        # everything else reaches the worker, Location built from the Host the client used
        r = c.post("/connectors", json={"name": "late", "config": {
            "connector.class": "FileStreamSink", "topics": "late", "file": str(tmp_path / "late.txt")}})
        assert r.status_code == 201 and r.headers["Location"] == f"{worker.url}/connectors/late"
        assert c.get("/connectors/late/config").json()["topics"] == "late"
        assert c.get("/connector-plugins").status_code == 200
    log = proc.log()
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
    assert f"listeners=http://127.0.0.1:{port}: the port is in use by another process" in log
    assert "Traceback" not in log


@pytest.mark.slow
def test_sigterm_stops_both_and_leaves_no_socket_behind(tmp_path: Path) -> None:
    w = RestWorker(tmp_path, rest_separate_process="true").start()
    assert w.proc is not None and w.proc.proc is not None
    front = _front_pid(w.proc.proc.pid)
    found = re.search(r"passes requests on to this worker at (\S+/worker\.sock)", w.proc.log())
    assert found is not None and Path(found[1]).exists()
    started = time.monotonic()
    w.stop()
    assert _gone(front) and time.monotonic() - started < 15
    assert not Path(found[1]).parent.exists()


def test_a_task_failing_on_its_own_shows_through_the_front_without_the_worker_answering(worker: RestWorker,
                                                                                        tmp_path: Path) -> None:
    from connect.log import open_log_backend

    with worker.http() as c:
        r = c.post("/connectors", json={"name": "strict", "config": {
            "connector.class": "FileStreamSink", "topics": "strict-in", "file": str(tmp_path / "strict.txt"),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter"}})
        assert r.status_code == 201, r.text
        wait_until(lambda: c.get("/connectors/strict/status").json()["tasks"][0]["state"] == "RUNNING", 20)
        time.sleep(0.5)  # the front's listing is newer than the create by now
        backend = open_log_backend({"embedded.log.dir": str(tmp_path / "data")})
        try:
            producer = backend.producer()
            producer.send("strict-in", b"this is not JSON")
            producer.flush()
            producer.close()
        finally:
            backend.close()
        seen: list[tuple[str, str]] = []

        def failed() -> bool:
            agent = f"watch-{len(seen)}"
            state = c.get("/connectors/strict/status", headers={"User-Agent": agent}).json()["tasks"][0]["state"]
            seen.append((agent, state))
            return state == "FAILED"

        wait_until(failed, 30, interval=0.05, what="the task FAILED")
        for _ in range(5):  # a few more reads, as a client watching it would make
            time.sleep(0.05)
            failed()
    assert seen[0][1] == "RUNNING" and seen[-1][1] == "FAILED", seen
    assert worker.proc is not None
    proc = worker.proc
    # an access line is written once its answer is sent, so possibly after the client has it
    wait_until(lambda: f'"{seen[-1][0]}"' in proc.log(), 10, what="the last read's access line")
    time.sleep(0.1)
    log = proc.log()
    # reads that saw FAILED were answered by the front alone: the state came in a listing the worker sent on
    # its own, as no write was made to prompt it (a read may go to the worker when the front's listing is
    # over a second old: the first one here, or any on a machine too busy to send a new one in time)
    def lines_of(agent: str) -> list[str]:
        return [line for line in log.splitlines() if f'"{agent}"' in line]

    by_front = [agent for agent, state in seen
                if state == "FAILED" and len(lines_of(agent)) == 1 and "rest-front: " in lines_of(agent)[0]]
    assert by_front, seen
