"""NetcatSource on a real socket with this test playing the runtime: one record per line, OK only once the
log acknowledged the line, FAILED for a line over max.line.length and when the log does not acknowledge."""

from __future__ import annotations

import socket
import threading

import pytest

from connect.api import SourceRecordBatch
from plugins.flume.netcat_source import NetcatSourceTask
from tests.plugins.task_contexts import SourceContext
from tests.support import free_port, wait_until


class _Runtime:
    """Plays the worker: polls the task and, unless told not to, acknowledges each polled batch."""

    def __init__(self, task: NetcatSourceTask, acknowledge: bool) -> None:
        self.task = task
        self.values: list[bytes] = []
        self.acknowledge = acknowledge
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            batch = self.task.poll()
            if batch:
                assert isinstance(batch, SourceRecordBatch)
                self.values.extend(batch.values)
                if self.acknowledge:
                    self.task.commit_batch(batch)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.fixture
def source():
    started: list[tuple[NetcatSourceTask, _Runtime]] = []

    def start(acknowledge: bool = True, **props: str) -> tuple[_Runtime, int]:
        port = free_port()
        config = {"name": "nc", "topic": "lines", "listeners": f"tcp://127.0.0.1:{port}", **props}
        task = NetcatSourceTask()
        task.initialize(SourceContext(config))
        task.start(config)
        runtime = _Runtime(task, acknowledge)
        started.append((task, runtime))
        return runtime, port

    yield start
    for task, runtime in started:
        task.stop()
        runtime.stop()


def _exchange(port: int, data: bytes, answers: int) -> list[bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        got = b""
        while got.count(b"\n") < answers:
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    return got.splitlines()


def test_each_line_is_a_record_answered_ok_once_acknowledged(source):
    runtime, port = source()
    answers = _exchange(port, b"first line\r\nsecond\n\nthird\n", 4)
    assert answers == [b"OK"] * 4
    assert runtime.values == [b"first line", b"second", b"", b"third"]


def test_a_line_over_max_line_length_is_answered_failed_and_skipped(source):
    runtime, port = source(**{"max.line.length": "10"})
    answers = _exchange(port, b"short\n" + b"x" * 30 + b"\nafter\n", 3)
    assert answers[0] == b"OK" and answers[2] == b"OK", answers
    assert answers[1].startswith(b"FAILED: Event exceeds the maximum length (10 chars"), answers
    assert runtime.values == [b"short", b"after"]


def test_lines_the_log_does_not_acknowledge_are_answered_failed(source):
    _, port = source(acknowledge=False, **{"ack.timeout.ms": "300"})
    answers = _exchange(port, b"one\ntwo\n", 2)
    assert answers == [b"FAILED: the log did not acknowledge within 0.3 s"] * 2


def test_without_ack_every_event_nothing_is_answered(source):
    runtime, port = source(**{"ack.every.event": "false"})
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"quiet\nlast without newline")
        sock.shutdown(socket.SHUT_WR)
        assert sock.recv(100) == b""
    wait_until(lambda: len(runtime.values) == 2, 5, what="both lines polled")
    assert runtime.values == [b"quiet", b"last without newline"]
