"""SparkSinkTask: one Structured Streaming query per connector, run, paused and reported like a Connect task.

``run`` starts the query (``foreachBatch`` into the sink's ``write_batch``)
and watches it: a query that fails raises, with Spark's error, so the task
goes FAILED with it as its trace. ``pause`` stops the query (its checkpoint
keeps its place) and ``resume`` starts it again from there. Progress comes
from the query's progress reports: records/s, the last batch, records moved
since the task started, and the lag behind the log's end.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from connect.api import AbstractConfig, ConfigDef, ConnectException, StreamingSinkTask
from connect.api.version import distribution_version
from spark_sinks.config import (
    CHECKPOINT_LOCATION,
    MAX_OFFSETS_PER_TRIGGER,
    STARTING_OFFSETS,
    TRIGGER_INTERVAL_MS,
    topics_of,
)

__all__ = ["SparkSinkTask"]

log = logging.getLogger(__name__)

_POLL_SECONDS = 0.5
# how often a running query's progress is read: a finished batch shows in status (and in a benchmark's clock)
# this soon; the lag behind the log's end, which opens the log, is read at most every _LAG_SECONDS
_WATCH_SECONDS = 0.1
_LAG_SECONDS = 1.0
# an entry of a query's commit log, as Spark writes it for a query without watermarks
_COMMIT_LOG_ENTRY = 'v1\n{"nextBatchWatermarkMs":0}'
# kept in the checkpoint folder by the task: the offsets a query on the embedded log started from
INITIAL_OFFSETS_FILE = "headrace-starting-offsets.json"


class SparkSinkTask(StreamingSinkTask):
    """Base of the Spark sink tasks; a subclass says how to write one micro-batch."""

    #: shown in logs and errors: "HDFS", "Elasticsearch/OpenSearch"
    target = "the sink"

    def version(self) -> str:
        return distribution_version(__name__)

    # --- to implement ---------------------------------------------------------------------------------
    def config_def(self) -> ConfigDef:
        raise NotImplementedError

    def default_checkpoint(self) -> str:
        raise NotImplementedError

    def prepare(self, spark: Any) -> None:  # optional hook
        """Called once the Spark session is up, before the first query starts (connect, check, recover)."""

    def write_batch(self, df: Any, batch_id: int) -> None:
        raise NotImplementedError

    def needs_headers(self) -> bool:
        """Whether ``write_batch`` reads the records' headers (for the dead-letter topic, say); if not, the source
        leaves them out."""
        return True

    def recovered_starting_offsets(self, spark: Any) -> str | None:
        """Offsets for a query without a checkpoint, when the sink can tell what it already holds."""
        return None

    # --- StreamingSinkTask ------------------------------------------------------------------------------
    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)
        self.config = AbstractConfig(self.config_def(), props)
        self.name = str(props.get("name") or "spark-sink")
        self.query_name = f"headrace-{self.name}"
        self._stopping = threading.Event()
        self._paused = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._query: Any = None
        self._spark: Any = None
        self._counters: dict[str, int] = {}
        self._records_total = 0
        self._last_batch: int | None = None
        # every micro-batch Spark completed (empty ones too), for the headrace_spark_sink_* series
        self._seen_batch: int | None = None
        self._batches = 0
        self._batch_ms_sum = 0
        self._last_progress: dict[str, Any] | None = None
        self._started = time.time()
        self._progress: dict[str, Any] = {"query": "STARTING"}
        self._lag_cache: tuple[Any, float, int | None] | None = None  # (batch id, when, lag)
        # offset log entries read so far (an entry never changes once Spark wrote it): batch N's start is batch
        # N-1's end, so each batch reads one entry, not two
        self._offset_log: dict[int, str] = {}
        self.checkpoint = str(self.config.get(CHECKPOINT_LOCATION) or "").strip() or self.default_checkpoint()
        self._refuse_embedded_log_on_a_cluster(str(self.props.get("spark.master") or self.context.worker_settings(
            "spark.").get("spark.master") or "").strip())

    def _refuse_embedded_log_on_a_cluster(self, master: str) -> None:
        """Executors of a cluster run on other hosts and read the topics themselves: an embedded log is on
        this worker's disk only, so a query on a cluster would find nothing there (or another host's files)."""
        if master and not master.startswith("local") and "embedded.log.dir" in self.context.log_settings():
            raise ConnectException(
                f"{self.name}: spark.master={master} runs executors on other hosts, which cannot read this worker's "
                "embedded log; run the worker on Kafka (bootstrap.servers) to use a Spark cluster, or use "
                "spark.master=local[*]")

    def run(self) -> None:
        from spark_sinks.session import spark_session

        spark = spark_session(self.props, self.context.worker_settings("spark."))
        self._spark = spark
        self._refuse_embedded_log_on_a_cluster(str(spark.sparkContext.master))  # spark-submit's --master, say
        if self._stopping.is_set():
            return
        self.prepare(spark)
        try:
            while not self._stopping.is_set():
                if self._paused.is_set():
                    if self._query is not None:
                        self._stop_query()
                        self._set_progress_state("PAUSED")
                    self._wake.wait(_POLL_SECONDS)
                    self._wake.clear()
                    continue
                if self._query is None:
                    self._query = self._start_query(spark)
                self._watch(self._query)
        except Exception as exc:
            if not self._stopping.is_set():
                raise
            # asked to stop, and Spark went away meanwhile (its JVM got the same signal, say)
            log.warning("%s: the Spark query ended while stopping: %s", self.name, exc)
        finally:
            self._stop_query()
            self._set_progress_state("STOPPED")

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    def pause(self) -> None:
        self._paused.set()
        self._wake.set()

    def resume(self) -> None:
        self._paused.clear()
        self._wake.set()

    def progress(self) -> Mapping[str, Any]:
        with self._lock:
            return dict(self._progress)

    # --- the query ----------------------------------------------------------------------------------------
    def _start_query(self, spark: Any) -> Any:
        for q in spark.streams.active:  # a query of an earlier instance of this task that did not stop in time
            if q.name == self.query_name:
                log.warning("%s: stopping a leftover Spark query %s", self.name, q.id)
                q.stop()
        settings = self.context.log_settings()
        self._offset_log = {}  # kept for one query's run: a checkpoint removed while paused starts over at batch 0
        max_per_trigger = int(self.config.get(MAX_OFFSETS_PER_TRIGGER) or 0)
        interval = int(self.config.get(TRIGGER_INTERVAL_MS) or 0)
        topics, regex = topics_of(self.props)
        if "embedded.log.dir" in settings:
            query = self._start_planned_query(spark, settings, topics, regex, max_per_trigger, interval)
        else:
            query = self._start_streaming_query(spark, settings, max_per_trigger, interval)
        log.info("%s: Spark query %s started (id %s) reading %s into %s, checkpoint %s", self.name,
                 self.query_name, query.id, f"pattern {regex}" if regex else ",".join(topics), self.target,
                 self.checkpoint)
        self._set_progress_state("RUNNING")
        return query

    def _new_query_start(self, spark: Any) -> str:
        """``starting.offsets`` of a query without a checkpoint, or the offsets the sink already holds."""
        recovered = self.recovered_starting_offsets(spark)
        if recovered:
            log.info("%s: no checkpoint at %s; starting from the offsets %s already holds: %s", self.name,
                     self.checkpoint, self.target, recovered)
            return recovered
        return str(self.config.get(STARTING_OFFSETS) or "earliest")

    def _start_streaming_query(self, spark: Any, settings: Mapping[str, str], max_per_trigger: int,
                               interval_ms: int) -> Any:
        """A Structured Streaming query on Spark's Kafka source (a restarted one resumes from its checkpoint)."""
        from spark_sinks.source import read_stream

        if self._checkpoint_exists(spark):
            self._finish_planned_batch(spark)
            starting = str(self.config.get(STARTING_OFFSETS) or "earliest")  # unused: the checkpoint decides
        else:
            starting = self._new_query_start(spark)
        df = read_stream(spark, self.props, settings, starting, max_per_trigger, headers=self.needs_headers())
        writer = (df.writeStream.queryName(self.query_name)
                  .option("checkpointLocation", self.checkpoint)
                  .foreachBatch(self._on_batch))
        if interval_ms > 0:
            writer = writer.trigger(processingTime=f"{interval_ms} milliseconds")
        return writer.start()

    def _start_planned_query(self, spark: Any, settings: Mapping[str, str], topics: list[str], regex: str | None,
                             max_per_trigger: int, interval_ms: int) -> Any:
        """The embedded log's batches, planned by this task (see spark_sinks.planned_query)."""
        from spark_sinks.logsource import LogBatchPlanner, RowsByRange, initial_offsets
        from spark_sinks.planned_query import PlannedLogQuery
        from spark_sinks.source import read_log_range

        if not self._checkpoint_exists(spark):
            # Pin what "earliest"/"latest" means now, and keep it with the checkpoint before batch 0 is planned:
            # a replay of batch 0 starts from the same offsets, and the sink can tell its range without a scan.
            starting = json.dumps(initial_offsets(settings, self._new_query_start(spark), topics, regex or ""),
                                  sort_keys=True)
            self.write_checkpoint_file(INITIAL_OFFSETS_FILE, starting, replace=True)
            self._offset_log[-1] = starting
        planner = LogBatchPlanner(settings, topics, regex or "", max_per_trigger)
        headers = self.needs_headers()
        # one accumulator per query, emptied before each batch: PySpark's driver keeps every accumulator it
        # made for as long as the session lives, so one per batch would grow without end
        rows = spark.sparkContext.accumulator({}, RowsByRange())

        def read(start: Any, end: Any) -> tuple[Any, Callable[[], int]]:
            rows.value = {}
            return (read_log_range(spark, settings, start, end, headers, rows),
                    lambda: sum(rows.value.values()))

        return PlannedLogQuery(self, spark, planner, read, interval_ms, self.name).start()

    def _watch(self, query: Any) -> None:
        from pyspark.errors import StreamingQueryException

        try:
            finished = query.awaitTermination(_WATCH_SECONDS)
        except (StreamingQueryException, ConnectException) as exc:  # the latter: a batch planned by this task
            self._query = None
            self._set_progress_state("FAILED")
            if isinstance(exc, ConnectException):
                raise
            raise ConnectException(f"The Spark query of connector {self.name} failed: {_spark_message(exc)}") \
                from exc
        self._update_progress(query)
        if finished:
            self._query = None
            if not (self._stopping.is_set() or self._paused.is_set()):
                raise ConnectException(f"The Spark query of connector {self.name} stopped unexpectedly")

    def _stop_query(self) -> None:
        query, self._query = self._query, None
        if query is None:
            return
        try:
            query.stop()
            log.info("%s: Spark query %s stopped", self.name, self.query_name)
        except Exception:  # the query may already be gone with its session
            log.warning("%s: stopping the Spark query failed", self.name, exc_info=True)
        with contextlib.suppress(Exception):
            self._update_progress(query)

    def _checkpoint_exists(self, spark: Any) -> bool:
        try:
            jvm = spark._jvm
            path = jvm.org.apache.hadoop.fs.Path(self.checkpoint.rstrip("/") + "/offsets")
            fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
            return bool(fs.exists(path))
        except Exception:  # unknown: let Spark decide from the checkpoint itself
            return True

    def last_batch_in(self, spark: Any, log_name: str) -> int | None:
        """The highest batch id in the checkpoint's ``offsets`` or ``commits`` log; None if none or unknown."""
        try:
            jvm = spark._jvm
            folder = jvm.org.apache.hadoop.fs.Path(f"{self.checkpoint.rstrip('/')}/{log_name}")
            fs = folder.getFileSystem(spark._jsc.hadoopConfiguration())
            if not fs.exists(folder):
                return None
            batches = [int(st.getPath().getName()) for st in fs.listStatus(folder)
                       if st.getPath().getName().isdigit()]
        except Exception:  # the callers fall back to what Spark does by itself
            log.debug("%s: could not list the checkpoint's %s log", self.name, log_name, exc_info=True)
            return None
        return max(batches) if batches else None

    def _finish_planned_batch(self, spark: Any) -> None:
        """On Kafka, write a batch the query planned (offset log) but did not commit, outside the streaming query,
        and mark it committed.

        Why: Spark 4.1.1's Kafka source fails a query whose first batch after a start replays such a batch (its
        progress metrics read offsets that only the planning of a new batch sets: SPARK-55271), so after a crash
        mid-batch the query would fail at every start. The batch is read between the same two offset log entries
        the query would use, and ``write_batch`` takes its ranges from those entries too: the files are the ones
        the replay would have written, so exactly once holds.
        """
        settings = self.context.log_settings()
        if not settings.get("bootstrap.servers"):
            return
        planned = self.last_batch_in(spark, "offsets")
        if planned is None:
            return
        committed = self.last_batch_in(spark, "commits")
        if committed is not None and committed >= planned:
            return
        end, before = self.read_offset_log(planned, spark), self.read_offset_log(planned - 1, spark)
        if not end or not before:
            log.warning("%s: batch %d was planned but not committed, and its offsets are not all readable; leaving "
                        "it to Spark", self.name, planned)
            return
        from spark_sinks.source import read_kafka_range

        log.info("%s: writing batch %d (planned before the last stop, not committed) before the query starts",
                 self.name, planned)
        self._on_batch(read_kafka_range(spark, settings, before, end), planned)
        self.write_checkpoint_file(f"commits/{planned}", _COMMIT_LOG_ENTRY)

    def read_offset_log(self, batch_id: int, spark: Any = None) -> str | None:
        """The source offsets (JSON text) that batch ``batch_id`` ends at, from the query's offset log; for
        batch -1, where the query started (kept by the Kafka source, or by this task for the embedded log)."""
        known = self._offset_log.get(batch_id)
        if known is not None:
            return known
        if batch_id < 0:
            if "embedded.log.dir" in self.context.log_settings():
                return self._read_checkpoint_file(INITIAL_OFFSETS_FILE, spark)
            text = self._read_checkpoint_file("sources/0/0", spark)  # Spark's Kafka source: "v1" then the JSON
        else:
            # "v1", the batch metadata, then one line of offsets per source
            text = self._read_checkpoint_file(f"offsets/{batch_id}", spark)
        last = text.splitlines()[-1] if text else ""
        if not last.startswith("{"):
            return None
        self._offset_log = {b: e for b, e in self._offset_log.items() if b >= batch_id - 1}
        self._offset_log[batch_id] = last
        return last

    def _checkpoint_path(self, spark: Any, relative: str) -> tuple[Any, Any]:
        jvm = spark._jvm
        path = jvm.org.apache.hadoop.fs.Path(f"{self.checkpoint.rstrip('/')}/{relative}")
        return path, path.getFileSystem(spark._jsc.hadoopConfiguration())

    def _read_checkpoint_file(self, relative: str, spark: Any = None) -> str | None:
        spark = spark or self._spark
        try:
            path, fs = self._checkpoint_path(spark, relative)
            stream = fs.open(path)  # a missing file raises: one name-node call fewer than asking first
            try:
                data = bytes(spark._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
            finally:
                stream.close()
            return data.decode("utf-8", "replace")
        except Exception:  # the caller falls back to what it can do without
            log.debug("%s: could not read %s of the checkpoint", self.name, relative, exc_info=True)
            return None

    #: an entry of the commit log, as Spark writes it for a query without watermarks
    commit_log_entry = _COMMIT_LOG_ENTRY

    def remember_offset_log(self, batch_id: int, entry: str) -> None:
        """``entry`` was just written as batch ``batch_id``'s offsets: ``read_offset_log`` need not read it."""
        self._offset_log = {b: e for b, e in self._offset_log.items() if b >= batch_id - 1}
        self._offset_log[batch_id] = entry

    def write_checkpoint_file(self, relative: str, text: str, replace: bool = False) -> None:
        """Written beside its place and renamed into it, as Spark writes its checkpoint logs: a crash leaves the
        whole file or none of it. Raises if it cannot be written (what follows must not run without it), and if
        the file exists already unless ``replace``."""
        path, fs = self._checkpoint_path(self._spark, relative)
        tmp = path.getParent().suffix(f"/.{path.getName()}.tmp")
        out = fs.create(tmp, True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()
        if replace:
            fs.delete(path, False)  # HDFS's rename does not replace a file
        if not fs.rename(tmp, path):
            raise ConnectException(f"Connector {self.name}: could not write {relative} in the checkpoint "
                                   f"{self.checkpoint} (it exists already, or the folder is not writable)")

    def _on_batch(self, df: Any, batch_id: int) -> None:
        started = time.monotonic()
        self.write_batch(df, batch_id)
        log.debug("%s: batch %d written in %.0f ms", self.name, batch_id, (time.monotonic() - started) * 1000)

    # --- values in Confluent's Avro wire format ------------------------------------------------------------------
    def decode_avro(self, df: Any, avro: Any) -> Any:
        """The non-null values of ``df`` decoded by ``avro`` (an ``AvroValues``) as the struct column ``_v``, or
        None when there are none; values not in the wire format follow errors.tolerance: skipped to the
        dead-letter topic, or the task fails naming the first one."""
        from pyspark.sql import functions as F

        from spark_sinks.avro_values import AvroValues

        base = df.where(F.col("value").isNotNull())
        framed = AvroValues.framed()
        bad = base.where(~framed)
        if avro.tolerate:
            self.dead_letter(bad, "The value does not start with the Avro magic byte 0x00 and a schema id")
        else:
            first = bad.select("topic", "partition", "offset").limit(1).collect()
            if first:
                row = first[0]
                raise ConnectException(f"{row['topic']}-{row['partition']}@{row['offset']}: the value does not "
                                       "start with the Avro magic byte 0x00 and a schema id (value.converter is "
                                       "the AvroConverter)")
        return avro.decode(base.where(framed))

    def dead_letter(self, bad: Any, reason: str) -> None:
        """The rows of ``bad`` skipped for ``reason``: logged, and sent to the dead-letter topic if there is one
        (durable before Spark commits the batch)."""
        rows = bad.select("topic", "partition", "offset", "key", "value", "headers").collect()
        if not rows:
            return
        dlq = self.context.dead_letter_queue()
        for row in rows:
            log.warning("%s: skipping %s-%d@%d: %s", self.name, row["topic"], row["partition"], row["offset"], reason)
            if dlq is not None:
                dlq.report(row["topic"], row["partition"], row["offset"], row["key"], row["value"],
                           [(h["key"], h["value"]) for h in row["headers"] or ()], reason)
        if dlq is not None:
            dlq.flush(30.0)
        self.count("records_dead_lettered", len(rows))

    # --- progress ---------------------------------------------------------------------------------------------
    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counters[name] = self._counters.get(name, 0) + n

    def _set_progress_state(self, state: str) -> None:
        with self._lock:
            self._progress["query"] = state

    def _update_progress(self, query: Any) -> None:
        latest = query.lastProgress
        if latest is None:
            reports: list[dict[str, Any]] = []
        else:
            reports = [_as_dict(latest)]
            seen = self._seen_batch if self._seen_batch is not None else -1
            if int(reports[0].get("batchId", 0)) > seen + 1:  # batches went by between two looks: take them all
                reports = [_as_dict(p) for p in (query.recentProgress or [])]
        for p in reports:
            batch, rows = p.get("batchId"), int(p.get("numInputRows") or 0)
            # an idle trigger reports the same batch id again: only a new id is a completed batch
            if batch is not None and (self._seen_batch is None or batch > self._seen_batch):
                self._seen_batch = batch
                self._batches += 1
                self._batch_ms_sum += _trigger_ms(p)
            if rows and batch is not None and (self._last_batch is None or batch > self._last_batch):
                self._last_batch = batch
                self._records_total += rows
                self._last_progress = p
        last = self._last_progress
        out: dict[str, Any] = {"query": "PAUSED" if self._paused.is_set() else "RUNNING",
                               "records_total": self._records_total, "batches_completed": self._batches,
                               "batch_duration_ms_sum": self._batch_ms_sum}
        if last is not None:
            out.update({
                "records_per_sec": round(float(last.get("processedRowsPerSecond") or 0.0), 1),
                "input_records_per_sec": round(float(last.get("inputRowsPerSecond") or 0.0), 1),
                "last_batch_id": last.get("batchId"),
                "last_batch_records": int(last.get("numInputRows") or 0),
                "last_batch_ms": _trigger_ms(last),
                "last_batch_time": last.get("timestamp"),
            })
            lag = self._lag_now(last)
            if lag is not None:
                out["lag"] = lag
        with self._lock:
            out.update(self._counters)
            self._progress = out

    def _lag_now(self, last: Mapping[str, Any]) -> int | None:
        """The lag, recomputed on a new batch or once _LAG_SECONDS have passed, else the one last computed."""
        now = time.monotonic()
        key = last.get("batchId")
        cached = self._lag_cache
        if cached is not None and cached[0] == key and now - cached[1] < _LAG_SECONDS:
            return cached[2]
        lag = self._lag(last)
        self._lag_cache = (key, now, lag)
        return lag

    def _lag(self, last: Mapping[str, Any]) -> int | None:
        sources = last.get("sources") or []
        if not sources:
            return None
        end = _offsets(sources[0].get("endOffset"))
        latest = _offsets(sources[0].get("latestOffset"))
        settings = self.context.log_settings()
        if "embedded.log.dir" in settings:
            from spark_sinks.logsource import end_offsets

            topics, regex = topics_of(self.props)
            with contextlib.suppress(Exception):
                latest = end_offsets(settings, topics, regex)
        if not latest or end is None:
            return None
        return sum(max(0, int(o) - int(end.get(t, {}).get(p, 0))) for t, parts in latest.items()
                   for p, o in parts.items())


def _trigger_ms(progress: Mapping[str, Any]) -> int:
    """How long the micro-batch took, planning and writing included (Spark's ``durationMs.triggerExecution``)."""
    return int((progress.get("durationMs") or {}).get("triggerExecution") or 0)


def _as_dict(progress: Any) -> dict[str, Any]:
    text = getattr(progress, "json", None)
    if isinstance(text, str):
        return json.loads(text)
    return dict(progress)


def _offsets(value: Any) -> dict[str, dict[str, int]] | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def _spark_message(exc: BaseException) -> str:
    desc = getattr(exc, "desc", None) or getattr(exc, "getMessage", lambda: None)() or str(exc)
    return str(desc).strip()
