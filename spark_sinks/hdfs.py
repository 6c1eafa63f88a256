"""HdfsSparkSink: topics into HDFS as Parquet, Avro, JSON or text files, exactly once, through Spark.

Layout and names follow Confluent's HDFS sink connector::

    <hdfs.url><topics.dir>/<topic>/<partition path>/<topic>+<partition>+<start offset>+<end offset>.<ext>

with the partition path from the partitioner: ``partition=<n>`` (default),
``<field>=<value>`` (field), or the ``path.format`` of a time-based
partitioner (``dt=YYYY-MM-dd/hour=HH``: each segment ``name=pattern``, so that
Spark and Hive read the folders back as columns), from the record time, a
field of the value or the wall clock, in ``timezone``.

Exactly once: each micro-batch is written by Spark into
``<topics.dir>/+tmp/<connector>/<batch id>/`` with one file per (topic,
partition, partition path); then every file is renamed (an atomic HDFS
rename) to its final name, which holds the first and last offset of its
topic-partition in that micro-batch (from the query's offset log), so the
records of a file lie within the range its name gives. A batch that runs
again after a crash (Spark replays it with the same offsets from its
checkpoint) produces the same names, and a name that already exists is not
written twice. No shuffle is needed for this: each input partition of a
micro-batch is one topic-partition, as both sources plan them. The query's checkpoint lives in HDFS too
(``<logs.dir>/<connector>/checkpoint``); if it is lost, the query starts after
the highest end offset found in the committed file names.

Files: Parquet and Avro hold the fields of the JSON values (the schema is
``value.schema``, a Spark DDL string, or inferred from each batch and merged
with what earlier batches saw); JSON files hold the values as they are, one
per line; text files hold the values as UTF-8 lines (optionally compressed);
sequence files hold LongWritable times and the values, as Flume's HDFS sink
writes them. With ``path.template`` (``path_template``) the folders are the
template's, below ``hdfs.url``, and files in progress wait in
``<logs.dir>/<connector>/+tmp``. Tombstones (null values) are skipped. ``flush.size`` caps the records of a micro-batch (so of
each file) and ``rotate.interval.ms`` sets how often a micro-batch starts.
"""

from __future__ import annotations

import logging
import re
import socket
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from connect.api import AbstractConfig, ConfigDef, ConfigValue, ConnectException, Task
from spark_sinks.avro_values import AvroValues, avro_registry_url
from spark_sinks.config import MAX_OFFSETS_PER_TRIGGER, TRIGGER_INTERVAL_MS, is_truthy, topics_of
from spark_sinks.connector import SparkSinkConnector
from spark_sinks.hdfs_config import COMPRESSIONS, FORMATS, PARTITIONERS, format_of, hdfs_def, partitioner_of
from spark_sinks.path_template import PathTemplate
from spark_sinks.sequence_file import BYTES_WRITABLE, TEXT, sequence_file
from spark_sinks.task import SparkSinkTask

if TYPE_CHECKING:  # pyspark is imported only where a query is built
    from pyspark.sql import Column

__all__ = ["HdfsSparkSink", "HdfsSparkSinkTask", "check_reachable"]

log = logging.getLogger(__name__)

TMP_DIR = "+tmp"
_COMMIT_THREADS = 4  # renames in flight at once while a batch commits
_DIR = "_dir"  # the column of each record's folder, with a path template


def file_name_pattern(prefix: str = "", suffix: str | None = None) -> re.Pattern[str]:
    """Committed file names: ``<prefix><topic>+<partition>+<start>+<end><suffix>`` (default suffix: .ext)."""
    end = re.escape(suffix) if suffix is not None else r"\.\w+(?:\.\w+)?"
    return re.compile(rf"^{re.escape(prefix)}(?P<topic>[A-Za-z0-9._-]+)\+(?P<partition>\d+)\+(?P<start>\d+)"
                      rf"\+(?P<end>\d+){end}$")


def check_reachable(url: str, timeout: float = 5.0) -> None:
    """Fail with a clear message naming ``url`` when nothing answers at its host and port."""
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return
    host = parsed.hostname or "localhost"
    port = parsed.port or (9870 if parsed.scheme == "webhdfs" else 8020)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as exc:
        raise ConnectException(f"HDFS at {url} is not reachable: {exc.strerror or exc}") from exc


