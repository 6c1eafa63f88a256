"""Issue #35 item 6: slow clients, idle connections and connection limits on every listener.

Each test runs a real worker (the shipped configs) and, beside an attack, checks that a normal request is answered
within 2 s, that the source under attack stays RUNNING, and what the attackers got:

- trickling clients (one byte every 2 s, in the headers or in the body) are cut off with 408 once their request's
  deadline passes, and never hold a request thread meanwhile;
- idle connections (1,000 to HttpSource and 1,000 to TcpJsonSource on one worker) cost no thread and little
  memory;
- beyond a listener's connection limit new connections are refused, while clients already connected still work.
"""

from __future__ import annotations

import base64
import json
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from connect.log import open_log_reader
from tests.edge.harness import EdgeWorker, answered_within, connector_file
from tests.support import connect_standalone, free_port, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# The deadlines the tests set (the defaults are 10 s for headers and 30 s for a body): short, so that a test sees
# the slow clients cut off within its time.
TEST_DEADLINE_MS = 4000
# How late a slow client may be cut off after its deadline on this loaded machine.
CUT_OFF_MARGIN_S = 6.0
# What 1,000 idle connections may add to the worker's resident set: 10 KiB each (the target), for 2,000.
IDLE_CONNECTION_BYTES = 10 * 1024
TRICKLE_INTERVAL_S = 2.0


class Tricklers:
    """``count`` clients that each send ``head`` at once, then one more byte every 2 s until the server closes
    their connection. Records what each got back and when the server closed it."""

    def __init__(self, port: int, heads: list[bytes], byte: bytes = b"x") -> None:
        self.port = port
        self.heads = heads
        self.byte = byte
        self.sockets: list[socket.socket] = []
        self.started: list[float] = []
        self.closed_at: dict[int, float] = {}
        self.answers: dict[int, bytes] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tricklers", daemon=True)

    def start(self) -> Tricklers:
        for head in self.heads:
            sock = socket.create_connection(("127.0.0.1", self.port))
            sock.sendall(head)
            self.sockets.append(sock)
            self.started.append(time.monotonic())
        self._thread.start()
        return self

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        for i, sock in enumerate(self.sockets):
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, i)
            self.answers[i] = b""
        next_byte = time.monotonic() + TRICKLE_INTERVAL_S
        while not self._stop.is_set() and len(self.closed_at) < len(self.sockets):
            for key, _ in selector.select(timeout=max(0.0, min(0.2, next_byte - time.monotonic()))):
                i = key.data
                try:
                    data = self.sockets[i].recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data:
                    self.answers[i] += data
                else:
                    self.closed_at[i] = time.monotonic()
                    selector.unregister(self.sockets[i])
            if time.monotonic() >= next_byte:
                next_byte += TRICKLE_INTERVAL_S
                for i, sock in enumerate(self.sockets):
                    if i not in self.closed_at:
                        try:
                            sock.send(self.byte)
                        except OSError:
                            pass  # reset: the read above records the close
        selector.close()

    def wait_all_closed(self, timeout: float) -> None:
        wait_until(lambda: len(self.closed_at) == len(self.sockets), timeout, interval=0.2,
                   what=f"the server to close all {len(self.sockets)} slow clients "
                        f"({len(self.closed_at)} closed so far)")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock in self.sockets:
            sock.close()


def header_trickle(method: str, path: str) -> bytes:
    """A request whose headers never end: one more byte of a header value every 2 s."""
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".encode()


def body_trickle(path: str, length: int = 1000) -> bytes:
    """A request whose headers are complete and whose body comes one byte every 2 s."""
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def assert_cut_off_after_deadline(tricklers: Tricklers, deadline_s: float) -> None:
    """Every slow client closed by the server no sooner than its deadline allows and not much later, answered
    408 (its request timed out), never 200."""
    for i, closed in tricklers.closed_at.items():
        lasted = closed - tricklers.started[i]
        assert deadline_s - 0.5 <= lasted <= deadline_s + CUT_OFF_MARGIN_S, (i, lasted)
        answer = tricklers.answers[i]
        assert answer.startswith(b"HTTP/1.1 408 "), (i, answer[:200])


@pytest.fixture
def tricklers_to_stop() -> Iterator[list[Tricklers]]:
    started: list[Tricklers] = []
    yield started
    for t in started:
        t.stop()


