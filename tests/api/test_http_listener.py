"""connect.api.http_listener on a real socket: requests read off the request threads under deadlines, idle
connections that cost no thread, the connection limit, and the HTTP details the read-ahead must keep
(pipelining, chunked bodies, Expect: 100-continue, TLS). The request pool has ONE thread in most tests: a
client that could hold it would block every other one."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from connect.api.http_listener import FREE_READ_BYTES, GuardedServer, ListenerLimits
from tests.rest.tls_certs import make_certs
from tests.support import wait_until

pytestmark = pytest.mark.timeout(60)


def _echo(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length > 1 << 20:
        start_response("413 Content Too Large", [("Content-Length", "0")])
        return []
    stream = environ["wsgi.input"]
    body = stream.read(length) if length else stream.read()
    if environ.get("PATH_INFO") == "/big":
        body = b"b" * (32 << 20)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


class Served:
    def __init__(self, limits: ListenerLimits, threads: int = 1, tls: Any = None) -> None:
        self.events: list[str] = []
        self.server = GuardedServer(("127.0.0.1", 0), _echo, limits, "test-listener", numthreads=threads,
                                    on_event=self.events.append)
        if tls is not None:
            self.server.ssl_adapter = tls
        self.server.prepare()
        self.thread = threading.Thread(target=self.server.serve, daemon=True)
        self.thread.start()
        self.port = self.server.bind_addr[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def stop(self) -> None:
        self.server.stop()
        self.thread.join(10)


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(threads: int = 1, tls: Any = None, **limits: Any) -> Served:
        defaults: dict[str, Any] = {"header_timeout": 1.0, "body_timeout": 1.0, "idle_timeout": 5.0,
                                    "max_connections": 100, "max_body_bytes": 1 << 20}
        served = Served(ListenerLimits(**{**defaults, **limits}), threads, tls)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


def _answer(sock: socket.socket, timeout: float = 10.0) -> bytes:
    """What the server sends until it closes the connection."""
    sock.settimeout(timeout)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except ConnectionResetError:
        pass
    return got


def _timed(call: Callable[[], Any]) -> tuple[Any, float]:
    start = time.monotonic()
    result = call()
    return result, time.monotonic() - start


@pytest.mark.parametrize("head", [
    b"POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ",  # headers that never end
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{",  # a body that never ends
])
def test_a_slow_request_holds_no_thread_and_is_cut_off_with_408_at_its_deadline(serve, head):
    served = serve(threads=1)
    slow = served.connect()
    slow.sendall(head)
    trickle = threading.Thread(target=lambda: [time.sleep(0.3) or slow.send(b"a") for _ in range(3)], daemon=True)
    trickle.start()
    # the one request thread is free for everyone else meanwhile
    answer, took = _timed(lambda: httpx.post(served.url, content=b"normal", timeout=5))
    assert answer.status_code == 200 and answer.content == b"normal" and took < 0.5
    reply, lasted = _timed(lambda: _answer(slow))
    assert reply.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), reply
    assert b"did not arrive within 1 s" in reply and 0.5 < lasted < 3, lasted
    assert "request_timed_out" in served.events


def test_idle_connections_take_no_thread_and_are_closed_after_the_idle_timeout(serve):
    served = serve(threads=1, idle_timeout=1.0)
    idle = [served.connect() for _ in range(50)]
    answer, took = _timed(lambda: httpx.post(served.url, content=b"beside idle", timeout=5))
    assert answer.status_code == 200 and took < 0.5
    assert all(_answer(sock, 5) == b"" for sock in idle)  # closed silently
    assert served.events.count("idle_connection_closed") >= 50
    for sock in idle:
        sock.close()


def test_connections_with_descriptors_past_1024_are_served_like_the_others(serve):
    # select() cannot watch a descriptor past 1023: a listener that used it handed such connections to its
    # threads as if they had sent a request
    served = serve(threads=2, idle_timeout=30.0, max_connections=2000)
    idle = [served.connect() for _ in range(1100)]  # 2,200 descriptors in this process, both ends
    try:
        answer, took = _timed(lambda: httpx.post(served.url, content=b"past 1024", timeout=10))
        assert answer.status_code == 200 and took < 1.0, took
        assert served.server.open_connections >= 1100
    finally:
        for sock in idle:
            sock.close()


def test_beyond_the_limit_a_new_connection_gets_503_and_an_open_one_is_still_served(serve):
    served = serve(threads=1, max_connections=5)
    with httpx.Client(base_url=served.url, timeout=5) as kept:
        assert kept.post("/", content=b"first").status_code == 200  # its connection stays open
        others = [served.connect() for _ in range(4)]
        time.sleep(0.2)
        refused = _answer(served.connect(), 5)
        assert refused.startswith(b"HTTP/1.1 503 Service Unavailable\r\n") and b"max_connections" in refused
        assert kept.post("/", content=b"second").content == b"second"
        for sock in others:
            sock.close()
    time.sleep(0.2)
    assert httpx.post(served.url, content=b"again", timeout=5).status_code == 200
    assert served.events.count("refused_connection") == 1
    wait_until(lambda: served.server.open_connections == 0, 5, what="every connection closed and counted")


def test_pipelined_requests_on_one_connection_are_all_answered_in_order(serve):
    served = serve(threads=1)
    sock = served.connect()
    one = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n"
    sock.sendall(one + b"AAA" + one + b"BBB" + b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    reply = _answer(sock)
    assert reply.count(b"HTTP/1.1 200 OK") == 3
    assert reply.index(b"AAA") < reply.index(b"BBB")


def test_chunked_bodies_are_read_whole_and_a_malformed_one_is_answered_at_once(serve):
    served = serve(threads=1)

    def pieces() -> Iterator[bytes]:
        yield b"x" * 100_000
        yield b"y" * 5

    answer = httpx.post(served.url, content=pieces(), timeout=5)  # chunked: no length known
    assert answer.status_code == 200 and answer.content == b"x" * 100_000 + b"yyyyy"
    sock = served.connect()
    sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n")
    # the application's reader finds it malformed (this one fails with it: 500), not a deadline
    reply, took = _timed(lambda: _answer(sock))
    assert reply.startswith(b"HTTP/1.1 500 ") and took < 0.5


def test_a_body_over_the_limit_goes_to_the_application_unread(serve):
    served = serve(threads=1, max_body_bytes=1 << 20)
    sock = served.connect()
    # 2 MiB announced, nothing of it sent: the application refuses it at once instead of waiting for it
    sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n")
    reply, took = _timed(lambda: _answer(sock))
    assert reply.startswith(b"HTTP/1.1 413 ") and took < 0.5


def test_expect_100_continue_is_answered_before_the_body_is_read(serve):
    served = serve(threads=1)
    sock = served.connect()
    sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n"
                 b"Connection: close\r\n\r\n")
    sock.settimeout(5)
    assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
    sock.sendall(b"hello")
    reply = _answer(sock)
    assert reply.startswith(b"HTTP/1.1 200 OK") and reply.endswith(b"hello")
    assert b"100 Continue" not in reply  # said once


def test_a_body_beyond_the_shared_budget_is_read_by_the_request_thread(serve):
    served = serve(threads=1, buffer_bytes=0, body_timeout=5.0)
    body = b"q" * (FREE_READ_BYTES * 8)
    assert httpx.post(served.url, content=body, timeout=5).content == body


def test_a_client_that_does_not_read_its_answer_frees_the_thread_at_the_deadline(serve):
    served = serve(threads=1, body_timeout=1.0)
    sock = served.connect()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")  # 32 MiB answer, never read
    time.sleep(0.2)
    answer, took = _timed(lambda: httpx.post(served.url, content=b"next", timeout=10))
    assert answer.status_code == 200 and took < 3, took
    sock.close()


def test_a_tls_client_that_never_shakes_hands_blocks_no_one(serve, tmp_path: Path):
    certs = make_certs(tmp_path)
    from cheroot.ssl.builtin import BuiltinSSLAdapter

    adapter = BuiltinSSLAdapter(str(certs.server_store), str(certs.server_store))
    served = serve(threads=1, tls=adapter, header_timeout=1.0)
    silent = served.connect()  # TCP only: the handshake never starts
    context = ssl.create_default_context(cafile=str(certs.ca))
    answer, took = _timed(lambda: httpx.post(served.url, content=b"secure", timeout=5, verify=context))
    assert answer.status_code == 200 and answer.content == b"secure" and took < 1.0, took
    assert _answer(silent, 5) == b""  # closed once the handshake's deadline passed
    plain = served.connect()
    plain.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert _answer(plain, 5).startswith(b"HTTP/1.1 400 Bad Request")
