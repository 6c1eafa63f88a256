"""How ``connect-standalone`` ends (issue #38): quietly on SIGINT/SIGTERM at any moment, with one line on a bad
start.

Ctrl-C in a terminal sends SIGINT to the whole process group: the worker and its REST front process. Whenever
it comes, start-up included, both must end with no traceback and no ``KeyboardInterrupt``, the worker with
status 130 (SIGINT) or 0 (SIGTERM), as Python programs and Kafka Connect do, and no process of the group may
be left behind. The delays are counted from the spawn, so each lands in a different step of the start on an
idle machine (imports, the front's fork, plugins, connectors); on a loaded one they land earlier, still in
the start.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from connect.runtime.properties import load_config_file
from tests.support import (
    REPO,
    CliProcess,
    RestWorker,
    connect_standalone,
    free_port,
    wait_until,
    worker_properties,
    write_properties,
)

# generous: a stop on a loaded machine may take seconds, but never this long
_EXIT_TIMEOUT_S = 60.0


def _file_connectors(tmp: Path) -> list[Path]:
    """The shipped file source and sink, with their files in ``tmp``: start-up then starts connectors too."""
    (tmp / "test.txt").write_text("one\ntwo\n")
    source = dict(load_config_file(REPO / "configs" / "connect-file-source.properties"))
    source["file"] = str(tmp / "test.txt")
    sink = dict(load_config_file(REPO / "configs" / "connect-file-sink.properties"))
    sink["file"] = str(tmp / "test.sink.txt")
    return [write_properties(tmp / "source.properties", source), write_properties(tmp / "sink.properties", sink)]


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of the process group: an orphaned zombie may wait a while for its reaper."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # after the command name in parentheses: state, ppid, pgrp
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


def _wait_exit(proc: CliProcess) -> int:
    assert proc.proc is not None
    try:
        return proc.proc.wait(_EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.proc.pid, signal.SIGKILL)
        proc.proc.wait(10)
        raise AssertionError(f"still running {_EXIT_TIMEOUT_S:.0f} s after the signal:\n{proc.log()}") from None


def _assert_quiet_exit(proc: CliProcess, expected: int) -> None:
    assert proc.proc is not None
    code = _wait_exit(proc)
    out = proc.log()
    assert code == expected, out
    assert "Traceback" not in out, out
    assert "KeyboardInterrupt" not in out, out
    # the front process ends with the worker: nothing of the group is left
    wait_until(lambda: not _group_members(proc.proc.pid), 15, what="no process of the group left")


_SIGNALS = [pytest.param(signal.SIGINT, 130, id="SIGINT"), pytest.param(signal.SIGTERM, 0, id="SIGTERM")]


@pytest.mark.parametrize("sig,expected", _SIGNALS)
@pytest.mark.parametrize("delay", [0.3, 0.8, 1.2])
def test_a_signal_during_start_up_ends_both_processes_quietly(tmp_path: Path, sig: signal.Signals, expected: int,
                                                              delay: float) -> None:
    proc = connect_standalone(tmp_path, worker_properties(tmp_path, free_port()), *_file_connectors(tmp_path))
    assert proc.proc is not None
    time.sleep(delay)
    os.killpg(proc.proc.pid, sig)  # as Ctrl-C in a terminal: to the whole group
    _assert_quiet_exit(proc, expected)


@pytest.mark.parametrize("sig,expected", _SIGNALS)
def test_a_signal_to_a_started_worker_ends_both_processes_quietly(tmp_path: Path, sig: signal.Signals,
                                                                  expected: int) -> None:
    worker = RestWorker(tmp_path, *_file_connectors(tmp_path)).start()
    proc = worker.proc
    assert proc is not None and proc.proc is not None
    wait_until(lambda: "worker started" in proc.log(), 30, what="the worker started")
    os.killpg(proc.proc.pid, sig)
    _assert_quiet_exit(proc, expected)
    assert "Headrace standalone worker stopped" in proc.log()


def _run(tmp: Path, *args: Path) -> tuple[int, list[str], str]:
    proc = connect_standalone(tmp, *args)
    code = _wait_exit(proc)
    out = proc.log()
    assert "Traceback" not in out, out
    assert proc.proc is not None
    wait_until(lambda: not _group_members(proc.proc.pid), 15, what="no process of the group left")
    return code, [line for line in out.splitlines() if "ERROR" in line], out


@pytest.mark.parametrize("separate", ["true", "false"])
def test_a_port_in_use_is_one_line_naming_the_listener(tmp_path: Path, separate: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cfg = worker_properties(tmp_path, port, rest_separate_process=separate)  # the test's variable
        code, errors, out = _run(tmp_path, cfg)
    assert code != 0
    assert errors == [f"ERROR listeners=http://127.0.0.1:{port}: the port is in use by another process; "
                      "choose another port in listeners"], out
    assert "listening" not in out, out


def test_a_sink_without_topics_is_one_line_naming_the_key(tmp_path: Path) -> None:
    sink = dict(load_config_file(REPO / "configs" / "connect-file-sink.properties"))
    del sink["topics"]
    sink["file"] = str(tmp_path / "test.sink.txt")
    path = write_properties(tmp_path / "sink.properties", sink)
    code, errors, out = _run(tmp_path, worker_properties(tmp_path, free_port()), path)
    assert code != 0
    assert len(errors) == 1, out
    assert errors[0].startswith(f"ERROR {path}: topics: "), out
    assert "listening" not in out, out


def test_a_refused_worker_config_reports_no_listener(tmp_path: Path) -> None:
    cfg = worker_properties(tmp_path, free_port(), key_converter="no.such.Converter")  # the config refused
    code, errors, out = _run(tmp_path, cfg)
    assert code != 0
    assert len(errors) == 1 and "key.converter" in errors[0], out
    assert "listening" not in out, out
    # the front process, stopped first, prints nothing after the error
    assert out.rstrip().splitlines()[-1] == errors[0], out


def test_a_connector_restored_from_the_config_topic_is_logged_with_where_it_came_from(tmp_path: Path) -> None:
    worker = RestWorker(tmp_path).start()
    with httpx.Client(base_url=worker.url, timeout=30) as c:
        r = c.post("/connectors", json={"name": "my-sink", "config": {
            "connector.class": "FileStreamSink", "topics": "connect-test", "file": str(tmp_path / "out.txt")}})
        assert r.status_code == 201, r.text
    first = worker.stop()
    assert "Restored connector" not in first
    again = RestWorker(tmp_path).start()  # the same state, on a new port
    assert again.proc is not None
    wait_until(lambda: "worker started" in again.proc.log(), 30, what="the worker started")
    log = again.stop()[len(first):]
    [line] = [line for line in log.splitlines() if "Restored connector" in line]
    assert " INFO " in line
    assert "Restored connector my-sink from config topic connect-configs (created" in line
    assert "DELETE /connectors/my-sink to remove it" in line
