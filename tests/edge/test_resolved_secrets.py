"""A topic name a config provider resolved never reaches a response or a log line (issue #35 item 8).

A sink whose ``topics`` comes from ``${file:...}`` showed the resolved names in its ``/metrics`` labels and in
``GET /connectors/{c}/offsets`` while ``/topics`` hid them. Every answer a user reaches now shows ``[hidden]``
where a resolved value would stand, as ``/topics`` did, and the records still flow.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.edge.harness import EdgeWorker, answered_within, shipped_config
from tests.support import line_count, wait_until, write_properties

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# Long and unlike anything else on the page, so that finding it anywhere is a leak and nothing else.
SECRET_TOPIC = "zq-orders-7f3a9c"
SECOND_SECRET_TOPIC = "zq-payments-2b8d41"
# The worker and its REST front with these three connectors measured 115 MB; over three times that for a
# loaded machine.
RSS_BOUND = 400 * 1024 * 1024
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ", re.MULTILINE)


def _connector(tmp: Path, shipped: str, **changes: object) -> Path:
    """A shipped connector config with ``changes`` (the harness's ``connector_file`` cannot change ``name``)."""
    props = shipped_config(shipped)
    props.update({k: str(v) for k, v in changes.items()})
    return write_properties(tmp / f"{props['name']}.properties", props)


def _answers(client: httpx.Client) -> dict[str, str]:
    """Every answer a user of the REST API can get about the connectors, by path."""
    paths = ["/metrics", "/connectors/snk/offsets", "/connectors/snk/status", "/connectors/snk/topics",
             "/connectors/snk/tasks", "/connectors/snk", "/connectors/snk/config", "/connectors/src/offsets",
             "/connectors/src/status", "/connectors/src/topics", "/connectors/src2/topics",
             "/connectors?expand=status&expand=info", "/ui"]
    out = {}
    for path in paths:
        answer = client.get(path)
        assert answer.status_code == 200, f"{path}: {answer.status_code} {answer.text[:300]}"
        out[path] = answer.text
    return out


def test_a_topic_resolved_from_a_provider_shows_nowhere_while_records_flow(tmp_path: Path) -> None:
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    secrets = secrets_dir / "topics.properties"
    secrets.write_text(f"topic={SECRET_TOPIC}\ntopic2={SECOND_SECRET_TOPIC}\n")
    worker = EdgeWorker(tmp_path, worker_overrides={
        # the finding: topics come from the file provider, which only exists when the worker names it
        "config.providers": "file",
        "config.providers.file.param.allowed.paths": str(secrets_dir),
        # the sink commits its consumer group's offsets within the test instead of every 10 s
        "offset.flush.interval.ms": 500,
    }).start()
    try:
        reference, reference2 = f"${{file:{secrets}:topic}}", f"${{file:{secrets}:topic2}}"
        source_in, source2_in, sink_out = tmp_path / "in.txt", tmp_path / "in2.txt", tmp_path / "out.txt"
        source_in.write_text("".join(f"order {i}\n" for i in range(20)))
        source2_in.write_text("".join(f"payment {i}\n" for i in range(10)))
        worker.create(_connector(tmp_path, "connect-file-source.properties", name="src", file=source_in,
                                topic=reference))
        worker.create(_connector(tmp_path, "connect-file-source.properties", name="src2", file=source2_in,
                                topic=reference2))
        worker.create(_connector(tmp_path, "connect-file-sink.properties", name="snk", file=sink_out,
                                topics=f"{reference},{reference2}"))
        wait_until(lambda: line_count(sink_out) == 30, 60, what="all 30 records in the sink's file")

        with worker.http() as client:
            def both_committed() -> bool:
                offsets = client.get("/connectors/snk/offsets").json()["offsets"]
                return sorted(o["offset"]["kafka_offset"] for o in offsets) == [10, 20]

            wait_until(both_committed, 60, what="the sink's offsets of both topics committed")
            answers = _answers(client)
            for path, body in answers.items():
                for secret in (SECRET_TOPIC, SECOND_SECRET_TOPIC):
                    assert secret not in body, f"{secret} shown by GET {path}:\n{body[:2000]}"

            # still usable: Kafka Connect's shape, the resolved name replaced as /topics replaces it
            offsets = client.get("/connectors/snk/offsets").json()["offsets"]
            assert sorted(offsets, key=lambda o: o["offset"]["kafka_offset"]) == [
                {"partition": {"kafka_topic": "[hidden]", "kafka_partition": 0}, "offset": {"kafka_offset": 10}},
                {"partition": {"kafka_topic": "[hidden]", "kafka_partition": 0}, "offset": {"kafka_offset": 20}}]
            assert client.get("/connectors/snk/topics").json() == {"snk": {"topics": ["[hidden]"]}}
            metrics = answered_within(2.0, lambda: client.get("/metrics")).text
            lag = [line for line in metrics.splitlines() if line.startswith("headrace_sink_task_partition_lag{")]
            assert lag == ['headrace_sink_task_partition_lag{connector="snk",partition="0",task="0",'
                           'topic="[hidden]"} 0.0'], lag
            samples = [m.group(0) for m in _SAMPLE.finditer(metrics)]
            assert len(samples) == len(set(samples)), "two series with the same name and labels"

            # an offsets answer PATCHed back as shown must not be read as a topic named "[hidden]"
            assert client.put("/connectors/snk/stop").status_code == 204
            wait_until(lambda: client.get("/connectors/snk/status").json()["connector"]["state"] == "STOPPED", 30,
                       what="the sink STOPPED")
            refused = client.patch("/connectors/snk/offsets", json={"offsets": offsets})
            assert refused.status_code == 400, refused.text
            message = refused.json()["message"]
            assert "kafka_topic" in message and "[hidden]" in message and "config provider" in message, message
            assert SECRET_TOPIC not in refused.text
            assert client.put("/connectors/snk/resume").status_code == 202

        worker.wait_running("snk")
        worker.assert_running("src")
        with open(source_in, "a") as fh:
            fh.write("order 20\n")
        wait_until(lambda: line_count(sink_out) == 31, 60, what="a record written after the checks")
        assert worker.rss_bytes() < RSS_BOUND, worker.rss_bytes()
    finally:
        log = worker.stop() if worker.proc is not None and worker.proc.alive() else worker.log()
    for secret in (SECRET_TOPIC, SECOND_SECRET_TOPIC):
        leaked = [line for line in log.splitlines() if secret in line]
        assert not leaked, f"{secret} logged:\n" + "\n".join(leaked[:20])
