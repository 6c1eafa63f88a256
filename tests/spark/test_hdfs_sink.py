"""HdfsSparkSink against a real HDFS (MiniDFSCluster) with local Spark."""

from __future__ import annotations

import collections
import re
import shutil
import uuid

import pytest

from spark_sinks.hdfs import HdfsSparkSinkTask
from tests.spark.support import (
    InProcessTask,
    Worker,
    connector_file,
    hdfs_files,
    hdfs_records,
    produce_json,
    read_topic,
    spark_props,
    wait_until,
)

pytestmark = pytest.mark.timeout(420)

ERR = "__connect.errors."


# All records are in the log before the query starts and max.offsets.per.trigger is unlimited, so one batch takes
# them all whatever the count: 5 hours of record time over 2 partitions make 10 to 12 files from 20,000 records
# as from 100,000 (which only took longer to write and read back).
TOTAL = 20_000


def test_json_records_land_in_hdfs_partitioned_by_hour(tmp_path, hdfs, spark):
    topic, root = "orders", f"/t-{uuid.uuid4().hex[:8]}"
    produce_json(tmp_path / "data", topic, TOTAL, partitions=2, hours=5)
    conn = connector_file(tmp_path, "hdfs-orders", connector__class="HdfsSparkSink", topics=topic,
                          hdfs__url=hdfs.url, topics__dir=f"{root}/topics", logs__dir=f"{root}/logs",
                          format="parquet", path__format="dt=YYYY-MM-dd/hour=HH", timezone="UTC",
                          **spark_props())
    worker = Worker(tmp_path, conn).start()
    try:
        metrics = worker.wait_landed("hdfs-orders", TOTAL)
        assert metrics["files_committed"] >= 10 and "records_per_sec" in metrics and "last_batch_id" in metrics
        line = "Progress of connector hdfs-orders task 0: query=RUNNING, records_total="
        wait_until(lambda: line in worker.log(), 30, what="a progress line in the worker log")
    finally:
        worker.stop()

    client = hdfs.client()
    files = hdfs_files(client, f"{root}/topics/{topic}")
    hours = {re.search(r"/dt=[\d-]+/hour=\d\d/", f).group(0) for f in files}
    assert len(hours) in (5, 6), hours  # 5 hours of record time, not aligned to the hour
    for f in files:
        assert re.fullmatch(rf".*/{topic}\+[01]\+\d{{10}}\+\d{{10}}\.parquet", f), f
    # read back through WebHDFS, file by file, as `hdfs dfs -cat` would
    ids = collections.Counter(r["id"] for r in hdfs_records(client, f"{root}/topics/{topic}"))
    assert len(ids) == TOTAL and set(ids.values()) == {1}
    assert min(ids) == 0 and max(ids) == TOTAL - 1
    # and with Spark, which also reads the folders back as columns
    df = spark.read.parquet(f"{hdfs.url}{root}/topics/{topic}")
    assert df.count() == TOTAL and df.select("id").distinct().count() == TOTAL
    assert {"dt", "hour", "id", "n", "name"} <= set(df.columns)
    assert df.select("dt", "hour").distinct().count() == len(hours)


def test_hdfs_down_at_start_fails_naming_the_url_then_restarts(tmp_path, hdfs):
    produce_json(tmp_path / "data", "late", 1000, partitions=1)
    worker = Worker(tmp_path).start()
    hdfs.stop()
    try:
        with worker.http() as c:
            r = c.post("/connectors", json={"name": "hdfs-late", "config": {
                "connector.class": "HdfsSparkSink", "topics": "late", "hdfs.url": hdfs.url, "format": "json",
                "topics.dir": "/late/topics", "logs.dir": "/late/logs", **{k: str(v) for k, v in spark_props().items()}}})
            assert r.status_code == 201, r.text
            status = wait_until(lambda: (s := worker.status("hdfs-late"))["connector"]["state"] == "FAILED" and s,
                                30, what="connector FAILED")
            assert f"HDFS at {hdfs.url} is not reachable" in status["connector"]["trace"]
            assert status["tasks"] == []
            hdfs.start()
            r = c.post("/connectors/hdfs-late/restart?includeTasks=true&onlyFailed=true")
            assert r.status_code == 202, r.text
            worker.wait_landed("hdfs-late", 1000, timeout=180)
            status = worker.status("hdfs-late")
            assert status["connector"]["state"] == "RUNNING" and status["tasks"][0]["state"] == "RUNNING"
    finally:
        hdfs.start()
        worker.stop()
    assert len(hdfs_records(hdfs.client(), "/late/topics/late")) == 1000


