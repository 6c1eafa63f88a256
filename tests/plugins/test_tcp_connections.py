"""The TCP connections of a stream source (TcpJsonSource) on real sockets, this test playing the runtime: a
slow or idle client delays nobody, idle ones are closed, the connection limit holds, and a task that falls
behind stops reading a connection without losing what it sent."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from plugins.ingest.tcp_json import TcpJsonSourceTask
from tests.plugins.task_contexts import SourceContext
from tests.support import free_port, wait_until

pytestmark = pytest.mark.timeout(60)




@pytest.fixture
def source() -> Iterator[Any]:
    started: list[TcpJsonSourceTask] = []

    def start(**props: str) -> tuple[TcpJsonSourceTask, int]:
        port = free_port()
        config = {"name": "t", "topic": "logs", "listeners": f"tcp://127.0.0.1:{port}", **props}
        task = TcpJsonSourceTask()
        task.initialize(SourceContext(config))
        task.start(config)
        started.append(task)
        return task, port

    yield start
    for task in started:
        task.stop()


def _messages(task: TcpJsonSourceTask, count: int, timeout: float = 10.0) -> list[str]:
    got: list[str] = []

    def polled() -> bool:
        records = task.poll() or []
        got.extend(r.value.get("message") for r in records)
        return len(got) >= count

    wait_until(polled, timeout, interval=0, what=f"{count} events")
    return got


def _closed_by_server(sock: socket.socket, timeout: float = 5.0) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_slow_client_and_idle_ones_delay_no_other_sender(source):
    task, port = source()
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
    slow = socket.create_connection(("127.0.0.1", port))
    slow.sendall(b'{"message": "slo')  # and the rest never
    with socket.create_connection(("127.0.0.1", port)) as sender:
        sender.sendall(b'{"message": "normal"}\n')
        assert _messages(task, 1, timeout=2) == ["normal"]
    wait_until(lambda: len(task.connections) == 201, 5, what="the idle and slow connections still open")
    for sock in [*idle, slow]:
        sock.close()


def test_idle_connections_are_closed_after_the_idle_timeout(source):
    task, port = source(**{"idle.timeout.ms": "300"})
    idle = socket.create_connection(("127.0.0.1", port))
    started = time.monotonic()
    assert _closed_by_server(idle)
    assert 0.25 < time.monotonic() - started < 3
    wait_until(lambda: "idle_connections_closed=1" in task.counters.text(), 5, what="the count")
    wait_until(lambda: not task.connections, 5, what="the connection forgotten")
    idle.close()


def test_beyond_max_connections_new_ones_are_closed_and_open_ones_still_deliver(source):
    task, port = source(**{"max.connections": "2"})
    with socket.create_connection(("127.0.0.1", port)) as first, \
            socket.create_connection(("127.0.0.1", port)) as second:
        first.sendall(b'{"message": "a"}\n')
        assert _messages(task, 1) == ["a"]
        with socket.create_connection(("127.0.0.1", port)) as third:
            assert _closed_by_server(third)
        second.sendall(b'{"message": "b"}\n')
        assert _messages(task, 1) == ["b"]
    assert "refused_connections=1" in task.counters.text()


def test_a_task_behind_stops_reading_and_then_takes_everything_in_order(source):
    task, port = source(**{"max.pending.events": "3"})
    lines = b"".join(b'{"message": "m%d"}\n' % i for i in range(2000))
    with socket.create_connection(("127.0.0.1", port)) as sender:
        sender.sendall(lines)
        time.sleep(0.3)  # nothing polled meanwhile: the queue is full, the connection waits
        assert task._queued <= 2000
        got = _messages(task, 2000, timeout=30)
    assert got == [f"m{i}" for i in range(2000)]
    assert "received=2000" in task.counters.text()
