"""Fast checks of the restart policy, the restarter's timer and the Prometheus collector (no worker)."""

from __future__ import annotations

import json
import threading

from flask import Flask
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from connect.log.api import ClientStats
from connect.log.kafka.client_stats import DEFAULT_STATISTICS_INTERVAL_MS, LibrdkafkaStatistics
from connect.runtime.herder import ConnectorTaskId, State, Status
from connect.runtime.metrics_snapshot import (
    ClientMetrics,
    ConnectorMetrics,
    TaskMetrics,
    TaskRestartInfo,
    WorkerMetrics,
)
from connect.runtime.storage.status import StatusStore
from connect.runtime.task_restarter import TaskAutoRestarter, TaskRestartPolicy
from rest import create_app
from rest.metrics import HerderMetricsCollector
from tests.rest.rest_fake_herder import FakeHerder
from tests.support import wait_until


def test_delay_grows_by_the_multiplier_up_to_the_maximum() -> None:
    policy = TaskRestartPolicy(initial_delay_ms=100, max_delay_ms=500, multiplier=2.0, max_tries=5)
    assert [policy.delay_ms(n) for n in range(5)] == [100, 200, 400, 500, 500]


def test_restarter_restarts_a_failed_task_up_to_max_tries_then_leaves_it() -> None:
    status = StatusStore()
    tid = ConnectorTaskId("c", 0)
    made: list[ConnectorTaskId] = []
    done = threading.Event()

    def restart(task: ConnectorTaskId) -> None:  # a restart that fails again at once
        made.append(task)
        status.put_task(task, Status(State.FAILED, "w1", "boom again"))
        if len(made) == 2:
            done.set()

    restarter = TaskAutoRestarter("w1", TaskRestartPolicy(1, 10, 2.0, 2), status, restart)
    restarter.start()
    try:
        status.put_task(ConnectorTaskId("other", 0), Status(State.FAILED, "w2", "another worker's"))
        status.put_task(tid, Status(State.FAILED, "w1", "boom"))
        assert done.wait(5)
        wait_until(lambda: restarter.info(tid) == TaskRestartInfo(2, 2, None), 5, interval=0.01)
        assert made == [tid, tid]
        assert restarter.info(ConnectorTaskId("other", 0)) is None
        restarter.forget("c")
        assert restarter.info(tid) is None
    finally:
        restarter.stop()


def test_a_restart_is_dropped_when_the_task_recovered_meanwhile() -> None:
    status = StatusStore()
    tid = ConnectorTaskId("c", 0)
    made: list[ConnectorTaskId] = []
    restarter = TaskAutoRestarter("w1", TaskRestartPolicy(50, 50, 1.0, 3), status, made.append)
    restarter.start()
    try:
        status.put_task(tid, Status(State.FAILED, "w1", "boom"))
        status.put_task(tid, Status(State.RUNNING, "w1"))  # restarted by hand before the timer
        wait_until(lambda: restarter.info(tid).next_restart_ms is None, 5, interval=0.01)
        assert made == []
    finally:
        restarter.stop()


class SnapshotHerder(FakeHerder):
    def __init__(self) -> None:
        super().__init__()
        self.snapshot = WorkerMetrics("w1", (), (), {})

    def metrics_snapshot(self) -> WorkerMetrics:
        return self.snapshot


def _families(herder: SnapshotHerder) -> dict[str, list]:
    text = HerderMetricsCollector(herder).render().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_collector_names_types_and_vanishing_series() -> None:
    herder = SnapshotHerder()
    herder.snapshot = WorkerMetrics(
        "w1",
        (ConnectorMetrics("s", "x.Source", "source", "1.0", "RUNNING", {"RUNNING": 1}),),
        (TaskMetrics("s", 0, "source", "RUNNING", {"records_polled": 7, "records_written": 6,
                                                   "dlq_produce_requests": 2}),),
        {"task_startup_attempts": 1, "task_startup_success": 1})
    fams = _families(herder)
    poll = fams["kafka_connect_source_task_source_record_poll"]
    assert [(s.name, s.labels, s.value) for s in poll] == [
        ("kafka_connect_source_task_source_record_poll_total", {"connector": "s", "task": "0"}, 7)]
    assert [s.labels["status"] for s in fams["kafka_connect_connector_task_status"]] == ["running"]
    assert fams["headrace_connector_dlq_records"][0].value == 2
    assert fams["kafka_connect_worker_task_startup_success_percentage"][0].value == 1.0
    assert not [n for n, samples in fams.items() for s in samples if s.name.endswith("_created")]
    herder.snapshot = WorkerMetrics("w1", (), (), {})
    fams = _families(herder)
    assert fams.get("kafka_connect_connector_task_status", []) == []
    assert fams.get("kafka_connect_source_task_source_record_poll", []) == []


def test_metrics_route_needs_credentials_when_basic_auth_is_on(tmp_path) -> None:
    creds = tmp_path / "users.properties"
    creds.write_text("admin=secret\n")
    app: Flask = create_app(SnapshotHerder(), {
        "listeners": "http://127.0.0.1:0", "rest.extension.classes": "BasicAuthSecurityRestExtension",
        "rest.basic.auth.credentials.file": str(creds)})
    client = app.test_client()
    assert client.get("/metrics").status_code == 401
    ok = client.get("/metrics", auth=("admin", "secret"))
    assert ok.status_code == 200 and b"kafka_connect_worker_task_count" in ok.data


