"""connect.testing's task helpers, run against the built-in FileStream tasks and a few tasks of the test's own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

import plugins.file.source as source_module
from connect.api import (
    ConnectException,
    DataException,
    RecordMetadata,
    Schema,
    SinkRecord,
    SinkTask,
    SourceRecord,
    SourceTask,
    TopicPartition,
)
from connect.testing import SinkTaskRun, run_sink_task, run_source_task, sink_records
from plugins.file import FileStreamSinkTask, FileStreamSourceTask


@pytest.fixture(autouse=True)
def short_idle_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    # a FileStreamSource poll that finds no new line waits up to a second; these tests need not wait that long
    monkeypatch.setattr(source_module, "_MAX_WAIT", 0.2)


def test_run_source_task_returns_what_the_file_source_polled(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("one\ntwo\nthree\n")
    records = run_source_task(FileStreamSourceTask, {"file": str(path), "topic": "lines"}, polls=2)
    assert [r.value for r in records] == ["one", "two", "three"]
    assert [r.source_offset for r in records] == [{"position": 4}, {"position": 8}, {"position": 14}]
    assert {r.topic for r in records} == {"lines"}
    assert all(isinstance(r, SourceRecord) for r in records)


def test_run_source_task_gives_the_task_the_committed_offsets(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("one\ntwo\nthree\n")
    records = run_source_task(FileStreamSourceTask, {"file": str(path), "topic": "lines"},
                              offsets=[({"filename": str(path)}, {"position": 8})])
    assert [r.value for r in records] == ["three"]


class AckRecordingSource(SourceTask):
    """Polls the scripted batches, keeps every acknowledgement and whether it was committed and stopped."""

    def __init__(self, *batches: list[SourceRecord] | Exception) -> None:
        self.batches = list(batches)
        self.acks: list[tuple[str, int, int]] = []
        self.committed = self.stopped = False

    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def poll(self) -> Sequence[SourceRecord] | None:
        batch = self.batches.pop(0) if self.batches else None
        if isinstance(batch, Exception):
            raise batch
        return batch

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        assert metadata is not None
        self.acks.append((metadata.topic, metadata.partition, metadata.offset))

    def commit(self) -> None:
        self.committed = True

    def stop(self) -> None:
        self.stopped = True


def record(value: str, partition: int | None = None) -> SourceRecord:
    return SourceRecord({"p": 1}, {"o": value}, "t", partition, value_schema=Schema.STRING_SCHEMA, value=value)


def test_every_polled_record_is_acknowledged_with_its_offset_in_its_partition_then_committed() -> None:
    task = AckRecordingSource([record("a"), record("b", 1)], [], [record("c")])
    records = run_source_task(task, {}, polls=4)
    assert [r.value for r in records] == ["a", "b", "c"]
    assert task.acks == [("t", 0, 0), ("t", 1, 0), ("t", 0, 1)]
    assert task.committed and task.stopped


def test_a_poll_that_raises_propagates_and_the_task_is_still_stopped() -> None:
    task = AckRecordingSource([record("a")], ConnectException("source gone"))
    with pytest.raises(ConnectException, match="source gone"):
        run_source_task(task, {}, polls=3)
    assert task.stopped and not task.committed


def test_run_sink_task_writes_through_the_file_sink_and_commits_past_the_last_record(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    records = sink_records("lines", ["a", None, "ü"], first_offset=10, value_schema=Schema.OPTIONAL_STRING_SCHEMA)
    run = run_sink_task(FileStreamSinkTask, {"file": str(path), "topics": "lines"}, records)
    assert path.read_text() == "a\nü\n"
    assert run == SinkTaskRun({TopicPartition("lines", 0): 13}, [])


class RefusingOddSink(SinkTask):
    """Reports every record with an odd value to the errant record reporter; keeps the others."""

    def __init__(self) -> None:
        self.kept: list[int] = []
        self.calls: list[str] = []

    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self.calls.append("start")

    def open(self, partitions):
        self.calls.append(f"open {sorted(partitions)}")

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.calls.append("put")
        reporter = self.context.errant_record_reporter()
        assert reporter is not None
        for r in records:
            if r.value % 2:
                reporter.report(r, DataException(f"{r.value} is odd")).result(timeout=1)
            else:
                self.kept.append(r.value)

    def flush(self, current_offsets):
        self.calls.append(f"flush {dict(current_offsets)}")

    def close(self, partitions):
        self.calls.append("close")

    def stop(self) -> None:
        self.calls.append("stop")


def test_run_sink_task_keeps_what_the_task_reported_as_errant_and_calls_in_the_worker_order() -> None:
    task = RefusingOddSink()
    records = sink_records("n", [1, 2, 3, 4]) + sink_records("n", [5], partition=1, first_offset=7)
    run = run_sink_task(task, {"topics": "n"}, records)
    assert task.kept == [2, 4]
    assert [(r.value, str(e)) for r, e in run.errant] == [(1, "1 is odd"), (3, "3 is odd"), (5, "5 is odd")]
    tp0, tp1 = TopicPartition("n", 0), TopicPartition("n", 1)
    assert run.committed == {tp0: 4, tp1: 8}
    assert task.calls == ["start", f"open {[tp0, tp1]}", "put", f"flush { {tp0: 4, tp1: 8} }", "close", "stop"]


def test_sink_records_count_offsets_within_one_partition() -> None:
    records = sink_records("t", ["x", "y"], partition=2, first_offset=5, key="k")
    assert [(r.topic, r.kafka_partition, r.kafka_offset, r.key, r.value) for r in records] == [
        ("t", 2, 5, "k", "x"), ("t", 2, 6, "k", "y")]