def test_formats_field_partitions_and_lost_checkpoint(tmp_path, hdfs, spark):
    """Avro, JSON and text files; the field partitioner; a query whose checkpoint is lost resumes after the
    offsets in the committed file names instead of writing everything again."""
    log_dir, topic = tmp_path / "data", "shapes"
    produce_json(log_dir, topic, 3000, partitions=2,
                 doc=lambda i: {"id": i, "color": ["red", "green", "blue"][i % 3], "size": i % 7})
    root = f"/fmt-{uuid.uuid4().hex[:8]}"
    common = {"name": "fmt", "topics": topic, "hdfs.url": hdfs.url, "spark.master": "local[1]",
              "trigger.interval.ms": "200"}

    avro = {**common, "format": "avro", "partitioner.class": "field", "partition.field.name": "color",
            "topics.dir": f"{root}/avro", "logs.dir": f"{root}/avro-logs"}
    with InProcessTask(HdfsSparkSinkTask, avro, log_dir, tmp_path / "s1") as t:
        t.wait_records(3000)
    colors = {f.split("/")[-2] for f in hdfs_files(hdfs.client(), f"{root}/avro/{topic}")}
    assert colors == {"color=red", "color=green", "color=blue"}
    df = spark.read.format("avro").load(f"{hdfs.url}{root}/avro/{topic}")
    assert df.count() == 3000 and df.where("color = 'red'").count() == 1000

    text = {**common, "format": "text", "topics.dir": f"{root}/text", "logs.dir": f"{root}/text-logs",
            "flush.size": "1000"}
    with InProcessTask(HdfsSparkSinkTask, text, log_dir, tmp_path / "s2") as t:
        t.wait_records(3000)
    names = hdfs_files(hdfs.client(), f"{root}/text/{topic}")
    assert names and all(n.endswith(".txt") and "/partition=" in n for n in names)
    assert spark.read.text(f"{hdfs.url}{root}/text/{topic}").count() == 3000

    # time folders from a field of the value (epoch ms or ISO-8601), in a time zone half an hour off UTC
    produce_json(log_dir, "timed", 2, partitions=1,
                 doc=lambda i: {"i": i, "at": [1_700_000_000_000, "2024-02-29T23:30:00Z"][i]})
    timed = {**common, "topics": "timed", "format": "json", "path.format": "dt=YYYY-MM-dd/hour=HH",
             "timestamp.extractor": "RecordField", "timestamp.field": "at", "timezone": "Asia/Kolkata",
             "topics.dir": f"{root}/timed", "logs.dir": f"{root}/timed-logs"}
    with InProcessTask(HdfsSparkSinkTask, timed, log_dir, tmp_path / "s4") as t:
        t.wait_records(2)
    folders = sorted(f.split("/timed/timed/")[1].rsplit("/", 1)[0] for f in hdfs_files(hdfs.client(),
                                                                                      f"{root}/timed/timed"))
    assert folders == ["dt=2023-11-15/hour=03", "dt=2024-03-01/hour=05"]

    json_cfg = {**common, "format": "json", "topics.dir": f"{root}/json", "logs.dir": f"{root}/json-logs"}
    with InProcessTask(HdfsSparkSinkTask, json_cfg, log_dir, tmp_path / "s3") as t:
        t.wait_records(3000)
    produce_json(log_dir, topic, 1000, partitions=2, start=3000)
    # the checkpoint is gone (say, its folder was removed by hand): the query starts after what HDFS holds
    hdfs.client().delete(f"{root}/json-logs", recursive=True)
    with InProcessTask(HdfsSparkSinkTask, json_cfg, log_dir, tmp_path / "s3") as t:
        t.wait_records(1000)
    ids = collections.Counter(r["id"] for r in hdfs_records(hdfs.client(), f"{root}/json/{topic}"))
    assert len(ids) == 4000 and set(ids.values()) == {1}
    shutil.rmtree(tmp_path / "s3", ignore_errors=True)



def _produce_raw(log_dir, topic: str, records: dict[tuple[int, int], tuple[bytes, bytes, tuple]]) -> None:
    """{(partition, offset): (key, value, headers)}, appended in order to an existing topic of the embedded log."""
    from connect.log.embedded.backend import EmbeddedBackend

    backend = EmbeddedBackend(str(log_dir))
    try:
        producer = backend.producer()
        for (partition, _), (key, value, headers) in sorted(records.items()):
            producer.send(topic, value, key=key, partition=partition, headers=headers)
        assert producer.flush(10) == 0
        producer.close()
    finally:
        backend.close()


