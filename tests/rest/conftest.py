"""Fixtures for the REST tests: the app over a FakeHerder, in process and on a live server.

``rest_base_url`` is the seam for running the live-server tests against a real worker: set
HEADRACE_TEST_REST_URL (e.g. to a running connect-standalone's http://127.0.0.1:8083), or
override the fixture in a conftest closer to the tests.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from rest import RestServer, create_app
from tests.rest.rest_fake_herder import FakeHerder
from tests.support import connect_standalone, free_port, rest_ready, wait_until, worker_properties

LOOPBACK_CONFIG = {"listeners": "http://127.0.0.1:0"}


@pytest.fixture
def fake_herder() -> FakeHerder:
    return FakeHerder()


@pytest.fixture
def app(fake_herder: FakeHerder) -> Flask:
    return create_app(fake_herder, LOOPBACK_CONFIG)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture(scope="module")
def live_server() -> Iterator[RestServer]:
    """A RestServer on 127.0.0.1 (free port) over its own FakeHerder, shared by a module's tests."""
    herder = FakeHerder()
    server = RestServer(create_app(herder, LOOPBACK_CONFIG), LOOPBACK_CONFIG)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# against a real worker the fuzz run takes a dozen seconds: it runs with the slow tests, the FakeHerder's in the
# fast suite
@pytest.fixture(scope="module", params=["fake-herder", pytest.param("connect-standalone", marks=pytest.mark.slow)])
def rest_base_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The live-server tests run twice: over a FakeHerder, and against a real ``connect-standalone`` process."""
    external = os.environ.get("HEADRACE_TEST_REST_URL")
    if external:
        yield external.rstrip("/")
        return
    if request.param == "fake-herder":
        server: RestServer = request.getfixturevalue("live_server")
        yield server.url
        return
    work = tmp_path_factory.mktemp("standalone")
    port = free_port()
    # the tests' connectors name files in other temp folders of the session (the fuzz run's, for one)
    proc = connect_standalone(work, worker_properties(work, port,
                                                      connector_allowed_paths=tmp_path_factory.getbasetemp()))
    try:
        wait_until(lambda: rest_ready(port) or not proc.alive(), 60, what="connect-standalone REST")
        assert proc.alive(), proc.log()
        yield f"http://127.0.0.1:{port}"
    finally:
        code = proc.terminate()
    assert code == 0, proc.log()[-5000:]
    assert "Traceback" not in proc.log(), proc.log()[-5000:]
