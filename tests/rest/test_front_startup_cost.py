"""What the REST front process costs at every worker start: it answers while the worker starts without the
worker's routes, and passes requests on without an HTTP client library (httpx, httpcore, trio, anyio cost a
fifth of a CPU-second), over keep-alive connections that survive the worker closing them."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

REPO = Path(__file__).resolve().parents[2]


def test_the_front_answers_while_the_worker_starts_without_importing_the_worker_app_or_an_http_client(
        tmp_path: Path) -> None:
    probe = textwrap.dedent(f"""
        import json, sys, threading
        from werkzeug.test import Client
        from rest.front import FrontApp, create_status_app
        from rest.status_mirror import StatusMirror
        from rest.worker_proxy import WorkerProxy

        proxy = WorkerProxy({str(tmp_path / "worker.sock")!r}, on_answer=lambda environ, sent_at: None,
                            max_body_bytes=1000)
        serving = threading.Event()
        config = {{"listeners": "http://127.0.0.1:0"}}
        client = Client(FrontApp(create_status_app(config, StatusMirror(want=lambda: None), proxy, serving), proxy,
                                 serving))
        health = client.get("/health")
        other = client.get("/connectors")
        print(json.dumps({{
            "health": [health.status_code, health.get_json()],
            "other": [other.status_code, other.get_json(), other.headers.get("Retry-After")],
            "imported": sorted(m for m in ("rest.app", "rest.routes", "httpx", "httpcore", "trio", "anyio")
                               if m in sys.modules),
        }}))
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    starting = "Worker is still starting up and cannot handle requests yet."
    assert seen["health"] == [503, {"status": "starting", "message": starting}]
    assert seen["other"] == [503, {"error_code": 503, "message": starting}, "5"]
    assert seen["imported"] == []


def _worker(tmp_path: Path, app: Callable[..., Iterable[bytes]]) -> Any:
    from rest.server import RestServer

    server = RestServer(app, {"listeners": "http://127.0.0.1:0"}, threads=2,
                        unix_socket=str(tmp_path / "worker.sock"))
    server.start()
    return server


_BIG = b"0123456789abcdef" * 65536  # 1 MiB, more than one read of the proxy


def _answers(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    body = environ["wsgi.input"].read()
    if environ["PATH_INFO"] == "/big":
        start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(_BIG))),
                                  ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")])
        return [_BIG]
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps({"method": environ["REQUEST_METHOD"], "body": body.decode(),
                        "chunked": environ.get("HTTP_TRANSFER_ENCODING", "")}).encode()]


def test_the_proxy_streams_big_answers_keeps_repeated_headers_and_passes_chunked_bodies(tmp_path: Path) -> None:
    from rest.worker_proxy import WorkerProxy

    server = _worker(tmp_path, _answers)
    proxy = WorkerProxy(str(tmp_path / "worker.sock"), on_answer=lambda environ, sent_at: None, max_body_bytes=1000)
    try:
        client = Client(proxy)
        big = client.get("/big")
        assert big.status_code == 200 and big.data == _BIG
        assert big.headers.getlist("Set-Cookie") == ["a=1", "b=2"]
        head = client.head("/big")
        assert head.status_code == 200 and head.data == b""
        chunked = client.post("/echo", input_stream=io.BytesIO(b'{"a": 1}'),
                              headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"})
        assert chunked.status_code == 200 and chunked.get_json()["body"] == '{"a": 1}'
    finally:
        proxy.close()
        server.stop()


def test_the_proxy_answers_after_the_worker_closed_its_idle_connections(tmp_path: Path) -> None:
    from rest.worker_proxy import WorkerProxy

    server = _worker(tmp_path, _answers)
    proxy = WorkerProxy(str(tmp_path / "worker.sock"), on_answer=lambda environ, sent_at: None, max_body_bytes=1000)
    try:
        client = Client(proxy)
        assert client.get("/echo").status_code == 200
        server.stop()  # closes the kept-alive connection the proxy holds
        server = _worker(tmp_path, _answers)
        for method in ("GET", "PUT"):
            r = client.open("/echo", method=method, data=b"{}" if method == "PUT" else None)
            assert r.status_code == 200 and r.get_json()["method"] == method
    finally:
        proxy.close()
        server.stop()


@pytest.mark.parametrize("threads", [8])
def test_the_proxy_serves_requests_from_many_threads_at_once(tmp_path: Path, threads: int) -> None:
    from rest.worker_proxy import WorkerProxy

    server = _worker(tmp_path, _answers)
    proxy = WorkerProxy(str(tmp_path / "worker.sock"), on_answer=lambda environ, sent_at: None, max_body_bytes=1000,
                        pool_size=4)
    statuses: list[int] = []

    def run() -> None:
        client = Client(proxy)
        for _ in range(20):
            r = client.get("/big")
            statuses.append(r.status_code if r.data == _BIG else -1)
            r.close()

    try:
        workers = [threading.Thread(target=run) for _ in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join(60)
        assert statuses == [200] * threads * 20
    finally:
        proxy.close()
        server.stop()


def test_the_worker_app_compiles_no_url_builder_until_one_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from werkzeug.routing import Rule

    from rest.app import create_app
    from tests.rest.rest_fake_herder import FakeHerder

    compiled: list[str] = []
    compile_builder = Rule._compile_builder

    def counted(self: Rule, append_unknown: bool = True) -> Any:
        compiled.append(self.rule)
        return compile_builder(self, append_unknown)

    monkeypatch.setattr(Rule, "_compile_builder", counted)
    app = create_app(FakeHerder(), {"listeners": "http://127.0.0.1:0"})
    assert len(list(app.url_map.iter_rules())) > 30
    assert set(compiled) <= {"/static/<path:filename>"}  # Flask's own, added as the app is made
    compiled.clear()
    adapter = app.url_map.bind("worker")
    assert adapter.build("root.health") == "/health"
    assert adapter.build("connectors.get_connector_status", {"connector": "a b"}) == "/connectors/a%20b/status"
    assert adapter.build("root.health") == "/health"
    assert compiled == ["/health", "/connectors/<connector>/status"]