def _authorized(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.mark.parametrize("separate_process", ["true", "false"])
def test_trickling_clients_do_not_delay_an_authenticated_rest_request(tmp_path: Path, separate_process: str,
                                                                       tricklers_to_stop: list[Tricklers]) -> None:
    users = tmp_path / "rest-users.properties"
    users.write_text("admin=s3cret\n")
    worker = EdgeWorker(tmp_path, worker_overrides={
        # the listeners in the REST front process (the default), and in the worker itself
        "rest.separate.process": separate_process,
        "rest.extension.classes": "BasicAuthSecurityRestExtension",
        "rest.basic.auth.credentials.file": str(users),
        # short deadlines so that the test sees the slow clients cut off within its time
        "rest.request.header.timeout.ms": TEST_DEADLINE_MS,
        "rest.request.body.timeout.ms": TEST_DEADLINE_MS,
    })
    # the harness waits for an unauthenticated /health, which basic authentication answers 401
    worker.proc = connect_standalone(tmp_path, worker.config)
    auth = _authorized("admin", "s3cret")

    def healthy() -> bool:
        try:
            return httpx.get(f"{worker.url}/health", headers=auth, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(healthy, 60, what="REST /health")
        # 20 clients that never finish their headers and 20 that never finish their body, all unauthenticated
        heads = [header_trickle("GET", "/connectors")] * 20 + [body_trickle("/connectors")] * 20
        tricklers = Tricklers(worker.port, heads).start()
        tricklers_to_stop.append(tricklers)
        time.sleep(2 * TRICKLE_INTERVAL_S)  # each has sent a byte or two more: all of them are under way
        listing = answered_within(2.0, lambda: httpx.get(f"{worker.url}/connectors", headers=auth, timeout=30))
        assert listing.status_code == 200 and listing.json() == []
        tricklers.wait_all_closed(TEST_DEADLINE_MS / 1000 + CUT_OFF_MARGIN_S + 5)
        assert_cut_off_after_deadline(tricklers, TEST_DEADLINE_MS / 1000)
        assert answered_within(2.0, lambda: httpx.get(f"{worker.url}/connectors", headers=auth,
                                                      timeout=30)).status_code == 200
    finally:
        worker.stop()


def topic_messages(tmp: Path, topic: str) -> list[str]:
    """The ``message`` of every record of ``topic`` in the worker's embedded log (``headrace-data`` of its
    working directory, as the shipped config has it)."""
    reader = open_log_reader({"embedded.log.dir": str(tmp / "headrace-data")})
    out: list[str] = []
    try:
        for tp, (start, end) in reader.partition_offsets([topic]).items():
            position = start
            while position < end:
                found = reader.read(tp.topic, tp.partition, position, end)
                for batch in found.batches:
                    out.extend(json.loads(v)["payload"]["message"] for v in batch.values if v is not None)
                if found.next_offset <= position:
                    break
                position = found.next_offset
    except Exception:  # the topic does not exist yet
        return []
    finally:
        reader.close()
    return out


def http_source(tmp: Path, port: int, **changes: Any) -> Path:
    return connector_file(tmp, "connect-http-source.properties", listeners=f"http://127.0.0.1:{port}",
                          topic="http-logs", **changes)


def tcp_json_source(tmp: Path, port: int, **changes: Any) -> Path:
    return connector_file(tmp, "connect-tcp-json-source.properties", listeners=f"tcp://127.0.0.1:{port}",
                          topic="tcp-logs", **changes)


def post_event(port: int, message: str) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}/", content=json.dumps({"message": message}), timeout=30)


def test_trickling_clients_do_not_delay_a_post_to_http_source(tmp_path: Path,
                                                               tricklers_to_stop: list[Tricklers]) -> None:
    port = free_port()
    worker = EdgeWorker(tmp_path).start()
    try:
        # short deadlines so that the test sees the slow clients cut off within its time
        worker.create(http_source(tmp_path, port, **{"http.header.timeout.ms": TEST_DEADLINE_MS,
                                                     "http.body.timeout.ms": TEST_DEADLINE_MS}))
        assert post_event(port, "before").status_code == 200
        heads = [header_trickle("POST", "/")] * 20 + [body_trickle("/")] * 20
        tricklers = Tricklers(port, heads, byte=b" ").start()
        tricklers_to_stop.append(tricklers)
        time.sleep(2 * TRICKLE_INTERVAL_S)
        answer = answered_within(2.0, lambda: post_event(port, "beside"))
        assert answer.status_code == 200 and answer.json() == {"accepted": 1}
        tricklers.wait_all_closed(TEST_DEADLINE_MS / 1000 + CUT_OFF_MARGIN_S + 5)
        assert_cut_off_after_deadline(tricklers, TEST_DEADLINE_MS / 1000)
        worker.assert_running("http-logs")
        assert post_event(port, "after").status_code == 200
        assert topic_messages(tmp_path, "http-logs") == ["before", "beside", "after"]
    finally:
        log = worker.stop()
    assert "Traceback" not in log


def open_idle(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]


def send_line(port: int, message: str) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(json.dumps({"message": message}).encode() + b"\n")


def delivered_within(seconds: float, tmp: Path, topic: str, message: str, send: Callable[[], None]) -> None:
    """``send`` a TCP event (no answer in that protocol) and check it is in the topic within ``seconds``."""
    def arrived() -> None:
        send()
        wait_until(lambda: message in topic_messages(tmp, topic), seconds, interval=0.05,
                   what=f"{message!r} in {topic}")
    answered_within(seconds, arrived)


def test_a_thousand_idle_connections_to_each_source_cost_no_thread_and_little_memory(tmp_path: Path) -> None:
    http_port, tcp_port = free_port(), free_port()
    worker = EdgeWorker(tmp_path).start()
    idle: list[socket.socket] = []
    try:
        worker.create(http_source(tmp_path, http_port))
        worker.create(tcp_json_source(tmp_path, tcp_port))
        assert post_event(http_port, "quiet").status_code == 200
        delivered_within(2.0, tmp_path, "tcp-logs", "quiet", lambda: send_line(tcp_port, "quiet"))
        time.sleep(1)
        before = worker.rss_bytes()
        # one worker holding 2,000 connections: their file descriptors go past 1024, where select() stops
        idle = open_idle(tcp_port, 1000) + open_idle(http_port, 1000)
        time.sleep(3)  # every one accepted and waiting
        grown = worker.rss_bytes() - before
        assert grown < IDLE_CONNECTION_BYTES * len(idle), f"{grown / len(idle):.0f} bytes per idle connection"
        answer = answered_within(2.0, lambda: post_event(http_port, "beside idle"))
        assert answer.status_code == 200
        delivered_within(2.0, tmp_path, "tcp-logs", "beside idle", lambda: send_line(tcp_port, "beside idle"))
        worker.assert_running("http-logs")
        worker.assert_running("tcp-json-logs")
        for sock in idle[:1000]:  # the TCP ones still open: nothing closed them
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)
    finally:
        for sock in idle:
            sock.close()
        log = worker.stop()
    assert "Traceback" not in log
    assert topic_messages(tmp_path, "http-logs") == ["quiet", "beside idle"]


