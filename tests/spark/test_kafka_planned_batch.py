"""A worker on Kafka stopped between Spark's planning of a batch (offset log) and its commit (commit log), as a
kill -9 mid-batch leaves it: the HDFS sink writes that batch before the query starts (Spark 4.1.1's Kafka source
fails a query whose first batch replays one, SPARK-55271), and every record is in HDFS once."""

from __future__ import annotations

import collections
import json
import uuid

import pytest

from tests.spark.support import Worker, connector_file, hdfs_records, wait_until

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

# three batches before the stop (the last one planned and written, then its commit removed), as 30,000 records
# at 10,000 a batch made, at less than half the writing
TOTAL = 12_000
BATCH = 4_000


def _produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(start, start + count):
        producer.produce(topic, json.dumps({"id": i, "name": f"user-{i}"}).encode())
    assert producer.flush(60) == 0


def test_a_batch_planned_but_not_committed_is_written_once_before_the_query_restarts(tmp_path, kafka, hdfs):
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, root = f"planned-{uuid.uuid4().hex[:8]}", f"/planned-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    _produce(kafka.bootstrap_servers, topic, 0, TOTAL)
    sink = connector_file(tmp_path, "planned-hdfs", connector__class="HdfsSparkSink", topics=topic,
                          hdfs__url=hdfs.url, topics__dir=f"{root}/topics", logs__dir=f"{root}/logs",
                          format="parquet", value__schema="id BIGINT, name STRING",
                          max__offsets__per__trigger=BATCH, trigger__interval__ms=500,
                          **{"spark.master": "local[1]", "spark.driver.memory": "768m",
                             "spark.sql.shuffle.partitions": "2"})
    worker = Worker(tmp_path, sink, bootstrap_servers=kafka.bootstrap_servers)
    worker.config.write_text("\n".join(line for line in worker.config.read_text().splitlines()
                                       if not line.startswith("embedded.log.dir")) + "\n")
    client = hdfs.client()
    files = f"{root}/topics/{topic}"
    commits = f"{root}/logs/planned-hdfs/checkpoint/commits"
    worker.start()
    try:
        wait_until(lambda: len({r["id"] for r in hdfs_records(client, files)}) >= TOTAL, 240, interval=2.0,
                   what=f"{TOTAL} records in HDFS")
    finally:
        worker.stop()
    last = max(int(name) for name in client.list(commits) if name.isdigit())
    # the state a kill -9 after the batch's files were renamed into place, before Spark's commit, leaves
    client.delete(f"{commits}/{last}")
    _produce(kafka.bootstrap_servers, topic, TOTAL, 5_000)
    worker.start()
    try:
        wait_until(lambda: len({r["id"] for r in hdfs_records(client, files)}) >= TOTAL + 5_000, 240, interval=2.0,
                   what="the records produced while the worker was stopped")
        status = worker.status("planned-hdfs")
        assert status["tasks"][0]["state"] == "RUNNING", status
    finally:
        worker.stop()
    ids = collections.Counter(r["id"] for r in hdfs_records(client, files))
    assert len(ids) == TOTAL + 5_000 and set(ids.values()) == {1}, collections.Counter(ids.values())
    assert f"writing batch {last} (planned before the last stop, not committed) before the query starts" \
        in worker.log()
    assert client.status(f"{commits}/{last}", strict=False) is not None
