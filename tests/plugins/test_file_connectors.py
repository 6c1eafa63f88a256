"""FileStream source and sink, driven directly through the task API with a fake offset reader."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import plugins.file.source as source_module
from connect.api import (
    ConfigException,
    ConnectException,
    ExactlyOnceSupport,
    OffsetStorageReader,
    Schema,
    SinkRecord,
    SinkRecordBatch,
    SourceRecord,
    SourceRecordBatch,
    SourceTaskContext,
    TimestampType,
    TopicPartition,
)
from connect.testing import run_sink_task, run_source_task
from plugins.file import (
    FileStreamSinkConnector,
    FileStreamSinkTask,
    FileStreamSourceConnector,
    FileStreamSourceTask,
)


class FakeOffsetReader(OffsetStorageReader):
    def __init__(self, offsets: dict[str, dict[str, Any]] | None = None) -> None:
        self.offsets = offsets or {}
        self.asked: list[Mapping[str, Any]] = []

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        self.asked.append(dict(partition))
        return self.offsets.get(partition.get("filename"))


class FakeContext(SourceTaskContext):
    def __init__(self, reader: OffsetStorageReader) -> None:
        self.reader = reader

    def configs(self) -> Mapping[str, str]:
        return {}

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self.reader


@pytest.fixture(autouse=True)
def short_idle_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    # an idle poll waits up to a second in production; keep the tests quick
    monkeypatch.setattr(source_module, "_MAX_WAIT", 0.2)
    monkeypatch.setattr(source_module, "_RECHECK", 0.01)


def start_source(path: Path | None, offsets: dict[str, dict[str, Any]] | None = None, **props: str) -> FileStreamSourceTask:
    task = FileStreamSourceTask()
    task.initialize(FakeContext(FakeOffsetReader(offsets)))
    config = {"topic": "lines", **props}
    if path is not None:
        config["file"] = str(path)
    task.start(config)
    return task


def values(records: list[SourceRecord] | None) -> list[str]:
    return [r.value for r in records or []]


def positions(records: list[SourceRecord] | None) -> list[int]:
    return [r.source_offset["position"] for r in records or []]  # type: ignore[index]


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


# --- source ---------------------------------------------------------------------------------------


def test_lines_records_and_offsets(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"first\r\nsecond\nthird\n")
    records = run_source_task(FileStreamSourceTask, {"topic": "lines", "file": str(path)})
    assert values(records) == ["first", "second", "third"]
    assert positions(records) == [7, 14, 20]
    record = records[0]  # type: ignore[index]
    assert record.source_partition == {"filename": str(path)}
    assert record.topic == "lines"
    assert record.key is None and record.key_schema is None and record.kafka_partition is None
    assert record.value_schema == Schema.STRING_SCHEMA
    assert isinstance(record.timestamp, int) and abs(record.timestamp - time.time() * 1000) < 60_000


def test_poll_returns_a_column_batch_with_byte_positions(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes("añb\n€\r\n\nz\n".encode())
    task = start_source(path)
    batch = task.poll()
    assert isinstance(batch, SourceRecordBatch)  # the runtime sends its values in bulk
    assert batch.values == ["añb", "€", "", "z"]
    assert batch.last_offset == {"position": len("añb\n€\r\n\nz\n".encode())}
    assert positions(batch) == [5, 10, 11, 13]
    task.stop()


def test_partial_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nb")
    task = start_source(path)
    assert values(task.poll()) == ["a"]
    assert task.poll() is None
    append(path, b"c\nd")
    records = task.poll()
    assert values(records) == ["bc"]
    assert positions(records) == [5]
    task.stop()


def test_resumes_from_committed_offset(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"one\ntwo\nthree\n")
    records = run_source_task(FileStreamSourceTask, {"topic": "lines", "file": str(path)},
                              offsets=[({"filename": str(path)}, {"position": 4})])
    assert values(records) == ["two", "three"]
    assert positions(records) == [8, 14]


def test_committed_offset_of_wrong_type_fails(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"one\n")
    task = start_source(path, {str(path): {"position": "4"}})
    with pytest.raises(ConnectException, match="incorrect type"):
        task.poll()


def test_batch_size_limits_each_poll(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join(b"%d\n" % i for i in range(25)))
    task = start_source(path, **{"batch.size": "10"})
    batches = [values(task.poll()) for _ in range(3)]
    assert [len(b) for b in batches] == [10, 10, 5]
    assert sum(batches, []) == [str(i) for i in range(25)]
    task.stop()


def test_small_reads_long_lines_and_backlog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_module, "_CHUNK", 16)  # lines longer than a read, and a backlog
    lines = ["x" * 40, "short", "y" * 17, *(f"n{i}" for i in range(20)), "z" * 33]
    path = tmp_path / "in.txt"
    path.write_text("\n".join(lines) + "\n")
    task = start_source(path, **{"batch.size": "3"})
    records: list[SourceRecord] = []
    while len(records) < len(lines):
        batch = task.poll()
        assert batch is not None and len(batch) <= 3
        records += batch
    assert values(records) == lines
    assert positions(records)[-1] == path.stat().st_size
    task.stop()


def test_offset_beyond_the_end_means_truncated(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"short\n")
    task = start_source(path, {str(path): {"position": 100}})
    with caplog.at_level(logging.WARNING):
        assert values(task.poll()) == ["short"]
    assert "truncated" in caplog.text and str(path) in caplog.text
    task.stop()


def test_truncation_restarts_from_the_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"old line one\nold line two\n")
    task = start_source(path)
    assert len(values(task.poll())) == 2
    with open(path, "r+b") as f:  # same file, cut short and rewritten
        f.truncate(0)
        f.write(b"new\n")
    with caplog.at_level(logging.WARNING):
        records = task.poll()  # notices the truncation, then reads the file again
    assert "truncated" in caplog.text
    assert values(records) == ["new"]
    assert positions(records) == [4]
    task.stop()


def test_rotation_finishes_old_file_then_reads_new(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"a1\n")
    task = start_source(path)
    assert values(task.poll()) == ["a1"]
    rotated = tmp_path / "app.log.1"
    os.rename(path, rotated)
    append(rotated, b"a2\na3-unterminated")  # the writer still had the old file open
    path.write_bytes(b"b1\nb2\n")
    with caplog.at_level(logging.INFO):
        records = task.poll()
        while not records or records[-1].value != "a3-unterminated":
            more = task.poll()
            assert more is not None
            records = (records or []) + more
    assert values(records)[-2:] == ["a2", "a3-unterminated"]
    assert positions(records)[-2:] == [6, 21]
    assert "rotated" in caplog.text and str(path) in caplog.text
    records = task.poll()
    assert values(records) == ["b1", "b2"]
    assert positions(records) == [3, 6]
    task.stop()


def test_invalid_utf8_is_replaced_and_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"ok\nbad \xff\xfe byte\nnext\n")
    task = start_source(path)
    with caplog.at_level(logging.WARNING):
        records = task.poll()
    assert values(records) == ["ok", "bad \ufffd\ufffd byte", "next"]
    assert positions(records) == [3, 15, 20]
    assert "not UTF-8" in caplog.text and str(path) in caplog.text
    task.stop()


def test_missing_file_is_waited_for(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "later.txt"
    task = start_source(path)
    with caplog.at_level(logging.WARNING):
        assert task.poll() is None
    assert "does not exist" in caplog.text
    path.write_bytes(b"here\n")
    assert values(task.poll()) == ["here"]
    task.stop()


def test_stop_unblocks_poll(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_module, "_MAX_WAIT", 30.0)
    path = tmp_path / "idle.txt"
    path.write_bytes(b"")
    task = start_source(path)
    result: list[object] = []
    poller = threading.Thread(target=lambda: result.append(task.poll()))
    poller.start()
    time.sleep(0.1)
    started = time.monotonic()
    task.stop()
    poller.join(timeout=5)
    assert not poller.is_alive()
    assert time.monotonic() - started < 1.0
    assert result == [None]
    assert task.poll() is None  # stopped: returns at once


def test_reads_stdin_without_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        task = start_source(None)
        os.write(write_fd, b"x\r\ny\npartial")
        records = task.poll()
        assert values(records) == ["x", "y"]
        assert records[0].source_partition is None and records[0].source_offset is None  # type: ignore[index]
        os.close(write_fd)
        assert values(task.poll()) == ["partial"]  # the end of stdin completes the last line
        assert task.poll() is None
        task.stop()


# --- sink -------------------------------------------------------------------------------------------


def sink_record(value: object, offset: int = 0) -> SinkRecord:
    return SinkRecord("t", 0, None, None, Schema.OPTIONAL_STRING_SCHEMA, value, offset)


def test_sink_appends_lines_and_skips_nulls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "out.txt"
    path.write_bytes(b"existing\n")
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "t"})
    task.put([sink_record("a"), sink_record(None, 1), sink_record("ü", 2), sink_record(True, 3), sink_record(7, 4)])
    task.put([])
    offsets = {TopicPartition("t", 0): 5}
    assert task.pre_commit(offsets) == offsets
    assert path.read_bytes() == "existing\na\nü\ntrue\n7\n".encode()
    assert synced, "flush must fsync before offsets are committed"
    task.put([sink_record("b", 5)])
    task.stop()
    assert path.read_bytes().endswith(b"\nb\n")


def test_a_flush_racing_the_stop_finds_the_file_durable_not_an_error(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime may commit (flush) on the task thread while stop() closes the file on another: the flush
    that finds the file closed under it has nothing left to do (stop flushed and synced it first)."""
    path = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "t"})
    task.put([sink_record("a")])
    real_fsync = os.fsync

    def stop_then_fsync(fd: int) -> None:  # stop() wins the race between the flush's check and its fsync
        monkeypatch.setattr(os, "fsync", real_fsync)
        task.stop()
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", stop_then_fsync)
    task.flush({TopicPartition("t", 0): 1})
    assert path.read_bytes() == b"a\n"


