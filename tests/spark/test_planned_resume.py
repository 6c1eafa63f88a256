"""A checkpoint that Spark's streaming query on the ``headrace-log`` source wrote (as sink tasks on the embedded
log ran before their batches were planned by the task) resumes in the task's own batches: every record once, in
batches of the same size, with nothing read again that the query had committed."""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import pytest

from connect.api import ConfigDef
from spark_sinks.config import spark_sink_def
from spark_sinks.logsource import initial_offsets
from spark_sinks.source import read_stream
from spark_sinks.task import INITIAL_OFFSETS_FILE, SparkSinkTask
from tests.spark.support import InProcessTask, produce_json, wait_until

# on the embedded log with the test process's own Spark session: beside the services group
pytestmark = pytest.mark.beside_services

TOTAL = 1000
PER_BATCH = 400
BATCHES: dict[int, list[tuple[int, int]]] = {}
RUNS: collections.Counter[int] = collections.Counter()  # how often each batch id was written


class _RecordingSinkTask(SparkSinkTask):
    """Keeps each batch's (partition, offset) pairs by batch id: a batch run again replaces what it wrote."""

    target = "a list"

    def config_def(self) -> ConfigDef:
        return spark_sink_def()

    def default_checkpoint(self) -> str:
        return f"{self.context.state_dir()}/checkpoint"

    def needs_headers(self) -> bool:
        return False

    def write_batch(self, df: Any, batch_id: int) -> None:
        _record(df, batch_id)


def _record(df: Any, batch_id: int) -> None:
    RUNS[batch_id] += 1
    BATCHES[batch_id] = sorted((r["partition"], r["offset"]) for r in df.select("partition", "offset").collect())


def _records() -> list[tuple[int, int]]:
    return sorted(pair for rows in BATCHES.values() for pair in rows)


def test_a_checkpoint_of_the_streaming_query_resumes_in_the_tasks_batches(tmp_path: Path, spark: Any) -> None:
    log_dir, state = tmp_path / "data", tmp_path / "state"
    topic = "resume-planned"
    produce_json(log_dir, topic, TOTAL, partitions=2)
    settings = {"embedded.log.dir": str(log_dir)}
    checkpoint = state / "checkpoint"
    checkpoint.mkdir(parents=True)
    # what the task did before: pin the starting offsets beside the checkpoint, run the query on the source
    starting = json.dumps(initial_offsets(settings, "earliest", [topic]), sort_keys=True)
    (checkpoint / INITIAL_OFFSETS_FILE).write_text(starting)
    BATCHES.clear()
    RUNS.clear()
    df = read_stream(spark, {"topics": topic}, settings, starting, PER_BATCH, "initial", "resume-old", headers=False)
    query = (df.writeStream.option("checkpointLocation", str(checkpoint)).trigger(processingTime="200 milliseconds")
             .foreachBatch(_record).start())
    try:
        wait_until(lambda: (checkpoint / "commits" / "0").exists(), 120, interval=0.2, what="the query's batch 0")
    finally:
        query.stop()
    assert len(BATCHES[0]) == PER_BATCH
    before = dict(BATCHES)
    # the query may have committed a batch more before it stopped: the task's own batches read the rest
    committed = {int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}
    left = TOTAL - sum(len(before[b]) for b in committed)

    props = {"name": "resume-planned", "topics": topic, "spark.master": "local[1]", "trigger.interval.ms": "200",
             "max.offsets.per.trigger": str(PER_BATCH), "checkpoint.location": str(checkpoint)}
    with InProcessTask(_RecordingSinkTask, props, log_dir, state) as running:
        wait_until(lambda: len(_records()) >= TOTAL, 120, interval=0.2, what=f"{TOTAL} records")
        # the task's own batches, each row counted once (the count is reset between batches)
        seen_totals: list[Any] = []

        def counted() -> bool:
            progress = running.task.progress()
            seen_totals.append((progress.get("records_total"), progress.get("batches_completed")))
            return progress.get("records_total") == left

        try:
            wait_until(counted, 30, interval=0.1, what=f"records_total {left}")
        except AssertionError as e:
            raise AssertionError(f"{e}; (records_total, batches) last seen {seen_totals[-3:]}, batches and their "
                                 f"rows {[(b, len(r)) for b, r in sorted(BATCHES.items())]}, runs {dict(RUNS)}") from e
    records = _records()
    assert records == sorted(set(records)), "a record was written by two batches"
    assert len(records) == TOTAL
    assert BATCHES[0] == before[0] and RUNS[0] == 1, "the committed batch 0 ran again"
    assert all(len(rows) <= PER_BATCH for rows in BATCHES.values())
    # the task's batches follow the query's in the same offset log
    last = max(BATCHES)
    entry = (checkpoint / "offsets" / str(last)).read_text().splitlines()
    assert entry[0] == "v1" and sum(json.loads(entry[-1])[topic].values()) == TOTAL
    assert (checkpoint / "commits" / str(last)).exists()
