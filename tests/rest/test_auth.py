"""rest.auth: basic authentication as Kafka Connect's BasicAuthSecurityRestExtension, and signed
requests between workers."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import bcrypt
import httpx
import pytest

from rest import RestConfigError, RestServer, create_app
from rest.auth import BasicAuthenticator, credentials_file, sign_internal_request
from tests.rest.rest_fake_herder import FakeHerder
from tests.rest.test_server import NotLeaderHerder

KAFKA_CLASS = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
BODY = {"name": "x", "config": {"connector.class": "FileStreamSource"}}


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def users_file(tmp_path: Path) -> Path:
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    path = tmp_path / "credentials.properties"
    path.write_text(f"# users\nadmin={hashed}\nlegacy: plain-pw\n")
    return path


def auth_config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"listeners": "http://127.0.0.1:0", "rest.extension.classes": KAFKA_CLASS,
            "rest.basic.auth.credentials.file": str(users_file(tmp_path)), **extra}


def test_no_or_wrong_credentials_are_401_and_change_nothing(tmp_path: Path) -> None:
    herder = FakeHerder()
    client = create_app(herder, auth_config(tmp_path)).test_client()
    for headers in ({}, basic("admin", "wrong"), basic("nobody", "s3cret"), {"Authorization": "Basic !!"},
                    {"Authorization": "Bearer abc"}):
        r = client.post("/connectors", json=BODY, headers=headers)
        assert r.status_code == 401, headers
        assert r.headers["WWW-Authenticate"].startswith("Basic realm=")
        assert r.get_json()["error_code"] == 401
    assert client.get("/connectors").status_code == 401
    assert herder.connectors() == []


def test_bcrypt_and_plain_text_users_are_let_in(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="rest.auth")
    client = create_app(FakeHerder(), auth_config(tmp_path)).test_client()
    assert client.post("/connectors", json=BODY, headers=basic("admin", "s3cret")).status_code == 201
    assert client.get("/connectors", headers=basic("legacy", "plain-pw")).get_json() == ["x"]
    assert any("plain-text passwords for 'legacy'" in r.getMessage() for r in caplog.records)


def test_the_alias_turns_it_on_and_an_unknown_extension_is_refused(tmp_path: Path) -> None:
    config = auth_config(tmp_path, **{"rest.extension.classes": "BasicAuthSecurityRestExtension"})
    assert create_app(FakeHerder(), config).test_client().get("/connectors").status_code == 401
    with pytest.raises(RestConfigError, match="com.example.Other"):
        create_app(FakeHerder(), {"rest.extension.classes": "com.example.Other"})
    with pytest.raises(RestConfigError, match="no users file"):
        create_app(FakeHerder(), {"rest.extension.classes": KAFKA_CLASS})
    with pytest.raises(RestConfigError, match="missing.properties"):
        create_app(FakeHerder(), {"rest.extension.classes": KAFKA_CLASS,
                                  "rest.basic.auth.credentials.file": str(tmp_path / "missing.properties")})


def test_users_file_found_through_a_kafka_jaas_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    users = users_file(tmp_path)
    jaas = tmp_path / "connect_jaas.conf"
    jaas.write_text("KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule "
                    f'required\n  file="{users}";\n}};\n')
    assert credentials_file({"rest.basic.auth.jaas.config": str(jaas)}) == users
    monkeypatch.setenv("KAFKA_OPTS", f"-Xmx1g -Djava.security.auth.login.config={jaas}")
    assert credentials_file({}) == users
    jaas.write_text("Other { x required; };")
    with pytest.raises(RestConfigError, match="KafkaConnect section"):
        credentials_file({})


def test_verified_credentials_are_remembered_without_keeping_the_password() -> None:
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
    calls = []
    auth = BasicAuthenticator({"u": hashed})
    original = auth._secret_matches
    auth._secret_matches = lambda stored, pw: calls.append(pw) or original(stored, pw)  # type: ignore[method-assign]
    header = basic("u", "pw")["Authorization"]
    assert auth.check(header) == "u" and auth.check(header) == "u"
    assert len(calls) == 1
    assert auth.check(basic("u", "other")["Authorization"]) is None


def test_a_signed_internal_request_needs_no_user(tmp_path: Path) -> None:
    key = b"k" * 32
    herder = FakeHerder()
    client = create_app(herder, auth_config(tmp_path), internal_key=key).test_client()
    body = b'{"name": "x", "config": {"connector.class": "FileStreamSource"}}'
    headers = {"Content-Type": "application/json", **sign_internal_request(key, "POST", "/connectors", body)}
    assert client.post("/connectors", data=body, headers=headers).status_code == 201
    # Signed for another path, with another key, or stale: refused.
    for signed in (sign_internal_request(key, "POST", "/other", body),
                   sign_internal_request(b"x" * 32, "POST", "/connectors", body),
                   sign_internal_request(key, "POST", "/connectors", body, now=1_000_000)):
        r = client.post("/connectors", data=body, headers={"Content-Type": "application/json", **signed})
        assert r.status_code == 401


def test_forwarded_writes_carry_the_callers_credentials(tmp_path: Path) -> None:
    config = auth_config(tmp_path)
    leader_herder = FakeHerder()
    with RestServer(create_app(leader_herder, config), config) as leader:
        with RestServer(create_app(NotLeaderHerder(leader.advertised_url()), config), config) as follower:
            r = httpx.post(f"{follower.url}/connectors", json=BODY, headers=basic("admin", "s3cret"), timeout=10)
            assert r.status_code == 201, r.text
            assert leader_herder.connectors() == ["x"]
            r = httpx.post(f"{follower.url}/connectors", json=BODY, timeout=10)
            assert r.status_code == 401


def test_cors_preflight_needs_no_credentials(tmp_path: Path) -> None:
    config = auth_config(tmp_path, **{"access.control.allow.origin": "https://ui.example"})
    client = create_app(FakeHerder(), config).test_client()
    r = client.options("/connectors", headers={"Origin": "https://ui.example", "Access-Control-Request-Method": "POST"})
    assert r.status_code == 204 and r.headers["Access-Control-Allow-Origin"] == "https://ui.example"
