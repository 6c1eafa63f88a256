"""kill -9 of the worker (and so of Spark's JVM) in the middle of the stream, then a restart with the same configs:
HDFS holds each record exactly once and OpenSearch exactly one document per record."""

from __future__ import annotations

import collections
import threading
import time
import uuid

import pytest

from tests.spark.support import Worker, connector_file, hdfs_records, produce_json, spark_props, wait_until

pytestmark = [pytest.mark.timeout(480), pytest.mark.slow]

# The kill comes once 30,000 records are in HDFS, at 10,000 a micro-batch, so about half of them are still to
# land after it: the batch under way and more, for each sink to replay or write after the restart. 100,000 added
# only records to write, not another kind of batch or state to recover.
TOTAL = 60_000


def test_kill9_mid_stream_then_restart_lands_each_record_once(tmp_path, hdfs, opensearch):
    topic = f"clicks-{uuid.uuid4().hex[:8]}"
    root = f"/k9-{uuid.uuid4().hex[:8]}"
    log_dir = tmp_path / "data"
    produce_json(log_dir, topic, 20_000, partitions=2, hours=3)
    stream = spark_props(**{"max.offsets.per.trigger": 10000})
    to_hdfs = connector_file(tmp_path, "k9-hdfs", connector__class="HdfsSparkSink", topics=topic,
                             hdfs__url=hdfs.url, topics__dir=f"{root}/topics", logs__dir=f"{root}/logs",
                             format="parquet", path__format="dt=YYYY-MM-dd/hour=HH",
                             value__schema="id BIGINT, n BIGINT, name STRING", **stream)
    to_search = connector_file(tmp_path, "k9-search", connector__class="ElasticsearchSparkSink", topics=topic,
                               connection__url=opensearch.url, key__ignore="true", batch__size=1000, **stream)
    worker = Worker(tmp_path, to_hdfs, to_search).start()

    def produce_rest() -> None:
        for start in range(20_000, TOTAL, 5000):
            produce_json(log_dir, topic, 5000, partitions=2, start=start, hours=3)
            time.sleep(0.3)

    producer = threading.Thread(target=produce_rest, daemon=True)
    try:
        wait_until(lambda: worker.metrics("k9-hdfs").get("records_total", 0) > 0
                   and worker.metrics("k9-search").get("records_total", 0) > 0, 180, interval=1.0,
                   what="both connectors to land their first batch")
        producer.start()
        landed = wait_until(lambda: (n := worker.metrics("k9-hdfs").get("records_total", 0)) >= 30_000 and n,
                            180, interval=0.2, what="30,000 records in HDFS")
        worker.kill9()
        assert landed < TOTAL, "the stream was over before the kill"
    finally:
        if producer.is_alive():
            producer.join(120)
        if worker.proc is not None and worker.proc.alive():
            worker.kill9()

    worker.start()
    try:
        def caught_up(name: str) -> bool:
            m = worker.metrics(name)
            return m.get("lag") == 0 and m.get("records_total", 0) > 0

        wait_until(lambda: caught_up("k9-hdfs") and caught_up("k9-search"), 300, interval=1.0,
                   what="both connectors to catch up after the restart")
    finally:
        worker.stop()

    ids = collections.Counter(r["id"] for r in hdfs_records(hdfs.client(), f"{root}/topics/{topic}"))
    assert len(ids) == TOTAL and set(ids.values()) == {1}, collections.Counter(ids.values())
    client = opensearch.client()
    client.indices.refresh(index=topic)
    assert client.count(index=topic)["count"] == TOTAL
