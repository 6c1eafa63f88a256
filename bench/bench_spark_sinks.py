"""Records/s landed by the Spark sinks, beside Spark writing the same records from a DataFrame.

A topic of the embedded log gets N JSON records (default 1,000,000) spread
over 4 partitions and 5 hours of record time. Then, in one Spark session
(local[2]) and the same run:

* HDFS (Parquet, folders dt=YYYY-MM-dd/hour=HH): the HdfsSparkSink task
  streams the topic into HDFS (given the values' schema, as the baseline is;
  then again inferring it), against a baseline where Spark takes the same
  records (their JSON text and time, cached in a DataFrame), parses them and
  writes them straight to HDFS with ``df.write.partitionBy("dt", "hour").parquet(...)``.
* OpenSearch (ids topic+partition+offset): the ElasticsearchSparkSink task,
  against a baseline where Spark sends the same cached records to the same
  node with opensearch-py bulk requests of the same size from each partition
  (``foreachPartition``), the usual way to write a DataFrame to OpenSearch
  without the connector.

Each target also gets two plain writes that read the log: ``spark.read.format("headrace-log")`` (the
Python data source a Spark job over the log would use), and the offset ranges the sink's own batches read
(``source.read_log_range``), from the log's start to its end.

Each side runs --rounds times (default 3), taking turns going first; the
figures are medians, and each ratio is the median of the per-round ratios.
A sink's time runs from the start of its query to the moment all N records
are reported landed; the Spark session and the services are up, and both
sides have run once over the same records, before any timing
starts. Services are started on loopback unless ``--hdfs-url``/
``--webhdfs-url`` and ``--opensearch-url`` name running ones.

    python bench/bench_spark_sinks.py --records 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
BASE_TS = 1_700_000_000_000
PARTITIONS = 4


def produce(log_dir: Path, topic: str, n: int) -> list[tuple[int, int, int, bytes]]:
    """N records into the log; returns (partition, offset, timestamp, value) of each, for the baselines."""
    from connect.log.api import NewTopic
    from connect.log.embedded.backend import EmbeddedBackend

    backend = EmbeddedBackend(str(log_dir))
    backend.admin().create_topic(NewTopic(topic, PARTITIONS, 1))
    producer = backend.producer()
    out: list[tuple[int, int, int, bytes]] = []
    next_offset = [0] * PARTITIONS
    chunk = 20_000
    for lo in range(0, n, chunk):
        for p in range(PARTITIONS):
            ids = range(lo + p, min(lo + chunk, n), PARTITIONS)
            values = [json.dumps({"id": i, "user": f"user-{i % 5000}", "amount": i % 1000 / 10,
                                  "status": "ok" if i % 7 else "retry"}).encode() for i in ids]
            stamps = [BASE_TS + i * 5 * HOUR_MS // n for i in ids]
            producer.send_batch(topic, p, values, timestamps=stamps)
            for v, ts in zip(values, stamps, strict=True):
                out.append((p, next_offset[p], ts, v))
                next_offset[p] += 1
    producer.flush(60)
    producer.close()
    backend.close()
    return out


class _Context(StreamingSinkTaskContext):
    def __init__(self, props: Mapping[str, str], log_dir: Path, state: Path) -> None:
        self._props, self._log_dir, self._state = props, log_dir, state

    def configs(self) -> Mapping[str, str]:
        return self._props

    def log_settings(self) -> Mapping[str, str]:
        return {"embedded.log.dir": str(self._log_dir)}

    def state_dir(self) -> str:
        self._state.mkdir(parents=True, exist_ok=True)
        return str(self._state)

    def dead_letter_queue(self) -> None:
        return None


def run_sink(task_cls: type, props: dict[str, str], log_dir: Path, state: Path, n: int,
             counter: str = "records_total") -> float:
    """Seconds from the query start until the task reports n records landed."""
    task = task_cls()
    task.initialize(_Context(props, log_dir, state))
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
    # Spark's own time for the query's micro-batches (durationMs.triggerExecution, summed): the run without the
    # query's start (its Python source's planner process, the checkpoint's first files)
    BATCH_SECONDS.append(task.progress().get("batch_duration_ms_sum", 0) / 1000)
    task.stop()
    thread.join(120)
    return elapsed


BATCH_SECONDS: list[float] = []
VALUE_SCHEMA = "id BIGINT, user STRING, amount DOUBLE, status STRING"


def dataframe(spark: Any, records: list[tuple[int, int, int, bytes]], topic: str) -> Any:
    """The same records as they are in the topic (JSON text, time, coordinates), cached in Spark's memory."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    schema = StructType([StructField("partition", IntegerType()), StructField("offset", LongType()),
                         StructField("timestamp_ms", LongType()), StructField("value", StringType())])
    rows = spark.createDataFrame([(p, o, ts, v.decode()) for p, o, ts, v in records], schema, verifySchema=False)
    from pyspark.sql import functions as F

    df = rows.withColumn("topic", F.lit(topic)).repartition(PARTITIONS).cache()
    df.count()
    return df