def _error_headers(record) -> dict[str, str]:
    return {k.removeprefix(ERR): (v or b"").decode() for k, v in record.headers if k.startswith(ERR)}


def test_values_that_are_not_json_go_to_the_dead_letter_topic_or_fail_the_task(tmp_path, hdfs):
    """errors.tolerance=all: 5 values that are not JSON go, byte for byte with their key and headers, to the
    dead-letter topic with the context headers, and HDFS holds the 1,000 others once each. errors.tolerance=none
    (a second connector on the same topic, same worker): its task is FAILED naming a bad record, nothing committed."""
    log_dir, topic, dlq_topic, root = tmp_path / "data", "clicks", "clicks-dlq", f"/dlq-{uuid.uuid4().hex[:8]}"
    origin = ("origin", b"legacy-app")
    bad = {  # (partition, offset): (key, value, headers): text, cut off, not even UTF-8, empty, XML
        (0, 250): (b"bad-0", b"not json", (origin,)),
        (0, 251): (b"bad-1", b'{"id": 1000, "n"', ()),
        (1, 250): (b"bad-2", b"\xff\xfe\x00\x81 binary", (origin, ("attempt", b"\x00\xff"))),
        (1, 251): (b"bad-3", b"", ()),
        (1, 252): (b"bad-4", b"<click id='7'/>", ()),
    }
    # 250 good records in each of the 2 partitions, then the bad ones, then 250 more good ones in each
    produce_json(log_dir, topic, 500, partitions=2)
    _produce_raw(log_dir, topic, bad)
    produce_json(log_dir, topic, 500, partitions=2, start=500)

    common = {"connector__class": "HdfsSparkSink", "topics": topic, "hdfs__url": hdfs.url, "format": "json",
              **spark_props()}
    tolerant = connector_file(tmp_path, "hdfs-dlq", topics__dir=f"{root}/topics", logs__dir=f"{root}/logs",
                              errors__tolerance="all", errors__deadletterqueue__topic__name=dlq_topic,
                              errors__deadletterqueue__topic__replication__factor=1,
                              errors__deadletterqueue__context__headers__enable="true", **common)
    strict = connector_file(tmp_path, "hdfs-strict", topics__dir=f"{root}/strict", logs__dir=f"{root}/strict-logs",
                            **common)
    worker = Worker(tmp_path, tolerant, strict).start()
    try:
        metrics = worker.wait_landed("hdfs-dlq", 1005)
        failed = wait_until(lambda: (t := worker.status("hdfs-strict")["tasks"]) and t[0]["state"] == "FAILED"
                            and t[0], 120, what="the hdfs-strict task FAILED")
    finally:
        worker.stop()

    ids = collections.Counter(r["id"] for r in hdfs_records(hdfs.client(), f"{root}/topics/{topic}"))
    assert len(ids) == 1000 and set(ids.values()) == {1} and min(ids) == 0 and max(ids) == 999

    dead = read_topic(log_dir, dlq_topic)
    where = [(int(ctx["partition"]), int(ctx["offset"])) for ctx in map(_error_headers, dead)]
    assert sorted(where) == sorted(bad)
    for record, at in zip(dead, where, strict=True):
        key, value, headers = bad[at]
        assert (record.key, record.value) == (key, value)
        assert tuple(h for h in record.headers if not h[0].startswith(ERR)) == headers  # as they were, in order
        ctx = _error_headers(record)
        assert ctx["topic"] == topic and ctx["connector.name"] == "hdfs-dlq" and ctx["task.id"] == "0"
        assert ctx["class.name"] == "HdfsSparkSinkTask"
        assert ctx["exception.message"] == "The value is not JSON; format=json needs JSON values"
    assert metrics["records_dead_lettered"] == 5
    assert metrics["records_failed"] == metrics["records_skipped"] == metrics["dlq_produce_requests"] == 5
    assert metrics["dlq_produce_failures"] == 0

    # errors.tolerance=none: the trace names a bad record and why; nothing of that batch was committed
    assert re.search(rf"{topic}-[01]@25[012]: the value is not JSON", failed["trace"]), failed["trace"][-3000:]
    assert hdfs_files(hdfs.client(), f"{root}/strict/{topic}") == []
