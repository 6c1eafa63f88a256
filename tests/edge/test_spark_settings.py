"""Hostile Spark sink settings over REST against a worker from the shipped configs (issue #35 items 1 and 2).

Each config below once ran code as the worker's user (a jar fetched and its listener constructed in the
driver JVM, a shell command through Spark's Python workers, JVM options) or made a running sink write outside
``connector.allowed.paths``. Against ``configs/connect-standalone.properties`` (``connector.allowed.paths=.``,
``spark.conf.override.policy`` at its default, Tuning) every one is refused with a 400 naming the key, over
create, config update and validate alike; meanwhile the worker stays up, answers a normal request within 2 s,
stays within its memory bound, fetches nothing and writes nothing outside the allowed directory.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.edge.harness import EdgeWorker, answered_within, shipped_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# The worker and its REST front with no connector measured about 110 MB; no Spark session may start here, so
# three times that is generous on a loaded machine.
RSS_BOUND = 350 * 1024 * 1024
ROUNDS = 3


class _Canary:
    """A loopback HTTP server that counts every request: Spark fetching a jar or a master answering."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                hits.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def canary() -> Iterator[_Canary]:
    server = _Canary()
    yield server
    server.close()


def _hostile_configs(tmp: Path, outside: Path, canary: _Canary) -> list[tuple[str, dict[str, str]]]:
    """(the key the 400 must name, a connector config) for each attack."""
    base = shipped_config("hdfs-spark-sink.properties", **{"hdfs.url": f"file://{tmp / 'landed'}"})
    jar = f"http://127.0.0.1:{canary.port}/evil.jar"
    attacks = [
        ("spark.jars", {"spark.jars": jar, "spark.extraListeners": "com.example.Listener"}),
        ("spark.extraListeners", {"spark.extraListeners": "com.example.Listener"}),
        ("spark.jars.packages", {"spark.jars.packages": "com.example:evil:1.0",
                                 "spark.jars.repositories": f"http://127.0.0.1:{canary.port}/"}),
        ("spark.executorEnv.PERL5OPT", {"spark.executorEnv.PERL5OPT": f"-Mevil;system('touch {outside}/perl')"}),
        ("spark.driver.extraJavaOptions", {"spark.driver.extraJavaOptions": f"-XX:OnError=touch {outside}/jvm"}),
        ("spark.pyspark.python", {"spark.pyspark.python": "/bin/sh"}),
        ("spark.plugins", {"spark.plugins": "com.example.Plugin"}),
        ("spark.sql.warehouse.dir", {"spark.sql.warehouse.dir": str(outside)}),
        ("spark.local.dir", {"spark.local.dir": str(outside)}),
        ("spark.eventLog.dir", {"spark.eventLog.enabled": "true", "spark.eventLog.dir": f"file://{outside}"}),
        ("spark.hadoop.fs.file.impl", {"spark.hadoop.fs.file.impl": "com.example.FileSystem"}),
        ("spark.master", {"spark.master": f"spark://127.0.0.1:{canary.port}"}),
        ("spark.driver.memory", {"spark.driver.memory": f"1g -XX:OnOutOfMemoryError=touch {outside}/oom"}),
        ("hdfs.url", {"hdfs.url": f"file://{outside}"}),
        ("hdfs.url", {"hdfs.url": f"file://{tmp}/x?/../../{outside.name}"}),
        ("checkpoint.location", {"checkpoint.location": f"{outside}/checkpoint"}),
        ("checkpoint.location", {"checkpoint.location": f"file://{tmp}/headrace-data/streaming-state/x"}),
        # below hdfs.url (<tmp>/landed), two levels up is where the outside folder lies
        ("topics.dir", {"topics.dir": f"/../../{outside.name}"}),
        ("logs.dir", {"logs.dir": f"/../../{outside.name}"}),
        ("path.template", {"path.template": f"/../../{outside.name}/{{header:host}}"}),
    ]
    return [(key, {**base, "name": f"attack-{i}", **changes}) for i, (key, changes) in enumerate(attacks)]


def _refused(answer: httpx.Response, key: str) -> None:
    assert answer.status_code == 400, f"{key}: {answer.status_code} {answer.text[:500]}"
    message = answer.json()["message"]
    assert key in message and "Traceback" not in message, message


def test_hostile_spark_settings_are_refused_and_the_worker_carries_on(tmp_path: Path, tmp_path_factory,
                                                                      canary: _Canary) -> None:
    outside = tmp_path_factory.mktemp("outside-the-allowed-paths")
    worker = EdgeWorker(tmp_path).start()
    try:
        attacks = _hostile_configs(tmp_path, outside, canary)
        with worker.http() as client:
            # an existing connector's config updated to an attack is refused the same way
            harmless = shipped_config("hdfs-spark-sink.properties", **{"hdfs.url": f"file://{tmp_path / 'landed'}",
                                                                        "name": "kept"})
            created = client.post("/connectors", json={"name": "kept", "config": harmless,
                                                       "initial_state": "STOPPED"})
            assert created.status_code == 201, created.text
        errors: list[BaseException] = []

        def attack() -> None:
            try:
                with worker.http() as client:
                    for _ in range(ROUNDS):
                        for key, config in attacks:
                            _refused(client.post("/connectors", json={"name": config["name"], "config": config}),
                                     key)
                            _refused(client.put("/connectors/kept/config", json={**config, "name": "kept"}), key)
                            answer = client.put("/connector-plugins/HdfsSparkSink/config/validate", json=config)
                            assert answer.status_code == 200, answer.text
                            errors_by_key = {c["value"]["name"]: c["value"]["errors"]
                                             for c in answer.json()["configs"] if c["value"]["errors"]}
                            assert key in errors_by_key, (key, errors_by_key)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        attacker = threading.Thread(target=attack, daemon=True)
        attacker.start()
        with worker.http() as client:
            while attacker.is_alive():
                listed = answered_within(2.0, lambda: client.get("/connectors"))
                assert listed.status_code == 200 and listed.json() == ["kept"], listed.text
                assert worker.rss_bytes() < RSS_BOUND, f"worker RSS {worker.rss_bytes()} bytes"
                attacker.join(0.2)
        assert not errors, errors[0]

        with worker.http() as client:
            config = answered_within(2.0, lambda: client.get("/connectors/kept/config"))
            assert config.json()["hdfs.url"] == f"file://{tmp_path / 'landed'}"
        assert worker.status("kept")["connector"]["state"] == "STOPPED"
        assert worker.proc is not None and worker.proc.alive()
        assert worker.rss_bytes() < RSS_BOUND
    finally:
        worker.stop()
    assert canary.hits == [], "a refused setting reached Spark"
    assert list(outside.iterdir()) == [], "something was written outside connector.allowed.paths"
    assert not (tmp_path / "landed").exists()
