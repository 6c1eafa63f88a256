"""The REST front process's parts, without processes: its channel, its status mirror, the publisher feeding
it and the app that chooses between the mirror and the worker (rest.front*, rest.status_*)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import orjson
import pytest
from werkzeug.test import Client

from rest import status_publisher
from rest.front import FrontApp, create_status_app
from rest.front_channel import SNAPSHOT, WANT, ChannelClosed, FrontChannel
from rest.status_mirror import StatusMirror
from rest.status_publisher import StatusPublisher
from tests.rest.test_auth import auth_config, basic


def _body(name: str, state: str = "RUNNING") -> dict[str, Any]:
    return {"name": name, "connector": {"state": state, "worker_id": "w:1"},
            "tasks": [{"id": 0, "state": state, "worker_id": "w:1"}], "type": "sink"}


def _listing(*bodies: dict[str, Any]) -> bytes:
    return orjson.dumps({b["name"]: {"status": b} for b in bodies})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_channel_frames_round_trip_and_a_closed_end_is_told() -> None:
    a, b = socket.socketpair()
    ours, theirs = FrontChannel(a), FrontChannel(b)
    big = b"x" * 3_000_000  # more than one socket buffer: read in pieces
    sender = threading.Thread(target=lambda: (ours.send_snapshot(12.5, big), ours.send(WANT)))
    sender.start()
    kind, payload = theirs.receive()
    assert kind == SNAPSHOT and FrontChannel.snapshot_parts(payload) == (12.5, big)
    assert theirs.receive() == (WANT, b"")
    sender.join()
    ours.close()
    with pytest.raises(ChannelClosed):
        theirs.receive()
    theirs.close()


def test_the_mirror_answers_from_a_snapshot_and_cuts_each_connectors_status_from_it() -> None:
    clock, wants = Clock(), []
    mirror = StatusMirror(want=lambda: wants.append(clock.now), clock=clock, snapshot_wait_s=0)
    # nothing yet: the worker answers, and is asked for a snapshot once
    assert mirror.listing() is None and mirror.status("a") is None
    assert wants == [100.0]
    listing = _listing(_body("a"), _body("b", "PAUSED"))
    mirror.update(100.0, listing)
    assert mirror.listing() == listing
    assert orjson.loads(mirror.status("b")) == _body("b", "PAUSED")
    assert mirror.status("b") is mirror.status("b")  # cut once per snapshot
    assert mirror.status("c") is None  # not in it: whether it exists is the worker's to say
    assert wants == [100.0]


def test_after_a_write_only_a_snapshot_taken_later_is_used() -> None:
    clock, wants = Clock(), []
    mirror = StatusMirror(want=lambda: wants.append(clock.now), clock=clock, snapshot_wait_s=0)
    mirror.update(100.0, _listing(_body("a")))
    clock.now = 100.2
    mirror.answered()  # e.g. DELETE /connectors/a answered at 100.2
    assert mirror.status("a") is None and mirror.listing() is None
    assert wants == [100.2]  # asked once, not per read
    mirror.update(100.1, _listing(_body("a")))  # taken before the write was answered: not enough
    assert mirror.listing() is None
    assert wants == [100.2, 100.2]
    mirror.update(100.3, _listing())
    assert mirror.listing() == b"{}" and mirror.status("a") is None


def test_counters_older_than_a_second_are_never_served_and_fresher_ones_are_asked_for_in_time() -> None:
    clock, wants = Clock(), []
    mirror = StatusMirror(want=lambda: wants.append(clock.now), clock=clock, max_counter_age_s=1.0, followed_s=9.0,
                          snapshot_wait_s=0)
    first, second = _listing(_body("a")), _listing(_body("a", "PAUSED"))
    assert mirror.listing() is None and wants == [100.0]
    mirror.update(100.0, first)
    clock.now = 100.3
    assert mirror.listing() == first and wants == [100.0]
    clock.now = 100.6  # half a second old: asked again, still served
    assert mirror.listing() == first and mirror.listing() == first
    assert wants == [100.0, 100.6]
    clock.now = 101.0  # a second old: the worker answers until the fresh one is here
    assert mirror.listing() is None and wants == [100.0, 100.6]
    mirror.update(100.95, second)
    assert mirror.listing() == second


def test_a_snapshot_is_not_used_once_the_worker_may_have_stopped_following() -> None:
    clock, wants = Clock(), []
    mirror = StatusMirror(want=lambda: wants.append(clock.now), clock=clock, max_counter_age_s=1.0, followed_s=9.0,
                          snapshot_wait_s=0)
    assert mirror.listing() is None
    mirror.update(100.0, _listing(_body("a")))
    clock.now = 109.5  # no read (and so no ask) for longer than the worker follows after one
    assert mirror.listing() is None and wants == [100.0, 109.5]
    mirror.update(109.4, _listing(_body("a")))  # taken before the ask: it may miss a change
    assert mirror.listing() is None
    mirror.update(109.6, _listing(_body("a", "PAUSED")))
    assert orjson.loads(mirror.status("a"))["connector"]["state"] == "PAUSED"


def test_a_read_with_no_usable_snapshot_waits_for_the_one_it_asked_for_and_then_for_the_worker() -> None:
    mirror: StatusMirror
    listing = _listing(_body("a"))
    asked = threading.Event()

    def want() -> None:
        asked.set()
        # the worker's answer comes on the front's channel thread while the read waits
        threading.Timer(0.05, lambda: mirror.update(time.monotonic(), listing)).start()

    mirror = StatusMirror(want=want, snapshot_wait_s=5.0)
    started = time.monotonic()
    assert mirror.listing() == listing  # not None: the read did not go to the worker
    assert asked.is_set() and 0.04 <= time.monotonic() - started < 4.0

    # a snapshot that never comes: the read waits no longer than its bound, and then the worker answers it
    silent = StatusMirror(want=lambda: None, snapshot_wait_s=0.1)
    started = time.monotonic()
    assert silent.status("a") is None
    assert 0.1 <= time.monotonic() - started < 2.0


class TokenHerder:
    """The two herder calls a publisher makes, with a token and listing the test moves."""

    def __init__(self) -> None:
        self.token: Hashable = 1
        self.bodies = {"a": _body("a")}
        self.gathered = 0

    def status_changes(self) -> Hashable:
        return self.token

    def connector_status_bodies(self, fresh: bool = False) -> dict[str, Any]:
        assert fresh  # a listing sent to the front is gathered when it is taken, not reused
        self.gathered += 1
        return self.bodies

    def connectors(self) -> list[str]:
        return list(self.bodies)


def test_the_publisher_sends_a_listing_when_asked_and_follows_changes_only_for_a_while() -> None:
    herder, sent = TokenHerder(), []
    clock = Clock()
    publisher = StatusPublisher(herder, lambda at, listing: sent.append((at, listing)),  # type: ignore[arg-type]
                                follow_s=10.0, clock=clock)
    herder.token = 0
    assert not publisher.publish_if_changed()  # nobody asked: nothing is gathered, however the states move
    assert herder.gathered == 0
    publisher.want()
    assert publisher.publish_if_changed()
    assert sent == [(100.0, _listing(_body("a")))]
    for _ in range(5):
        assert not publisher.publish_if_changed()
    assert herder.gathered == 1  # unchanged states cost no listing
    herder.token, herder.bodies = 2, {"a": _body("a", "FAILED")}
    clock.now = 105.0
    assert publisher.publish_if_changed()
    assert sent[-1] == (105.0, _listing(_body("a", "FAILED")))
    clock.now = 110.5  # ten seconds after the ask: changes are no longer followed
    herder.token = 3
    assert not publisher.publish_if_changed() and not publisher.following()
    publisher.want()  # until the next ask, which gets the current listing at once
    assert publisher.publish_if_changed() and not publisher.publish_if_changed()
    assert herder.gathered == 3


def test_the_publisher_thread_sleeps_until_asked_and_stops_cleanly() -> None:
    herder, sent = TokenHerder(), []
    publisher = StatusPublisher(herder, lambda at, listing: sent.append(listing), interval_s=0.01)  # type: ignore[arg-type]
    publisher.start()
    threading.Event().wait(0.2)
    assert sent == [] and herder.gathered == 0
    publisher.want()
    deadline = threading.Event()
    for _ in range(100):
        if sent:
            break
        deadline.wait(0.01)
    assert sent == [_listing(_body("a"))]
    publisher.stop()
    assert publisher._thread is not None and not publisher._thread.is_alive()


def test_a_want_ends_the_publishers_wait_between_listings(monkeypatch: pytest.MonkeyPatch) -> None:
    herder, sent = TokenHerder(), []
    # listings spaced 10 s apart while the states keep changing: a want must not wait that out
    monkeypatch.setattr(status_publisher, "_MAX_WAIT_S", 10.0)
    publisher = StatusPublisher(herder, lambda at, listing: sent.append(listing), interval_s=10.0)  # type: ignore[arg-type]
    publisher.start()
    try:
        publisher.want()
        for _ in range(200):
            if sent:
                break
            threading.Event().wait(0.01)
        assert len(sent) == 1
        herder.token = 2  # a change alone waits for the interval
        threading.Event().wait(0.2)
        assert len(sent) == 1
        publisher.want()  # the front has no listing it may use, and a read waits for one
        for _ in range(200):
            if len(sent) == 2:
                break
            threading.Event().wait(0.01)
        assert len(sent) == 2
    finally:
        publisher.stop()


class RecordingWorker:
    """The worker's side of the proxy: answers every request it gets with 299."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        self.requests.append(f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}?{environ.get('QUERY_STRING', '')}")
        start_response("299 From Worker", [("Content-Type", "application/json")])
        return [b'{"from":"worker"}']