class HdfsSparkSink(SparkSinkConnector):
    """Lands topics in HDFS through a Spark Structured Streaming query (one per connector)."""

    def config(self) -> ConfigDef:
        return hdfs_def()

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        values = super().validate(connector_configs)
        kind = PARTITIONERS.get(str(connector_configs.get("partitioner.class") or "default"))
        if kind == "time" and not str(connector_configs.get("path.format") or "").strip():
            values["path.format"].add_error("A time-based partitioner needs path.format")
        if kind == "field" and not str(connector_configs.get("partition.field.name") or "").strip():
            values["partition.field.name"].add_error("The field partitioner needs partition.field.name")
        if (str(connector_configs.get("timestamp.extractor") or "").lower() == "recordfield"
                and not str(connector_configs.get("timestamp.field") or "").strip()):
            values["timestamp.field"].add_error("RecordField needs timestamp.field")
        return values

    def check(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(hdfs_def(), props)
        partitioner_of(props)
        check_reachable(str(config.get("hdfs.url")))

    def task_class(self) -> type[Task]:
        return HdfsSparkSinkTask


class HdfsSparkSinkTask(SparkSinkTask):
    target = "HDFS"

    def config_def(self) -> ConfigDef:
        return hdfs_def()

    def start(self, props: Mapping[str, str]) -> None:
        props = dict(props)
        if int(props.get("flush.size") or 0) > 0:
            props[MAX_OFFSETS_PER_TRIGGER] = str(props["flush.size"])
        if int(props.get("rotate.interval.ms") or -1) >= 0:
            props[TRIGGER_INTERVAL_MS] = str(props["rotate.interval.ms"])
        super().start(props)
        self.url = str(self.config.get("hdfs.url")).rstrip("/")
        self.topics_dir = "/" + str(self.config.get("topics.dir")).strip("/")
        self.format = format_of(props)
        self.compression = str(self.config.get("compression")).lower()
        if self.compression != "none" and self.format not in ("text", "json"):
            raise ConnectException(f"compression={self.compression} is for text and json files; {self.format} "
                                   "files use their own codec")
        suffix = self.config.get("file.suffix")
        self.prefix = str(self.config.get("file.prefix") or "")
        self.suffix = str(suffix) if suffix is not None else f".{FORMATS[self.format]}{COMPRESSIONS[self.compression]}"
        self.file_name = file_name_pattern(self.prefix, self.suffix)
        template = str(self.config.get("path.template") or "").strip()
        self.template = PathTemplate(template) if template else None
        self.ts_header = str(self.config.get("timestamp.header") or "timestamp")
        self.round_ms = int(self.config.get("timestamp.round.ms") or 0)
        self.sequence_value = str(self.config.get("sequence.value") or "bytes").lower()
        self.partitioner, self.path_format = partitioner_of(props)
        self.fields = [f for f in self.config.get_list("partition.field.name") if f]
        self.extractor = str(self.config.get("timestamp.extractor")).lower()
        self.ts_field = str(self.config.get("timestamp.field") or "")
        self.timezone = str(self.config.get("timezone"))
        self.pad = int(self.config.get("filename.offset.zero.pad.width"))
        self.value_schema = str(self.config.get("value.schema") or "").strip()
        self.unwrap = is_truthy(props.get("value.converter.schemas.enable", "false"))
        self.tolerate = str(props.get("errors.tolerance", "none")).lower() == "all"
        self._schema: Any = None  # the merged schema of the values seen so far (parquet/avro)
        registry = avro_registry_url(props) if self.format in ("parquet", "avro") else None
        # values in Confluent's Avro format: typed columns from the registered schemas instead of JSON
        self.avro = AvroValues(registry, self.tolerate) if registry else None
        self._fs: Any = None

    def needs_headers(self) -> bool:
        # headers are read for the dead-letter topic (only errors.tolerance=all feeds it), by a path template,
        # by the Header time extractor, and for a SequenceFile's event time
        return self.tolerate or self.template is not None or self.extractor == "header" or self.format == "sequence"

    def default_checkpoint(self) -> str:
        url = str(self.config.get("hdfs.url")).rstrip("/")
        logs_dir = "/" + str(self.config.get("logs.dir")).strip("/")
        return f"{url}{logs_dir}/{self.name}/checkpoint"

    # --- Hadoop file system through the Spark JVM ------------------------------------------------------
    def _path(self, path: str) -> Any:
        return self._spark._jvm.org.apache.hadoop.fs.Path(path)

    def prepare(self, spark: Any) -> None:
        jvm = spark._jvm
        conf = spark._jsc.hadoopConfiguration()
        try:
            self._fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(self.url), conf)
            self._fs.mkdirs(self._path(self.url + (self.template.static_root() if self.template else self.topics_dir)))
        except Exception as exc:
            raise ConnectException(f"HDFS at {self.url} cannot be used: {_java_message(exc)}") from exc

    # --- recovery: what HDFS already holds -------------------------------------------------------------------
    def committed_offsets(self) -> dict[str, dict[str, int]]:
        """The highest end offset in committed file names, per topic and partition."""
        topics, regex = topics_of(self.props)
        rx = re.compile(regex) if regex else None
        found: dict[str, dict[str, int]] = {}
        if self.template is not None:
            return self._committed_below(self._path(self.url + self.template.static_root()), topics, rx)
        root = self._path(self.url + self.topics_dir)
        if not self._fs.exists(root):
            return found
        for st in self._fs.listStatus(root):
            topic = st.getPath().getName()
            if not st.isDirectory() or topic == TMP_DIR or not ((rx and rx.fullmatch(topic)) or topic in topics):
                continue
            files = self._fs.listFiles(st.getPath(), True)
            while files.hasNext():
                m = self.file_name.match(files.next().getPath().getName())
                if m and m.group("topic") == topic:
                    parts = found.setdefault(topic, {})
                    parts[m.group("partition")] = max(parts.get(m.group("partition"), -1), int(m.group("end")))
        return found

    def _committed_below(self, root: Any, topics: list[str], rx: re.Pattern[str] | None) -> dict[str, dict[str, int]]:
        """With a path template the topics share folders: every file name below the template's root counts."""
        found: dict[str, dict[str, int]] = {}
        if not self._fs.exists(root):
            return found
        files = self._fs.listFiles(root, True)
        while files.hasNext():
            m = self.file_name.match(files.next().getPath().getName())
            if m and ((rx and rx.fullmatch(m.group("topic"))) or m.group("topic") in topics):
                parts = found.setdefault(m.group("topic"), {})
                parts[m.group("partition")] = max(parts.get(m.group("partition"), -1), int(m.group("end")))
        return found

    def recovered_starting_offsets(self, spark: Any) -> str | None:
        committed = self.committed_offsets()
        if not committed:
            return None
        offsets = {t: {p: end + 1 for p, end in parts.items()} for t, parts in committed.items()}
        settings = self.context.log_settings()
        if settings.get("bootstrap.servers"):
            # Spark's Kafka source wants every partition of every topic named: the others from the earliest
            offsets = _complete_kafka_offsets(settings, offsets)
        import json

        return json.dumps(offsets, sort_keys=True)

    # --- one micro-batch ---------------------------------------------------------------------------------------
    def write_batch(self, df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        started = time.monotonic()
        spark = df.sparkSession
        if self.avro is not None:
            self._write_avro_batch(df, batch_id, started)
            return
        value = F.col("value").cast("string")
        if self.unwrap:
            value = F.get_json_object(value, "$.payload")
        # the raw bytes are kept only for the dead-letter topic, and as the body of sequence files: carrying
        # them costs every batch a column
        raw = ("value",) if self.tolerate or self.format == "sequence" else ()
        base = df.where(F.col("value").isNotNull()).select(
            "topic", "partition", "offset", "timestamp", "key", "headers", *raw, value.alias("_value"))
        if self.format not in ("text", "sequence"):
            base = self._check_json(base)
        keys = ["topic", "partition", *self._partition_columns()]
        if self.format == "sequence":
            # Flume's SequenceFile record: the event time (its timestamp header, else now) and the body
            stamp = F.coalesce(self._header(self.ts_header).try_cast("long"), F.unix_millis(F.current_timestamp()))
            shaped = base.select("topic", "partition", "offset", *self._partition_exprs(spark),
                                 stamp.alias("_ts"), F.col("value").alias("_bytes"))
            self._write_files(df, shaped.select(*keys, "offset", "_ts", "_bytes"), keys, batch_id, started, None)
            return
        shaped = base.select("topic", "partition", "offset", *self._partition_exprs(spark), "_value")
        cached = None
        if self.format in ("parquet", "avro"):
            if not self.value_schema:  # the batch is read twice: to infer the schema, then to write it
                shaped = cached = shaped.persist()
            schema = self._batch_schema(spark, shaped)
            options = {"mode": "PERMISSIVE" if self.tolerate else "FAILFAST"}
            parsed = F.from_json("_value", schema, options).alias("_v")
            data = [F.col("_v")[f.name].alias(f.name) for f in schema.fields if f.name not in keys]
            shaped = shaped.select(*keys, "offset", parsed).select(*keys, "offset", *data)
        else:
            shaped = shaped.select(*keys, "offset", F.col("_value").alias("value"))
        self._write_files(df, shaped, keys, batch_id, started, cached)

    def _write_avro_batch(self, df: Any, batch_id: int, started: float) -> None:
        """Avro values (Confluent's wire format) into typed columns; values not in that format follow
        errors.tolerance as values that are not JSON do."""
        from pyspark.sql import functions as F

        assert self.avro is not None
        decoded = self.decode_avro(df, self.avro)
        if decoded is None:
            return
        keys = ["topic", "partition", *self._partition_columns()]
        names = decoded.schema["_v"].dataType.fieldNames()
        shaped = decoded.select("topic", "partition", "offset",
                                *self._partition_exprs(spark=df.sparkSession,
                                                       field=lambda f: F.col("_v")[f].cast("string")), "_v")
        shaped = shaped.select(*keys, "offset", *[F.col("_v")[n].alias(n) for n in names if n not in keys])
        self._write_files(df, shaped, keys, batch_id, started, None)

    def _write_files(self, df: Any, shaped: Any, keys: list[str], batch_id: int, started: float,
                     cached: Any) -> None:
        # Each input partition of a micro-batch holds one topic-partition (both sources plan them so), so no
        # shuffle is needed: the files of a topic-partition carry the offset range it had in this batch.
        ranges = self._batch_ranges(cached if cached is not None else df, batch_id)
        ranged = time.monotonic()
        if not ranges:  # an empty micro-batch (Spark runs them, e.g. to advance a watermark): nothing to write
            if cached is not None:
                cached.unpersist()
            log.debug("%s: batch %d is empty", self.name, batch_id)
            return
        # The offset range of a file is its topic-partition's range in this batch, known here: the commit puts it
        # into the file's name, so no per-row column (and no partition folder) carries it through Spark.
        out = shaped.drop("offset")
        tmp = f"{self._tmp_root()}/{batch_id}"
        if self.format == "sequence":
            self._write_sequence_files(out, keys, tmp)
            self._after_write(batch_id, cached, started, ranged, ranges)
            return
        writer = (out.write.mode("overwrite").partitionBy(*keys)
                  .option("maxRecordsPerFile", 0)
                  # tasks commit straight into the temporary folder: the renames below are the real commit
                  .option("mapreduce.fileoutputcommitter.algorithm.version", "2"))
        if self.format in ("text", "json"):
            writer = writer.option("compression", self.compression)
        if self.format == "avro":
            writer.format("avro").save(tmp)
        elif self.format == "parquet":
            writer.parquet(tmp)
        else:
            writer.text(tmp)
        self._after_write(batch_id, cached, started, ranged, ranges)

    def _after_write(self, batch_id: int, cached: Any, started: float, ranged: float,
                     ranges: Mapping[tuple[str, int], tuple[int, int]]) -> None:
        tmp = f"{self._tmp_root()}/{batch_id}"
        if cached is not None:
            cached.unpersist()
        wrote = time.monotonic()
        committed = self._commit(tmp, batch_id, ranges)
        self.count("files_committed", committed)
        log.debug("%s: batch %d: offset ranges in %.0f ms, Spark wrote in %.0f ms, commit took %.0f ms", self.name,
                  batch_id, (ranged - started) * 1000, (wrote - ranged) * 1000, (time.monotonic() - wrote) * 1000)

    def _write_sequence_files(self, out: Any, folders: list[str], tmp: str) -> None:
        """One Hadoop SequenceFile per folder of the batch, in the folder layout of Spark's partitioned writes
        (so the commit renames them alike). Spark has no SequenceFile writer for DataFrames: the batch's rows
        come to the driver, which writes each file through the Hadoop file system."""
        value_class = TEXT if self.sequence_value == "text" else BYTES_WRITABLE
        groups: dict[tuple[Any, ...], list[tuple[int, bytes]]] = {}
        for row in out.select(*folders, "_ts", "_bytes").toLocalIterator():
            groups.setdefault(tuple(row[name] for name in folders), []).append((int(row["_ts"]), bytes(row["_bytes"])))
        self._fs.delete(self._path(tmp), True)  # what an interrupted run of this batch left
        for values, records in groups.items():
            rel = "/".join(f"{name}={_escape(str(value))}" for name, value in zip(folders, values, strict=True))
            stream = self._fs.create(self._path(f"{tmp}/{rel}/part-00000"), True)
            try:
                stream.write(sequence_file(records, value_class))
            finally:
                stream.close()

    def _batch_ranges(self, df: Any, batch_id: int) -> dict[tuple[str, int], tuple[int, int]]:
        """First and last offset of each topic-partition in the batch: from the query's offset log (this batch's
        entry and the one before; a replay of the batch reads the same entries), else by scanning the batch."""
        ranges = self._ranges_from_offset_log(batch_id)
        if ranges is not None:
            return ranges
        from pyspark.sql import functions as F

        rows = df.groupBy("topic", "partition").agg(F.min("offset").alias("lo"), F.max("offset").alias("hi")).collect()
        return {(r["topic"], int(r["partition"])): (int(r["lo"]), int(r["hi"])) for r in rows}

    def _ranges_from_offset_log(self, batch_id: int) -> dict[tuple[str, int], tuple[int, int]] | None:
        end = self._offset_log_entry(batch_id)
        before = self._offset_log_entry(batch_id - 1)  # for batch 0: where the query started
        if end is None or before is None:
            return None
        ranges: dict[tuple[str, int], tuple[int, int]] = {}
        for topic, parts in end.items():
            for p, stop in parts.items():
                begin = before.get(topic, {}).get(p)
                if begin is None:
                    return None  # a partition new in this batch: nor is its first offset
                if int(stop) > int(begin):
                    ranges[(topic, int(p))] = (int(begin), int(stop) - 1)
        return ranges

    def _offset_log_entry(self, batch_id: int) -> dict[str, dict[str, int]] | None:
        text = self.read_offset_log(batch_id)
        if not text:
            return None
        try:
            import json

            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def _check_json(self, base: Any) -> Any:
        """Values that are not JSON: with errors.tolerance=all they go to the dead-letter topic instead of the
        files; otherwise the batch fails (for format=json naming the first such record it meets)."""
        from pyspark.sql import functions as F

        valid = F.get_json_object("_value", "$").isNotNull()
        if not self.tolerate:
            if self.format != "json":
                # Parquet and Avro parse each value with from_json in FAILFAST mode, which fails the batch on a
                # value that is not JSON; a second parse here only to name the record cost a sixth of the rate.
                return base
            # Why: format=json writes the values as they are, so without this check a value that is not JSON
            # landed in the .json files unnoticed, though errors.tolerance=none must stop at it; the error names
            # the record. It is checked as the batch is written, with no extra pass over the batch.
            reason = F.format_string("%s-%d@%d: the value is not JSON; format=%s needs JSON values", "topic",
                                     "partition", "offset", F.lit(self.format))
            return base.withColumn("_value", F.when(valid, F.col("_value")).otherwise(F.raise_error(reason)))
        bad = base.where(~valid).select("topic", "partition", "offset", "key", "value", "headers").collect()
        if bad:
            dlq = self.context.dead_letter_queue()
            for row in bad:
                log.warning("%s: skipping %s-%d@%d: the value is not JSON", self.name, row["topic"],
                            row["partition"], row["offset"])
                if dlq is not None:
                    # Why the raw "value" column and not "_value": that one is the value cast to a string, where
                    # bytes that are not UTF-8 became U+FFFD (and with schemas.enable, only the payload): the
                    # dead-letter topic must get the record's original bytes.
                    dlq.report(row["topic"], row["partition"], row["offset"], row["key"], row["value"],
                               [(h["key"], h["value"]) for h in row["headers"] or ()],
                               "The value is not JSON; format=" + self.format + " needs JSON values")
            if dlq is not None:
                dlq.flush(30.0)
            self.count("records_dead_lettered", len(bad))
        return base.where(valid)

    def _tmp_root(self) -> str:
        """Where Spark writes a batch before the renames: with a path template, below logs.dir, so that no
        folder of the template's tree holds files that are not committed yet."""
        if self.template is not None:
            return f"{self.url}/{str(self.config.get('logs.dir')).strip('/')}/{self.name}/{TMP_DIR}"
        return f"{self.url}{self.topics_dir}/{TMP_DIR}/{self.name}"

    def _partition_columns(self) -> list[str]:
        if self.template is not None:
            return [_DIR]
        if self.partitioner == "time":
            return [name for name, _ in self.path_format]
        if self.partitioner == "field":
            return list(self.fields)
        return []

    def _partition_exprs(self, spark: Any, field: Any = None) -> list[Any]:
        """``field(name)``: a value's field as a string column (default: from the JSON value)."""
        from pyspark.sql import functions as F

        if field is None:
            def field(name: str) -> Any:
                return F.get_json_object("_value", f"$.{name}")
        if self.template is None and self.partitioner == "field":
            return [field(f).alias(f) for f in self.fields]
        if self.template is None and self.partitioner != "time":
            return []
        if self.template is not None and not self.template.uses_time:
            return [self.template.column(None, self._header).alias(_DIR)]
        if self.extractor == "wallclock":
            ts = F.current_timestamp()
        elif self.extractor == "recordfield":
            raw = field(self.ts_field)
            ts = F.coalesce(F.timestamp_millis(raw.try_cast("long")), F.try_to_timestamp(raw))
        elif self.extractor == "header":
            millis = self._header(self.ts_header).try_cast("long")
            reason = F.format_string("%s-%d@%d: no header %s with the time in epoch ms, which timestamp.extractor="
                                     "Header needs", "topic", "partition", "offset", F.lit(self.ts_header))
            ts = F.when(millis.isNotNull(), F.timestamp_millis(millis)).otherwise(F.raise_error(reason))
        else:
            ts = F.col("timestamp")
        session_tz = spark.conf.get("spark.sql.session.timeZone")
        # date_format formats in the session's zone: shift the instant only when the connector's zone differs
        local = ts if session_tz == self.timezone else F.from_utc_timestamp(F.to_utc_timestamp(ts, session_tz),
                                                                             self.timezone)
        if self.round_ms:
            # down to a multiple of round_ms since local midnight, as Flume's hdfs.round does for its unit
            midnight = F.date_trunc("day", local)
            since = F.unix_millis(local) - F.unix_millis(midnight)
            local = F.timestamp_millis(F.unix_millis(midnight) + F.floor(since / self.round_ms) * self.round_ms)
        if self.template is not None:
            return [self.template.column(local, self._header).alias(_DIR)]
        return [F.date_format(local, pattern).alias(name) for name, pattern in self.path_format]

    @staticmethod
    def _header(name: str) -> Column:
        """The value of the record's (last) header ``name`` as text, or null."""
        from pyspark.sql import functions as F

        values = F.filter("headers", lambda h: h["key"] == F.lit(name))
        return F.when(F.size(values) > 0, F.element_at(values, -1)["value"].cast("string"))

    def _batch_schema(self, spark: Any, shaped: Any) -> Any:
        from pyspark.sql.types import StructType

        if self.value_schema:
            return StructType.fromDDL(self.value_schema)
        jvm = spark._jvm
        strings = getattr(shaped.select("_value")._jdf, "as")(jvm.org.apache.spark.sql.Encoders.STRING())
        inferred = StructType.fromJson(__import__("json").loads(
            spark._jsparkSession.read().json(strings).schema().json()))
        inferred = StructType([f for f in inferred.fields if f.name != "_corrupt_record"])
        self._schema = _merge(self._schema, inferred)
        return self._schema

    def _commit(self, tmp: str, batch_id: int, ranges: Mapping[tuple[str, int], tuple[int, int]]) -> int:
        """Rename each file Spark wrote for the batch to its final name (with its topic-partition's offset range in
        ``ranges``); names already there were committed by an earlier run of the same batch. Returns how many
        files this call committed."""
        root = self._path(tmp)
        if not self._fs.exists(root):
            return 0
        prefix = root.toUri().getPath().rstrip("/") + "/"
        moves: dict[str, str] = {}
        files = self._fs.listFiles(root, True)
        while files.hasNext():
            path = files.next().getPath()
            name = path.getName()
            if name.startswith(("_", ".")):
                continue
            rel = path.toUri().getPath()[len(prefix):]
            target = self._final_path(rel, ranges, batch_id)
            if target in moves:
                raise ConnectException(f"Spark wrote two files for {target} in batch {batch_id}; "
                                       "is spark.sql.files.maxRecordsPerFile set?")
            moves[target] = path.toString()
        by_folder: dict[str, list[tuple[str, str]]] = {}
        for target, source in sorted(moves.items()):
            by_folder.setdefault(target.rsplit("/", 1)[0], []).append((target, source))
        # Each rename is a name-node round trip, and the name node serves them concurrently: the folders' renames
        # go side by side instead of one after another (the order within a folder is kept).
        workers = min(_COMMIT_THREADS, len(by_folder))
        if workers <= 1:
            committed = sum(self._commit_folder(batch_id, group) for group in by_folder.values())
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix=f"{self.name}-commit") as pool:
                committed = sum(pool.map(lambda group: self._commit_folder(batch_id, group), by_folder.values()))
        self._fs.delete(root, True)
        if committed:
            log.info("%s: batch %d committed %d file(s) to %s%s", self.name, batch_id, committed, self.url,
                     self.topics_dir)
        return committed

    def _commit_folder(self, batch_id: int, moves: list[tuple[str, str]]) -> int:
        """Rename the files of one final folder (``(target, source)`` pairs); returns how many this call renamed."""
        self._fs.mkdirs(self._path(moves[0][0]).getParent())
        committed = 0
        for target, source in moves:
            if not self._fs.rename(self._path(source), self._path(target)):
                if self._fs.exists(self._path(target)):  # an earlier, interrupted run of this batch got there first
                    self._fs.delete(self._path(source), False)
                    continue
                raise ConnectException(f"Could not rename {source} to {target} in HDFS at {self.url} "
                                       f"(batch {batch_id})")
            committed += 1
        return committed

    def _final_path(self, rel: str, ranges: Mapping[tuple[str, int], tuple[int, int]], batch_id: int) -> str:
        """``topic=T/partition=P/<folders>/part-…`` -> ``<topics.dir>/T/<folders>/T+P+S+E.ext``, S..E being
        the offset range of T-P in the batch."""
        parts = rel.split("/")
        dirs = parts[:-1]
        topic = _unescape(dirs[0].split("=", 1)[1])
        partition = int(dirs[1].split("=", 1)[1])
        if (topic, partition) not in ranges:
            raise ConnectException(f"Batch {batch_id} wrote records of {topic}-{partition}, which has no offset "
                                   "range in the batch")
        start, end = ranges[(topic, partition)]
        name = f"{self.prefix}{topic}+{partition}+{start:0{self.pad}d}+{end:0{self.pad}d}{self.suffix}"
        if self.template is not None:
            folder = _unescape(dirs[2].split("=", 1)[1]).rstrip("/")
            return f"{self.url}{folder}/{name}"
        folders = dirs[2:] if self.partitioner != "default" else [dirs[1]]
        return "/".join([f"{self.url}{self.topics_dir}", topic, *folders, name])


