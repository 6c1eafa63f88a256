"""Records/s the HDFS and search sinks land from Kafka, in local mode and on a Spark standalone cluster, each
beside a plain Spark write of the same records to the same place in the same session.

One run starts Kafka, HDFS, OpenSearch and a Spark cluster (services/spark.py: a master and two one-core
workers) on loopback, puts N JSON records (default 500,000) on a 2-partition topic spread over 5 hours of
record time, and then measures, for each master (``local[2]``, then the cluster; one Spark session each, in a
child process):

* HDFS sink: the HdfsSparkSink task (in the child, its context pointing at Kafka) streams the topic into HDFS
  as Parquet in ``dt=/hour=`` folders, given the values' schema; the time runs from its query's start until it
  reports N records landed;
* HDFS plain write: Spark reads the same topic as a batch (``spark.read.format("kafka")``), parses the values
  with the same schema and writes them with ``df.write.partitionBy("dt", "hour").parquet(...)``;
* search sink: the ElasticsearchSparkSink task (ids topic+partition+offset, bulk requests of ``batch.size``) until
  it reports N documents written;
* search plain write: Spark reads the topic as a batch and sends the values from each partition with
  opensearch-py bulk requests of the same size and the same ids (``foreachPartition``).

The sinks' settings are the shipped files, configs/hdfs-spark-sink.properties and
configs/opensearch-spark-sink.properties (the headline), with only the master, the services' addresses, the topic,
the connector name, per-run output folders and index, and the HDFS sink's ``value.schema`` (the plain write's
schema) changed; the Spark session takes their ``spark.*`` settings. Printed beside it, labelled, ``tuned``: the
settings this benchmark used before issue #37 (``trigger.interval.ms=500``, executor memory, ``spark.cores.max=2``,
``spark.sql.shuffle.partitions=2``, and the plugins' defaults where the shipped files set more). Each master and
variant is one child process.

Each side runs --rounds times (default 2) taking turns going first, after one warm-up of each over the same
records (after a warm-up of 20,000 records, the first measured round, where the sink goes first, gave ratios of
0.54-0.65 against 0.75-1.00 in the later rounds: the JVM's class loading and compiling fell in that round); figures are
medians and the ratio the median of per-round ratios. ``--skip hdfs`` or ``--skip opensearch`` leaves a
target out.

    python bench/bench_spark_cluster.py --records 500000
    python bench/bench_spark_cluster.py --records 500000 --variants shipped
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

from bench._configs import Changes, Variant, describe, shipped_props  # noqa: E402
from connect.api import StreamingSinkTaskContext  # noqa: E402

HOUR_MS = 3_600_000
VALUE_SCHEMA = "id BIGINT, user STRING, amount DOUBLE, status STRING"
HDFS, SEARCH = "hdfs-spark-sink.properties", "opensearch-spark-sink.properties"

# the settings this benchmark used before issue #37 (it did not start from the shipped files), as changes to them
_TUNED_SPARK: Changes = {"trigger.interval.ms": "500", "spark.driver.memory": "1g", "spark.executor.memory": "1g",
                         "spark.cores.max": "2", "spark.sql.shuffle.partitions": "2"}
VARIANTS = {
    "shipped": Variant("shipped"),
    "tuned": Variant("tuned", f"both sinks: {describe(_TUNED_SPARK)}; HDFS: flush.size, rotate.interval.ms, timezone "
                              "dropped (the plugin's defaults); search: write.method, behavior.on.*, "
                              "errors.deadletterqueue.*, index.timestamp.format dropped",
                     files={HDFS: {**_TUNED_SPARK, "flush.size": None, "rotate.interval.ms": None, "timezone": None},
                            SEARCH: {**_TUNED_SPARK, "write.method": None, "behavior.on.null.values": None,
                                     "behavior.on.malformed.documents": None,
                                     "errors.deadletterqueue.topic.name": None,
                                     "errors.deadletterqueue.topic.replication.factor": None,
                                     "errors.deadletterqueue.context.headers.enable": None,
                                     "index.timestamp.format": None}}),
}
INTRINSIC = ("spark.master (the case: local[2] or the cluster's master), hdfs.url and connection.url (the services' "
             "addresses), topics (the bench topic), name, topics.dir/logs.dir and index.name.format (fresh per run, "
             "so each run lands its own N records), and value.schema on the HDFS sink (the schema the plain write "
             "parses the values with)")


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


def run_sink(props: dict[str, str], bootstrap: str, state: Path, n: int, search: bool = False) -> float:
    from spark_sinks.hdfs import HdfsSparkSinkTask
    from spark_sinks.search import ElasticsearchSparkSinkTask

    task = ElasticsearchSparkSinkTask() if search else HdfsSparkSinkTask()
    counter = "documents_written" if search else "records_total"
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
    while task.progress().get(counter, 0) < n:
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


def _bulk_partition(url: str, index: str, bulk_size: int, rows: Any) -> None:
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[url], timeout=120)
    lines: list[bytes] = []
    for row in rows:
        meta = {"index": {"_index": index, "_id": f"{row['topic']}+{row['partition']}+{row['offset']}"}}
        lines.append(json.dumps(meta).encode() + b"\n" + bytes(row["value"]) + b"\n")
        if len(lines) >= bulk_size:
            client.bulk(body=b"".join(lines))
            lines = []
    if lines:
        client.bulk(body=b"".join(lines))
    client.close()


def baseline_search(spark: Any, bootstrap: str, topic: str, url: str, index: str, bulk_size: int) -> float:
    """Spark reads the topic as a batch and sends the values to OpenSearch in bulk requests of the sink's size
    from each partition (``foreachPartition`` with opensearch-py), ids topic+partition+offset as the sink's."""
    import functools

    started = time.perf_counter()
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    df.select("topic", "partition", "offset", "value").foreachPartition(functools.partial(_bulk_partition, url, index, bulk_size))
    return time.perf_counter() - started


