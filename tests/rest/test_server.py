"""RestServer: listeners, advertised URL, serving on cheroot, stopping, and the access log."""

from __future__ import annotations

import logging
import socket
import threading
import time

import httpx
import pytest

from rest import RestConfigError, RestServer, create_app
from rest.server import Listener, parse_listeners
from tests.rest.rest_fake_herder import FakeHerder

LOOPBACK = {"listeners": "http://127.0.0.1:0"}


# --- listeners ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("http://:8083", [Listener("http", "", 8083)]),
        ("http://127.0.0.1:0", [Listener("http", "127.0.0.1", 0)]),
        (" HTTP://localhost:9000/ , http://[::1]:9001", [Listener("http", "localhost", 9000), Listener("http", "::1", 9001)]),
        (["http://a:1", "http://b:2"], [Listener("http", "a", 1), Listener("http", "b", 2)]),
        ("http://:8083,https://:8443", [Listener("http", "", 8083), Listener("https", "", 8443)]),
    ],
)
def test_parse_listeners(value: str | list[str], expected: list[Listener]) -> None:
    assert parse_listeners(value) == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("ftp://:21", "'ftp'"),
        ("localhost:8083", "http://host:port"),
        ("http://:port", "http://host:port"),
        ("http://:70000", "65535"),
        ("", "no listener"),
    ],
)
def test_bad_listeners_are_refused(value: str, fragment: str) -> None:
    with pytest.raises(RestConfigError, match="listeners") as e:
        parse_listeners(value)
    assert fragment in str(e.value)


def test_rest_server_refuses_bad_config_up_front() -> None:
    with pytest.raises(RestConfigError, match="key store"):
        RestServer(object(), {"listeners": "https://:8443"})
    with pytest.raises(RestConfigError, match="rest.advertised.listener"):
        RestServer(object(), {"listeners": "http://:8083", "rest.advertised.listener": "ftp"})
    with pytest.raises(RestConfigError, match="rest.advertised.port"):
        RestServer(object(), {"listeners": "http://:8083", "rest.advertised.port": "eighty"})


def test_default_listener_is_loopback_port_8083() -> None:
    assert RestServer(object(), {}).listeners == [Listener("http", "127.0.0.1", 8083)]


# --- advertised URL -----------------------------------------------------------------------------
def test_advertised_url_from_listener_before_start() -> None:
    assert RestServer(object(), {"listeners": "http://10.0.0.5:8083"}).advertised_url() == "http://10.0.0.5:8083/"


def test_advertised_url_overrides() -> None:
    server = RestServer(object(), {"listeners": "http://:8083", "rest.advertised.host.name": "worker-1.example",
                                   "rest.advertised.port": 18083, "rest.advertised.listener": "HTTP"})
    assert server.advertised_url() == "http://worker-1.example:18083/"


def test_advertised_url_of_wildcard_listener_names_this_host() -> None:
    url = RestServer(object(), {"listeners": "http://:8083"}).advertised_url()
    assert url.startswith("http://") and url.endswith(":8083/") and "http://:" not in url


# --- serving ----------------------------------------------------------------------------------------
def test_serves_on_a_free_port_then_stops_cleanly() -> None:
    server = RestServer(create_app(FakeHerder(), LOOPBACK), LOOPBACK)
    server.start()
    try:
        assert server.port > 0
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert server.advertised_url() == f"http://127.0.0.1:{server.port}/"
        assert any(t.name == "rest-server-0" and t.daemon for t in threading.enumerate())
        r = httpx.get(f"{server.url}/connectors", timeout=10)
        assert (r.status_code, r.json()) == (200, [])
        assert r.headers["Server"] == "headrace"
    finally:
        server.stop()
    server.stop()  # idempotent
    assert not any(t.name.startswith("rest-server") for t in threading.enumerate())
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/connectors", timeout=2)


