"""The same job without a worker: ``spark-submit spark_sinks/__main__.py connector.properties``, reading Kafka."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from spark_sinks.session import extra_jars
from tests.spark.support import hdfs_files, wait_until, write_properties
from tests.support import REPO

pytestmark = [pytest.mark.timeout(300), pytest.mark.kafka]


def _spark_submit() -> str:
    import pyspark

    return str(Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit")


def test_spark_submit_runs_the_connector_job_from_kafka_to_hdfs_as_avro(tmp_path, kafka, hdfs, spark):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    jars = extra_jars()
    if not any("spark-sql-kafka" in j for j in jars):
        pytest.fail("Spark's Kafka jars are not fetched: python -m services fetch spark-kafka", pytrace=False)
    topic, root = f"events-{uuid.uuid4().hex[:8]}", f"/submit-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for i in range(2000):
        producer.produce(topic, json.dumps({"id": i, "kind": "click" if i % 2 else "view"}).encode(),
                         key=str(i).encode())
    assert producer.flush(30) == 0

    worker = write_properties(tmp_path / "worker.properties", {"bootstrap.servers": kafka.bootstrap_servers,
                                                               "streaming.state.dir": tmp_path / "state"})
    connector = write_properties(tmp_path / "submit.properties", {
        "name": "submit-avro", "connector.class": "HdfsSparkSink", "topics": topic, "hdfs.url": hdfs.url,
        "topics.dir": f"{root}/topics", "logs.dir": f"{root}/logs", "format": "avro",
        "trigger.interval.ms": 500})
    cmd = [_spark_submit(), "--master", "local[1]", "--driver-memory", "768m",
           "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
           "--conf", f"spark.pyspark.python={sys.executable}", "--jars", ",".join(jars),
           str(REPO / "spark_sinks" / "__main__.py"), str(connector), "--worker", str(worker)]
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1")
    log_path = tmp_path / "submit.log"
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        def landed() -> bool:
            assert proc.poll() is None, log_path.read_text()[-5000:]
            return len(hdfs_files(hdfs.client(), f"{root}/topics/{topic}")) >= 2

        wait_until(landed, 180, interval=1.0, what="Avro files from the spark-submit job")
        df = wait_until(lambda: (d := spark.read.format("avro").load(f"{hdfs.url}{root}/topics/{topic}")).count()
                        == 2000 and d, 60, interval=1.0, what="2000 records")
        assert df.select("id").distinct().count() == 2000
        wait_until(lambda: "Progress of connector submit-avro task 0: query=RUNNING, records_total=2000"
                           in log_path.read_text(),
                   30, interval=1.0, what="a progress line")
    finally:
        # spark-submit's process is Spark's JVM; SIGTERM ends it and its Python driver, like any Spark app
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