def hdfs_sink_props(variant: Variant, master: str, url: str, topic: str, name: str, base: str) -> dict[str, str]:
    """configs/hdfs-spark-sink.properties with what a run changes (output folders under ``base``) and the
    variant's changes."""
    return shipped_props(HDFS, {"spark.master": master, "hdfs.url": url, "name": name, "topics": topic,
                                "topics.dir": f"{base}/topics", "logs.dir": f"{base}/logs",
                                "value.schema": VALUE_SCHEMA}, variant.of(HDFS))


def search_sink_props(variant: Variant, master: str, url: str, topic: str, name: str, index: str) -> dict[str, str]:
    """configs/opensearch-spark-sink.properties with what a run changes and the variant's changes."""
    return shipped_props(SEARCH, {"spark.master": master, "connection.url": url, "name": name, "topics": topic,
                                  "index.name.format": index}, variant.of(SEARCH))


def child(args: argparse.Namespace) -> int:
    """One master and one variant: warm-ups, then the rounds; prints one JSON line of seconds."""
    from spark_sinks.session import spark_session

    variant = VARIANTS[args.variant]
    work = Path(args.work)
    run = f"/bench-{uuid.uuid4().hex[:8]}"

    def hdfs_props(name: str, base: str) -> dict[str, str]:
        return hdfs_sink_props(variant, args.master, args.hdfs_url or "", args.topic, name, base)

    def search_props(name: str, index: str) -> dict[str, str]:
        return search_sink_props(variant, args.master, args.opensearch_url or "", args.topic, name, index)

    # one session per process, from the sinks' spark.* settings (HDFS's win where both set one)
    session = {k: v for props in (search_props("s", "i"), hdfs_props("h", "/h")) for k, v in props.items()
               if k.startswith("spark.")}
    spark = spark_session(session)
    bulk_size = int(search_props("s", "i")["batch.size"])
    if args.hdfs_url:
        run_sink(hdfs_props("warm", f"{run}/warm"), args.bootstrap, work / f"state-warm-{run[7:]}", args.records)
        baseline(spark, args.bootstrap, args.topic, f"{args.hdfs_url}{run}/warm/baseline")
    if args.opensearch_url:
        run_sink(search_props("warm-os", f"warm-{run[7:]}"), args.bootstrap, work / f"state-warm-os-{run[7:]}",
                 args.records, search=True)
        baseline_search(spark, args.bootstrap, args.topic, args.opensearch_url, f"warm-{run[7:]}-plain", bulk_size)
        import httpx

        httpx.delete(f"{args.opensearch_url}/warm-{run[7:]}*", timeout=60)
    out: dict[str, dict[str, list[float]]] = {}
    for r in range(args.rounds):
        steps = []
        if args.hdfs_url:
            hdfs = out.setdefault("hdfs", {"sink": [], "baseline": []})

            def one_sink(r: int = r, times: dict[str, list[float]] = hdfs) -> None:
                times["sink"].append(run_sink(hdfs_props(f"sink-{r}", f"{run}/{r}"), args.bootstrap,
                                              work / f"state-{run[7:]}-{r}", args.records))

            def one_base(r: int = r, times: dict[str, list[float]] = hdfs) -> None:
                times["baseline"].append(baseline(spark, args.bootstrap, args.topic,
                                                  f"{args.hdfs_url}{run}/{r}/baseline"))

            steps.append((one_sink, one_base))
        if args.opensearch_url:
            found = out.setdefault("opensearch", {"sink": [], "baseline": []})
            index = f"{args.topic}-{run[7:]}-{r}"

            def os_sink(r: int = r, times: dict[str, list[float]] = found, index: str = index) -> None:
                times["sink"].append(run_sink(search_props(f"os-sink-{r}", index), args.bootstrap,
                                              work / f"state-os-{run[7:]}-{r}", args.records, search=True))

            def os_base(times: dict[str, list[float]] = found, index: str = index) -> None:
                times["baseline"].append(baseline_search(spark, args.bootstrap, args.topic, args.opensearch_url,
                                                         f"{index}-plain", bulk_size))

            steps.append((os_sink, os_base))
        for sink_step, base_step in steps:
            for step in ((sink_step, base_step) if r % 2 == 0 else (base_step, sink_step)):
                step()
        if args.opensearch_url:
            import httpx

            httpx.delete(f"{args.opensearch_url}/{args.topic}-{run[7:]}-{r}*", timeout=60)
    print(json.dumps(out), flush=True)
    spark.stop()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip", choices=("hdfs", "opensearch"), action="append", default=[])
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                        help="which settings, in this order for each master (shipped is the headline)")
    parser.add_argument("--variant", default="shipped", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--master", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--hdfs-url", help=argparse.SUPPRESS)
    parser.add_argument("--opensearch-url", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    from services.hdfs import HdfsService
    from services.kafka import KafkaService
    from services.opensearch import OpenSearchService
    from services.spark import SparkCluster

    work = Path(tempfile.mkdtemp(prefix="bench-spark-cluster-"))
    kafka, cluster = KafkaService(), SparkCluster(workers=2, cores=1, memory="1500m")
    hdfs = None if "hdfs" in args.skip else HdfsService()
    opensearch = None if "opensearch" in args.skip else OpenSearchService(heap="1g")
    services = [s for s in (kafka, hdfs, opensearch, cluster) if s is not None]
    try:
        for svc in services:
            print(f"starting {svc.name} ...", file=sys.stderr, flush=True)
            svc.start()
        topic = f"bench-{uuid.uuid4().hex[:6]}"
        print(f"producing {args.records:,} records to Kafka ...", file=sys.stderr, flush=True)
        produce(kafka.bootstrap_servers, topic, args.records)
        results: dict[tuple[str, str], dict[str, list[float]]] = {}
        for label, master in (("local[2]", "local[2]"), ("cluster (2 workers x 1 core)", cluster.master_url)):
            for name in args.variants:
                print(f"measuring {name} on {label} ...", file=sys.stderr, flush=True)
                cmd = [sys.executable, __file__, "--child", "--master", master, "--bootstrap",
                       kafka.bootstrap_servers, "--topic", topic, "--records", str(args.records),
                       "--rounds", str(args.rounds), "--work", str(work), "--variant", name]
                if hdfs is not None:
                    cmd += ["--hdfs-url", hdfs.url]
                if opensearch is not None:
                    cmd += ["--opensearch-url", opensearch.url]
                done = subprocess.run(cmd, capture_output=True, text=True,
                                      env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"), timeout=3600)
                if done.returncode != 0:
                    print(done.stderr[-4000:], file=sys.stderr)
                    return 1
                results[(label, name)] = json.loads(done.stdout.strip().splitlines()[-1])
        n = args.records
        print(f"headline: configs/{HDFS} and configs/{SEARCH} as shipped; changed only: {INTRINSIC}")
        for name in args.variants:
            if not VARIANTS[name].shipped:
                print(f"  {VARIANTS[name].title()}")
        bulk = shipped_props(SEARCH)["batch.size"]
        titles = {"hdfs": f"HdfsSparkSink from Kafka, {n:,} JSON records -> Parquet dt=/hour= folders",
                  "opensearch": f"ElasticsearchSparkSink from Kafka, {n:,} JSON records -> OpenSearch "
                                f"(bulk {bulk} shipped)"}
        for target, title in titles.items():
            if target in args.skip:
                continue
            print(f"{title}, {args.rounds} rounds (medians; ratio per round in brackets)")
            for (label, name), by_target in results.items():
                r = by_target[target]
                ratios = [b / s for s, b in zip(r["sink"], r["baseline"], strict=True)]
                tag = "shipped, headline" if name == "shipped" else name
                print(f"  {label:<30} {tag:<18} sink {n / statistics.median(r['sink']):>10,.0f} records/s   "
                      f"plain write {n / statistics.median(r['baseline']):>10,.0f} records/s   ratio "
                      f"{statistics.median(ratios):.2f} [{', '.join(f'{x:.2f}' for x in ratios)}]")
        return 0
    finally:
        for svc in reversed(services):
            svc.cleanup()


if __name__ == "__main__":
    sys.exit(main())