def _refused(port: int) -> bool:
    """A new connection the server closes at once (with a 503 first, or nothing)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.settimeout(5)
        got = b""
        try:
            while chunk := sock.recv(4096):
                got += chunk
        except ConnectionResetError:
            pass
        except TimeoutError:
            return False
    return got == b"" or got.startswith(b"HTTP/1.1 503 ")


def test_beyond_the_connection_limit_new_connections_are_refused_and_connected_clients_still_work(
        tmp_path: Path) -> None:
    http_port, tcp_port = free_port(), free_port()
    # a small limit on each listener, so that the test fills it
    worker = EdgeWorker(tmp_path, worker_overrides={"rest.max.connections": 20}).start()
    idle: list[socket.socket] = []
    try:
        worker.create(http_source(tmp_path, http_port, **{"http.max.connections": 20}))
        worker.create(tcp_json_source(tmp_path, tcp_port, **{"max.connections": 20}))
        with httpx.Client(base_url=worker.url, timeout=10) as rest, \
                httpx.Client(base_url=f"http://127.0.0.1:{http_port}", timeout=10) as sender, \
                socket.create_connection(("127.0.0.1", tcp_port)) as tcp_sender:
            assert rest.get("/connectors").status_code == 200  # each client's connection is open now
            assert sender.post("/", content='{"message": "first"}').status_code == 200
            tcp_sender.sendall(b'{"message": "first"}\n')
            idle = open_idle(worker.port, 19) + open_idle(http_port, 19) + open_idle(tcp_port, 19)
            time.sleep(1)
            for port in (worker.port, http_port, tcp_port):
                assert _refused(port), port
            # the clients already connected are served as before
            assert answered_within(2.0, lambda: rest.get("/connectors")).status_code == 200
            assert answered_within(2.0, lambda: sender.post("/", content='{"message": "second"}')).status_code == 200
            tcp_sender.sendall(b'{"message": "second"}\n')
            wait_until(lambda: topic_messages(tmp_path, "tcp-logs") == ["first", "second"], 10,
                       what="both TCP events")
            for sock in idle:
                sock.close()
            idle = []
            # once the others are gone, new connections are served again
            wait_until(lambda: post_event(http_port, "third").status_code == 200, 10, what="a new HTTP client")
        worker.assert_running("http-logs")
        worker.assert_running("tcp-json-logs")
    finally:
        for sock in idle:
            sock.close()
        log = worker.stop()
    assert "refused a connection" in log
    assert topic_messages(tmp_path, "http-logs") == ["first", "second", "third"]
