"""The ``headrace-log`` streaming data source: Spark reads the embedded log with no Kafka at all."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest

from spark_sinks.logsource import end_offsets
from spark_sinks.source import read_stream
from tests.spark.support import BASE_TS, produce_json, wait_until

# on the embedded log with the test process's own Spark session: beside the services group (the test that reads
# the session's Kafka stays in it)
pytestmark = [pytest.mark.beside_services, pytest.mark.timeout(300)]


class Collector:
    """A streaming query whose batches are kept in memory: (batch id, rows)."""

    def __init__(self, spark: Any, log_dir: str, checkpoint: str, max_per_trigger: int = 0,
                 starting: str = "earliest", known_start: str = "", topic: str = "t", df: Any = None) -> None:
        self.batches: list[tuple[int, list[Any]]] = []
        self._lock = threading.Lock()
        if df is None:
            df = read_stream(spark, {"topics": topic}, {"embedded.log.dir": log_dir}, starting, max_per_trigger,
                             known_start)
        self.query = (df.writeStream.foreachBatch(self._batch).option("checkpointLocation", checkpoint)
                      .trigger(processingTime="200 milliseconds").start())

    def _batch(self, df: Any, batch_id: int) -> None:
        rows = df.collect()
        with self._lock:
            self.batches.append((batch_id, rows))

    def rows(self) -> list[Any]:
        with self._lock:
            return [r for _, rows in self.batches for r in rows]

    def wait(self, count: int) -> list[Any]:
        return wait_until(lambda: len(self.rows()) >= count and self.rows(), 120, interval=0.2,
                          what=f"{count} rows")

    def settle(self) -> None:
        """Wait until Spark has looked for more data and found none: any extra or repeated row would have
        been delivered by then."""
        wait_until(lambda: not self.query.status["isDataAvailable"] and not self.query.status["isTriggerActive"],
                   60, interval=0.2, what="the query to find no more data")

    def stop(self) -> None:
        self.query.stop()


def test_reads_every_record_once_with_kafka_columns_and_caps_batches(tmp_path, spark):
    log_dir = str(tmp_path / "data")
    produce_json(log_dir, "t", 4000, partitions=2, keyed=True, hours=2)
    checkpoint = str(tmp_path / "cp")
    c = Collector(spark, log_dir, checkpoint, max_per_trigger=1000, known_start="initial")
    try:
        rows = c.wait(4000)
        c.settle()
        assert len(c.rows()) == 4000
        assert max(len(b) for _, b in c.batches) <= 1000 and len(c.batches) >= 4
    finally:
        c.stop()
    ids = sorted(json.loads(r["value"])["id"] for r in rows)
    assert ids == list(range(4000))
    first = min(rows, key=lambda r: (r["partition"], r["offset"]))
    assert first["topic"] == "t" and first["partition"] == 0 and first["offset"] == 0
    assert first["key"] == b"k0" and first["timestamp_ms"] == BASE_TS
    assert first["timestamp"].timestamp() * 1000 == pytest.approx(BASE_TS)
    assert {r["partition"] for r in rows} == {0, 1}

    # more records, and the query resumes from its checkpoint: each record once, the first batch capped too
    produce_json(log_dir, "t", 3000, partitions=2, start=4000)
    from spark_sinks.task import SparkSinkTask

    class _Probe(SparkSinkTask):
        def __init__(self) -> None:
            self.checkpoint, self.name, self._offset_log = checkpoint, "probe", {}

    probe = _Probe()
    last = probe.last_batch_in(spark, "offsets")
    known = probe.read_offset_log(last, spark) if last is not None else None
    assert json.loads(known) == {"t": {"0": 2000, "1": 2000}}
    c = Collector(spark, log_dir, checkpoint, max_per_trigger=1000, known_start=known)
    try:
        c.wait(3000)
        c.settle()
        assert len(c.rows()) == 3000 and max(len(b) for _, b in c.batches) <= 1000
        assert sorted(json.loads(r["value"])["id"] for r in c.rows()) == list(range(4000, 7000))
    finally:
        c.stop()
    assert end_offsets({"embedded.log.dir": log_dir}, ["t"]) == {"t": {"0": 3500, "1": 3500}}


def test_headers_nulls_starting_offsets_and_new_partitions(tmp_path, spark):
    from connect.log.api import NewTopic
    from connect.log.embedded.backend import EmbeddedBackend

    log_dir = str(tmp_path / "data")
    backend = EmbeddedBackend(log_dir)
    backend.admin().create_topic(NewTopic("h", 1, 1))
    producer = backend.producer()
    producer.send_batch("h", 0, [b'{"a":1}', None, b'{"a":3}'], keys=[None, b"k", None],
                        headers=[(("trace", b"x"), ("empty", None)), (), ()])
    producer.flush(10)
    c = Collector(spark, log_dir, str(tmp_path / "cp"), starting='{"h": {"0": 1}}', topic="h")
    try:
        rows = sorted(c.wait(2), key=lambda r: r["offset"])
    finally:
        c.stop()
    assert [r["offset"] for r in rows] == [1, 2]
    assert rows[0]["value"] is None and rows[0]["key"] == b"k" and rows[1]["value"] == b'{"a":3}'
    assert end_offsets({"embedded.log.dir": log_dir}, ["h"]) == {"h": {"0": 3}}

    c = Collector(spark, log_dir, str(tmp_path / "cp2"), topic="h")
    try:
        rows = sorted(c.wait(3), key=lambda r: r["offset"])
        assert [(h["key"], h["value"]) for h in rows[0]["headers"]] == [("trace", b"x"), ("empty", None)]
        # a record that arrives while the query runs
        producer.send("h", b'{"a":4}')
        producer.flush(10)
        c.wait(4)
    finally:
        c.stop()
        producer.close()
        backend.close()


def test_read_committed_never_shows_aborted_or_open_transactions(tmp_path, spark):
    from connect.log.api import NewTopic
    from connect.log.embedded.backend import EmbeddedBackend

    log_dir = str(tmp_path / "data")
    backend = EmbeddedBackend(log_dir)
    backend.admin().create_topic(NewTopic("x", 1, 1))
    txn = backend.producer({"transactional.id": "src-0", "linger.ms": 0})
    plain = backend.producer({"linger.ms": 0})
    txn.init_transactions()
    for prefix, count, end in (("c", 100, "commit"), ("a", 100, "abort"), ("o", 50, None)):
        txn.begin_transaction()
        txn.send_batch("x", 0, [f"{prefix}{i}".encode() for i in range(count)])
        txn.flush(10)
        if end == "commit":
            txn.commit_transaction()
        elif end == "abort":
            txn.abort_transaction()
    plain.send_batch("x", 0, [f"p{i}".encode() for i in range(10)])  # after the open transaction
    plain.flush(10)
    settings = {"embedded.log.dir": log_dir, "isolation.level": "read_committed"}
    df = read_stream(spark, {"topics": "x"}, settings, "earliest", 0)
    c = Collector(spark, log_dir, str(tmp_path / "cp"), df=df)
    try:
        c.wait(100)
        c.settle()
        assert sorted(r["value"] for r in c.rows()) == sorted(f"c{i}".encode() for i in range(100)), \
            "only the committed transaction; nothing at or after the open one's first record"
        txn.commit_transaction()
        c.wait(160)
        c.settle()
    finally:
        c.stop()
        txn.close()
        plain.close()
        backend.close()
    values = [r["value"] for r in c.rows()]
    assert len(values) == 160 and not any(v.startswith(b"a") for v in values)
    assert {v[:1] for v in values} == {b"c", b"o", b"p"}


@pytest.mark.kafka
def test_the_source_reads_kafka_through_the_same_log_interface(tmp_path, spark, kafka):
    from connect.log import open_log_backend
    from connect.log.api import NewTopic
    from spark_sinks.logsource import NAME

    topic = f"k-{uuid.uuid4().hex[:8]}"
    settings = {"bootstrap.servers": kafka.bootstrap_servers}
    backend = open_log_backend(settings)
    try:
        backend.admin().create_topic(NewTopic(topic, 2, 1))
        producer = backend.producer({"acks": "all"})
        for p in range(2):
            producer.send_batch(topic, p, [json.dumps({"id": 2 * i + p}).encode() for i in range(300)],
                                keys=[f"k{2 * i + p}".encode() for i in range(300)])
        assert producer.flush(30) == 0
        producer.close()
    finally:
        backend.close()
    df = (spark.readStream.format(NAME).options(**settings).option("subscribe", topic)
          .option("maxOffsetsPerTrigger", "250").option("knownStart", "initial").load())
    c = Collector(spark, "", str(tmp_path / "cp"), df=df)
    try:
        rows = c.wait(600)
        c.settle()
        assert len(c.rows()) == 600 and max(len(b) for _, b in c.batches) <= 250
    finally:
        c.stop()
    assert sorted(json.loads(r["value"])["id"] for r in rows) == list(range(600))
    assert {(r["partition"], r["offset"]) for r in rows} == {(p, o) for p in range(2) for o in range(300)}
    assert end_offsets(settings, [topic]) == {topic: {"0": 300, "1": 300}}


def test_batch_read_takes_the_records_between_starting_and_ending_offsets(tmp_path, spark):
    """spark.read.format("headrace-log"): the records as the streaming source gives them, from earliest to the log
    end by default, or between two offset maps."""
    from spark_sinks.logsource import NAME

    log_dir = str(tmp_path / "data")
    produce_json(log_dir, "b", 1000, partitions=2)
    reader = spark.read.format(NAME).option("embedded.log.dir", log_dir).option("subscribe", "b")
    rows = reader.load().select("partition", "offset", "value").collect()
    assert len(rows) == 1000
    assert {json.loads(r["value"])["id"] for r in rows} == set(range(1000))
    assert {(r["partition"], r["offset"]) for r in rows} == {(p, o) for p in (0, 1) for o in range(500)}
    some = (reader.option("startingOffsets", '{"b": {"0": 100, "1": 490}}')
            .option("endingOffsets", '{"b": {"0": 150, "1": -1}}').load().select("partition", "offset").collect())
    assert sorted((r["partition"], r["offset"]) for r in some) == \
        [(0, o) for o in range(100, 150)] + [(1, o) for o in range(490, 500)]