def test_several_listeners() -> None:
    config = {"listeners": "http://127.0.0.1:0,http://127.0.0.1:0"}
    with RestServer(create_app(FakeHerder(), config), config) as server:
        ports = [port for _, port in server.bound_addresses]
        assert len(set(ports)) == 2
        for port in ports:
            assert httpx.get(f"http://127.0.0.1:{port}/", timeout=10).status_code == 200


def test_port_in_use_is_a_clear_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        config = {"listeners": f"http://127.0.0.1:{port}"}
        server = RestServer(create_app(FakeHerder(), config), config)
        with pytest.raises(OSError, match=f"127.0.0.1:{port}"):
            server.start()


def test_access_log_line_per_request(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rest.access")
    with RestServer(create_app(FakeHerder(), LOOPBACK), LOOPBACK) as server:
        httpx.get(f"{server.url}/connectors?expand=status", headers={"User-Agent": "probe/1"}, timeout=10)
        httpx.get(f"{server.url}/connectors/missing", timeout=10)
    lines = [r.getMessage() for r in caplog.records if r.name == "rest.access"]
    assert len(lines) == 2
    assert '"GET /connectors?expand=status HTTP/1.1" 200 2 "probe/1"' in lines[0]
    assert lines[0].startswith("127.0.0.1 ") and lines[0].endswith("ms")
    assert '"GET /connectors/missing HTTP/1.1" 404 ' in lines[1]


# --- leader forwarding -----------------------------------------------------------------------------
class NotLeaderHerder(FakeHerder):
    """A follower: every write is refused with the leader's URL, as a distributed herder does."""

    def __init__(self, leader_url: str | None) -> None:
        super().__init__()
        self.leader_url = leader_url

    def put_connector_config(self, *args: object, **kwargs: object) -> tuple[bool, object]:  # type: ignore[override]
        from connect.runtime.herder import NotLeaderError

        raise NotLeaderError("not the leader", self.leader_url)


def test_write_to_a_follower_is_forwarded_to_the_leader() -> None:
    leader_herder = FakeHerder()
    with RestServer(create_app(leader_herder, LOOPBACK), LOOPBACK) as leader:
        follower_app = create_app(NotLeaderHerder(leader.advertised_url()), LOOPBACK)
        with RestServer(follower_app, LOOPBACK) as follower:
            body = {"name": "fw", "config": {"connector.class": "FileStreamSource"}}
            r = httpx.post(f"{follower.url}/connectors", json=body, timeout=10)
            assert r.status_code == 201
            assert r.json()["name"] == "fw"
            assert r.headers["Location"].endswith("/connectors/fw")
            assert leader_herder.connectors() == ["fw"]
            # The leader's 409 comes back unchanged.
            r = httpx.post(f"{follower.url}/connectors", json=body, timeout=10)
            assert r.status_code == 409 and r.json()["error_code"] == 409


def test_forwarding_gives_up_after_two_hops_and_without_a_leader() -> None:
    app = create_app(NotLeaderHerder("http://127.0.0.1:1/"), LOOPBACK)
    client = app.test_client()
    r = client.put("/connectors/x/config?forward=false", json={"connector.class": "FileStreamSource"})
    assert r.status_code == 409 and "conflicting operation" in r.get_json()["message"]
    client = create_app(NotLeaderHerder(None), LOOPBACK).test_client()
    r = client.put("/connectors/x/config", json={"connector.class": "FileStreamSource"})
    assert r.status_code == 409 and "no known leader URL" in r.get_json()["message"]


def test_unreachable_leader_is_500_naming_it() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/"
    client = create_app(NotLeaderHerder(dead), LOOPBACK).test_client()
    r = client.put("/connectors/x/config", json={"connector.class": "FileStreamSource"})
    assert r.status_code == 500 and dead in r.get_json()["message"]


class ElsewhereHerder(FakeHerder):
    """A worker of a cluster that does not run the task asked about, as a distributed herder says."""

    def __init__(self, owner_url: str) -> None:
        super().__init__()
        self.owner_url = owner_url

    def task_metrics(self, task: object) -> dict[str, object]:  # type: ignore[override]
        from connect.runtime.herder import NotLeaderError

        raise NotLeaderError(f"Task {task} runs on another worker", self.owner_url)


def test_task_metrics_are_asked_of_the_task_s_worker() -> None:
    owner_herder = FakeHerder()
    owner_herder.put_connector_config("src", {"connector.class": "FileStreamSource", "tasks.max": "2"}, False)
    with RestServer(create_app(owner_herder, LOOPBACK), LOOPBACK) as owner:
        with RestServer(create_app(ElsewhereHerder(owner.advertised_url()), LOOPBACK), LOOPBACK) as other:
            r = httpx.get(f"{other.url}/connectors/src/tasks/1/metrics", timeout=10)
    assert r.status_code == 200, r.text
    assert r.json()["id"] == 1 and r.json()["metrics"] == {}


def test_a_task_s_worker_that_does_not_answer_is_a_prompt_503_naming_it() -> None:
    # accepts connections and never answers, as a worker cut off or hung does
    with socket.create_server(("127.0.0.1", 0)) as hung:
        owner = f"http://127.0.0.1:{hung.getsockname()[1]}"
        client = create_app(ElsewhereHerder(owner), LOOPBACK).test_client()
        started = time.monotonic()
        r = client.get("/connectors/src/tasks/0/metrics")
        elapsed = time.monotonic() - started
    assert r.status_code == 503, r.get_data(as_text=True)
    assert owner in r.get_json()["message"] and "src-0" in r.get_json()["message"]
    assert elapsed < 30, elapsed  # the forwarding timeout is 5 s; writes wait 90 s for a leader


# --- stopping with requests in flight, and log lines --------------------------------------------------------
class SlowHerder(FakeHerder):
    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()

    def connectors(self) -> list[str]:
        self.entered.set()
        import time

        time.sleep(1.0)
        return ["slow"]


def test_stop_lets_a_request_in_flight_finish() -> None:
    herder = SlowHerder()
    server = RestServer(create_app(herder, LOOPBACK), LOOPBACK)
    server.start()
    answers: list[httpx.Response] = []
    client = threading.Thread(target=lambda: answers.append(httpx.get(f"{server.url}/connectors", timeout=10)))
    client.start()
    assert herder.entered.wait(10)
    server.stop()
    client.join(10)
    assert [(r.status_code, r.json()) for r in answers] == [(200, ["slow"])]
    assert not any(t.name.startswith("rest-server") for t in threading.enumerate())


def test_a_control_character_in_the_path_cannot_forge_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rest.access")
    with RestServer(create_app(FakeHerder(), LOOPBACK), LOOPBACK) as server:
        httpx.get(f"{server.url}/connectors/a%0A127.0.0.1%20forged%0Db/status", timeout=10)
    lines = [r.getMessage() for r in caplog.records if r.name == "rest.access"]
    assert len(lines) == 1 and "\n" not in lines[0] and "\r" not in lines[0]
    assert "/connectors/a\\n127.0.0.1 forged\\rb/status" in lines[0]


def test_exposed_listener_without_authentication_is_a_warning(caplog: pytest.LogCaptureFixture, tmp_path) -> None:
    caplog.set_level(logging.WARNING, logger="rest.server")
    exposed = {"listeners": "http://:0,http://127.0.0.1:0"}
    with RestServer(create_app(FakeHerder(), exposed), exposed):
        pass
    with RestServer(create_app(FakeHerder(), LOOPBACK), LOOPBACK):
        pass
    users = tmp_path / "users.properties"
    users.write_text("u=p\n")
    authenticated = {**exposed, "rest.extension.classes": "BasicAuthSecurityRestExtension",
                     "rest.basic.auth.credentials.file": str(users)}
    with RestServer(create_app(FakeHerder(), authenticated), authenticated):
        pass
    warnings = [r.getMessage() for r in caplog.records if "no authentication" in r.getMessage()]
    assert len(warnings) == 1 and "http://:0" in warnings[0] and "127.0.0.1:0" not in warnings[0]


def test_oversize_request_headers_are_refused_without_reading_them_all() -> None:
    with RestServer(create_app(FakeHerder(), LOOPBACK), LOOPBACK) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"GET /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ")
            try:
                for _ in range(64):  # 64 MiB offered; the server answers long before
                    sock.sendall(b"p" * (1024 * 1024))
            except OSError:
                pass
            answer = sock.recv(4096)
        assert answer.split(b" ", 2)[1] in (b"413", b"414", b"431", b"400"), answer[:200]
        assert httpx.get(f"{server.url}/connectors", timeout=10).status_code == 200