def _front(config: dict[str, Any]) -> tuple[Client, StatusMirror, RecordingWorker]:
    worker = RecordingWorker()
    mirror = StatusMirror(want=lambda: None)
    app = FrontApp(create_status_app(config, mirror, worker), worker)
    return Client(app), mirror, worker


def test_the_front_serves_the_two_status_reads_and_passes_everything_else_on() -> None:
    client, mirror, worker = _front({"listeners": "http://127.0.0.1:0"})
    headers = {"Host": "127.0.0.1"}
    # no snapshot yet: the worker answers even the status reads
    assert client.get("/connectors?expand=status", headers=headers).status_code == 299
    mirror.update(float("inf"), _listing(_body("a")))
    r = client.get("/connectors?expand=status", headers=headers)
    assert r.status_code == 200 and r.mimetype == "application/json"
    assert r.get_data() == _listing(_body("a"))
    r = client.get("/connectors/a/status", headers=headers)
    assert r.status_code == 200 and r.get_json() == _body("a")
    worker.requests.clear()
    for method, path in (("GET", "/connectors"), ("GET", "/connectors?expand=info"),
                         ("GET", "/connectors?expand=status&expand=info"), ("GET", "/connectors/a"),
                         ("GET", "/connectors/zzz/status"), ("PUT", "/connectors/a/pause"),
                         ("DELETE", "/connectors/a"), ("GET", "/metrics")):
        assert client.open(path, method=method, headers=headers).status_code == 299, (method, path)
    assert worker.requests == ["GET /connectors?", "GET /connectors?expand=info",
                               "GET /connectors?expand=status&expand=info", "GET /connectors/a?",
                               "GET /connectors/zzz/status?", "PUT /connectors/a/pause?", "DELETE /connectors/a?",
                               "GET /metrics?"]


