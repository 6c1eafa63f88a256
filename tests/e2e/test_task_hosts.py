"""Task host processes (``task.processes``) driven through the real ``connect-standalone`` on the embedded log.

Every worker here sets ``task.processes=2`` itself: the default (-1) is one host per core, and the machine
running the suite may have any number of cores, while what these tests check is two hosts.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_backend
from tests.support import (
    STRING_CONVERTERS,
    CliProcess,
    RestWorker,
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

# see the module's docstring
TWO_HOSTS: dict[str, Any] = {"task.processes": 2}
HOST_MODULE = "connect.runtime.task_host_process"


# --- processes ----------------------------------------------------------------------------------------------

def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid``, or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name is in parentheses and may hold spaces: the fields after its ")" are fixed
    state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
    return state, int(ppid)


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _running(pid: int) -> bool:
    stat = _proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _is_host(pid: int) -> bool:
    """A task host: forked by the worker's fork server (named task-host-N), or started as its own interpreter."""
    return re.fullmatch(r"task-host-\d+", _comm(pid)) is not None or HOST_MODULE in _cmdline(pid)


def _host_children(worker_pid: int) -> set[int]:
    """The task host processes of ``worker_pid``: its children, or its fork server's (connect.runtime.host_forkserver)."""
    live = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _proc_stat(int(entry.name))
            if stat is not None and stat[0] not in ("Z", "X"):
                live[int(entry.name)] = stat[1]
    parents = {worker_pid} | {pid for pid, ppid in live.items() if ppid == worker_pid and _comm(pid) == "task-host-fork"}
    return {pid for pid, ppid in live.items() if ppid in parents and _is_host(pid)}


def _ready_hosts(log: str) -> list[tuple[int, int]]:
    """(host index, pid) of every "Task host N ready (pid P)" line the hosts logged, in order."""
    return [(int(n), int(pid)) for n, pid in
            re.findall(r"^\S+ \S+ INFO task-host-(\d+): Task host \1 ready \(pid (\d+)\)", log, re.M)]


def _task_hosts(log: str, connector: str, task: int) -> list[int]:
    """Index of the host in which the task started, for each start of it, in order."""
    return [int(n) for n in
            re.findall(rf"^\S+ \S+ INFO task-host-(\d+): Worker\w+Task\{{id={re.escape(connector)}-{task}\}} "
                       r"Task started", log, re.M)]


def _host_pid(log: str, index: int) -> int:
    """The pid of the newest host with ``index``."""
    pids = [pid for n, pid in _ready_hosts(log) if n == index]
    assert pids, f"no task host {index} became ready:\n{log}"
    return pids[-1]


def _cli(worker: RestWorker) -> CliProcess:
    """The started worker's process."""
    assert worker.proc is not None and worker.proc.proc is not None
    return worker.proc


def _pid(cli: CliProcess) -> int:
    assert cli.proc is not None
    return cli.proc.pid


