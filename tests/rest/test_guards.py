"""rest.guards and the JSON parser: media type (CSRF), Host (DNS rebinding), body size and depth."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from flask.testing import FlaskClient

from rest import RestServer, create_app
from tests.rest.rest_fake_herder import FakeHerder

CONFIG = json.dumps({"name": "x", "config": {"connector.class": "FileStreamSource"}})


def make_client(**config: str) -> tuple[FlaskClient, FakeHerder]:
    herder = FakeHerder()
    settings = {"listeners": "http://127.0.0.1:0", **{k.replace("_", "."): v for k, v in config.items()}}
    return create_app(herder, settings).test_client(), herder


# --- media type ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x", None]
)
def test_a_body_that_is_not_json_is_415_and_creates_nothing(content_type: str | None) -> None:
    client, herder = make_client()
    headers = {} if content_type is None else {"Content-Type": content_type}
    r = client.post("/connectors", data=CONFIG, headers=headers)
    assert r.status_code == 415, r.get_data(as_text=True)
    assert r.get_json()["error_code"] == 415 and "application/json" in r.get_json()["message"]
    assert herder.connectors() == []


def test_json_with_a_charset_is_accepted() -> None:
    client, herder = make_client()
    r = client.post("/connectors", data=CONFIG, headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 201 and herder.connectors() == ["x"]


def test_an_empty_form_post_is_refused_but_a_bare_post_is_not() -> None:
    client, herder = make_client()
    client.post("/connectors", json=json.loads(CONFIG))
    # What a cross-site <form method=post> with no fields sends.
    r = client.post("/connectors/x/restart", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415
    # curl -X POST sends no body and no Content-Type.
    assert client.post("/connectors/x/restart").status_code == 204


# --- Host -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["evil.example", "evil.example:8083", "127.0.0.1.evil.example", "[fe80::1]:1"])
def test_a_foreign_host_header_is_421(host: str) -> None:
    client, herder = make_client()
    r = client.post("/connectors", json=json.loads(CONFIG), headers={"Host": host})
    assert r.status_code == 421 and "rest.allowed.hosts" in r.get_json()["message"]
    assert client.get("/connectors", headers={"Host": host}).status_code == 421
    assert herder.connectors() == []


@pytest.mark.parametrize("host", ["localhost:8083", "127.0.0.1", "[::1]:8083", "LOCALHOST"])
def test_loopback_host_names_are_served(host: str) -> None:
    client, _ = make_client()
    assert client.get("/connectors", headers={"Host": host}).status_code == 200


def test_listener_advertised_and_allowed_hosts_are_served() -> None:
    client, _ = make_client(listeners="http://10.1.2.3:8083", rest_advertised_host_name="worker-1.example",
                            rest_allowed_hosts="connect.example.com")
    for host in ("10.1.2.3:8083", "worker-1.example", "connect.example.com:443"):
        assert client.get("/connectors", headers={"Host": host}).status_code == 200, host
    assert client.get("/connectors", headers={"Host": "10.9.9.9"}).status_code == 421


def test_a_listener_on_every_interface_serves_ip_addresses_and_this_machines_names() -> None:
    import socket

    client, _ = make_client(listeners="http://:8083")
    for host in ("192.168.7.7:8083", "[2001:db8::1]:8083", socket.gethostname()):
        assert client.get("/connectors", headers={"Host": host}).status_code == 200, host
    assert client.get("/connectors", headers={"Host": "evil.example"}).status_code == 421


def test_allowed_hosts_star_turns_the_check_off() -> None:
    client, _ = make_client(rest_allowed_hosts="*")
    assert client.get("/connectors", headers={"Host": "anything.example"}).status_code == 200


# --- size and depth ---------------------------------------------------------------------------------------
def test_a_body_over_the_limit_is_413_before_it_is_read() -> None:
    client, herder = make_client(rest_request_max_bytes="1000")
    body = {"name": "x", "config": {"connector.class": "FileStreamSource", "pad": "p" * 2000}}
    r = client.post("/connectors", json=body)
    assert r.status_code == 413 and "rest.request.max.bytes" in r.get_json()["message"]
    assert herder.connectors() == []
    assert client.post("/connectors", data=CONFIG, content_type="application/json").status_code == 201


def test_a_chunked_body_over_the_limit_is_413_on_the_live_server() -> None:
    config = {"listeners": "http://127.0.0.1:0", "rest.request.max.bytes": "1000"}
    herder = FakeHerder()
    with RestServer(create_app(herder, config), config) as server:

        def chunks() -> Iterator[bytes]:  # a generator body: httpx sends it chunked, with no length
            yield b'{"name": "x", "config": {"pad": "'
            yield b"p" * 5000
            yield b'"}}'

        r = httpx.post(f"{server.url}/connectors", content=chunks(), headers={"Content-Type": "application/json"},
                       timeout=10)
        assert r.status_code == 413, r.text
        assert "1000 bytes" in r.json()["message"]
        assert httpx.get(f"{server.url}/connectors", timeout=10).json() == []
    assert herder.connectors() == []


@pytest.mark.parametrize("depth", [65, 2000, 100_000])
def test_json_nested_too_deep_is_400(depth: int) -> None:
    client, _ = make_client(rest_request_max_bytes=str(10 * 1024 * 1024))
    r = client.put("/connectors/x/config", data="[" * depth + "]" * depth, content_type="application/json")
    assert r.status_code == 400 and "deeper than 64" in r.get_json()["message"]
    offsets = '{"offsets": [{"partition": {}, "offset": ' + '{"n": ' * depth + "1" + "}" * depth + "}]}"
    r = client.patch("/connectors/x/offsets", data=offsets, content_type="application/json")
    assert r.status_code == 400 and "deeper than 64" in r.get_json()["message"]


def test_json_at_the_depth_limit_is_parsed() -> None:
    client, _ = make_client()
    r = client.put("/connectors/x/config", data="[" * 64 + "]" * 64, content_type="application/json")
    assert r.status_code == 400 and "must be a JSON object" in r.get_json()["message"]