def test_the_front_checks_credentials_and_host_before_answering_from_its_mirror(tmp_path: Path) -> None:
    client, mirror, worker = _front(auth_config(tmp_path))
    mirror.update(float("inf"), _listing(_body("a")))
    headers = {"Host": "127.0.0.1"}
    for path in ("/connectors?expand=status", "/connectors/a/status"):
        r = client.get(path, headers=headers)
        assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Basic realm=")
        assert client.get(path, headers={**headers, **basic("admin", "wrong")}).status_code == 401
        assert client.get(path, headers={**headers, **basic("admin", "s3cret")}).status_code == 200
    # a name the worker's host check does not know is refused here too (DNS rebinding)
    r = client.get("/connectors/a/status", headers={"Host": "evil.example", **basic("admin", "s3cret")})
    assert r.status_code == 421 and "rest.allowed.hosts" in r.get_json()["message"]
    assert worker.requests == []


def _echo(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """The worker's side of the socket: what reached it, as JSON."""
    body = environ["wsgi.input"].read()
    seen = {"method": environ["REQUEST_METHOD"], "uri": environ.get("REQUEST_URI"), "body": len(body),
            "headers": {k: v for k, v in environ.items() if k.startswith("HTTP_") or k == "CONTENT_TYPE"}}
    start_response("201 Created", [("Content-Type", "application/json"), ("X-From", "worker")])
    return [orjson.dumps(seen)]


@pytest.fixture
def worker_socket(tmp_path: Path):
    from rest.server import RestServer

    path = str(tmp_path / "worker.sock")
    server = RestServer(_echo, {"listeners": "http://127.0.0.1:0"}, threads=2, unix_socket=path)
    server.start()
    yield path
    server.stop()


def test_the_proxy_passes_requests_as_sent_and_says_who_sent_them(worker_socket: str) -> None:
    from rest.worker_proxy import WorkerProxy

    answered: list[str] = []
    proxy = WorkerProxy(worker_socket, on_answer=lambda environ, _: answered.append(environ["REQUEST_METHOD"]),
                        max_body_bytes=1000)
    client = Client(proxy)
    r = client.post("/connectors/a%20b/restart?includeTasks=true", data=b"x" * 600,
                    headers={"Host": "worker.example:8083", "Content-Type": "application/json",
                             "Authorization": "Basic abc", "X-Forwarded-For": "6.6.6.6", "Connection": "keep-alive"},
                    environ_base={"REMOTE_ADDR": "10.1.2.3"})
    assert r.status_code == 201 and r.headers["X-From"] == "worker"
    seen = r.get_json()
    assert seen["method"] == "POST" and seen["body"] == 600
    assert seen["uri"] == "/connectors/a%20b/restart?includeTasks=true"
    headers = seen["headers"]
    assert headers["HTTP_HOST"] == "worker.example:8083" and headers["HTTP_AUTHORIZATION"] == "Basic abc"
    assert headers["CONTENT_TYPE"] == "application/json"
    # the client's own X-Forwarded-For is not passed on: the worker believes this header from the front only
    assert headers["HTTP_X_FORWARDED_FOR"] == "10.1.2.3" and headers["HTTP_X_FORWARDED_PROTO"] == "http"
    assert "HTTP_USER_AGENT" not in headers  # none sent, none made up
    assert answered == ["POST"]
    assert client.get("/connectors").status_code == 201 and answered == ["POST", "GET"]
    proxy.close()


def test_the_proxy_refuses_an_oversized_body_unread_and_answers_503_without_a_worker(worker_socket: str,
                                                                                    tmp_path: Path) -> None:
    from rest.worker_proxy import WorkerProxy

    proxy = WorkerProxy(worker_socket, on_answer=lambda environ, sent_at: None, max_body_bytes=100)
    r = Client(proxy).put("/connectors/a/config", data=b"{" * 101, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "rest.request.max.bytes" in r.get_json()["message"]
    proxy.close()
    gone = WorkerProxy(str(tmp_path / "nothing.sock"), on_answer=lambda environ, sent_at: None, max_body_bytes=100)
    r = Client(gone).get("/connectors")
    assert r.status_code == 503 and r.get_json()["error_code"] == 503
    gone.close()


@pytest.mark.parametrize(("method", "path", "query", "shown"), [
    ("GET", "/connectors/a", "", False),
    ("GET", "/connectors/a/config", "", False),
    ("GET", "/connectors", "", False),
    ("GET", "/connectors", "expand=info", False),
    ("GET", "/connector-plugins", "", False),
    ("OPTIONS", "/connectors/a/config", "", False),
    ("GET", "/connectors", "expand=status&expand=info", True),
    ("GET", "/connectors", "expand=status", False),  # the front's own reads, passed on when it could not answer
    ("GET", "/connectors/a/status", "", False),
    ("GET", "/connectors/a/tasks/0/status", "", True),
    ("GET", "/metrics", "", True),
    ("PUT", "/connectors/a/pause", "", True),
    ("POST", "/connectors", "", True),
    ("DELETE", "/connectors/a", "", True),
])
def test_a_snapshot_older_than_a_write_or_a_status_the_worker_showed_is_not_used(method: str, path: str, query: str,
                                                                                   shown: bool) -> None:
    from rest.front import _note_answer

    clock = Clock()
    mirror = StatusMirror(want=lambda: None, clock=clock, snapshot_wait_s=0)
    assert mirror.listing() is None
    mirror.update(100.0, _listing(_body("a")))
    clock.now = 100.1
    _note_answer({"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query}, 100.05, mirror)
    assert (mirror.listing() is None) is shown


def test_a_status_read_the_worker_answered_slowly_does_not_discard_a_snapshot_taken_after_it_was_sent() -> None:
    from rest.front import _note_answer

    clock = Clock()
    mirror = StatusMirror(want=lambda: None, clock=clock, snapshot_wait_s=0)
    assert mirror.listing() is None  # asks at 100.0
    mirror.update(100.02, _listing(_body("a")))
    clock.now = 100.3  # the answer to a status read sent at 100.01 comes only now (a busy worker)
    _note_answer({"REQUEST_METHOD": "GET", "PATH_INFO": "/connectors/a/tasks/0/status", "QUERY_STRING": ""}, 100.01,
                 mirror)
    assert mirror.listing() == _listing(_body("a"))
    # a write's answer, though, is what older snapshots may not show
    _note_answer({"REQUEST_METHOD": "DELETE", "PATH_INFO": "/connectors/a", "QUERY_STRING": ""}, 100.01, mirror)
    assert mirror.listing() is None


def test_until_the_worker_serves_the_front_answers_every_request_as_a_starting_worker() -> None:
    worker = RecordingWorker()
    mirror = StatusMirror(want=lambda: None)
    serving = threading.Event()
    config = {"listeners": "http://127.0.0.1:0"}
    client = Client(FrontApp(create_status_app(config, mirror, worker, serving), worker, serving))
    headers = {"Host": "127.0.0.1"}
    mirror.update(float("inf"), _listing(_body("a")))  # even a snapshot is not shown before the worker serves
    for method, path in (("GET", "/"), ("GET", "/connectors?expand=status"), ("GET", "/connectors/a/status"),
                         ("POST", "/connectors"), ("PUT", "/connectors/a/pause")):
        r = client.open(path, method=method, headers=headers)
        assert r.status_code == 503, (method, path, r.status_code)
        assert r.headers["Retry-After"] == "5" and "starting" in r.get_json()["message"], (method, path)
    r = client.get("/health", headers=headers)
    assert r.status_code == 503 and r.get_json()["status"] == "starting" and "Retry-After" not in r.headers
    # the host check still comes first
    assert client.get("/", headers={"Host": "evil.example"}).status_code == 421
    assert worker.requests == []
    # the schema registry is not the herder's: the worker's own tasks may use it while it starts
    assert client.get("/schema-registry/subjects", headers=headers).status_code == 299
    serving.set()
    assert client.get("/", headers=headers).status_code == 299
    assert client.get("/connectors/a/status", headers=headers).status_code == 200