def test_status_lines_carry_the_standard_reason_phrases() -> None:
    # Werkzeug would send "201 CREATED"; Jetty under Kafka Connect sends "201 Created".
    server = RestServer(create_app(FakeHerder(), LOOPBACK), LOOPBACK)
    server.start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            body = b'{"name": "phrases", "config": {"connector.class": "FileStreamSource"}}'
            sock.sendall(
                b"POST /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
            created = sock.makefile("rb").readline()
        assert created == b"HTTP/1.1 201 Created\r\n"
        r = httpx.get(f"{server.url}/connectors/nope", timeout=10)
        assert (r.status_code, r.reason_phrase) == (404, "Not Found")
        r = httpx.post(f"{server.url}/connectors", content=b"x", headers={"Content-Type": "text/plain"}, timeout=10)
        assert (r.status_code, r.reason_phrase) == (415, "Unsupported Media Type")
    finally:
        server.stop()


# --- slow clients and the connection limit (connect.api.http_listener under the REST server) -----------------
@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("rest.request.header.timeout.ms", "soon", "'soon' is not a whole number"),
        ("rest.request.body.timeout.ms", "50", "below the least allowed, 100"),
        ("rest.idle.timeout.ms", "-1", "below the least allowed, 100"),
        ("rest.max.connections", "0", "below the least allowed, 1"),
    ],
)
def test_bad_listener_bounds_are_refused_naming_the_setting(key: str, value: str, fragment: str) -> None:
    with pytest.raises(RestConfigError, match=key) as e:
        RestServer(object(), {**LOOPBACK, key: value})
    assert fragment in str(e.value)


