"""PlannedLogQuery: a sink's micro-batches over the embedded log, planned by the task and kept as Spark keeps them.

A Structured Streaming query on the ``headrace-log`` Python source waits one to two seconds for Spark's
planner process (a new Python interpreter per query) before its first batch, and a Spark cluster cannot run
it anyway (its executors cannot read this worker's disk). So on the embedded log the task plans the batches
itself, in its own process (``LogBatchPlanner``), and runs each as a batch job (``read_ranges``): the same
ranges the source would plan, one Spark partition per topic-partition.

Exactly once is kept the way Spark keeps it, in the same checkpoint files: batch N's end offsets are
written to ``offsets/N`` before the batch runs, ``commits/N`` after the sink's ``write_batch`` returns, and
a start that finds a planned batch without its commit runs that batch again over the same range. The sinks
name what they write after those ranges, so a batch run twice lands once.

The object answers what the task asks of a Spark query (``awaitTermination``, ``stop``, ``lastProgress``,
``recentProgress``), with progress reports of the same shape, so pause, stop, failure and status work as
for a query on Kafka.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from connect.api import ConnectException

__all__ = ["PlannedBatchError", "PlannedLogQuery"]

log = logging.getLogger(__name__)

# how often an idle query without a trigger interval looks for records (Spark's own polling delay)
_IDLE_POLL_S = 0.01
_RECENT_REPORTS = 100
# how long stop waits for a cancelled batch to end (Spark's spark.sql.streaming.stopTimeout in the sinks' session)
_STOP_TIMEOUT_S = 60


class PlannedBatchError(ConnectException):
    """A batch failed; the query stopped (the task goes FAILED with this as its trace)."""


class PlannedLogQuery:
    """Runs micro-batches in a thread of its own until stopped or a batch fails.

    ``task`` is the SparkSinkTask: its checkpoint helpers (offset and commit logs) and ``_on_batch``.
    ``position`` is where the query stands: the end of the last batch in the checkpoint, or where a new
    query starts.
    """

    def __init__(self, task: Any, spark: Any, planner: Any, read: Callable[[Any, Any], tuple[Any, Callable[[], int]]],
                 trigger_interval_ms: int, name: str) -> None:
        self.id = str(uuid.uuid4())
        self.name = name
        self._task = task
        self._spark = spark
        self._planner = planner
        self._read = read  # (start, end) -> (the batch's DataFrame, the rows read once it ran)
        self._interval_s = trigger_interval_ms / 1000
        self._stopping = threading.Event()
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._reports: list[dict[str, Any]] = []
        self._reports_lock = threading.Lock()
        self._last_report_at: float | None = None
        self._job_group = f"headrace-{name}-{self.id}"
        self._thread = threading.Thread(target=self._run, name=f"spark-batches-{name}", daemon=True)

    # --- what the task asks of a query -----------------------------------------------------------------
    def start(self) -> PlannedLogQuery:
        self._thread.start()
        return self

    def awaitTermination(self, timeout: float) -> bool:  # noqa: N802 (the name of Spark's query method)
        """True once the query ended; raises the batch's error if one failed."""
        self._done.wait(timeout)
        if self._error is not None:
            raise self._error
        return self._done.is_set()

    def stop(self) -> None:
        """Stops between batches, cancelling a batch under way (it runs again from the checkpoint later)."""
        self._stopping.set()
        if self._thread.is_alive():
            try:
                self._spark.sparkContext.cancelJobGroup(self._job_group)
            except Exception:  # the session may be stopping too
                log.debug("%s: cancelling the running batch failed", self.name, exc_info=True)
            self._thread.join(_STOP_TIMEOUT_S)
            if self._thread.is_alive():
                log.warning("%s: the batch under way did not stop within %d s; leaving it", self.name,
                            _STOP_TIMEOUT_S)

    @property
    def lastProgress(self) -> dict[str, Any] | None:  # noqa: N802
        with self._reports_lock:
            return self._reports[-1] if self._reports else None

    @property
    def recentProgress(self) -> list[dict[str, Any]]:  # noqa: N802
        with self._reports_lock:
            return list(self._reports)

    # --- the batches ---------------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._spark.sparkContext.setJobGroup(self._job_group, f"Headrace sink {self.name}", True)
            batch_id, position = self._resume()
            while not self._stopping.is_set():
                triggered = time.monotonic()
                start, end = self._planner.next_batch(position)
                if end != start:
                    self._run_batch(batch_id, start, end, triggered)
                    batch_id, position = batch_id + 1, end
                if self._interval_s > 0:
                    self._stopping.wait(max(0.0, triggered + self._interval_s - time.monotonic()))
                elif end == start:
                    self._stopping.wait(_IDLE_POLL_S)
        except BaseException as exc:
            if not self._stopping.is_set():
                if isinstance(exc, ConnectException):
                    self._error = exc
                else:
                    self._error = PlannedBatchError(f"The Spark batch of connector {self.name} failed: "
                                                    f"{_message(exc)}")
                    self._error.__cause__ = exc
                log.error("%s: %s", self.name, self._error)
        finally:
            self._planner.close()
            self._done.set()

    def _resume(self) -> tuple[int, dict[str, dict[str, int]]]:
        """The next batch id and where it starts; a batch planned but not committed before runs again first."""
        task, spark = self._task, self._spark
        planned = task.last_batch_in(spark, "offsets")
        if planned is None:
            return 0, self._offsets(-1)
        end = self._offsets(planned)
        committed = task.last_batch_in(spark, "commits")
        if committed is None or committed < planned:
            start = self._offsets(planned - 1)
            log.info("%s: batch %d was planned but not committed; running it again over the same offsets",
                     self.name, planned)
            self._run_batch(planned, start, end, time.monotonic(), replay=True)
        return planned + 1, end

    def _offsets(self, batch_id: int) -> dict[str, dict[str, int]]:
        text = self._task.read_offset_log(batch_id, self._spark)
        if not text:
            where = "the starting offsets" if batch_id < 0 else f"offsets/{batch_id}"
            raise ConnectException(f"Connector {self.name}: {where} of the checkpoint {self._task.checkpoint} "
                                   "cannot be read; delete the checkpoint to start over")
        return {t: {str(p): int(o) for p, o in parts.items()} for t, parts in json.loads(text).items()}

    def _run_batch(self, batch_id: int, start: dict[str, dict[str, int]], end: dict[str, dict[str, int]],
                   triggered: float, replay: bool = False) -> None:
        task = self._task
        entry = json.dumps(end, sort_keys=True, separators=(",", ":"))
        if not replay:
            # the write-ahead entry: what batch batch_id covers, before any of it is written
            metadata = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": int(time.time() * 1000), "conf": {}})
            task.write_checkpoint_file(f"offsets/{batch_id}", f"v1\n{metadata}\n{entry}")
            task.remember_offset_log(batch_id, entry)
        df, rows_read = self._read(start, end)
        planned = time.monotonic()
        task._on_batch(df, batch_id)
        written = time.monotonic()
        task.write_checkpoint_file(f"commits/{batch_id}", task.commit_log_entry)
        done = time.monotonic()
        self._report(batch_id, rows_read(), start, end, triggered, planned, written, done)

    def _report(self, batch_id: int, rows: int, start: Any, end: Any, triggered: float, planned: float,
                written: float, done: float) -> None:
        """A progress report in the shape of Spark's StreamingQueryProgress, as the task reads those."""
        took = max(done - triggered, 1e-6)
        since = done - self._last_report_at if self._last_report_at is not None else took
        self._last_report_at = done
        report = {
            "id": self.id, "name": self.name, "batchId": batch_id, "numInputRows": rows,
            "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "inputRowsPerSecond": rows / max(since, 1e-6), "processedRowsPerSecond": rows / took,
            "durationMs": {"triggerExecution": round(took * 1000), "latestOffset": round((planned - triggered) * 1000),
                           "addBatch": round((written - planned) * 1000),
                           "commitOffsets": round((done - written) * 1000)},
            "sources": [{"description": "headrace-log (batches planned by the task)", "startOffset": start,
                         "endOffset": end, "latestOffset": end, "numInputRows": rows}],
        }
        with self._reports_lock:
            self._reports.append(report)
            del self._reports[:-_RECENT_REPORTS]


def _message(exc: BaseException) -> str:
    return str(getattr(exc, "desc", None) or exc).strip() or type(exc).__name__