def test_sink_writes_a_column_batch_without_reading_records(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "t"})
    batch = SinkRecordBatch()
    string = Schema.OPTIONAL_STRING_SCHEMA
    batch.add("t", 0, [0, 1, 2], [1, 1, 1], TimestampType.CREATE_TIME, [None] * 3, [None] * 3, [string] * 3,
              ["a", None, "ü"])
    task.put(batch)
    task.stop()
    assert path.read_bytes() == "a\nü\n".encode()
    assert batch._records is None  # the values were enough


def test_sink_prints_a_batch_of_maps_line_for_line_as_each_map_alone(tmp_path: Path) -> None:
    """A batch is printed at once (maps of one key set column by column): the lines, their order, the nulls
    left out and the bytes decoded are what printing each value alone gives."""
    from connect.api.java_text import java_to_string

    path = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "t"})
    maps: list[Any] = [{"id": i, "user": f"u{i}", "amount": i / 4, "ok": i % 2 == 0, "tags": [i]} for i in range(12)]
    values = [*maps[:6], None, b"raw \xff", "text", {"other": 1}, 1e7, *maps[6:], None]
    batch = SinkRecordBatch()
    n = len(values)
    batch.add("t", 0, range(n), [0] * n, TimestampType.CREATE_TIME, [None] * n, [None] * n, [None] * n, values)
    task.put(batch)
    task.stop()
    alone = [v.decode(errors="replace") if isinstance(v, bytes) else java_to_string(v) for v in values if v is not None]
    assert path.read_text() == "".join(line + "\n" for line in alone)
    assert path.read_text().splitlines()[0] == "{amount=0.0, id=0, ok=true, user=u0, tags=[0]}"