def baseline_hdfs(df: Any, url: str) -> float:
    """Spark parses the JSON values and writes them as Parquet in the same hour folders."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    ts = F.timestamp_millis("timestamp_ms")
    (df.select(F.from_json("value", VALUE_SCHEMA).alias("v"), F.date_format(ts, "yyyy-MM-dd").alias("dt"),
               F.date_format(ts, "HH").alias("hour"))
     .select("v.*", "dt", "hour").write.mode("overwrite").partitionBy("dt", "hour").parquet(url))
    return time.perf_counter() - started


def from_log(spark: Any, log_dir: Path, topic: str) -> Any:
    """The topic as Spark reads it from the embedded log as a batch (``spark.read.format("headrace-log")``),
    with the columns of the cached DataFrame: where a plain Spark job over the log would start."""
    from pyspark.sql import functions as F

    from spark_sinks.logsource import NAME

    return (spark.read.format(NAME).option("embedded.log.dir", str(log_dir)).option("subscribe", topic).load()
            .select("topic", "partition", "offset", "timestamp_ms", F.col("value").cast("string").alias("value")))


def from_log_ranges(spark: Any, log_dir: Path, topic: str) -> Any:
    """The same records read the way the sink reads each micro-batch on the embedded log (offset ranges planned
    in this process, read by Spark's Python workers: ``source.read_log_range``), from the start to the end."""
    from pyspark.sql import functions as F

    from spark_sinks.logsource import end_offsets
    from spark_sinks.source import read_log_range

    settings = {"embedded.log.dir": str(log_dir)}
    end = end_offsets(settings, [topic])
    start = {t: {p: 0 for p in parts} for t, parts in end.items()}
    return (read_log_range(spark, settings, start, end, headers=False)
            .select("topic", "partition", "offset", "timestamp_ms", F.col("value").cast("string").alias("value")))


def _bulk_partition(url: str, batch_size: int, index: str, rows: Any) -> None:
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[url], timeout=120)
    lines: list[bytes] = []
    for row in rows:
        meta = {"index": {"_index": index, "_id": f"{row['topic']}+{row['partition']}+{row['offset']}"}}
        lines.append(json.dumps(meta).encode() + b"\n" + row["value"].encode() + b"\n")
        if len(lines) >= batch_size:
            client.bulk(body=b"".join(lines))
            lines = []
    if lines:
        client.bulk(body=b"".join(lines))
    client.close()


def baseline_opensearch(df: Any, url: str, batch_size: int, index: str) -> float:
    import functools

    started = time.perf_counter()
    df.select("topic", "partition", "offset", "value").foreachPartition(
        functools.partial(_bulk_partition, url, batch_size, index))
    return time.perf_counter() - started


