"""The REST links of the remote-code-execution chain, against a real ``connect-standalone``.

The chain: a web page the operator opens POSTs cross-site (a form or text/plain body, which needs no
CORS preflight) or through DNS rebinding (Host: the attacker's name) to an unauthenticated API on
every interface, creating a connector that writes a file where Python runs it. Each link is refused
here: non-JSON bodies (415), foreign Host names (421), missing credentials (401), names that forge log
lines (400), oversize and over-deep bodies (413, 400); bad REST settings stop the CLI with one line.
"""

from __future__ import annotations

import base64
import json
import select
import socket
import ssl
import time
from pathlib import Path

import bcrypt
import httpx
import pytest

from tests.rest.tls_certs import make_certs
from tests.support import (
    connect_standalone,
    free_port,
    rest_ready,
    run_cli,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(240)

KAFKA_BASIC_AUTH = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"


def sink_config(tmp: Path) -> dict[str, str]:
    # What the attack wrote: a FileStreamSink whose file Python would execute (here harmless).
    return {"connector.class": "FileStreamSink", "topics": "t", "file": str(tmp / "evil.pth")}


class Worker:
    def __init__(self, tmp: Path, scheme: str = "http", **extra: object) -> None:
        self.tmp, self.port, self.scheme = tmp, free_port(), scheme
        props = worker_properties(tmp, self.port, **extra)
        if scheme != "http":
            text = props.read_text().replace(f"http://127.0.0.1:{self.port}", f"{scheme}://127.0.0.1:{self.port}")
            props.write_text(text)
        self.proc = connect_standalone(tmp, props)

    def wait_ready(self, client: httpx.Client, headers: dict[str, str] | None = None) -> None:
        """Until the worker serves: /health answers 200 (with ``headers``' credentials where auth is on; a 401
        says only that the listener is up, not that the worker behind it takes requests yet)."""
        def ready() -> bool:
            if not self.proc.alive():
                return True
            try:
                status = client.get("/health", headers=headers or {}).status_code
            except httpx.HTTPError:
                return False
            return status == 200 if headers else status in (200, 401)

        wait_until(ready, 60, what="worker REST")
        assert self.proc.alive(), self.proc.log()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def stop(self) -> str:
        assert self.proc.terminate() == 0, self.proc.log()[-3000:]
        log = self.proc.log()
        assert "Traceback" not in log, log[-3000:]
        return log

    def rss_kib(self) -> int:
        """The worker's RSS, with its REST front process's when it has one."""
        assert self.proc.proc is not None
        pid = self.proc.proc.pid
        total = 0
        for one in [pid, *map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]:
            total += next(int(line.split()[1]) for line in Path(f"/proc/{one}/status").read_text().splitlines()
                          if line.startswith("VmRSS:"))
        return total


# every check holds whether the worker serves its listeners itself or through its REST front process
@pytest.fixture(params=["in the worker", pytest.param("through the REST front process", marks=pytest.mark.slow)])
def worker(request: pytest.FixtureRequest, tmp_path: Path):
    w = Worker(tmp_path, rest_separate_process=str(request.param != "in the worker").lower())
    wait_until(lambda: rest_ready(w.port) or not w.proc.alive(), 60, what="REST /health")
    assert w.proc.alive(), w.proc.log()
    yield w
    w.stop()


def test_cross_site_posts_and_rebinding_are_refused_and_create_nothing(worker: Worker, tmp_path: Path) -> None:
    body = json.dumps({"name": "evil", "config": sink_config(tmp_path)})
    with httpx.Client(base_url=worker.url, timeout=30) as c:
        # <form enctype=text/plain> and a plain form: no preflight, so a browser sends them cross-site.
        for content_type in ("text/plain", "application/x-www-form-urlencoded"):
            r = c.post("/connectors", content=body, headers={"Content-Type": content_type,
                                                             "Origin": "https://evil.example"})
            assert r.status_code == 415, r.text
            assert "application/json" in r.json()["message"]
        # DNS rebinding: the browser thinks it talks to evil.example, so Host says so.
        r = c.post("/connectors", content=body, headers={"Content-Type": "application/json", "Host": "evil.example"})
        assert r.status_code == 421, r.text
        assert c.get("/connectors", headers={"Host": "evil.example:8083"}).status_code == 421
        assert c.get("/connectors").json() == []
    assert not (tmp_path / "evil.pth").exists()


@pytest.mark.parametrize("separate", ["false", pytest.param("true", marks=pytest.mark.slow)])
def test_basic_auth_over_tls_lets_only_known_users_in(tmp_path: Path, separate: str) -> None:
    certs = make_certs(tmp_path)
    users = tmp_path / "users.properties"
    users.write_text(f"ops={bcrypt.hashpw(b'ops-secret', bcrypt.gensalt(rounds=4)).decode()}\n")
    jaas = tmp_path / "connect_jaas.conf"
    jaas.write_text('KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule '
                    f'required\n  file="{users}";\n}};\n')
    worker = Worker(tmp_path, "https", **{"rest.extension.classes": KAFKA_BASIC_AUTH,
                                          "rest.basic.auth.jaas.config": jaas,
                                          "listeners.https.ssl.keystore.location": certs.server_store,
                                          "listeners.https.ssl.keystore.type": "PEM",
                                          "rest.separate.process": separate})
    good = "Basic " + base64.b64encode(b"ops:ops-secret").decode()
    bad = "Basic " + base64.b64encode(b"ops:guess").decode()
    try:
        with httpx.Client(base_url=worker.url, timeout=30, verify=ssl.create_default_context(cafile=str(certs.ca))) as c:
            worker.wait_ready(c, {"Authorization": good})
            body = {"name": "evil", "config": sink_config(tmp_path)}
            for headers in ({}, {"Authorization": bad}):
                r = c.post("/connectors", json=body, headers=headers)
                assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Basic")
            assert c.get("/connectors", headers={"Authorization": good}).json() == []
            ok = {"name": "fine", "config": {"connector.class": "FileStreamSource", "topic": "t",
                                             "file": str(tmp_path / "in.txt")}}
            assert c.post("/connectors", json=ok, headers={"Authorization": good}).status_code == 201
            time.sleep(0.5)  # through the front, a status read after the write is answered from its snapshot
            for path in ("/connectors/fine/status", "/connectors?expand=status"):
                assert c.get(path).status_code == 401
                assert c.get(path, headers={"Authorization": bad}).status_code == 401
                assert c.get(path, headers={"Authorization": good}).status_code == 200
    finally:
        log = worker.stop()
    assert not (tmp_path / "evil.pth").exists()
    assert "no authentication" not in log


def test_every_interface_without_authentication_is_a_warning(tmp_path: Path) -> None:
    port = free_port()
    props = worker_properties(tmp_path, port)
    props.write_text(props.read_text().replace(f"http://127.0.0.1:{port}", f"http://:{port}"))
    proc = connect_standalone(tmp_path, props)
    try:
        wait_until(lambda: rest_ready(port) or not proc.alive(), 60, what="REST /health")
        assert proc.alive(), proc.log()
    finally:
        assert proc.terminate() == 0
    warnings = [line for line in proc.log().splitlines() if "WARN" in line and "no authentication" in line]
    assert len(warnings) == 1 and f"http://:{port}" in warnings[0]


def test_connector_names_with_control_characters_or_slash_are_400_and_forge_no_log_line(
    worker: Worker, tmp_path: Path
) -> None:
    config = {"connector.class": "FileStreamSource", "topic": "t", "file": str(tmp_path / "in.txt")}
    forged = "x\n[2026-01-01 00:00:00,000] INFO FORGED line"
    with httpx.Client(base_url=worker.url, timeout=30) as c:
        for name, fragment in ((forged, "control characters"), ("a\x85b", "U+0085"), ("a\x7f", "U+007F"),
                               ("a/b", "'/'")):
            r = c.post("/connectors", json={"name": name, "config": config})
            assert r.status_code == 400 and fragment in r.json()["message"], (name, r.text)
        r = c.put("/connectors/a%0Ab/config", json=config)
        assert r.status_code == 400 and "control characters" in r.json()["message"]
        assert c.get("/connectors/x%0A[2026-01-01]%20INFO%20FORGED/status").status_code == 404
        assert c.get("/connectors").json() == []
    log = wait_until(lambda: worker.proc.log() if "FORGED" in worker.proc.log() else None, 10, what="access log")
    assert not any(line.startswith("[2026-01-01") for line in log.splitlines())
    assert "FORGED" in log  # the access log has the request, escaped on one line


def test_connector_file_with_a_slash_in_its_name_is_refused_by_the_cli(tmp_path: Path) -> None:
    connector = write_properties(tmp_path / "c.properties", {"name": "a/b", "connector.class": "FileStreamSource",
                                                            "topic": "t", "file": tmp_path / "in.txt"})
    res = run_cli(["connect-standalone", str(worker_properties(tmp_path)), str(connector)], cwd=tmp_path)
    err = res.stderr.decode()
    assert res.returncode != 0 and "must not contain '/'" in err and "Traceback" not in err + res.stdout.decode()


@pytest.mark.parametrize(("listeners", "fragment"), [("ftp://:8083", "'ftp'"), ("http://127.0.0.1:99999", "65535"),
                                                     ("https://127.0.0.1:0", "key store")])
def test_bad_listener_is_one_line_and_a_non_zero_exit(tmp_path: Path, listeners: str, fragment: str) -> None:
    props = worker_properties(tmp_path)
    props.write_text(props.read_text().replace("listeners=\n", f"listeners={listeners}\n"))
    res = run_cli(["connect-standalone", str(props)], cwd=tmp_path)
    out = res.stdout.decode() + res.stderr.decode()
    assert res.returncode != 0
    errors = [line for line in res.stderr.decode().splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and "listeners" in errors[0] and fragment in errors[0], out
    assert "Traceback" not in out


def _send_until_answered(port: int, head: bytes, chunk: bytes, total: int) -> bytes:
    """Stream ``total`` bytes of body after ``head``; stop as soon as the server answers or closes."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        sock.sendall(head)
        sent = 0
        answer = b""
        while sent < total:
            readable, writable, _ = select.select([sock], [sock], [], 10)
            if readable:
                break
            if writable:
                try:
                    sock.sendall(chunk)
                except OSError:
                    break
                sent += len(chunk)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                data = sock.recv(65536)
            except OSError:
                break
            if not data:
                break
            answer += data
            if b"\r\n\r\n" in answer and b"}" in answer:
                break
        return answer
    finally:
        sock.close()


def test_a_200_mb_body_is_413_without_the_worker_growing(worker: Worker) -> None:
    mb = 1024 * 1024
    before = worker.rss_kib()
    head = (f"POST /connectors HTTP/1.1\r\nHost: 127.0.0.1:{worker.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {200 * mb}\r\n\r\n").encode()
    answer = _send_until_answered(worker.port, head, b"x" * mb, 200 * mb)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert b"rest.request.max.bytes" in answer
    chunk = b"%x\r\n%s\r\n" % (mb, b"y" * mb)
    head = (f"POST /connectors HTTP/1.1\r\nHost: 127.0.0.1:{worker.port}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()
    answer = _send_until_answered(worker.port, head, chunk, 200 * mb)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    after = worker.rss_kib()
    assert after - before < 50 * 1024, (before, after)
    with httpx.Client(base_url=worker.url, timeout=30) as c:
        deep = "[" * 100_000 + "]" * 100_000
        r = c.post("/connectors", content=deep, headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and "deeper than 64" in r.json()["message"]
        assert c.get("/connectors").json() == []
