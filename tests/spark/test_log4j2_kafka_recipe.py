"""The recipe for Java applications on Kafka (docs/guide/connectors/ingestion.md), end to end with the files it ships: a Java program
(compiled here) logs 10,000 events with ThreadContext (MDC) fields through Log4j 2's KafkaAppender
(configs/log4j2-kafka.xml: syncSend, acks=all, idempotence, EcsLayout.json) to a topic on the services/ Kafka
broker; a connect-standalone worker on that Kafka (configs/connect-standalone-kafka-logs.properties) runs
HdfsSparkSink (Parquet, hour folders) and the search sink on OpenSearch (configs/*-java-logs-sink.properties).
Every event is in HDFS once, in the folder of its hour, and in OpenSearch once, found there by an MDC field."""

from __future__ import annotations

import collections
import io
import os
import re
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from connect.runtime.properties import load_config_file
from services import log4j_kafka
from tests.spark.support import Worker, hdfs_files, spark_props, wait_until
from tests.support import REPO, write_properties

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

EVENTS = 10_000
THREADS = 4  # an application's request threads: each waits for its own acks (syncSend)
ORDERS = 100


def _from_configs(target: Path, name: str, **overrides: Any) -> Path:
    """A file of configs/ with the test's addresses and folders in place of the example ones."""
    props: dict[str, Any] = load_config_file(REPO / "configs" / name)
    props.update(overrides)
    return write_properties(target, props)


def _hdfs_rows(client: Any, root: str) -> list[tuple[str, dict[str, Any]]]:
    """(file path, record) of every committed Parquet file under ``root``, over WebHDFS."""
    import pyarrow.parquet as pq

    rows = []
    for path in hdfs_files(client, root):
        with client.read(path) as fh:
            table = pq.read_table(io.BytesIO(fh.read()))
        rows.extend((path, record) for record in table.to_pylist())
    return rows


def _search_count(client: Any, pattern: str, query: dict[str, Any] | None = None) -> int:
    if not client.indices.exists(index=pattern):
        return 0
    client.indices.refresh(index=pattern)
    return int(client.count(index=pattern, body={"query": query or {"match_all": {}}})["count"])


