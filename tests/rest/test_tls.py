"""https listeners: Kafka Connect's listeners.https.ssl.* / ssl.* settings, PEM stores, client auth."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest

from rest import RestConfigError, RestServer, create_app
from tests.rest.rest_fake_herder import FakeHerder
from tests.rest.tls_certs import KEY_PASSWORD, Certs, make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def serve(config: dict[str, str]) -> RestServer:
    config = {"listeners": "https://127.0.0.1:0", **config}
    return RestServer(create_app(FakeHerder(), config), config)


def client_context(certs: Certs, with_cert: bool) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs.ca))
    if with_cert:
        context.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    return context


def test_https_listener_with_a_pem_key_store(certs: Certs) -> None:
    with serve({"listeners.https.ssl.keystore.location": str(certs.server_store),
                "listeners.https.ssl.keystore.type": "PEM"}) as server:
        assert server.url.startswith("https://127.0.0.1:")
        r = httpx.get(f"{server.url}/connectors", verify=client_context(certs, False), timeout=10)
        assert (r.status_code, r.json()) == (200, [])
        try:  # plain HTTP on the TLS port reaches no route: refused, or cheroot's 400 saying so
            r = httpx.get(f"http://127.0.0.1:{server.port}/connectors", timeout=5)
        except httpx.HTTPError:
            return
        assert r.status_code == 400 and "HTTPS" in r.text


def test_http_and_https_listeners_side_by_side_with_the_unprefixed_settings(certs: Certs) -> None:
    config = {"listeners": "http://127.0.0.1:0,https://127.0.0.1:0", "ssl.keystore.location": str(certs.encrypted_store),
              "ssl.key.password": KEY_PASSWORD}
    with RestServer(create_app(FakeHerder(), config), config) as server:
        (_, plain), (_, tls) = server.bound_addresses
        assert httpx.get(f"http://127.0.0.1:{plain}/", timeout=10).status_code == 200
        assert httpx.get(f"https://127.0.0.1:{tls}/", verify=client_context(certs, False), timeout=10).status_code == 200


def test_client_certificate_required(certs: Certs) -> None:
    config = {"listeners.https.ssl.keystore.location": str(certs.server_store),
              "listeners.https.ssl.truststore.location": str(certs.ca),
              "listeners.https.ssl.client.auth": "required",
              "ssl.client.auth": "none"}  # ignored: the prefixed settings are taken all or nothing
    with serve(config) as server:
        r = httpx.get(f"{server.url}/", verify=client_context(certs, True), timeout=10)
        assert r.status_code == 200
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{server.url}/", verify=client_context(certs, False), timeout=10).raise_for_status()


def test_unusable_tls_settings_are_one_clear_error(certs: Certs, tmp_path: Path) -> None:
    jks = tmp_path / "store.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02binary")
    cases = [
        ({}, "needs a key store"),
        ({"ssl.keystore.location": str(jks)}, "not a PEM file"),
        ({"ssl.keystore.location": str(jks), "ssl.keystore.type": "JKS"}, "PEM key"),
        ({"ssl.keystore.location": str(tmp_path / "none.pem")}, "cannot read"),
        ({"ssl.keystore.location": str(certs.encrypted_store), "ssl.key.password": "wrong"}, "cannot load"),
        ({"ssl.keystore.location": str(certs.server_store), "ssl.client.auth": "required"}, "trust store"),
        ({"ssl.keystore.location": str(certs.server_store), "ssl.client.auth": "maybe"}, "none, requested"),
        ({"ssl.keystore.location": str(certs.server_store), "ssl.enabled.protocols": "SSLv3"}, "TLSv1.2"),
    ]
    for config, fragment in cases:
        with pytest.raises(RestConfigError, match="ssl|listeners") as e:
            serve(config)
        assert fragment in str(e.value), (config, str(e.value))