def test_sink_creates_file_and_syncs_its_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "new.txt"
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    task = FileStreamSinkTask()
    task.start({"file": str(path)})
    task.put([sink_record("x")])
    task.flush({})
    assert len(synced) == 2  # the file, then (once) its directory
    task.flush({})
    assert len(synced) == 3
    task.stop()
    assert path.read_text() == "x\n"


def test_sink_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    run = run_sink_task(FileStreamSinkTask, {}, [sink_record("to stdout"), sink_record(None, 1)])
    assert capsys.readouterr().out == "to stdout\n"
    assert run.committed == {TopicPartition("t", 0): 2}


def test_sink_cannot_open_file(tmp_path: Path) -> None:
    with pytest.raises(ConnectException, match="Couldn't find or create file"):
        FileStreamSinkTask().start({"file": str(tmp_path / "missing-dir" / "out.txt")})


# --- connectors -----------------------------------------------------------------------------------


def test_source_connector_config_and_tasks() -> None:
    connector = FileStreamSourceConnector()
    assert set(connector.config().names()) == {"file", "topic", "batch.size"}
    props = {"file": "/tmp/x", "topic": "t", "connector.class": "FileStreamSource", "extra": "ok"}
    connector.start(props)
    assert connector.task_configs(5) == [props]
    assert connector.task_class() is FileStreamSourceTask
    assert connector.version() == "0.1.0"
    errors = connector.validate({"file": "/tmp/x"})
    assert errors["topic"].errors and not errors["file"].errors
    with pytest.raises(ConfigException, match="topic"):
        connector.start({"file": "/tmp/x"})
    assert connector.exactly_once_support({"file": "/tmp/x", "topic": "t"}) is ExactlyOnceSupport.SUPPORTED
    assert connector.exactly_once_support({"topic": "t"}) is ExactlyOnceSupport.UNSUPPORTED


def test_source_connector_alter_offsets() -> None:
    connector = FileStreamSourceConnector()
    config = {"file": "/tmp/x", "topic": "t"}
    partition = (("filename", "/tmp/x"),)
    assert connector.alter_offsets(config, {partition: {"position": 10}})
    assert connector.alter_offsets(config, {partition: None})
    with pytest.raises(ConnectException, match="position"):
        connector.alter_offsets(config, {partition: {"position": -1}})
    with pytest.raises(ConnectException, match="position"):
        connector.alter_offsets(config, {partition: {"position": "10"}})
    with pytest.raises(ConnectException, match="filename"):
        connector.alter_offsets(config, {(("file", "/tmp/x"),): {"position": 1}})
    with pytest.raises(ConnectException, match="stdin"):
        connector.alter_offsets({"topic": "t"}, {partition: {"position": 1}})


def test_sink_connector_config_and_tasks() -> None:
    connector = FileStreamSinkConnector()
    assert connector.config().names() == ["file"]
    props = {"file": "/tmp/out", "topics": "a,b"}
    connector.start(props)
    assert connector.task_configs(3) == [props, props, props]
    assert connector.task_class() is FileStreamSinkTask
    assert connector.version() == "0.1.0"
    assert not any(v.errors for v in connector.validate(props).values())