def test_listener_bounds_come_from_the_worker_config() -> None:
    limits = RestServer(object(), {**LOOPBACK, "rest.request.header.timeout.ms": "2500",
                                   "rest.request.body.timeout.ms": 7000, "rest.idle.timeout.ms": "9000",
                                   "rest.max.connections": "12", "rest.request.max.bytes": "1024"}).limits
    assert (limits.header_timeout, limits.body_timeout, limits.idle_timeout) == (2.5, 7.0, 9.0)
    assert limits.max_connections == 12 and limits.max_body_bytes == 1024
    defaults = RestServer(object(), LOOPBACK).limits
    assert (defaults.header_timeout, defaults.body_timeout, defaults.idle_timeout) == (10.0, 30.0, 30.0)
    assert defaults.max_connections == 1000


def _until_closed(sock: socket.socket) -> bytes:
    sock.settimeout(10)
    got = b""
    while chunk := sock.recv(4096):
        got += chunk
    return got


def test_a_slow_client_is_answered_408_and_a_refused_one_503_in_the_rest_error_shape() -> None:
    config = {**LOOPBACK, "rest.request.header.timeout.ms": "300", "rest.max.connections": "2"}
    with RestServer(create_app(FakeHerder(), config), config, threads=1) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as slow:
            slow.sendall(b"GET /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the end of the headers
            with socket.create_connection(("127.0.0.1", server.port)) as idle:
                with socket.create_connection(("127.0.0.1", server.port)) as refused:
                    answer = _until_closed(refused)
                assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
                assert b'{"error_code":503,"message":"Too many connections: 2 are open (rest.max.connections)' in answer
                idle.close()
                answer = _until_closed(slow)
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n") and b"Content-Type: application/json" in answer
        assert answer.endswith(b'{"error_code":408,"message":"The request\'s headers did not arrive within 0.3 s '
                               b'(rest.request.header.timeout.ms)"}')
        assert httpx.get(f"{server.url}/connectors", timeout=5).json() == []
