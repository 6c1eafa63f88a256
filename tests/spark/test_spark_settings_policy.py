"""``spark.conf.override.policy`` and the Spark sinks' file paths, enforced by a real worker over REST.

Issue #35: over REST, ``spark.jars=http://…`` with ``spark.extraListeners`` fetched a jar and ran its code in the
worker's JVM, and ``hdfs.url=file:///etc/cron.d`` made a running sink write there. Here a worker with the
default policy refuses such keys with a 400 naming the key and the policy, refuses local paths outside
``connector.allowed.paths``, and still runs a sink tuned with the keys the policy allows, with the worker
config's own ``spark.*`` settings; a worker set to ``All`` passes every key to Spark as before.
"""

from __future__ import annotations

import http.server
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.spark.support import Worker, connector_file, produce_json, spark_props
from tests.support import run_cli, wait_until, worker_properties

# Spark runs inside the tests' own workers (local master, embedded log, local paths): beside the services group
pytestmark = [pytest.mark.beside_services, pytest.mark.timeout(420)]


class JarServer:
    """An HTTP server on loopback that serves an empty (valid) jar and remembers every path asked for."""

    def __init__(self) -> None:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
        body = buffer.getvalue()
        self.requests: list[str] = []
        requests = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "application/java-archive")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_HEAD = do_GET  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def jar_server() -> Iterator[JarServer]:
    server = JarServer()
    yield server
    server.close()


def _sink(out: Path, name: str = "tuned", **extra: str) -> dict[str, str]:
    return {"name": name, "connector.class": "HdfsSparkSink", "topics": "orders", "hdfs.url": f"file://{out}",
            "format": "json", **{k: str(v) for k, v in spark_props().items()}, **extra}


def _landed(out: Path) -> list[int]:
    return sorted(json.loads(line)["id"] for f in (out / "topics" / "orders").rglob("*.json")
                  for line in f.read_text().splitlines() if line)


def test_the_default_policy_refuses_code_loading_keys_and_paths_outside_the_allow_list(tmp_path, jar_server):
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    produce_json(tmp_path / "data", "orders", 40, partitions=1)
    # the operator's own spark.* settings are not the policy's business: this jar reaches Spark
    worker = Worker(tmp_path, connector_allowed_paths=allowed, spark_jars=f"{jar_server.url}/operator.jar").start()
    try:
        with worker.http() as http:
            hostile = _sink(allowed / "out", "hostile", **{
                "spark.jars": f"{jar_server.url}/x.jar", "spark.extraListeners": "com.example.Listener",
                "spark.driver.extraJavaOptions": "-XX:OnOutOfMemoryError=touch /tmp/pwned",
                "spark.executorEnv.PERL5OPT": "-Mevil"})
            r = http.post("/connectors", json={"name": "hostile", "config": hostile})
            assert r.status_code == 400, r.text
            message = r.json()["message"]
            for key in ("spark.jars", "spark.extraListeners", "spark.driver.extraJavaOptions",
                        "spark.executorEnv.PERL5OPT"):
                assert (f"{key}: The 'Tuning' Spark config override policy (spark.conf.override.policy) does "
                        f"not allow {key} in a connector configuration") in message, message
            assert "Traceback" not in message
            r = http.put("/connector-plugins/HdfsSparkSink/config/validate", json=hostile)
            assert r.status_code == 200 and r.json()["error_count"] == 4, r.text

            for key, value, local in (("hdfs.url", f"file://{outside}", outside),
                                      ("checkpoint.location", f"{outside}/ckpt", outside / "ckpt"),
                                      ("topics.dir", "/../../outside", outside)):
                config = _sink(allowed / "out", "paths", **{key: value})
                r = http.post("/connectors", json={"name": "paths", "config": config})
                assert r.status_code == 400, r.text
                message = r.json()["message"]
                assert f"for configuration {key}: " in message
                assert f"resolves to {local}, outside the directories" in message
                assert f"(connector.allowed.paths: {allowed})" in message
            assert http.get("/connectors").json() == []

            # the keys the policy allows, and a target inside the allowed directory: the sink runs
            tuned = _sink(allowed / "out", **{"spark.sql.adaptive.enabled": "false",
                                              "spark.sql.execution.arrow.maxRecordsPerBatch": "1000"})
            r = http.post("/connectors", json={"name": "tuned", "config": tuned})
            assert r.status_code == 201, r.text
        worker.wait_landed("tuned", 40)
        assert _landed(allowed / "out") == list(range(40))
        assert "spark.conf.override.policy=Tuning: connector configs may set only Spark tuning keys" in worker.log()
    finally:
        worker.stop()
    assert set(jar_server.requests) == {"/operator.jar"}, "a refused key reached Spark"
    assert list(outside.iterdir()) == []


def test_policy_all_hands_every_key_to_spark_as_before(tmp_path, jar_server):
    produce_json(tmp_path / "data", "orders", 20, partitions=1)
    out = tmp_path / "out"
    worker = Worker(tmp_path, spark_conf_override_policy="All").start()
    try:
        with worker.http() as http:
            config = _sink(out, "trusted", **{"spark.jars": f"{jar_server.url}/trusted.jar"})
            r = http.post("/connectors", json={"name": "trusted", "config": config})
            assert r.status_code == 201, r.text
        worker.wait_landed("trusted", 20)
    finally:
        worker.stop()
    assert _landed(out) == list(range(20))
    assert "/trusted.jar" in jar_server.requests  # Spark fetched it: the key reached the session


def test_a_connector_stored_under_all_fails_under_tuning_without_reaching_spark(tmp_path, jar_server):
    out = tmp_path / "out"
    worker = Worker(tmp_path, spark_conf_override_policy="All").start()
    try:
        with worker.http() as http:
            config = _sink(out, "stored", **{"spark.jars": f"{jar_server.url}/stored.jar"})
            r = http.post("/connectors", json={"name": "stored", "config": config, "initial_state": "STOPPED"})
            assert r.status_code == 201, r.text
    finally:
        worker.stop()
    # the same worker, its policy back to the default: the stored config must not run
    worker.config.write_text(worker.config.read_text().replace("spark.conf.override.policy=All\n", ""))
    worker.start()
    try:
        with worker.http() as http:
            http.put("/connectors/stored/resume")
        status = wait_until(lambda: (s := worker.status("stored"))["connector"]["state"] == "FAILED" and s, 60,
                            interval=0.5, what="the stored connector FAILED")
        trace = status["connector"]["trace"]
        assert "spark.jars" in trace and "The 'Tuning' Spark config override policy" in trace
        assert status["tasks"] == []
    finally:
        worker.stop()
    assert jar_server.requests == []
    assert not out.exists()


def test_the_cli_refuses_a_connector_file_with_a_refused_key_in_one_line(tmp_path):
    worker = worker_properties(tmp_path)
    conn = connector_file(tmp_path, "cli", connector__class="HdfsSparkSink", topics="orders",
                          hdfs__url=f"file://{tmp_path / 'out'}", spark__plugins="com.example.Plugin")
    res = run_cli(["connect-standalone", str(worker), str(conn)], cwd=tmp_path, timeout=60)
    err = res.stderr.decode()
    assert res.returncode != 0 and "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("ERROR")] == [
        f"ERROR {conn}: spark.plugins: The 'Tuning' Spark config override policy (spark.conf.override.policy) "
        "does not allow spark.plugins in a connector configuration: it is not one of the tuning keys "
        "(docs/operations/security.md); the worker configuration may set it"]
    assert not (tmp_path / "out").exists()