def test_log4j2_kafka_appender_to_a_worker_on_kafka_lands_every_event_once_in_hdfs_and_opensearch(
        tmp_path, kafka, hdfs, opensearch):
    from confluent_kafka.admin import AdminClient, NewTopic

    started = time.monotonic()
    tag = uuid.uuid4().hex[:8]
    topic, root = f"java-app-logs-{tag}", f"/java-logs-{tag}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    del admin

    classpath = log4j_kafka.log_orders_program(tmp_path / "java")
    spark = spark_props(**{"spark.master": "local[2]", "trigger.interval.ms": 1000})
    hdfs_sink = _from_configs(tmp_path / "hdfs-sink.properties", "hdfs-java-logs-sink.properties", topics=topic,
                              **{"hdfs.url": hdfs.url, "topics.dir": f"{root}/topics", "logs.dir": f"{root}/logs",
                                 "rotate.interval.ms": 1000, **spark})
    search_sink = _from_configs(tmp_path / "search-sink.properties", "opensearch-java-logs-sink.properties",
                                topics=topic,
                                **{"connection.url": opensearch.url,
                                   "errors.deadletterqueue.topic.name": f"{topic}-dlq", **spark})
    worker = Worker(tmp_path, hdfs_sink, search_sink)
    # the shipped worker file in place of the embedded-log one Worker wrote
    _from_configs(worker.config, "connect-standalone-kafka-logs.properties",
                  **{"bootstrap.servers": kafka.bootstrap_servers, "listeners": f"http://127.0.0.1:{worker.port}",
                     "offset.storage.file.filename": tmp_path / "connect.offsets",
                     "streaming.state.dir": tmp_path / "state"})
    client, search = hdfs.client(), opensearch.client()
    index = f"{topic}-*"
    worker.start()
    try:
        env = dict(os.environ, KAFKA_BOOTSTRAP_SERVERS=kafka.bootstrap_servers, LOG_TOPIC=topic)
        logged = subprocess.run(["java", "-cp", classpath,
                                 f"-Dlog4j2.configurationFile={REPO / 'configs' / 'log4j2-kafka.xml'}",
                                 "LogOrders", str(EVENTS), str(THREADS), str(ORDERS)],
                                env=env, capture_output=True, text=True, timeout=300)
        assert logged.returncode == 0, logged.stdout + logged.stderr[-5000:]
        assert f"logged {EVENTS} failed 0 in" in logged.stdout, logged.stdout
        print(logged.stdout.strip().splitlines()[-1])
        # nothing from Log4j's status logger or the Kafka client but the note that timeout.ms is the appender's
        complaints = [line for line in logged.stderr.splitlines()
                      if re.search(r"\b(ERROR|WARN)\b", line) and "timeout.ms" not in line]
        assert complaints == [], logged.stderr[-5000:]

        wait_until(lambda: len({rec["seq"] for _, rec in _hdfs_rows(client, f"{root}/topics/{topic}")}) >= EVENTS,
                   300, interval=2.0, what=f"{EVENTS} events in HDFS")
        wait_until(lambda: _search_count(search, index) >= EVENTS, 180, interval=1.0,
                   what=f"{EVENTS} events in OpenSearch")
        for name in ("hdfs-java-logs", "search-java-logs"):
            status = worker.status(name)
            assert [t["state"] for t in status["tasks"]] == ["RUNNING"], status
    finally:
        worker.stop()
    print(f"Log4j 2 -> Kafka -> HDFS and OpenSearch: {EVENTS} events, test ran {time.monotonic() - started:.1f} s")

    # HDFS: every event once, each in the folder of its own hour (the record time is the event time)
    rows = _hdfs_rows(client, f"{root}/topics/{topic}")
    seqs = collections.Counter(int(rec["seq"]) for _, rec in rows)
    assert sorted(seqs) == list(range(EVENTS)) and set(seqs.values()) == {1}, collections.Counter(seqs.values())
    for path, rec in rows:
        folder = re.search(r"/dt=(\d{4}-\d\d-\d\d)/hour=(\d\d)/[^/]+\.parquet$", path)
        assert folder is not None, path
        assert rec["@timestamp"].startswith(f"{folder.group(1)}T{folder.group(2)}:"), (path, rec)
    error = next(rec for _, rec in rows if rec["seq"] == "3000")
    assert error["log.level"] == "ERROR" and error["error.type"] == "java.lang.IllegalStateException"
    assert error["orderId"] == "order-0" and "at LogOrders.lambda$main$0" in error["error.stack_trace"]
    info = next(rec for _, rec in rows if rec["seq"] == "42")
    assert info["message"] == "order event 42" and info["log.logger"] == "shop.orders"
    assert info["process.thread.name"] == f"request-{42 % THREADS}"

    # OpenSearch: every event once, and the events of one order found by its MDC field
    assert _search_count(search, index) == EVENTS
    hits = search.search(index=index, body={"query": {"term": {"orderId.keyword": "order-42"}},
                                            "size": EVENTS})["hits"]["hits"]
    assert sorted(int(h["_source"]["seq"]) for h in hits) == list(range(42, EVENTS, ORDERS))
    assert _search_count(search, index, {"term": {"log.level.keyword": "ERROR"}}) == EVENTS // 1000
    errors = search.search(index=index, body={"query": {"bool": {"filter": [
        {"term": {"orderId.keyword": "order-0"}}, {"term": {"error.type.keyword": "java.lang.IllegalStateException"}}]}}})
    assert {h["_source"]["seq"] for h in errors["hits"]["hits"]} == {str(i) for i in range(0, EVENTS, 1000)}
