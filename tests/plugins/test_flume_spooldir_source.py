"""SpoolDirSource, driven as the runtime drives it (poll, commit_record) with a fake offset reader: files
are read once in order and renamed or deleted only after the log acknowledged each of their lines; a
restart resumes from the committed offset; bad bytes and a reused name fail naming the file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from connect.api import ConnectException, OffsetStorageReader, SourceRecord, SourceTaskContext
from plugins.flume.spooldir_source import SpoolDirSourceTask


class Offsets(OffsetStorageReader):
    def __init__(self) -> None:
        self.committed: dict[str, dict[str, Any]] = {}

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.committed.get(partition["spool.file"])


class Context(SourceTaskContext):
    def __init__(self, reader: OffsetStorageReader) -> None:
        self.reader = reader

    def configs(self) -> Mapping[str, str]:
        return {}

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self.reader


def _task(spool: Path, offsets: Offsets | None = None, **extra: str) -> SpoolDirSourceTask:
    task = SpoolDirSourceTask()
    task.initialize(Context(offsets or Offsets()))
    task.start({"name": "s", "spool.dir": str(spool), "topic": "t", "poll.delay.ms": "10", "batch.size": "3",
                **extra})
    return task


def _drain(task: SpoolDirSourceTask, ack: bool = True, polls: int = 50) -> list[SourceRecord]:
    out: list[SourceRecord] = []
    idle = 0
    for _ in range(polls):
        records = task.poll() or []
        out.extend(records)
        idle = 0 if records else idle + 1
        if idle == 3 and ack:  # three empty polls: every file is done (and renamed, once acknowledged)
            break
        if ack:
            for r in records:
                task.commit_record(r, None)
    return out


def test_files_are_read_oldest_first_and_renamed_only_once_every_line_is_acknowledged(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "b.log").write_text("b1\nb2\n")
    (spool / "a.log").write_text("a1\na2\na3\na4\nlast without newline")
    os.utime(spool / "a.log", (1, 1))  # older
    (spool / ".hidden").write_text("x\n")
    (spool / "skip.tmp").write_text("x\n")
    task = _task(spool, **{"ignore.pattern": r"\.tmp$", "file.header.key": "file",
                                             "basename.header.key": "basename"})
    held = _drain(task, ack=False, polls=4)
    # read, but the log has not acknowledged them: nothing is renamed
    assert [r.value for r in held][:5] == [b"a1", b"a2", b"a3", b"a4", b"last without newline"]
    assert sorted(p.name for p in spool.iterdir()) == [".hidden", "a.log", "b.log", "skip.tmp"]
    for r in held:
        task.commit_record(r, None)
    rest = _drain(task)
    values = [r.value for r in held + rest]
    assert values == [b"a1", b"a2", b"a3", b"a4", b"last without newline", b"b1", b"b2"]
    assert sorted(p.name for p in spool.iterdir()) == [".hidden", "a.log.COMPLETED", "b.log.COMPLETED", "skip.tmp"]
    first = held[0]
    assert {h.key: h.value for h in first.headers} == {"file": str(spool / "a.log"), "basename": "a.log"}
    assert first.source_partition == {"spool.file": str(spool / "a.log")}


def test_a_restart_resumes_from_the_committed_offset_and_deletes_with_immediate(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "x.log").write_text("".join(f"line {i}\n" for i in range(10)))
    offsets = Offsets()
    first = _task(spool, offsets)
    records = first.poll() or []
    # the worker committed the offset of the second record, then crashed
    offsets.committed[str(spool / "x.log")] = dict(records[1].source_offset)
    again = _drain(_task(spool, offsets, **{"delete.policy": "immediate"}))
    assert [r.value for r in again] == [f"line {i}".encode() for i in range(2, 10)]
    assert list(spool.iterdir()) == []


def test_a_new_file_under_a_used_name_is_read_from_its_start(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    offsets = Offsets()
    (spool / "x.log").write_text("old 1\nold 2\n")
    records = _drain(_task(spool, offsets))
    offsets.committed[str(spool / "x.log")] = dict(records[-1].source_offset)
    (spool / "x.log.COMPLETED").rename(tmp_path / "archived")
    (spool / "x.log").write_text("new 1\nnew 2\nnew 3\n")
    assert [r.value for r in _drain(_task(spool, offsets))] == [b"new 1", b"new 2", b"new 3"]


def test_long_lines_are_split_and_the_charset_is_decoded(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "x.log").write_bytes("Zürich\n".encode("latin-1") + b"abcdefgh\n")
    values = [r.value for r in _drain(_task(spool, **{"input.charset": "ISO-8859-1", "max.line.length": "3"}))]
    assert values == ["Zür".encode(), b"ich", b"abc", b"def", b"gh"]


def test_bytes_not_in_the_charset_fail_naming_the_file_and_line(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "bad.log").write_bytes(b"fine\n\xff\xfe broken\n")
    with pytest.raises(ConnectException, match=r"bad\.log line 2: byte 0 is not UTF-8"):
        _drain(_task(spool))
    replaced = _drain(_task(spool, **{"decode.error.policy": "REPLACE"}))
    assert [r.value for r in replaced] == [b"fine", "\ufffd\ufffd broken".encode()]


def test_a_completed_name_used_twice_fails_instead_of_overwriting(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "x.log.COMPLETED").write_text("earlier\n")
    (spool / "x.log").write_text("again\n")
    with pytest.raises(ConnectException, match="x.log.COMPLETED exists already"):
        _drain(_task(spool))
    assert (spool / "x.log.COMPLETED").read_text() == "earlier\n"
