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
from tests.support import line_count, wait_until

pytestmark = pytest.mark.timeout(300)


def test_each_worker_exports_its_own_tasks_and_rebalance_series(tmp_path, kafka, unique_topic):
    topic = unique_topic("metrics")
    backend = open_log_backend({"bootstrap.servers": kafka.bootstrap_servers})
    admin = backend.admin()
    admin.create_topic(NewTopic(topic, 4, 1))
    admin.close()
    backend.close()
    # librdkafka's statistics every half second (10 s by default), so its client series show up at once
    names = ClusterNames(unique_topic)
    workers = start_cluster(tmp_path, kafka, names, 2, **{
        "producer.statistics.interval.ms": 500, "consumer.statistics.interval.ms": 500,
        "admin.statistics.interval.ms": 500})
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

        # Kafka's client metrics: each sink task's consumer, under Kafka Connect's client id, reports the bytes
        # it fetched and its open broker connections from librdkafka's statistics
        source_file = tmp_path / "in.txt"
        source_file.write_text("".join(f"line-{i}\n" for i in range(50)))
        with leader.http() as http:
            r = http.put("/connectors/feed/config", json={
                "connector.class": "FileStreamSource", "topic": topic, "file": str(source_file)})
        assert r.status_code == 201, r.text
        wait_running(leader, "feed", 1)
        wait_until(lambda: line_count(tmp_path / "sink.txt") >= 50, 60, what="50 lines in the sink")

        def client_series(w) -> dict:
            with w.http() as http:
                scraped = samples(http.get("/metrics").text)
            return {name: {lab["clientid"]: v for lab, v in rows} for name, rows in scraped.items()
                    if name.startswith(("kafka_producer_", "kafka_consumer_", "kafka_admin_client_"))}

        # a worker's shared admin client is made on first use, as in Kafka Connect: reading a sink's offsets uses it
        for w in workers:
            with w.http() as http:
                assert http.get("/connectors/spread/offsets").status_code == 200

        def all_clients_reported() -> bool:
            merged: dict[str, dict[str, float]] = {}
            admins = 0
            for w in workers:
                for name, rows in client_series(w).items():
                    merged.setdefault(name, {}).update(rows)
                    admins += name == "kafka_admin_client_connection_count"
            consumers = merged.get("kafka_consumer_incoming_byte_total", {})
            return (sum(1 for cid, v in consumers.items() if cid.startswith("connector-consumer-spread-") and v > 0)
                    == 4 and merged.get("kafka_producer_outgoing_byte_total", {}).get("connector-producer-feed-0", 0)
                    > 0 and admins == len(workers))
        wait_until(all_clients_reported, 30, what="client series of 4 consumers, the feed's producer, the admins")
        for w in workers:
            series = client_series(w)
            assert all(v >= 1 for v in series["kafka_consumer_connection_count"].values()), series
            # the internal topics' clients, named as Kafka Connect names them
            for suffix in ("configs", "offsets", "statuses"):
                cid = f"{names.group}-{suffix}"
                assert cid in series["kafka_producer_outgoing_byte_total"], (cid, series)
                assert series["kafka_consumer_incoming_byte_total"][cid] > 0, (cid, series)
            assert series["kafka_producer_outgoing_byte_total"][f"{names.group}-statuses"] > 0, series

        # the Strimzi dashboard's distributed-only query (Rebalancing), over two scrapes of each worker
        spec = json.loads(FIXTURE.read_text())
        queries = [q for q in spec["queries"] if q.get("mode") == "distributed"]
        assert [q["panel"] for q in queries] == ["Rebalancing"]
        on_kafka = [q for q in spec["queries"] if q.get("mode") == "kafka"]
        assert [q["panel"] for q in on_kafka] == ["Connection Count"] * 3
        for w in workers:
            with w.http() as http:
                texts = [(http.get("/metrics").text, time.time()) for _ in range(2)]
            one, two = (Scrape(t, at, spec["target_labels"]) for t, at in texts)
            for q in queries:
                expr = q["expr"]
                for var, val in spec["variables"].items():
                    expr = expr.replace(f"${var}", val)
                assert evaluate(expr, one, two) == [({}, 0.0)], f"panel {q['panel']!r}: {expr}"
            # every worker's internal topics have a producer and a consumer connected; its shared admin holds
            # connections only while it has something to ask (librdkafka closes idle ones), so 0 is a fair answer
            for q in on_kafka:
                expr = q["expr"].replace("$strimzi_connect_cluster_name", spec["variables"]["strimzi_connect_cluster_name"])
                [(labels, connections)] = evaluate(expr, one, two)
                least = 0 if "admin_client" in expr else 1
                assert labels == {} and connections >= least, f"panel {q['panel']!r}: {expr} = {connections}"
    finally:
        for w in workers:
            w.stop()
