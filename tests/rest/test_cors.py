"""CORS from access.control.allow.origin / .methods."""

from __future__ import annotations

from flask.testing import FlaskClient

from rest import create_app
from tests.rest.rest_fake_herder import FakeHerder


def client_for(**config: str) -> FlaskClient:
    return create_app(FakeHerder(), {k.replace("_", "."): v for k, v in config.items()}).test_client()


def preflight(client: FlaskClient, origin: str, method: str) -> dict[str, str]:
    r = client.open("/connectors", method="OPTIONS",
                    headers={"Origin": origin, "Access-Control-Request-Method": method})
    assert r.status_code == 204 and r.get_data() == b""
    return dict(r.headers)


def test_off_when_origin_is_empty() -> None:
    client = client_for(access_control_allow_origin="")
    r = client.get("/connectors", headers={"Origin": "http://ui.example"})
    assert "Access-Control-Allow-Origin" not in r.headers
    # No preflight handling either: Flask's own OPTIONS answer.
    r = client.open("/connectors", method="OPTIONS",
                    headers={"Origin": "http://ui.example", "Access-Control-Request-Method": "GET"})
    assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers


def test_wildcard_origin_echoes_the_origin_for_default_methods() -> None:
    client = client_for(access_control_allow_origin="*")
    r = client.get("/connectors", headers={"Origin": "http://ui.example"})
    assert r.headers["Access-Control-Allow-Origin"] == "http://ui.example"
    assert "Origin" in r.headers["Vary"]
    headers = preflight(client, "http://ui.example", "POST")
    assert headers["Access-Control-Allow-Origin"] == "http://ui.example"
    assert headers["Access-Control-Allow-Methods"] == "GET,POST,HEAD"
    assert "Content-Type" in headers["Access-Control-Allow-Headers"]
    assert headers["Access-Control-Max-Age"] == "1800"
    # DELETE is not among the default methods.
    assert "Access-Control-Allow-Origin" not in preflight(client, "http://ui.example", "DELETE")
    r = client.put("/connectors/x/pause", headers={"Origin": "http://ui.example"})
    assert "Access-Control-Allow-Origin" not in r.headers


def test_listed_origins_patterns_and_methods() -> None:
    client = client_for(access_control_allow_origin="http://a.example, https://*.corp.example",
                        access_control_allow_methods="GET,PUT,DELETE")
    ok = client.put("/connectors/x/pause", headers={"Origin": "https://ui.corp.example"})
    assert ok.headers["Access-Control-Allow-Origin"] == "https://ui.corp.example"
    assert preflight(client, "http://a.example", "DELETE")["Access-Control-Allow-Methods"] == "GET,PUT,DELETE"
    denied = client.get("/connectors", headers={"Origin": "http://evil.example"})
    assert "Access-Control-Allow-Origin" not in denied.headers
    assert "Access-Control-Allow-Origin" not in preflight(client, "http://evil.example", "GET")
    # POST is not listed, so even an allowed origin gets no CORS headers for it.
    r = client.post("/connectors", json={}, headers={"Origin": "http://a.example"})
    assert "Access-Control-Allow-Origin" not in r.headers
