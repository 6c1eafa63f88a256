"""Avro values (AvroConverter, Headrace's schema registry) land in HDFS with typed columns from the registered
schema, as Parquet and as Avro files; a BACKWARD-compatible evolution (a new optional field) writes new files
with the new column and Spark reads old and new together; values not in the wire format fail the task or, with
errors.tolerance=all, are skipped."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pytest

from connect.api import Schema, SchemaBuilder, Struct
from connect.api.logical_types import Date, Decimal, Timestamp
from plugins.converters.avro import AvroConverter
from spark_sinks.hdfs import HdfsSparkSinkTask
from tests.schema_registry.registry_support import ServedRegistry
from tests.spark.support import InProcessTask, produce_records, wait_until

pytestmark = pytest.mark.timeout(420)

V1 = (SchemaBuilder.struct().name("com.example.Order")
      .field("id", Schema.INT64_SCHEMA).field("customer", Schema.STRING_SCHEMA)
      .field("qty", Schema.INT16_SCHEMA).field("paid", Schema.BOOLEAN_SCHEMA)
      .field("price", Decimal.builder(2).parameter("connect.decimal.precision", "10").build())
      .field("day", Date.SCHEMA).field("at", Timestamp.SCHEMA).build())
V2 = (SchemaBuilder.struct().name("com.example.Order")
      .field("id", Schema.INT64_SCHEMA).field("customer", Schema.STRING_SCHEMA)
      .field("qty", Schema.INT16_SCHEMA).field("paid", Schema.BOOLEAN_SCHEMA)
      .field("price", Decimal.builder(2).parameter("connect.decimal.precision", "10").build())
      .field("day", Date.SCHEMA).field("at", Timestamp.SCHEMA)
      .field("email", Schema.OPTIONAL_STRING_SCHEMA).build())


def order(schema: Schema, i: int) -> Struct:
    s = (Struct(schema).put("id", i).put("customer", f"c{i % 7}").put("qty", i % 5).put("paid", i % 2 == 0)
         .put("price", decimal.Decimal(i).scaleb(-2).quantize(decimal.Decimal("0.01")))
         .put("day", dt.date(2026, 11, 1) + dt.timedelta(days=i % 3))
         .put("at", dt.datetime(2026, 11, 25, 3, 50, tzinfo=dt.UTC) + dt.timedelta(seconds=i)))
    if schema is V2:
        s.put("email", f"u{i}@example.com")
    return s


def test_avro_topic_lands_as_typed_parquet_and_avro_and_evolves(tmp_path, hdfs, spark):
    registry = ServedRegistry(tmp_path / "registry")
    try:
        conv = AvroConverter()
        conv.configure({"schema.registry.url": registry.url}, False)
        log_dir, topic, root = tmp_path / "data", "orders", f"/avro-{uuid.uuid4().hex[:8]}"
        produce_records(log_dir, topic, [(None, v) for v in conv.from_connect_batch(
            topic, V1, [order(V1, i) for i in range(200)])])
        common = {"name": "typed", "topics": topic, "hdfs.url": hdfs.url, "spark.master": "local[1]",
                  "trigger.interval.ms": "200",
                  "value.converter": "io.confluent.connect.avro.AvroConverter",
                  "value.converter.schema.registry.url": registry.url}
        parquet = {**common, "format": "parquet", "topics.dir": f"{root}/pq", "logs.dir": f"{root}/pq-logs"}
        with InProcessTask(HdfsSparkSinkTask, parquet, log_dir, tmp_path / "s1") as t:
            t.wait_records(200)
            df = spark.read.parquet(f"{hdfs.url}{root}/pq/{topic}")
            types = dict(df.dtypes)
            assert types["id"] == "bigint" and types["customer"] == "string" and types["qty"] == "int"
            assert types["paid"] == "boolean" and types["price"] == "decimal(10,2)"
            assert types["day"] == "date" and types["at"] == "timestamp"
            row = df.where("id = 123").collect()[0]
            assert row["price"] == decimal.Decimal("1.23") and row["day"] == dt.date(2026, 11, 1)

            # the evolution: a new optional field, registered BACKWARD-compatible, in new files
            produce_records(log_dir, topic, [(None, v) for v in conv.from_connect_batch(
                topic, V2, [order(V2, i) for i in range(200, 300)])])
            t.wait_records(300)

            def merged() -> object:
                df = spark.read.option("mergeSchema", "true").parquet(f"{hdfs.url}{root}/pq/{topic}")
                return df if df.count() == 300 else None
            both = wait_until(merged, 120, interval=1.0, what="the evolved batch's files")
        assert dict(both.dtypes)["email"] == "string"
        assert both.where("email is null").count() == 200
        assert both.where("id = 250").collect()[0]["email"] == "u250@example.com"

        avro = {**common, "format": "avro", "topics.dir": f"{root}/av", "logs.dir": f"{root}/av-logs"}
        with InProcessTask(HdfsSparkSinkTask, avro, log_dir, tmp_path / "s2") as t:
            t.wait_records(300)
        files = spark.read.format("avro").load(f"{hdfs.url}{root}/av/{topic}")
        assert files.count() == 300 and dict(files.dtypes)["price"] == "decimal(10,2)"
        assert dict(files.dtypes)["email"] == "string"  # read into the newest schema

        # with errors.tolerance=all a value not in the wire format is skipped (to the dead-letter topic, if any)
        produce_records(log_dir, "mixed", [(None, b"not avro")] + [(None, v) for v in conv.from_connect_batch(
            "mixed", V1, [order(V1, i) for i in range(10)])])
        mixed = {**parquet, "name": "mixed", "topics": "mixed", "errors.tolerance": "all",
                 "topics.dir": f"{root}/mixed", "logs.dir": f"{root}/mixed-logs"}
        with InProcessTask(HdfsSparkSinkTask, mixed, log_dir, tmp_path / "s4") as t:
            wait_until(lambda: t.task.progress().get("records_dead_lettered") == 1, 120, interval=0.5,
                       what="the bad value skipped")

            def landed() -> bool:
                try:
                    return spark.read.parquet(f"{hdfs.url}{root}/mixed/mixed").count() == 10
                except Exception:  # noqa: BLE001 - no files yet
                    return False
            wait_until(landed, 120, interval=1.0, what="the ten good values in HDFS")

        # a value that is not in the wire format stops the task (errors.tolerance=none) naming the record
        produce_records(log_dir, "broken", [(None, b'{"json": 1}')])
        bad = {**parquet, "name": "broken", "topics": "broken", "topics.dir": f"{root}/bad",
               "logs.dir": f"{root}/bad-logs"}
        with InProcessTask(HdfsSparkSinkTask, bad, log_dir, tmp_path / "s3") as t:
            with pytest.raises(AssertionError, match="broken-0@0: the value does not start with the Avro magic byte"):
                t.wait_records(1, timeout=120)
    finally:
        registry.close()