def warm_up(spark: Any, work: Path, run: str, topic: str, n: int, df: Any, hdfs_url: str | None,
            os_url: str | None, skip: list[str], batch_size: int) -> None:
    """Both sides run once over the same records as the rounds before any timing: Spark's Python workers, the
    JVM's JIT and the targets see the same work first (a warm-up on fewer records left the first measured round
    the low one, for whichever side went first)."""
    import httpx

    from spark_sinks.hdfs import HdfsSparkSinkTask
    from spark_sinks.search import ElasticsearchSparkSinkTask

    common = {"topics": topic, "spark.master": "local[2]", "trigger.interval.ms": "500"}
    if "hdfs" not in skip:
        run_sink(HdfsSparkSinkTask, {**common, "name": "warm-hdfs", "hdfs.url": hdfs_url, "format": "parquet",
                                     "topics.dir": f"{run}/warmup/topics", "logs.dir": f"{run}/warmup/logs",
                                     "path.format": "dt=YYYY-MM-dd/hour=HH", "value.schema": VALUE_SCHEMA},
                 work / "data", work / "w1", n)
        baseline_hdfs(df, f"{hdfs_url}{run}/warmup/baseline")
        baseline_hdfs(from_log(spark, work / "data", topic), f"{hdfs_url}{run}/warmup/from-log")
        baseline_hdfs(from_log_ranges(spark, work / "data", topic), f"{hdfs_url}{run}/warmup/from-log-ranges")
    if "opensearch" not in skip:
        index = f"{topic}-warmup"
        run_sink(ElasticsearchSparkSinkTask, {**common, "name": "warm-os", "connection.url": os_url,
                                              "key.ignore": "true", "batch.size": str(batch_size),
                                              "index.name.format": index}, work / "data", work / "w2", n,
                 "documents_written")
        baseline_opensearch(df, os_url, batch_size, f"{index}-baseline")
        baseline_opensearch(from_log(spark, work / "data", topic), os_url, batch_size, f"{index}-from-log")
        baseline_opensearch(from_log_ranges(spark, work / "data", topic), os_url, batch_size,
                            f"{index}-from-log-ranges")
        httpx.delete(f"{os_url}/{index},{index}-baseline,{index}-from-log,{index}-from-log-ranges", timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--hdfs-url", help="a running HDFS (hdfs://host:port); default: start one")
    parser.add_argument("--webhdfs-url", help="its WebHDFS address, with --hdfs-url")
    parser.add_argument("--opensearch-url", help="a running OpenSearch; default: start one")
    parser.add_argument("--batch-size", type=int, default=2000)
    parser.add_argument("--skip", choices=("hdfs", "opensearch", "inferred"), action="append", default=[],
                        help="leave out a target, or the HDFS sink's run that infers the schema")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n = args.records
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from services.hdfs import HdfsService
    from services.opensearch import OpenSearchService
    from spark_sinks.hdfs import HdfsSparkSinkTask
    from spark_sinks.search import ElasticsearchSparkSinkTask
    from spark_sinks.session import spark_session

    services: list[Any] = []
    hdfs_url = args.hdfs_url
    os_url = args.opensearch_url
    webhdfs = None
    if not hdfs_url and "hdfs" not in args.skip:
        services.append(HdfsService(heap="1g").start())
        hdfs_url = services[-1].url
        webhdfs = services[-1].client()
    elif args.webhdfs_url:
        from hdfs import InsecureClient

        webhdfs = InsecureClient(args.webhdfs_url, user="root")
    if not os_url and "opensearch" not in args.skip:
        services.append(OpenSearchService(heap="1g").start())
        os_url = services[-1].url
    work = Path(tempfile.mkdtemp(prefix="bench-spark-sinks-"))
    run = f"/bench-{uuid.uuid4().hex[:8]}"  # HDFS folders and index names of this run only
    topic = f"bench-{run[7:]}"
    try:
        started = time.perf_counter()
        records = produce(work / "data", topic, n)
        print(f"produced {n:,} JSON records ({PARTITIONS} partitions) in {time.perf_counter() - started:.1f} s",
              flush=True)
        spark = spark_session({"spark.master": "local[2]", "spark.driver.memory": "3g",
                               "spark.sql.shuffle.partitions": str(PARTITIONS)})
        df = dataframe(spark, records, topic)
        del records
        common = {"topics": topic, "spark.master": "local[2]", "trigger.interval.ms": "500"}
        warm_up(spark, work, run, topic, n, df, hdfs_url, os_url, args.skip, args.batch_size)
        if webhdfs is not None:
            webhdfs.delete(f"{run}/warmup", recursive=True)
        rounds: dict[str, list[tuple[float, float]]] = {}
        batches: list[float] = []  # Spark's time for the HDFS sink's micro-batches, per round
        for r in range(args.rounds):
            # the sides take turns going first, so neither always meets a warmer JVM, disk or target
            sink_first = r % 2 == 0
            if "hdfs" not in args.skip:
                props = {**common, "hdfs.url": hdfs_url, "format": "parquet", "path.format": "dt=YYYY-MM-dd/hour=HH",
                         "topics.dir": f"{run}/r{r}/topics", "logs.dir": f"{run}/r{r}/logs"}

                def sinks(r: int = r, props: dict[str, str] = props) -> tuple[float, float]:
                    given = run_sink(HdfsSparkSinkTask, {**props, "name": f"bench-hdfs-{r}",
                                                         "value.schema": VALUE_SCHEMA}, work / "data",
                                     work / f"s-h{r}", n)
                    batches.append(BATCH_SECONDS[-1])
                    if "inferred" in args.skip:
                        return given, 0.0
                    inferred = run_sink(HdfsSparkSinkTask, {**props, "name": f"bench-hdfs-infer-{r}",
                                                            "topics.dir": f"{run}/r{r}/inferred",
                                                            "logs.dir": f"{run}/r{r}/logs2"}, work / "data",
                                        work / f"s-i{r}", n)
                    return given, inferred

                def baselines(r: int = r) -> tuple[float, float]:
                    cached = baseline_hdfs(df, f"{hdfs_url}{run}/r{r}/baseline")
                    logged = baseline_hdfs(from_log(spark, work / "data", topic), f"{hdfs_url}{run}/r{r}/from-log")
                    ranged = baseline_hdfs(from_log_ranges(spark, work / "data", topic),
                                           f"{hdfs_url}{run}/r{r}/from-log-ranges")
                    return cached, logged, ranged

                if sink_first:
                    given, inferred = sinks()
                    base, base_log, base_ranges = baselines()
                else:
                    base, base_log, base_ranges = baselines()
                    given, inferred = sinks()
                rounds.setdefault("HDFS Parquet", []).append((given, base))
                rounds.setdefault("HDFS Parquet, plain write from the log", []).append((given, base_log))
                rounds.setdefault("HDFS Parquet, plain write from the log read as the sink reads it",
                                  []).append((given, base_ranges))
                rounds.setdefault("HDFS Parquet, the query's batches only, plain write from the log",
                                  []).append((batches[-1], base_log))
                if inferred:
                    rounds.setdefault("HDFS Parquet, schema inferred", []).append((inferred, base))
                print(f"round {r + 1}: HDFS  sink {n / given:>9,.0f} rec/s  sink (schema inferred) "
                      f"{n / inferred if inferred else 0:>9,.0f} rec/s  baseline {n / base:>9,.0f} rec/s  "
                      f"plain write from the log {n / base_log:>9,.0f} rec/s  (read as the sink reads it "
                      f"{n / base_ranges:>9,.0f} rec/s)  (sink's batches only "
                      f"{n / batches[-1]:>9,.0f} rec/s)", flush=True)
                if webhdfs is not None:
                    webhdfs.delete(f"{run}/r{r}", recursive=True)
            if "opensearch" not in args.skip:
                index = f"{topic}-r{r}"
                props = {**common, "name": f"bench-os-{r}", "connection.url": os_url, "key.ignore": "true",
                         "batch.size": str(args.batch_size), "index.name.format": index}
                def os_baselines(index: str = index) -> tuple[float, float, float]:
                    cached = baseline_opensearch(df, os_url, args.batch_size, f"{index}-baseline")
                    logged = baseline_opensearch(from_log(spark, work / "data", topic), os_url, args.batch_size,
                                                 f"{index}-from-log")
                    ranged = baseline_opensearch(from_log_ranges(spark, work / "data", topic), os_url,
                                                 args.batch_size, f"{index}-from-log-ranges")
                    return cached, logged, ranged

                if sink_first:
                    sink = run_sink(ElasticsearchSparkSinkTask, props, work / "data", work / f"s-o{r}", n,
                                    "documents_written")
                    base, base_log, base_ranges = os_baselines()
                else:
                    base, base_log, base_ranges = os_baselines()
                    sink = run_sink(ElasticsearchSparkSinkTask, props, work / "data", work / f"s-o{r}", n,
                                    "documents_written")
                rounds.setdefault("OpenSearch", []).append((sink, base))
                rounds.setdefault("OpenSearch, plain write from the log", []).append((sink, base_log))
                rounds.setdefault("OpenSearch, plain write from the log read as the sink reads it",
                                  []).append((sink, base_ranges))
                print(f"round {r + 1}: OpenSearch  sink {n / sink:>9,.0f} rec/s  baseline {n / base:>9,.0f} rec/s  "
                      f"plain write from the log {n / base_log:>9,.0f} rec/s  (read as the sink reads it "
                      f"{n / base_ranges:>9,.0f} rec/s)", flush=True)
                import httpx

                httpx.delete(f"{os_url}/{index},{index}-baseline,{index}-from-log,{index}-from-log-ranges",
                             timeout=60)
        print(f"\n{'target (median of ' + str(args.rounds) + ' rounds)':<36}{'records':>10}{'seconds':>9}"
              f"{'records/s':>11}")
        labels = {"HDFS Parquet": ("HdfsSparkSink -> Parquet", "baseline: DataFrame -> Parquet"),
                  "HDFS Parquet, plain write from the log": (None, "baseline: log -> DataFrame -> Parquet"),
                  "HDFS Parquet, plain write from the log read as the sink reads it":
                      (None, "baseline: log ranges -> Parquet"),
                  "HDFS Parquet, the query's batches only, plain write from the log":
                      ("HdfsSparkSink, its batches only", None),
                  "HDFS Parquet, schema inferred": ("HdfsSparkSink, schema inferred", None),
                  "OpenSearch": ("ElasticsearchSparkSink -> OS", "baseline: DataFrame -> bulk"),
                  "OpenSearch, plain write from the log": (None, "baseline: log -> DataFrame -> bulk"),
                  "OpenSearch, plain write from the log read as the sink reads it":
                      (None, "baseline: log ranges -> bulk")}
        for name, pairs in rounds.items():
            sink_label, base_label = labels[name]
            sink = statistics.median(p[0] for p in pairs)
            if sink_label:
                print(f"{sink_label:<36}{n:>10,}{sink:>9.1f}{n / sink:>11,.0f}")
            if base_label:
                base = statistics.median(p[1] for p in pairs)
                print(f"{base_label:<36}{n:>10,}{base:>9.1f}{n / base:>11,.0f}")
        for name, pairs in rounds.items():
            ratios = [base / sink for sink, base in pairs]
            print(f"ratio {name}: {statistics.median(ratios):.2f} (sink records/s / baseline records/s, median of "
                  f"the rounds; rounds {', '.join(f'{x:.2f}' for x in ratios)}; target >= 0.8)")
        spark.stop()
    finally:
        for svc in services:
            svc.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
