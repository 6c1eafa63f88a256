"""The Spark sinks on a Spark standalone cluster (services/spark.py: a master and two workers): the worker's task
is the driver, the executors run on the cluster and read the topics from Kafka. Records land in HDFS and in
OpenSearch exactly once across a kill -9 of one Spark worker process and of the Headrace worker; the
application shows on the master. An
embedded log with a cluster master is refused at start, pointing to Kafka."""

from __future__ import annotations

import collections
import json
import os
import time
import uuid

import pytest

from spark_sinks.hdfs import HdfsSparkSinkTask
from spark_sinks.session import extra_jars
from tests.spark.support import InProcessTask, Worker, connector_file, hdfs_records, wait_until

# the must-show runs 1,000,000 (HEADRACE_CLUSTER_RECORDS=1000000); CI keeps 160,000 for time. Every phase is
# there at 160,000 as at 200,000: the first 20,000-record batch on the cluster, the executor's kill mid-stream
# and batches after it, then the worker's kill -9 with 120,000 records produced of which at most 100,000 have
# landed (the task's figures were seen to move by two batches at once; checked below), for both sinks to replay
# after the restart, with 40,000 more produced meanwhile. 200,000 only added two more 20,000-record batches
# after the restart, like the ones before them (22 s of 183 on a quiet machine); 120,000 could leave as few as
# 10,000 records to replay.
TOTAL = int(os.environ.get("HEADRACE_CLUSTER_RECORDS", "160000"))
# waits grow with the record count: 300 s covers 200,000 on the shared 2-core machine
WAIT = max(300, 300 * TOTAL // 200_000)
# micro-batches grow with the count too (20,000 at the default), so 1,000,000 records take 10 batches, not 50,
# and the kills still fall mid-stream
BATCH = max(20_000, TOTAL // 10)


def test_an_embedded_log_with_a_cluster_master_is_refused_at_start_pointing_to_kafka(tmp_path):
    props = {"name": "on-cluster", "connector.class": "HdfsSparkSink", "topics": "t", "hdfs.url": "hdfs://h:8020",
             "spark.master": "spark://10.0.0.5:7077"}
    with pytest.raises(Exception) as info:
        InProcessTask(HdfsSparkSinkTask, props, tmp_path / "data", tmp_path / "state")
    message = str(info.value)
    assert "spark.master=spark://10.0.0.5:7077" in message and "embedded log" in message
    assert "bootstrap.servers" in message and "\n" not in message


def _produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "queue.buffering.max.messages": 500_000})
    # times from a few hours ago (older ones would fall to the broker's retention), 100 records an hour apart:
    # several hour folders
    base = (int(time.time()) // 3600 - 6) * 3_600_000
    for i in range(start, start + count):
        producer.produce(topic, json.dumps({"id": i, "n": i % 97, "name": f"user-{i}"}).encode(),
                         timestamp=base + i * 36_000 % (6 * 3_600_000))
        if i % 50_000 == 0:
            producer.flush(60)
    assert producer.flush(60) == 0


@pytest.mark.slow
@pytest.mark.timeout(3 * WAIT)
def test_records_land_in_hdfs_and_opensearch_exactly_once_on_the_cluster_across_worker_and_executor_kills(
        tmp_path, kafka, hdfs, opensearch, spark_cluster):
    from confluent_kafka.admin import AdminClient, NewTopic

    if not any("spark-sql-kafka" in j for j in extra_jars()):
        pytest.fail("Spark's Kafka jars are not fetched: python -m services fetch spark-kafka", pytrace=False)
    topic, root = f"orders-{uuid.uuid4().hex[:8]}", f"/cluster-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    _produce(kafka.bootstrap_servers, topic, 0, TOTAL // 2)
    sink = connector_file(tmp_path, "cluster-hdfs", connector__class="HdfsSparkSink", topics=topic,
                          hdfs__url=hdfs.url, topics__dir=f"{root}/topics", logs__dir=f"{root}/logs",
                          format="parquet", path__format="dt=YYYY-MM-dd/hour=HH",
                          value__schema="id BIGINT, n BIGINT, name STRING", max__offsets__per__trigger=BATCH,
                          trigger__interval__ms=500, **{"spark.driver.memory": "768m",
                                                       "spark.executor.memory": "768m",
                                                       "spark.cores.max": "2",
                                                       "spark.sql.shuffle.partitions": "2"})
    search = connector_file(tmp_path, "cluster-search", connector__class="ElasticsearchSparkSink", topics=topic,
                            connection__url=opensearch.url, key__ignore="true", batch__size=2000,
                            max__offsets__per__trigger=BATCH, trigger__interval__ms=500)
    # a cluster master is the operator's to choose (spark.conf.override.policy=Tuning lets a connector config
    # name only local[...]): the worker config's spark.* settings go to the session as they are
    worker = Worker(tmp_path, sink, search, bootstrap_servers=kafka.bootstrap_servers,
                    offset_storage_file_filename=tmp_path / "connect.offsets", spark_master=spark_cluster.master_url)
    # the worker runs on Kafka: no embedded log
    worker.config.write_text("\n".join(line for line in worker.config.read_text().splitlines()
                                       if not line.startswith("embedded.log.dir")) + "\n")
    worker.start()
    try:
        landed = wait_until(lambda: (n := worker.metrics("cluster-hdfs").get("records_total", 0)) >= 20_000 and n,
                            300, interval=1.0, what="the first batches on the cluster")
        apps = spark_cluster.state().get("activeapps", [])
        assert any(a.get("name") == "headrace-spark-sinks" for a in apps), apps
        spark_cluster.worker(0).kill()  # an executor's host dies mid-stream: Spark reruns its tasks elsewhere
        _produce(kafka.bootstrap_servers, topic, TOTAL // 2, TOTAL // 4)
        landed = wait_until(lambda: (n := worker.metrics("cluster-hdfs").get("records_total", 0)) > landed + 20_000
                            and n, 300, interval=1.0, what="batches after the Spark worker's kill")
        worker.kill9()
        # records produced and not landed at the kill: the restart has a batch to replay, not only new ones
        assert landed < TOTAL * 3 // 4, f"all {landed} records produced so far had landed at the worker's kill"
    finally:
        if worker.proc is not None and worker.proc.alive():
            worker.kill9()
        spark_cluster.worker(0).start()
    _produce(kafka.bootstrap_servers, topic, TOTAL * 3 // 4, TOTAL // 4)
    worker.start()
    try:
        worker.wait_landed("cluster-hdfs", 1, timeout=300)
        wait_until(lambda: len({r["id"] for r in hdfs_records(hdfs.client(), f"{root}/topics/{topic}")}) >= TOTAL,
                   WAIT, interval=2.0, what=f"{TOTAL} records in HDFS")
        worker.wait_landed("cluster-search", TOTAL // 4, timeout=WAIT)  # caught up (no lag) since the restart
    finally:
        worker.stop()
    ids = collections.Counter(r["id"] for r in hdfs_records(hdfs.client(), f"{root}/topics/{topic}"))
    assert len(ids) == TOTAL and set(ids.values()) == {1}, collections.Counter(ids.values())
    client = opensearch.client()
    client.indices.refresh(index=topic)
    assert client.count(index=topic)["count"] == TOTAL  # one document per record: replays overwrote theirs
    assert "spark://" in worker.log() and "Starting a Spark session (master spark://" in worker.log()
