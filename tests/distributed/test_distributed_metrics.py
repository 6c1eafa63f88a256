"""GET /metrics of real connect-distributed workers: rebalance series, and each worker's own tasks only."""

from __future__ import annotations

import json
import time

import pytest

from connect.log import open_log_backend
from connect.log.api import NewTopic
from tests.distributed.cluster import ClusterNames, leader_of, running_tasks, start_cluster, wait_running
from tests.observability.promql_subset import Scrape, evaluate
from tests.observability.test_metrics_endpoint import FIXTURE, samples, value

pytestmark = pytest.mark.timeout(300)


def test_each_worker_exports_its_own_tasks_and_rebalance_series(tmp_path, kafka, unique_topic):
    topic = unique_topic("metrics")
    backend = open_log_backend({"bootstrap.servers": kafka.bootstrap_servers})
    admin = backend.admin()
    admin.create_topic(NewTopic(topic, 4, 1))
    admin.close()
    backend.close()
    workers = start_cluster(tmp_path, kafka, ClusterNames(unique_topic), 2)
    try:
        leader = leader_of(workers)
        with leader.http() as http:
            r = http.put("/connectors/spread/config", json={
                "connector.class": "FileStreamSink", "tasks.max": "4", "topics": topic,
                "file": str(tmp_path / "sink.txt")})
        assert r.status_code == 201, r.text
        body = wait_running(leader, "spread", 4)
        spread = running_tasks(body, 4)
        assert spread is not None
        total = 0
        for w in workers:
            with w.http() as http:
                scraped = samples(http.get("/metrics").text)
            mine = {lab["task"] for lab, v in scraped.get("kafka_connect_connector_task_status", [])
                    if lab["connector"] == "spread" and lab["status"] == "running"}
            assert len(mine) == spread[w.worker_id]
            total += len(mine)
            assert value(scraped, "kafka_connect_worker_rebalance_completed_rebalances_total") >= 1
            assert value(scraped, "kafka_connect_worker_rebalance_rebalancing") == 0
            assert value(scraped, "kafka_connect_worker_rebalance_epoch") >= 1
            assert value(scraped, "kafka_connect_coordinator_assigned_tasks") == spread[w.worker_id]
        assert total == 4

        # the Strimzi dashboard's distributed-only query (Rebalancing), over two scrapes of each worker
        spec = json.loads(FIXTURE.read_text())
        queries = [q for q in spec["queries"] if q.get("mode") == "distributed"]
        assert [q["panel"] for q in queries] == ["Rebalancing"]
        for w in workers:
            with w.http() as http:
                texts = [(http.get("/metrics").text, time.time()) for _ in range(2)]
            one, two = (Scrape(t, at, spec["target_labels"]) for t, at in texts)
            for q in queries:
                expr = q["expr"]
                for var, val in spec["variables"].items():
                    expr = expr.replace(f"${var}", val)
                assert evaluate(expr, one, two) == [({}, 0.0)], f"panel {q['panel']!r}: {expr}"
    finally:
        for w in workers:
            w.stop()
