"""PlannedLogQuery's checkpoint protocol, with a scripted log and sink (no Spark session), and LogBatchPlanner on
a real embedded log."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from connect.api import ConnectException
from connect.log.api import NewTopic
from connect.log.embedded.backend import EmbeddedBackend
from spark_sinks.logsource import LogBatchPlanner, end_offsets
from spark_sinks.planned_query import PlannedBatchError, PlannedLogQuery

# no Spark session, broker or service of the session's: beside the services group
pytestmark = pytest.mark.beside_services

COMMIT = 'v1\n{"nextBatchWatermarkMs":0}'


class _SparkContext:
    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.group: str | None = None

    def setJobGroup(self, group: str, description: str, interrupt: bool) -> None:  # noqa: N802
        self.group = group

    def cancelJobGroup(self, group: str) -> None:  # noqa: N802
        self.cancelled.append(group)


class _Spark:
    def __init__(self) -> None:
        self.sparkContext = _SparkContext()


class _Task:
    """The checkpoint as files in a dict, and a sink that records what it was given, in order."""

    commit_log_entry = COMMIT
    checkpoint = "/checkpoint"

    def __init__(self, files: dict[str, str] | None = None, fail_batch: int | None = None) -> None:
        self.files = dict(files or {})
        self.events: list[tuple[str, Any]] = []
        self.fail_batch = fail_batch
        self.block = threading.Event()
        self.block.set()

    def last_batch_in(self, spark: Any, log_name: str) -> int | None:
        ids = [int(k.split("/")[1]) for k in self.files if k.startswith(f"{log_name}/")]
        return max(ids) if ids else None

    def read_offset_log(self, batch_id: int, spark: Any = None) -> str | None:
        text = self.files.get("initial" if batch_id < 0 else f"offsets/{batch_id}")
        last = text.splitlines()[-1] if text else ""
        return last if last.startswith("{") else None

    def write_checkpoint_file(self, relative: str, text: str, replace: bool = False) -> None:
        assert relative not in self.files, f"{relative} written twice"
        self.files[relative] = text
        self.events.append(("write", relative))

    def remember_offset_log(self, batch_id: int, entry: str) -> None:
        self.events.append(("remember", batch_id))

    def _on_batch(self, df: tuple[dict, dict], batch_id: int) -> None:
        self.block.wait(10)
        if batch_id == self.fail_batch:
            raise RuntimeError("the target refused the batch")
        self.events.append(("batch", (batch_id, df)))


class _Planner:
    """A log whose partition 0 of topic t ends where ``ends`` says, one end per call (the last one repeats)."""

    def __init__(self, *ends: int) -> None:
        self.ends = list(ends)
        self.closed = False

    def next_batch(self, position: dict) -> tuple[dict, dict]:
        end = self.ends.pop(0) if len(self.ends) > 1 else self.ends[0]
        start = {"t": {"0": position.get("t", {}).get("0", 0)}}
        return start, {"t": {"0": max(end, start["t"]["0"])}}

    def close(self) -> None:
        self.closed = True


def _read(start: dict, end: dict) -> tuple[tuple[dict, dict], Any]:
    return (start, end), lambda: end["t"]["0"] - start["t"]["0"]


def _query(task: _Task, planner: _Planner, interval_ms: int = 0) -> PlannedLogQuery:
    return PlannedLogQuery(task, _Spark(), planner, _read, interval_ms, "c1")


def _wait_for(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _batches(task: _Task) -> list[tuple[int, tuple[dict, dict]]]:
    return [e[1] for e in task.events if e[0] == "batch"]


def test_a_new_query_writes_each_batchs_offsets_before_it_and_its_commit_after() -> None:
    task = _Task({"initial": '{"t":{"0":0}}'})
    query = _query(task, _Planner(5, 5, 8)).start()
    _wait_for(lambda: len(_batches(task)) == 2)
    query.stop()
    assert _batches(task) == [(0, ({"t": {"0": 0}}, {"t": {"0": 5}})), (1, ({"t": {"0": 5}}, {"t": {"0": 8}}))]
    writes = [e for e in task.events if e[0] in ("write", "batch")]
    assert writes[:3] == [("write", "offsets/0"), ("batch", _batches(task)[0]), ("write", "commits/0")]
    assert task.files["offsets/1"].splitlines()[0] == "v1"
    assert json.loads(task.files["offsets/1"].splitlines()[-1]) == {"t": {"0": 8}}
    assert task.files["commits/1"] == COMMIT
    # no batch while nothing new arrived
    assert "offsets/2" not in task.files
    last = query.lastProgress
    assert last is not None and last["batchId"] == 1 and last["numInputRows"] == 3
    assert last["sources"][0]["endOffset"] == {"t": {"0": 8}}
    assert [p["batchId"] for p in query.recentProgress] == [0, 1]


def test_a_batch_planned_but_not_committed_runs_again_over_the_same_offsets() -> None:
    task = _Task({"initial": '{"t":{"0":0}}', "offsets/0": 'v1\n{}\n{"t":{"0":4}}', "commits/0": COMMIT,
                  "offsets/1": 'v1\n{}\n{"t":{"0":9}}'})
    query = _query(task, _Planner(12)).start()
    _wait_for(lambda: len(_batches(task)) == 2)
    query.stop()
    assert _batches(task) == [(1, ({"t": {"0": 4}}, {"t": {"0": 9}})), (2, ({"t": {"0": 9}}, {"t": {"0": 12}}))]
    assert task.files["commits/1"] == COMMIT  # the replay does not write offsets/1 again (asserted by _Task)
    assert json.loads(task.files["offsets/2"].splitlines()[-1]) == {"t": {"0": 12}}


def test_a_committed_checkpoint_resumes_after_its_last_batch() -> None:
    task = _Task({"initial": '{"t":{"0":0}}', "offsets/0": 'v1\n{}\n{"t":{"0":4}}', "commits/0": COMMIT})
    query = _query(task, _Planner(4, 6)).start()
    _wait_for(lambda: len(_batches(task)) == 1)
    query.stop()
    assert _batches(task) == [(1, ({"t": {"0": 4}}, {"t": {"0": 6}}))]


def test_a_failed_batch_ends_the_query_with_the_connector_and_reason_and_leaves_it_uncommitted() -> None:
    task = _Task({"initial": '{"t":{"0":0}}'}, fail_batch=0)
    planner = _Planner(3)
    query = _query(task, planner).start()
    with pytest.raises(PlannedBatchError, match="connector c1 failed: the target refused the batch"):
        _wait_for(lambda: query.awaitTermination(0.05))
    assert "offsets/0" in task.files and "commits/0" not in task.files
    assert planner.closed


def test_an_unreadable_offset_log_entry_is_named() -> None:
    task = _Task({"initial": '{"t":{"0":0}}', "offsets/0": "v1\n"})
    query = _query(task, _Planner(3)).start()
    with pytest.raises(ConnectException, match="offsets/0 of the checkpoint /checkpoint cannot be read"):
        _wait_for(lambda: query.awaitTermination(0.05))


def test_stop_cancels_the_batch_under_way_and_ends_the_thread() -> None:
    task = _Task({"initial": '{"t":{"0":0}}'})
    task.block.clear()
    query = _query(task, _Planner(3))
    spark = query._spark
    query.start()
    _wait_for(lambda: "offsets/0" in task.files)
    stopper = threading.Thread(target=query.stop)
    stopper.start()
    _wait_for(lambda: spark.sparkContext.cancelled == [spark.sparkContext.group])
    task.block.set()  # Spark's job ends once cancelled
    stopper.join(5)
    assert not stopper.is_alive()
    assert query.awaitTermination(0) is True


def test_a_trigger_interval_spaces_the_batches() -> None:
    task = _Task({"initial": '{"t":{"0":0}}'})
    query = _query(task, _Planner(1, 2, 3, 4), interval_ms=200).start()
    time.sleep(0.5)
    query.stop()
    assert 2 <= len(_batches(task)) <= 3


@pytest.fixture()
def log_dir(tmp_path: Path) -> Path:
    backend = EmbeddedBackend(str(tmp_path))
    backend.admin().create_topic(NewTopic("a", 2, 1))
    producer = backend.producer()
    producer.send_batch("a", 0, [b"x"] * 6)
    producer.send_batch("a", 1, [b"y"] * 2)
    producer.flush(10)
    producer.close()
    backend.close()
    return tmp_path


def test_the_planner_covers_every_partition_to_its_end_and_caps_in_proportion(log_dir: Path) -> None:
    planner = LogBatchPlanner({"embedded.log.dir": str(log_dir)}, ["a"], "", 0)
    try:
        assert planner.next_batch({"a": {"0": 1}}) == ({"a": {"0": 1, "1": 0}}, {"a": {"0": 6, "1": 2}})
        assert planner.next_batch({"a": {"0": 6, "1": 2}}) == ({"a": {"0": 6, "1": 2}}, {"a": {"0": 6, "1": 2}})
        assert end_offsets({"embedded.log.dir": str(log_dir)}, ["a"]) == {"a": {"0": 6, "1": 2}}
    finally:
        planner.close()
    capped = LogBatchPlanner({"embedded.log.dir": str(log_dir)}, [], "a|b", 4)
    try:
        start, end = capped.next_batch({})
        assert start == {"a": {"0": 0, "1": 0}}
        assert end == {"a": {"0": 3, "1": 1}}  # 4 records shared 6:2
    finally:
        capped.close()


def test_rows_read_twice_from_a_range_count_once() -> None:
    from spark_sinks.logsource import RowsByRange

    param = RowsByRange()
    total = param.zero({})
    for update in ({0: 5, 1: 3}, {0: 5}, {1: 3, 2: 7}):  # range 0 and 1 read twice (a second pass over the batch)
        total = param.addInPlace(total, update)
    assert total == {0: 5, 1: 3, 2: 7}
