"""Where the HDFS sink's time goes inside one micro-batch: the sink's ``write_batch`` beside a plain write and a
no-op write of the very same micro-batch DataFrame, so that Spark's streaming machinery (query start, the
planner of the Python source, checkpoint writes) is left out of the comparison.

It starts HDFS, puts N JSON records (default 300,000; 4 partitions, 5 hours of record time) into a topic of the
embedded log and runs one streaming query (``availableNow``) over it in ``local[2]``; inside its single
micro-batch it times, --rounds times in turn: ``write.format("noop")`` (the cost of reading the batch from the
log), a plain ``from_json`` + ``partitionBy("dt", "hour").parquet`` write, and the sink's ``write_batch``
(Parquet in ``dt=/hour=`` folders, its commit included). Then it times a batch read of the same topic
(``spark.read.format("headrace-log")``) into a no-op and into the plain write.

    python bench/profile_spark_batch.py --records 300000 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_spark_sinks import VALUE_SCHEMA, _Context, baseline_hdfs, from_log, produce  # noqa: E402


def plain_write(df: Any, dest: str) -> None:
    from pyspark.sql import functions as F

    ts = F.timestamp_millis("timestamp_ms")
    (df.select(F.from_json(F.col("value").cast("string"), VALUE_SCHEMA).alias("v"),
               F.date_format(ts, "yyyy-MM-dd").alias("dt"), F.date_format(ts, "HH").alias("hour"))
     .select("v.*", "dt", "hour").write.mode("overwrite").partitionBy("dt", "hour").parquet(dest))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import functions as F

    from services.hdfs import HdfsService
    from spark_sinks.hdfs import HdfsSparkSinkTask
    from spark_sinks.session import log_source_for, spark_session

    n = args.records
    hdfs = HdfsService(heap="1g").start()
    work = Path(tempfile.mkdtemp(prefix="profile-spark-batch-"))
    try:
        produce(work / "data", "t", n)
        spark = spark_session({"spark.master": "local[2]", "spark.driver.memory": "2g",
                               "spark.sql.shuffle.partitions": "4"})
        props = {"name": "profile", "topics": "t", "spark.master": "local[2]", "hdfs.url": hdfs.url,
                 "format": "parquet", "path.format": "dt=YYYY-MM-dd/hour=HH", "topics.dir": "/profile/topics",
                 "logs.dir": "/profile/logs", "value.schema": VALUE_SCHEMA}
        task = HdfsSparkSinkTask()
        task.initialize(_Context(props, work / "data", work / "state"))
        task.start(props)
        task._spark = spark
        task.prepare(spark)
        # the query below is not the sink's, so its offset log is not where the sink looks: give the ranges
        ranges = {("t", p): (0, n // 4 - 1) for p in range(4)}
        task._batch_ranges = lambda df, batch_id: ranges  # type: ignore[method-assign]
        times: dict[str, list[float]] = {}

        def timed(name: str, step: Any) -> None:
            started = time.perf_counter()
            step()
            times.setdefault(name, []).append(time.perf_counter() - started)

        def each_batch(df: Any, batch_id: int) -> None:
            for r in range(args.rounds + 1):  # round 0 warms up
                timed("noop", lambda: df.write.format("noop").mode("overwrite").save())
                timed("plain", lambda r=r: plain_write(df, f"{hdfs.url}/plain-{batch_id}-{r}"))
                timed("sink", lambda r=r: task.write_batch(df, 1000 * r + batch_id))

        source = (spark.readStream.format(log_source_for(spark, "profile"))
                  .option("embedded.log.dir", str(work / "data")).option("subscribe", "t").load()
                  .withColumn("timestamp", F.timestamp_millis("timestamp_ms")))
        (source.writeStream.foreachBatch(each_batch).option("checkpointLocation", str(work / "checkpoint"))
         .trigger(availableNow=True).start().awaitTermination())
        for r in range(args.rounds):
            timed("batch read, noop", lambda: from_log(spark, work / "data", "t").write.format("noop")
                  .mode("overwrite").save())
            timed("batch read, plain", lambda r=r: baseline_hdfs(from_log(spark, work / "data", "t"),
                                                               f"{hdfs.url}/batch-{r}"))
        print(f"{n:,} records, local[2], rounds after a warm-up (seconds; median, then each round)")
        for name, values in times.items():
            kept = values[1:] if name in ("noop", "plain", "sink") else values
            print(f"  {name:<20} {statistics.median(kept):6.2f}   {', '.join(f'{v:.2f}' for v in kept)}")
        spark.stop()
    finally:
        hdfs.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
