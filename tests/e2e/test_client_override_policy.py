"""``connector.client.config.override.policy`` enforced by a real worker: over REST and on the CLI."""

from __future__ import annotations

import httpx
import pytest

from tests.support import (
    connect_standalone,
    free_port,
    rest_ready,
    run_cli,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(180)

REFUSED = "The 'Principal' policy does not allow 'acks' to be overridden in the connector configuration."


def test_rest_refuses_an_override_the_policy_forbids_and_accepts_one_it_allows(tmp_path):
    port = free_port()
    worker = connect_standalone(tmp_path, worker_properties(
        tmp_path, port, connector_client_config_override_policy="Principal"))
    try:
        wait_until(lambda: rest_ready(port) or not worker.alive(), 60, what="REST /health")
        assert worker.alive(), worker.log()
        source = {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": "lines"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            refused = {**source, "producer.override.acks": "1"}
            r = http.post("/connectors", json={"name": "src", "config": refused})
            assert r.status_code == 400, r.text
            assert f"producer.override.acks: {REFUSED}" in r.json()["message"]
            assert http.get("/connectors").json() == []

            r = http.put("/connector-plugins/FileStreamSource/config/validate",
                         json={"name": "src", **refused, "producer.override.sasl.mechanism": "PLAIN"})
            assert r.status_code == 200 and r.json()["error_count"] == 1
            errors = {c["value"]["name"]: c["value"]["errors"] for c in r.json()["configs"]
                      if c["value"]["errors"]}
            assert errors == {"producer.override.acks": [REFUSED]}

            allowed = {**source, "producer.override.security.protocol": "PLAINTEXT"}
            r = http.post("/connectors", json={"name": "src", "config": allowed})
            assert r.status_code == 201, r.text
    finally:
        assert worker.terminate() == 0, worker.log()


def test_the_cli_refuses_a_connector_file_with_a_forbidden_override_in_one_line(tmp_path):
    worker = worker_properties(tmp_path, connector_client_config_override_policy="None")
    conn = write_properties(tmp_path / "sink.properties", {
        "name": "snk", "connector.class": "FileStreamSink", "topics": "lines", "file": tmp_path / "out.txt",
        "consumer.override.max.poll.records": "10"})
    res = run_cli(["connect-standalone", str(worker), str(conn)], cwd=tmp_path, timeout=60)
    err = res.stderr.decode()
    assert res.returncode != 0 and "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("ERROR")] == [
        f"ERROR {conn}: consumer.override.max.poll.records: The 'None' policy does not allow "
        "'max.poll.records' to be overridden in the connector configuration."]
    assert not (tmp_path / "data").exists(), "nothing may run before the config is accepted"