def test_fast_rendering_is_byte_for_byte_what_generate_latest_writes() -> None:
    herder = SnapshotHerder()
    herder.snapshot = WorkerMetrics(
        "w1",
        (ConnectorMetrics('odd "name"\\x\n', "x.Sink", "sink", "", "PAUSED", {"PAUSED": 2}),
         ConnectorMetrics("s", "x.Source", "source", "2.1", "RUNNING", {})),
        tuple(TaskMetrics('odd "name"\\x\n', t, "sink", "PAUSED", {"records_read": 10 ** 7 + t, "records_put": 0.5,
                                                                   "partition_count": 1},
                          {("topic", t): 3}, TaskRestartInfo(1, 3, 1_700_000_000_123)) for t in range(2))
        + (TaskMetrics("s", 0, "sink", "RUNNING", SPARK_PROGRESS),),
        {"connector_startup_attempts": 3, "connector_startup_failure": 1}, {"completed_rebalances": 2, "epoch": 5,
                                                                           "rebalancing": 0},
        clients=(ClientMetrics('odd "client"', "producer", 10, 2, 1), ClientMetrics("a", "admin", 1, 2, None)))
    registry = CollectorRegistry(auto_describe=False)
    collector = HerderMetricsCollector(herder)
    registry.register(collector)
    fast, reference = collector.render(), generate_latest(registry)
    assert fast == reference and b'odd \\"name\\"\\\\x\\n' in fast


SPARK_PROGRESS = {"query": "RUNNING", "records_total": 900, "batches_completed": 4, "batch_duration_ms_sum": 2500,
                  "records_per_sec": 812.5, "input_records_per_sec": 640.0, "last_batch_id": 3,
                  "last_batch_records": 300, "last_batch_ms": 750, "records_read": 0}


def test_spark_sink_progress_becomes_headrace_spark_sink_series() -> None:
    herder = SnapshotHerder()
    herder.snapshot = WorkerMetrics("w1", (), (TaskMetrics("hdfs", 0, "sink", "RUNNING", SPARK_PROGRESS),
                                              TaskMetrics("plain", 0, "sink", "RUNNING", {"records_read": 1})), {})
    fams = _families(herder)
    values = {s.name: s.value for name, samples in fams.items() if name.startswith("headrace_spark_sink_")
              for s in samples}
    assert values == {
        "headrace_spark_sink_batches_completed_total": 4, "headrace_spark_sink_records_total": 900,
        "headrace_spark_sink_last_batch_records": 300, "headrace_spark_sink_last_batch_duration_seconds": 0.75,
        "headrace_spark_sink_input_rows_per_second": 640.0, "headrace_spark_sink_processed_rows_per_second": 812.5,
        "headrace_spark_sink_batch_duration_seconds_count": 4, "headrace_spark_sink_batch_duration_seconds_sum": 2.5}
    # only the Spark sink's task has them
    assert {s.labels["connector"] for n, samples in fams.items() if n.startswith("headrace_spark_sink_")
            for s in samples} == {"hdfs"}


def test_client_traffic_becomes_kafka_client_series_named_as_strimzi_names_them() -> None:
    herder = SnapshotHerder()
    producer = ClientMetrics("connector-producer-s-0", "producer", 1200, 80, 2)
    dlq = ClientMetrics("connector-dlq-producer-s-0", "producer", 50, 0, None)  # the embedded log: no connections
    consumer = ClientMetrics("connector-consumer-k-0", "consumer", 90, 4000, 1)
    herder.snapshot = WorkerMetrics(
        "w1", (), (TaskMetrics("s", 0, "source", "RUNNING", {}, clients=(producer, dlq)),
                   TaskMetrics("k", 0, "sink", "RUNNING", {}, clients=(consumer,))), {},
        clients=(ClientMetrics("connect-shared-admin", "admin", 10, 20, 0),))
    fams = _families(herder)
    out = {(s.labels["clientid"], s.value) for s in fams["kafka_producer_outgoing_byte"]}
    assert out == {("connector-producer-s-0", 1200), ("connector-dlq-producer-s-0", 50)}
    assert fams["kafka_producer_outgoing_byte"][0].name == "kafka_producer_outgoing_byte_total"
    assert {(s.labels["clientid"], s.value) for s in fams["kafka_consumer_incoming_byte"]} == {
        ("connector-consumer-k-0", 4000)}
    assert [(s.labels["clientid"], s.value) for s in fams["kafka_producer_connection_count"]] == [
        ("connector-producer-s-0", 2)]
    assert [s.value for s in fams["kafka_admin_client_connection_count"]] == [0]
    assert [s.value for s in fams["kafka_admin_client_incoming_byte"]] == [20]


def test_librdkafka_statistics_give_bytes_and_open_connections() -> None:
    stats = LibrdkafkaStatistics("connector-consumer-k-0", "consumer")
    assert stats.snapshot() is None  # nothing reported yet: no series rather than a made-up zero
    assert stats.settings({})["statistics.interval.ms"] == DEFAULT_STATISTICS_INTERVAL_MS
    assert "statistics.interval.ms" not in stats.settings({"statistics.interval.ms": "0"})  # the operator's
    stats.on_statistics(json.dumps({"tx_bytes": 512, "rx_bytes": 9000, "brokers": {
        "127.0.0.1:9092/1": {"state": "UP", "source": "learned"},
        "127.0.0.1:9093/2": {"state": "DOWN", "source": "learned"},
        "GroupCoordinator": {"state": "UP", "source": "logical"}}}))
    assert stats.snapshot() == ClientStats("connector-consumer-k-0", "consumer", 512, 9000, 1)
    stats.on_statistics("not json")  # kept the last good report
    assert stats.snapshot() == ClientStats("connector-consumer-k-0", "consumer", 512, 9000, 1)
