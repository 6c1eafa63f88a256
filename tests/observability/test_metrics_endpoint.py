"""GET /metrics of a real connect-standalone over HTTP, parsed with prometheus_client's own text parser,
and the Strimzi Kafka Connect dashboard's queries evaluated over two scrapes (tests/observability/promql_subset.py).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.observability.promql_subset import Scrape, evaluate
from tests.support import RestWorker, line_count, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "strimzi_connect_dashboard_queries.json"
PLUGINS = Path(__file__).with_name("restart_plugins.py")


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def value(scraped: dict, name: str, **labels: str) -> float | None:
    for lab, v in scraped.get(name, []):
        if all(lab.get(k) == want for k, want in labels.items()):
            return v
    return None


def plugin_dir(tmp: Path) -> Path:
    folder = tmp / "plugins"
    folder.mkdir(exist_ok=True)
    shutil.copy(PLUGINS, folder / "restart_plugins.py")
    return folder


def test_metrics_follow_records_states_and_deletes(tmp_path: Path) -> None:
    source_file = tmp_path / "in.txt"
    source_file.write_text("".join(f"line-{i}\n" for i in range(100)))
    # commits every 200 ms (the shipped 10 s would idle the test): it waits for the sink lag to reach 0 once committed
    worker = RestWorker(tmp_path, plugin_path=plugin_dir(tmp_path), offset_flush_interval_ms=200).start()
    http = worker.http()
    try:
        assert http.put("/connectors/src/config", json={
            "connector.class": "FileStreamSource", "file": str(source_file), "topic": "lines"}).status_code == 201
        assert http.put("/connectors/snk/config", json={
            "connector.class": "FileStreamSink", "file": str(tmp_path / "out.txt"), "topics": "lines"}).status_code == 201
        assert http.put("/connectors/broken/config", json={
            "connector.class": "FailingSourceConnector", "starts.file": str(tmp_path / "starts"),
            "fail.starts": "1000"}).status_code == 201
        wait_until(lambda: line_count(tmp_path / "out.txt") >= 100, 60, what="100 lines in the sink")

        def scrape() -> dict:
            r = http.get("/metrics")
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
            return samples(r.text)

        wait_until(lambda: value(scrape(), "kafka_connect_sink_task_sink_record_read_total", connector="snk") == 100,
                   30, what="sink read counter at 100")
        first = scrape()
        assert not [n for n in first if n.endswith("_created")]
        assert value(first, "kafka_connect_source_task_source_record_poll_total", connector="src", task="0") == 100
        assert value(first, "kafka_connect_source_task_source_record_write_total", connector="src", task="0") == 100
        assert value(first, "kafka_connect_sink_task_sink_record_send_total", connector="snk", task="0") == 100
        assert value(first, "kafka_connect_worker_connector_count") == 3
        assert value(first, "kafka_connect_worker_task_count") == 3
        assert value(first, "kafka_connect_connector_status", connector="src", status="running") == 1
        assert value(first, "kafka_connect_connector_connector_type", connector="snk", connector_type="sink") == 1
        [(cls_labels, one)] = [(lab, v) for lab, v in first["kafka_connect_connector_connector_class"]
                               if lab["connector"] == "src"]
        assert one == 1 and cls_labels["connector_class"].endswith("FileStreamSourceConnector")
        assert value(first, "kafka_connect_connector_task_status", connector="src", task="0", status="running") == 1
        assert value(first, "kafka_connect_connector_task_status", connector="broken", task="0", status="failed") == 1
        assert value(first, "kafka_connect_worker_connector_failed_task_count", connector="broken") == 1
        assert value(first, "kafka_connect_task_error_total_record_failures", connector="snk", task="0") == 0
        assert value(first, "headrace_connector_dlq_records_total", connector="snk") == 0
        wait_until(lambda: value(scrape(), "headrace_sink_task_partition_lag", connector="snk", topic="lines",
                                 partition="0") == 0, 30, what="sink lag 0 once committed")
        assert value(first, "kafka_connect_worker_task_startup_attempts_total") >= 3
        # Kafka's client metrics, with Kafka Connect's client ids: on the embedded log the bytes of the record
        # batches the task's producer wrote and its consumer read
        written = value(first, "kafka_producer_outgoing_byte_total", clientid="connector-producer-src-0")
        read = value(first, "kafka_consumer_incoming_byte_total", clientid="connector-consumer-snk-0")
        assert written is not None and read is not None and written >= 100 * len("line-00\n") and read >= written
        assert "kafka_producer_connection_count" not in first  # no network, no connections to count
        # the Python process's own series, where a Java worker's dashboard has JVM panels
        assert value(first, "process_resident_memory_bytes") > 10_000_000
        assert value(first, "python_gc_collections_total", generation="0") > 0

        with source_file.open("a") as fh:
            fh.write("".join(f"more-{i}\n" for i in range(50)))
        wait_until(lambda: value(scrape(), "kafka_connect_sink_task_sink_record_send_total", connector="snk") == 150,
                   30, what="sink send counter at 150")
        assert value(scrape(), "kafka_connect_source_task_source_record_poll_total", connector="src") == 150
        moved = scrape()
        assert value(moved, "kafka_producer_outgoing_byte_total", clientid="connector-producer-src-0") > written
        assert value(moved, "kafka_consumer_incoming_byte_total", clientid="connector-consumer-snk-0") > read

        # pause: the task series says paused (and no longer running); resume brings running back
        assert http.put("/connectors/src/pause").status_code == 202
        wait_until(lambda: value(scrape(), "kafka_connect_connector_task_status", connector="src",
                                 status="paused") == 1, 30, what="src task paused in /metrics")
        paused = scrape()
        assert value(paused, "kafka_connect_connector_task_status", connector="src", status="running") is None
        assert value(paused, "kafka_connect_connector_status", connector="src", status="paused") == 1
        assert value(paused, "kafka_connect_worker_connector_paused_task_count", connector="src") == 1
        assert value(paused, "kafka_connect_connector_task_pause_ratio", connector="src") == 1

        # a task whose start() takes long is UNASSIGNED meanwhile (as in Kafka Connect): the dashboard's
        # "tasks with issues" query for unassigned tasks has something to show
        assert http.put("/connectors/slow/config", json={"connector.class": "SlowStartSourceConnector"}
                        ).status_code == 201
        wait_until(lambda: value(scrape(), "kafka_connect_worker_connector_unassigned_task_count",
                                 connector="slow") == 1, 30, what="slow's task UNASSIGNED in /metrics")

        # the Strimzi dashboard's queries, over the scrape before and this one (the source paused, one task
        # FAILED, one UNASSIGNED)
        spec = json.loads(FIXTURE.read_text())
        texts = []
        for _ in range(2):
            texts.append((http.get("/metrics").text, time.time()))
            time.sleep(0.05)
        one, two = (Scrape(t, at, spec["target_labels"]) for t, at in texts)
        evaluated = []
        for q in spec["queries"]:
            if q.get("mode") in ("distributed", "kafka"):  # tests/distributed/test_distributed_metrics.py has them
                continue
            expr = q["expr"]
            for var, val in spec["variables"].items():
                expr = expr.replace(f"${var}", val)
            if q.get("empty_here"):
                # an alarm for a state Headrace never enters: evaluated, and no data is the right answer;
                # without its "!= 0" filter it has a 0 series for every connector
                assert evaluate(expr, one, two) == [], f"panel {q['panel']!r} alarms: {expr}"
                unfiltered = evaluate(expr.rsplit("!=", 1)[0], one, two)
                assert unfiltered and {v for _, v in unfiltered} == {0.0}, unfiltered
            else:
                assert evaluate(expr, one, two), f"no data for panel {q['panel']!r}: {expr}"
            evaluated.append(q["panel"])
        # all but Rebalancing and the connection counts: a standalone worker on the embedded log has no group
        # to rebalance and no broker connections
        assert len(evaluated) == 17
        unassigned = [q for q in spec["queries"] if "unassigned_task_count" in q["expr"] and "!= 0" in q["expr"]]
        [(labels, count)] = evaluate(unassigned[0]["expr"].replace("$kubernetes_namespace", "default")
                                     .replace("$strimzi_connect_cluster_name", "headrace"), one, two)
        assert labels == {"connector": "slow"} and count == 1
        assert http.delete("/connectors/slow").status_code == 204

        assert http.put("/connectors/src/resume").status_code == 202
        wait_until(lambda: value(scrape(), "kafka_connect_connector_task_status", connector="src",
                                 status="running") == 1, 30, what="src task running again in /metrics")

        # delete: every series of the connector goes
        assert http.delete("/connectors/snk").status_code == 204
        wait_until(lambda: not any(lab.get("connector") == "snk" for series in scrape().values() for lab, _ in series),
                   30, what="no series of the deleted sink")
        assert value(scrape(), "kafka_connect_worker_connector_count") == 2
    finally:
        http.close()
        worker.stop()


def test_metrics_can_be_turned_off(tmp_path: Path) -> None:
    worker = RestWorker(tmp_path, metrics_prometheus_enable="false").start()
    try:
        r = httpx.get(f"{worker.url}/metrics", timeout=10)
        assert r.status_code == 404
        assert "metrics.prometheus.enable" in r.json()["message"]
    finally:
        worker.stop()
