"""TaskChannel, the worker <-> task host link, over a real Unix socket pair (no services, no processes)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from connect.runtime.task_channel import MAX_MESSAGE_BYTES, ChannelClosed, RemoteError, TaskChannel

pytestmark = pytest.mark.timeout(30)

WAIT = 10.0  # how long a test waits for what should take milliseconds: a loaded machine is slow, not stuck


class _End:
    """One end of a channel and what its handler saw."""

    def __init__(self, sock: socket.socket, name: str, handler: Any = None) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.closed = threading.Event()
        self.channel = TaskChannel(sock, handler or self._record, name=name, on_close=self.closed.set)

    def _record(self, method: str, args: dict[str, Any]) -> Any:
        self.seen.append((method, args))
        return None


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    yield a, b
    for s in (a, b):
        s.close()


def _started(end: _End) -> _End:
    end.channel.start()
    return end


def _read_message(sock: socket.socket) -> dict[str, Any]:
    """One message as the channel frames it, read by hand (the test plays the other end)."""
    (length,) = struct.unpack(">I", _recv_exact(sock, 4))
    return orjson.loads(_recv_exact(sock, length))


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the channel ended"
        data += chunk
    return data


def test_a_call_gets_its_reply(pair):
    def handler(method: str, args: dict[str, Any]) -> Any:
        return {"method": method, "sum": args["a"] + args["b"]}

    worker = _started(_End(pair[0], "worker"))
    _started(_End(pair[1], "host", handler))
    assert worker.channel.call("add", a=2, b=3) == {"method": "add", "sum": 5}
    # many calls at once from several threads: each caller gets its own reply, not another's
    results: dict[int, Any] = {}

    def caller(n: int) -> None:
        results[n] = worker.channel.call("add", a=n, b=1000)["sum"]

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert results == {n: n + 1000 for n in range(20)}


def test_a_handler_error_comes_back_as_remote_error_with_its_message(pair):
    def handler(method: str, args: dict[str, Any]) -> Any:
        if method == "fail":
            raise ValueError(f"no task {args['task']}")
        return "fine"

    worker = _started(_End(pair[0], "worker"))
    host = _started(_End(pair[1], "host", handler))
    with pytest.raises(RemoteError, match=r"^ValueError: no task 7$"):
        worker.channel.call("fail", task=7)
    # the failing handler ended neither end
    assert worker.channel.call("other") == "fine"
    assert not worker.channel.closed and not host.channel.closed


def test_a_reply_that_is_not_plain_data_comes_back_as_remote_error(pair):
    worker = _started(_End(pair[0], "worker"))
    _started(_End(pair[1], "host", lambda method, args: object()))
    with pytest.raises(RemoteError, match="TypeError"):
        worker.channel.call("snapshot", timeout=WAIT)


def test_a_call_pending_when_the_other_end_closes_raises_channel_closed(pair):
    worker = _started(_End(pair[0], "worker"))
    outcome: list[BaseException | Any] = []

    def caller() -> None:
        try:
            outcome.append(worker.channel.call("start", timeout=None))  # no timeout: only the close can end it
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=caller)
    thread.start()
    assert _read_message(pair[1])["m"] == "start"  # the request went out: the call is pending
    pair[1].close()  # the host process died without replying
    thread.join(WAIT)
    assert not thread.is_alive(), "the call hung after the other end closed"
    assert len(outcome) == 1 and isinstance(outcome[0], ChannelClosed), outcome
    assert worker.closed.wait(WAIT) and worker.channel.closed
    # and later calls and notifies fail at once rather than wait
    with pytest.raises(ChannelClosed):
        worker.channel.call("again", timeout=None)
    with pytest.raises(ChannelClosed):
        worker.channel.notify("again")


def test_notify_messages_arrive_in_the_order_sent(pair):
    worker = _started(_End(pair[0], "worker"))
    host = _started(_End(pair[1], "host"))
    for n in range(2000):
        worker.channel.notify("status.task", n=n, pad="x" * (n % 97))
    # a call after them is answered after they were all handled: one reader thread, in order
    worker.channel.call("barrier", timeout=WAIT)
    assert [args.get("n") for _, args in host.seen] == [*range(2000), None]
    assert host.seen[-1][0] == "barrier"


def test_a_failing_notify_handler_does_not_end_the_channel(pair):
    def handler(method: str, args: dict[str, Any]) -> Any:
        if method == "bad":
            raise KeyError("connector")
        return "ok"

    worker = _started(_End(pair[0], "worker"))
    _started(_End(pair[1], "host", handler))
    worker.channel.notify("bad")
    assert worker.channel.call("good", timeout=WAIT) == "ok"


def test_a_length_above_the_maximum_ends_the_channel(pair):
    worker = _started(_End(pair[0], "worker"))
    pending: list[BaseException] = []

    def caller() -> None:
        try:
            worker.channel.call("snapshot", timeout=None)
        except BaseException as exc:
            pending.append(exc)

    thread = threading.Thread(target=caller)
    thread.start()
    _read_message(pair[1])
    # a broken stream: the length of a message no end ever sends; nothing must be read as its body
    pair[1].sendall(struct.pack(">I", MAX_MESSAGE_BYTES + 1) + b"{}")
    assert worker.closed.wait(WAIT), "on_close was not called"
    assert worker.channel.closed
    thread.join(WAIT)
    assert len(pending) == 1 and isinstance(pending[0], ChannelClosed)


def test_a_length_at_the_maximum_is_not_refused_for_its_size(pair):
    """The limit is on lengths above MAX_MESSAGE_BYTES: the boundary itself is read as a message (cut short here,
    so the stream ends, but only after the channel waited for the body)."""
    worker = _started(_End(pair[0], "worker"))
    pair[1].sendall(struct.pack(">I", MAX_MESSAGE_BYTES))
    assert not worker.closed.wait(0.5), "a length at the maximum was refused"
    pair[1].close()
    assert worker.closed.wait(WAIT)


def test_an_unanswered_call_times_out(pair):
    worker = _started(_End(pair[0], "worker"))
    # the other end reads requests and never answers (a host stuck in a task)
    with pytest.raises(TimeoutError, match="snapshot"):
        worker.channel.call("snapshot", timeout=0.3)
    first = _read_message(pair[1])
    assert first["m"] == "snapshot"
    # a late reply to the abandoned call is dropped; the channel goes on, and the next call gets its own reply
    late = orjson.dumps({"r": first["i"], "v": "late"})
    pair[1].sendall(struct.pack(">I", len(late)) + late)
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(worker.channel.call("snapshot", timeout=WAIT)))
    thread.start()
    second = _read_message(pair[1])
    assert second["i"] != first["i"]
    reply = orjson.dumps({"r": second["i"], "v": "fresh"})
    pair[1].sendall(struct.pack(">I", len(reply)) + reply)
    thread.join(WAIT)
    assert result == ["fresh"]
    assert not worker.channel.closed


def test_close_here_fails_pending_calls_and_ends_the_other_end(pair):
    entered, release = threading.Event(), threading.Event()

    def busy(method: str, args: dict[str, Any]) -> Any:
        entered.set()
        return release.wait(WAIT)

    worker = _started(_End(pair[0], "worker"))
    host = _started(_End(pair[1], "host", busy))
    errors: list[BaseException] = []

    def caller() -> None:
        try:
            worker.channel.call("stop", timeout=None)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=caller)
    thread.start()
    # the host's handler is busy (never answers in time): the worker gives the host up
    assert entered.wait(WAIT)
    worker.channel.close()
    thread.join(WAIT)
    assert len(errors) == 1 and isinstance(errors[0], ChannelClosed)
    release.set()  # the host's reply now has nobody to go to; its reader then sees the end
    assert host.closed.wait(WAIT), "the other end did not see the channel end"