def _escape(text: str) -> str:
    """A folder name's value as Spark escapes partition values (%XX for anything but letters, digits, - _ .)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode()), text)


def _unescape(text: str) -> str:
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def _merge(known: Any, new: Any) -> Any:
    """Union of two top-level schemas; a field whose type changed becomes the wider numeric type or a string."""
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    if known is None:
        return new
    fields = {f.name: f for f in known.fields}
    order = [f.name for f in known.fields]
    for f in new.fields:
        old = fields.get(f.name)
        if old is None:
            fields[f.name] = f
            order.append(f.name)
        elif old.dataType != f.dataType:
            numeric = {LongType(), DoubleType()}
            wider = DoubleType() if {old.dataType, f.dataType} <= numeric else StringType()
            fields[f.name] = StructField(f.name, wider, True)
    return StructType([fields[n] for n in order])


def _complete_kafka_offsets(settings: Mapping[str, str], offsets: dict[str, dict[str, int]]) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({k: v for k, v in settings.items()})
    out: dict[str, Any] = {}
    for topic, parts in offsets.items():
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        count = len(md.partitions) if md is not None else 0
        out[topic] = {str(p): parts.get(str(p), -2) for p in range(count)} or parts
    return out


def _java_message(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return str(java.toString())
        except Exception:
            pass
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
