"""Records/s the HDFS sink lands from Kafka, in local mode and on a Spark standalone cluster, each beside a plain
Spark write of the same records in the same session.

One run starts Kafka, HDFS and a Spark cluster (services/spark.py: a master and two one-core workers) on
loopback, puts N JSON records (default 500,000) on a 2-partition topic spread over 5 hours of record time, and
then measures, for each master (``local[2]``, then the cluster; one Spark session each, in a child process):

* sink: the HdfsSparkSink task (in the child, its context pointing at Kafka) streams the topic into HDFS as
  Parquet in ``dt=/hour=`` folders, given the values' schema; the time runs from its query's start until it
  reports N records landed;
* baseline: Spark reads the same topic as a batch (``spark.read.format("kafka")``), parses the values with
  the same schema and writes them with ``df.write.partitionBy("dt", "hour").parquet(...)``.

Each side runs --rounds times (default 2) taking turns going first, after one warm-up of each; figures are
medians and the ratio the median of per-round ratios.

    python bench/bench_spark_cluster.py --records 500000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from connect.api import StreamingSinkTaskContext  # noqa: E402

HOUR_MS = 3_600_000
VALUE_SCHEMA = "id BIGINT, user STRING, amount DOUBLE, status STRING"


def produce(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10000,
                         "queue.buffering.max.messages": 1_000_000})
    base = (int(time.time()) // 3600 - 6) * HOUR_MS  # recent: older records would fall to the broker's retention
    for i in range(n):
        value = json.dumps({"id": i, "user": f"user-{i % 5000}", "amount": i % 1000 / 10,
                            "status": "ok" if i % 7 else "retry"}).encode()
        while True:
            try:
                producer.produce(topic, value, partition=i % 2, timestamp=base + i * 5 * HOUR_MS // n)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0


class _Context(StreamingSinkTaskContext):
    def __init__(self, props: Mapping[str, str], bootstrap: str, state: Path) -> None:
        self._props, self._bootstrap, self._state = props, bootstrap, state

    def configs(self) -> Mapping[str, str]:
        return self._props

    def log_settings(self) -> Mapping[str, str]:
        return {"bootstrap.servers": self._bootstrap}

    def state_dir(self) -> str:
        self._state.mkdir(parents=True, exist_ok=True)
        return str(self._state)

    def dead_letter_queue(self) -> None:
        return None


def run_sink(props: dict[str, str], bootstrap: str, state: Path, n: int) -> float:
    from spark_sinks.hdfs import HdfsSparkSinkTask

    task = HdfsSparkSinkTask()
    task.initialize(_Context(props, bootstrap, state))
    task.start(props)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            task.run()
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    while task.progress().get("query") != "RUNNING":
        if errors:
            raise errors[0]
        time.sleep(0.05)
    started = time.perf_counter()
    while task.progress().get("records_total", 0) < n:
        if errors:
            raise errors[0]
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    task.stop()
    thread.join(120)
    return elapsed


def baseline(spark: Any, bootstrap: str, topic: str, url: str) -> float:
    from pyspark.sql import functions as F

    started = time.perf_counter()
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    ts = F.col("timestamp")
    (df.select(F.from_json(F.col("value").cast("string"), VALUE_SCHEMA).alias("v"),
               F.date_format(ts, "yyyy-MM-dd").alias("dt"), F.date_format(ts, "HH").alias("hour"))
     .select("v.*", "dt", "hour").write.mode("overwrite").partitionBy("dt", "hour").parquet(url))
    return time.perf_counter() - started


def child(args: argparse.Namespace) -> int:
    """One master: warm-ups, then the rounds; prints one JSON line of seconds."""
    from spark_sinks.session import spark_session

    settings = {"spark.master": args.master, "spark.driver.memory": "1g", "spark.executor.memory": "1g",
                "spark.cores.max": "2", "spark.sql.shuffle.partitions": "2"}
    spark = spark_session(settings)
    work = Path(args.work)
    run = f"/bench-{uuid.uuid4().hex[:8]}"
    common = {**settings, "hdfs.url": args.hdfs_url, "format": "parquet", "path.format": "dt=YYYY-MM-dd/hour=HH",
              "value.schema": VALUE_SCHEMA, "trigger.interval.ms": "500"}
    run_sink({**common, "name": "warm", "topics": args.warm_topic, "topics.dir": f"{run}/warm/topics",
              "logs.dir": f"{run}/warm/logs"}, args.bootstrap, work / f"state-warm-{run[7:]}", args.warm_records)
    baseline(spark, args.bootstrap, args.warm_topic, f"{args.hdfs_url}{run}/warm/baseline")
    sink_s: list[float] = []
    base_s: list[float] = []
    for r in range(args.rounds):
        def one_sink(r: int = r) -> None:
            sink_s.append(run_sink({**common, "name": f"sink-{r}", "topics": args.topic,
                                    "topics.dir": f"{run}/{r}/topics", "logs.dir": f"{run}/{r}/logs"},
                                   args.bootstrap, work / f"state-{run[7:]}-{r}", args.records))

        def one_base(r: int = r) -> None:
            base_s.append(baseline(spark, args.bootstrap, args.topic, f"{args.hdfs_url}{run}/{r}/baseline"))

        for step in ((one_sink, one_base) if r % 2 == 0 else (one_base, one_sink)):
            step()
    print(json.dumps({"sink": sink_s, "baseline": base_s}), flush=True)
    spark.stop()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--master", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--hdfs-url", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--warm-topic", help=argparse.SUPPRESS)
    parser.add_argument("--warm-records", type=int, default=20_000, help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    from services.hdfs import HdfsService
    from services.kafka import KafkaService
    from services.spark import SparkCluster

    work = Path(tempfile.mkdtemp(prefix="bench-spark-cluster-"))
    kafka, hdfs, cluster = KafkaService(), HdfsService(), SparkCluster(workers=2, cores=1, memory="1500m")
    try:
        for svc in (kafka, hdfs, cluster):
            print(f"starting {svc.name} ...", file=sys.stderr, flush=True)
            svc.start()
        topic, warm = f"bench-{uuid.uuid4().hex[:6]}", f"warm-{uuid.uuid4().hex[:6]}"
        print(f"producing {args.records:,} records to Kafka ...", file=sys.stderr, flush=True)
        produce(kafka.bootstrap_servers, topic, args.records)
        produce(kafka.bootstrap_servers, warm, 20_000)
        results: dict[str, dict[str, list[float]]] = {}
        for label, master in (("local[2]", "local[2]"), ("cluster (2 workers x 1 core)", cluster.master_url)):
            print(f"measuring on {label} ...", file=sys.stderr, flush=True)
            cmd = [sys.executable, __file__, "--child", "--master", master, "--bootstrap", kafka.bootstrap_servers,
                   "--hdfs-url", hdfs.url, "--topic", topic, "--warm-topic", warm, "--records", str(args.records),
                   "--rounds", str(args.rounds), "--work", str(work)]
            done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"),
                                  timeout=3600)
            if done.returncode != 0:
                print(done.stderr[-4000:], file=sys.stderr)
                return 1
            results[label] = json.loads(done.stdout.strip().splitlines()[-1])
        n = args.records
        print(f"HdfsSparkSink from Kafka, {n:,} JSON records -> Parquet dt=/hour= folders, {args.rounds} rounds")
        for label, r in results.items():
            ratios = [b / s for s, b in zip(r["sink"], r["baseline"], strict=True)]
            print(f"  {label:<30} sink {n / statistics.median(r['sink']):>10,.0f} records/s   plain write "
                  f"{n / statistics.median(r['baseline']):>10,.0f} records/s   ratio {statistics.median(ratios):.2f}")
        return 0
    finally:
        for svc in (cluster, hdfs, kafka):
            svc.cleanup()


if __name__ == "__main__":
    sys.exit(main())