@pytest.fixture
def cleanup() -> Iterator[list[int]]:
    """Pids a test may leave behind when it fails (a worker killed alone leaves its session running)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        # only what is still ours: a pid freed meanwhile may be another program's now
        command = " ".join(_cmdline(pid))
        if _running(pid) and (HOST_MODULE in command or "connect-standalone" in command):
            os.kill(pid, signal.SIGKILL)


# --- connectors and data ------------------------------------------------------------------------------------

def _source(tmp: Path, name: str = "src", file: str = "in.txt", topic: str = "lines") -> Path:
    return write_properties(tmp / f"{name}.properties", {
        "name": name, "connector.class": "FileStreamSource", "tasks.max": 1, "file": tmp / file, "topic": topic,
    })


def _sink(tmp: Path, name: str = "snk", file: str = "out.txt", topics: str = "lines", tasks: int = 1) -> Path:
    return write_properties(tmp / f"{name}.properties", {
        "name": name, "connector.class": "FileStreamSink", "tasks.max": tasks, "file": tmp / file, "topics": topics,
    })


def _create_topic(cfg: Path, topic: str = "lines", partitions: int = 1) -> None:
    """Before the worker starts: a sink then never waits for its topic to appear (test_a_sink_gets_its_topic_...
    checks that case on its own)."""
    res = run_cli(["headrace", "topics", "create", "--topic", topic, "--partitions", str(partitions), "-c", str(cfg)])
    assert res.returncode == 0, res.stderr.decode()


def _lines(start: int, end: int) -> str:
    return "".join(f"line-{i:06d}\n" for i in range(start, end))


def _append(path: Path, text: str) -> None:
    with open(path, "a") as fh:
        fh.write(text)


def _status(worker: RestWorker, connector: str) -> dict[str, Any]:
    return httpx.get(f"{worker.url}/connectors/{connector}/status", timeout=10).json()


def _task_state(worker: RestWorker, connector: str, task: int = 0) -> str | None:
    tasks = _status(worker, connector).get("tasks", [])
    return next((t["state"] for t in tasks if t["id"] == task), None)


def _wait_task_state(worker: RestWorker, connector: str, state: str, task: int = 0, timeout: float = 30) -> None:
    wait_until(lambda: _task_state(worker, connector, task) == state, timeout, interval=0.2,
               what=f"{connector} task {task} {state}")


def _topic_end(tmp: Path, topic: str, partition: int = 0) -> int:
    backend = open_log_backend({"embedded.log.dir": str(tmp / "data")})
    try:
        admin = backend.admin()
        end = admin.describe_topic(topic).offsets[partition][1]
        admin.close()
    finally:
        backend.close()
    return end


# --- a: two sink tasks, two hosts ---------------------------------------------------------------------------

def test_two_sink_tasks_run_in_two_host_processes_and_write_each_record_once(tmp_path):
    # the test writes raw keyed text to the topic itself, which the shipped JsonConverter would refuse
    worker = RestWorker(tmp_path, _sink(tmp_path, tasks=2, topics="two"), **STRING_CONVERTERS, **TWO_HOSTS)

    def produce(start: int, end: int) -> None:
        # keys spread the records over both partitions (the default partitioner hashes them)
        data = "".join(f"k{i}:v-{i:05d}\n" for i in range(start, end)).encode()
        res = run_cli(["headrace", "console-producer", "--topic", "two", "--property", "parse.key=true",
                       "--property", "key.separator=:", "-c", str(worker.cfg)], input=data)
        assert res.returncode == 0, res.stderr.decode()

    _create_topic(worker.cfg, "two", partitions=2)
    produce(0, 1000)
    cli = _cli(worker.start())
    try:
        for task in (0, 1):
            _wait_task_state(worker, "snk", "RUNNING", task)
        # records produced once both tasks run reach both of them, whichever partitions each was given
        wait_until(lambda: all(_task_hosts(cli.log(), "snk", t) for t in (0, 1)), 30, what="task starts")
        produce(1000, 2000)
        sink_file = tmp_path / "out.txt"
        wait_until(lambda: line_count(sink_file) >= 2000, 30, what="2000 records in the sink file")
        log = cli.log()
        hosts = _host_children(_pid(cli))
        ready = _ready_hosts(log)
        assert len(hosts) == 2, f"task host processes of the worker: {hosts}\n{log}"
        assert {pid for _, pid in ready} == hosts, f"hosts that logged ready: {ready}, children: {hosts}"
        (host_of_0,), (host_of_1,) = _task_hosts(log, "snk", 0), _task_hosts(log, "snk", 1)
        assert host_of_0 != host_of_1, f"both sink tasks started in task host {host_of_0}"
        assert {host_of_0, host_of_1} == {1, 2}
        # each task's own counters, as its host counts them: both moved records (status counters may lag a
        # little behind the sink file, and a status served while the host's counters could not be read in
        # time has none)
        def records_put() -> list[int]:
            return [t.get("metrics", {}).get("records_put", 0) for t in _status(worker, "snk")["tasks"]]

        wait_until(lambda: sum(records_put()) >= 2000, 15, interval=0.5, what="records_put of both tasks")
        put = records_put()
        assert len(put) == 2 and min(put) > 0, f"records_put by task: {put}"
        # no record comes twice, even some time after the last one arrived
        time.sleep(1.0)
        assert sorted(sink_file.read_text().splitlines()) == [f"v-{i:05d}" for i in range(2000)]
    finally:
        log = worker.stop()
    assert sorted((tmp_path / "out.txt").read_text().splitlines()) == [f"v-{i:05d}" for i in range(2000)]
    assert "Traceback" not in log, log


# --- b: kill -9 of the worker -------------------------------------------------------------------------------

def _committed_source_lines(tmp: Path, source_file: Path, connector: str = "src") -> int:
    """Lines of the source file covered by the source offset the worker committed to its offsets file."""
    offsets_file = tmp / "connect.offsets"
    if not offsets_file.exists():
        return 0
    position = 0
    for key, value in json.loads(offsets_file.read_text())["offsets"].items():
        name, partition = json.loads(key)
        if name == connector and partition["filename"] == str(source_file):
            position = json.loads(value)["position"]
    return source_file.read_bytes()[:position].count(b"\n")


def _sink_committed(tmp: Path, connector: str = "snk", topic: str = "lines") -> int:
    backend = open_log_backend({"embedded.log.dir": str(tmp / "data")})
    try:
        admin = backend.admin()
        committed = admin.list_group_offsets(f"connect-{connector}").get(TopicPartition(topic, 0), 0)
        admin.close()
    finally:
        backend.close()
    return committed


@pytest.mark.slow  # it waits for a commit at the shipped 10 s interval, and starts the worker twice
def test_kill_9_of_the_worker_ends_its_hosts_and_a_restart_finishes_the_job(tmp_path, cleanup):
    """The worker alone gets SIGKILL (not its process group, which would take the hosts with it anyway).

    Its hosts must see their channel end and exit. The restarted worker re-sends what the source had read but
    not committed and rewrites what the sink had written but not committed: the duplicates are bounded by what
    was written since the last commit of each task, which this test reads from the files at the kill.
    """
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    first, total = 3000, 5000
    source_file.write_text(_lines(0, first))
    # offset.flush.interval.ms as shipped (10 s): the bound below is what one interval leaves uncommitted
    port = free_port()
    cfg = worker_properties(tmp_path, port, **TWO_HOSTS)
    connectors = (_source(tmp_path), _sink(tmp_path))
    _create_topic(cfg)
    worker = connect_standalone(tmp_path, cfg, *connectors)
    worker_pid = _pid(worker)
    cleanup.append(worker_pid)
    try:
        wait_until(lambda: len(_host_children(worker_pid)) == 2, 30, what="two task hosts")
        hosts = _host_children(worker_pid)
        cleanup.extend(hosts)
        # a first commit of both tasks, so that the kill leaves a known committed point behind
        wait_until(lambda: _committed_source_lines(tmp_path, source_file) == first
                   and _sink_committed(tmp_path) == first, 40, interval=0.2,
                   what="the first commit of both tasks (every 10 s)")
        _append(source_file, _lines(first, total))
        wait_until(lambda: line_count(sink_file) >= total, 20, what="the second part in the sink")
        assert worker.proc is not None
        killed_at = time.monotonic()
        os.kill(worker_pid, signal.SIGKILL)  # the worker alone
        worker.proc.wait(10)
        wait_until(lambda: not any(_running(pid) for pid in hosts), 10 - (time.monotonic() - killed_at),
                   interval=0.05, what=f"the task hosts {sorted(hosts)} to exit within 10 s of their worker's kill")
        print(f"task hosts gone {time.monotonic() - killed_at:.2f} s after the kill")
        assert not _host_children(worker_pid)
        # whatever else of the killed worker still runs (its REST front) would hold the port
        wait_until(lambda: not rest_ready(port), 10, what="the killed worker's REST listener to close")
    finally:
        _kill_session(worker)
    topic_end = _topic_end(tmp_path, "lines")
    source_committed = _committed_source_lines(tmp_path, source_file)
    sink_committed = _sink_committed(tmp_path)
    # whole lines only: a write cut by the kill leaves a piece the restarted sink's first line is appended to
    sink_lines = sink_file.read_bytes().count(b"\n")
    assert first <= source_committed <= topic_end == total
    assert first <= sink_committed <= sink_lines
    # what a restart may duplicate: the lines the source sent since its last commit, and the records the sink
    # wrote since its last commit; at most one flush interval's worth each, never the whole file
    bound = (topic_end - source_committed) + (sink_lines - sink_committed)
    restarted = connect_standalone(tmp_path, cfg, *connectors)
    cleanup.append(_pid(restarted))
    expected_topic_end = total + topic_end - source_committed
    expected_sink_lines = sink_lines + expected_topic_end - sink_committed
    try:
        wait_until(lambda: _topic_end(tmp_path, "lines") >= expected_topic_end
                   and sink_file.read_bytes().count(b"\n") >= expected_sink_lines, 40, interval=0.2,
                   what="the restarted worker to replay the uncommitted stretch of both tasks")
        assert len(_host_children(_pid(restarted))) == 2
    finally:
        assert restarted.terminate() == 0, restarted.log()
    assert _topic_end(tmp_path, "lines") == expected_topic_end
    lines = sink_file.read_text().splitlines()
    expected = {f"line-{i:06d}" for i in range(total)}
    assert expected <= set(lines), f"lost {len(expected - set(lines))} lines"
    # the restarted sink wrote again exactly the records after its committed offset: no more, no fewer
    assert len(lines) == expected_sink_lines
    duplicates = len(lines) - len(set(lines))
    print(f"kill -9: {duplicates} duplicates, bound {bound} (topic {topic_end}, source committed "
          f"{source_committed}, sink {sink_lines} lines, sink committed {sink_committed})")
    assert duplicates <= bound, f"{duplicates} duplicates exceed what was uncommitted at the kill ({bound})"


def _kill_session(worker: CliProcess) -> None:
    """Whatever of the worker's session is still running (after a failed test, its hosts too)."""
    assert worker.proc is not None
    try:
        os.killpg(worker.proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    worker.proc.wait(10)


# --- c: kill -9 of one host ---------------------------------------------------------------------------------

def test_a_killed_host_fails_only_its_task_which_restarts_in_a_new_host(tmp_path, cleanup):
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text(_lines(0, 100))
    worker = RestWorker(tmp_path, _source(tmp_path), _sink(tmp_path), **TWO_HOSTS)
    _create_topic(worker.cfg)
    cli = _cli(worker.start())
    try:
        _wait_task_state(worker, "src", "RUNNING")
        _wait_task_state(worker, "snk", "RUNNING")
        wait_until(lambda: line_count(sink_file) >= 100, 30, what="the first lines in the sink")
        log = cli.log()
        (sink_host,), (source_host,) = _task_hosts(log, "snk", 0), _task_hosts(log, "src", 0)
        assert sink_host != source_host, log
        killed = _host_pid(log, sink_host)
        source_pid = _host_pid(log, source_host)
        cleanup.extend([killed, source_pid])
        os.kill(killed, signal.SIGKILL)
        _wait_task_state(worker, "snk", "FAILED")
        trace = next(t for t in _status(worker, "snk")["tasks"] if t["id"] == 0).get("trace", "")
        assert "task host process" in trace and str(killed) in trace, trace
        # the other connector's task, in the other host, goes on: its lines still reach the topic
        _append(source_file, _lines(100, 200))
        wait_until(lambda: _topic_end(tmp_path, "lines") >= 200, 30, what="the source to go on")
        assert _task_state(worker, "src") == "RUNNING"
        assert _running(source_pid)
        res = httpx.post(f"{worker.url}/connectors/snk/tasks/0/restart", timeout=30)
        assert res.status_code in (200, 202, 204), res.text
        _wait_task_state(worker, "snk", "RUNNING")
        wait_until(lambda: len(_task_hosts(cli.log(), "snk", 0)) == 2, 30, what="the sink task's second start")
        log = cli.log()
        new_pid = _host_pid(log, _task_hosts(log, "snk", 0)[-1])
        cleanup.append(new_pid)
        assert new_pid not in (killed, source_pid), f"restarted in host pid {new_pid}\n{log}"
        assert new_pid in _host_children(_pid(cli))
        _append(source_file, _lines(200, 300))
        wait_until(lambda: {f"line-{i:06d}" for i in range(300)} <= set(sink_file.read_text().splitlines()), 30,
                   what="every line in the sink after the restart")
    finally:
        log = worker.stop()
    assert re.search(rf"ERROR Task host {sink_host} \(pid {killed}\) exited \(killed by signal 9\) while running "
                     r"1 task\(s\): snk-0", log), log


# --- d: pause and resume ------------------------------------------------------------------------------------

def test_pause_and_resume_of_tasks_running_in_hosts(tmp_path):
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text(_lines(0, 100))
    worker = RestWorker(tmp_path, _source(tmp_path), _sink(tmp_path), **TWO_HOSTS)
    _create_topic(worker.cfg)
    cli = _cli(worker.start())
    try:
        _wait_task_state(worker, "snk", "RUNNING")
        wait_until(lambda: line_count(sink_file) >= 100, 30, what="the first lines in the sink")
        assert _task_hosts(cli.log(), "snk", 0), "the sink task does not run in a task host"
        assert httpx.put(f"{worker.url}/connectors/snk/pause", timeout=30).status_code == 202
        _wait_task_state(worker, "snk", "PAUSED")
        _append(source_file, _lines(100, 300))
        # the source goes on filling the topic; the paused sink writes none of it
        wait_until(lambda: _topic_end(tmp_path, "lines") >= 300, 30, what="the topic to have the new lines")
        time.sleep(3.0)  # a sink that ignored the pause would have written them by now (it took < 1 s above)
        assert line_count(sink_file) == 100
        assert _task_state(worker, "snk") == "PAUSED"
        assert httpx.put(f"{worker.url}/connectors/snk/resume", timeout=30).status_code == 202
        _wait_task_state(worker, "snk", "RUNNING")
        wait_until(lambda: line_count(sink_file) >= 300, 30, what="the lines written while paused")
        assert sink_file.read_text() == _lines(0, 300)
        # the source, in the other host: paused, it reads none of the lines appended meanwhile
        assert _task_hosts(cli.log(), "src", 0) != _task_hosts(cli.log(), "snk", 0)
        assert httpx.put(f"{worker.url}/connectors/src/pause", timeout=30).status_code == 202
        _wait_task_state(worker, "src", "PAUSED")
        _append(source_file, _lines(300, 400))
        time.sleep(3.0)
        assert _topic_end(tmp_path, "lines") == 300
        assert httpx.put(f"{worker.url}/connectors/src/resume", timeout=30).status_code == 202
        _wait_task_state(worker, "src", "RUNNING")
        wait_until(lambda: line_count(sink_file) >= 400, 30, what="the lines appended while the source was paused")
        assert sink_file.read_text() == _lines(0, 400)
    finally:
        worker.stop()


# --- e: task.processes=0 ------------------------------------------------------------------------------------

def test_task_processes_0_runs_every_task_in_the_worker(tmp_path):
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text(_lines(0, 500))
    # what is checked is that 0 turns the hosts off whatever the number of cores
    worker = RestWorker(tmp_path, _source(tmp_path), _sink(tmp_path), task_processes=0)
    _create_topic(worker.cfg)
    cli = _cli(worker.start())
    try:
        _wait_task_state(worker, "src", "RUNNING")
        _wait_task_state(worker, "snk", "RUNNING")
        wait_until(lambda: line_count(sink_file) >= 500, 30, what="the lines in the sink")
        _append(source_file, _lines(500, 600))
        wait_until(lambda: line_count(sink_file) >= 600, 30, what="the appended lines in the sink")
        assert sink_file.read_text() == _lines(0, 600)
        assert not _host_children(_pid(cli))
        log = cli.log()
        assert "task-host-" not in log and "Task host" not in log, log
    finally:
        worker.stop()


# --- a topic created after the sink subscribed --------------------------------------------------------------

def test_a_sink_gets_its_topic_when_a_task_in_another_host_creates_it(tmp_path):
    """The sink subscribes to a topic that does not exist yet; the source, in the other host, creates it.

    In one process the sink is assigned the new topic within the embedded consumer's metadata.max.age.ms (5 s)
    at most (about a second here with task.processes=0); a sink in a host must not wait longer.
    """
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text(_lines(0, 100))
    worker = RestWorker(tmp_path, _sink(tmp_path), **TWO_HOSTS)
    cli = _cli(worker.start())
    try:
        _wait_task_state(worker, "snk", "RUNNING")
        wait_until(lambda: "Sink task subscribed to ['lines']" in cli.log(), 30, what="the sink's subscription")
        res = httpx.post(f"{worker.url}/connectors", timeout=30, json={"name": "src", "config": {
            "connector.class": "FileStreamSource", "tasks.max": "1", "file": str(source_file), "topic": "lines"}})
        assert res.status_code == 201, res.text
        _wait_task_state(worker, "src", "RUNNING")
        log = cli.log()
        assert _task_hosts(log, "src", 0) != _task_hosts(log, "snk", 0), log
        wait_until(lambda: line_count(sink_file) >= 100, 15, interval=0.2,
                   what="the sink to be assigned the topic the source created, and write its lines")
        assert sink_file.read_text() == _lines(0, 100)
    finally:
        worker.stop()
