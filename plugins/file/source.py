"""FileStreamSourceConnector and its task: tail a text file (or stdin), one record per line.

Offsets are Kafka's: source partition ``{"filename": <path as configured>}``,
offset ``{"position": <byte position just after the line>}``, so a connector
moved between Kafka Connect and Headrace resumes where it stopped.

Beyond Kafka, the task survives the two things log files do:

- truncation (the file is now shorter than the position): read again from
  the start, with a WARNING;
- rotation (the path now names another file): finish the file already open,
  emit its unterminated last line if it has one, then read the new file from
  its start, with an INFO line.

Lines end at ``\\n``; a ``\\r`` just before it is dropped too. A last line
without its newline waits for it (except at the end of stdin or of a rotated
file). Bytes that are not UTF-8 are decoded to U+FFFD and logged, as Java's
reader does, so one bad byte does not stop the stream. Unlike Kafka, a lone
``\\r`` does not end a line, and positions count bytes where Kafka counts
characters (the same for ASCII). Records read from stdin carry no partition or
offset, as there is nothing to resume.
"""

from __future__ import annotations

import logging
import os
import select
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectException,
    ExactlyOnceSupport,
    FilePath,
    Importance,
    NonEmptyString,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceRecordBatch,
    SourceTask,
    Task,
)
from connect.api.version import distribution_version
from plugins.file.changes import file_change_watcher

__all__ = ["FileStreamSourceConnector", "FileStreamSourceTask"]

log = logging.getLogger(__name__)

FILE_CONFIG = "file"
TOPIC_CONFIG = "topic"
BATCH_SIZE_CONFIG = "batch.size"
DEFAULT_BATCH_SIZE = 2000
FILENAME_FIELD = "filename"
POSITION_FIELD = "position"

CONFIG_DEF = (
    ConfigDef()
    .define(
        FILE_CONFIG,
        ConfigType.STRING,
        None,
        FilePath(mode="read"),
        importance=Importance.HIGH,
        documentation="The file to read. Without it the task reads standard input.",
    )
    .define(
        TOPIC_CONFIG,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="The topic every line is written to.",
    )
    .define(
        BATCH_SIZE_CONFIG,
        ConfigType.INT,
        DEFAULT_BATCH_SIZE,
        importance=Importance.LOW,
        documentation="The most lines one poll of the task returns.",
    )
)

_CHUNK = 1 << 20  # large reads keep syscalls and bytes copies per line negligible
_MAX_WAIT = 1.0  # how long an idle poll waits before returning nothing
_RECHECK = 0.05  # how often an idle poll looks for new data when the file's changes cannot be watched


def _version() -> str:
    return distribution_version(__name__)


class _Positions(Sequence[dict[str, int]]):
    """The offsets of a batch of lines, ``{"position": <byte after the line>}``, made only when read.

    The runtime usually reads just the last one, so a batch of lines costs no dict per line.
    """

    __slots__ = ("_start", "_ends")

    def __init__(self, start: int, lines: list[bytes]) -> None:
        self._start = start
        self._ends = list(accumulate(map(len, lines)))  # bytes up to the end of each line, newlines left out

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._ends)))]
        if index < 0:
            index += len(self._ends)
        # each line before and including this one also had its newline
        return {POSITION_FIELD: self._start + self._ends[index] + index + 1}


class FileStreamSourceConnector(SourceConnector):
    """Reads one file (or stdin) with a single task."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return _version()

    def config(self) -> ConfigDef:
        return ConfigDef(CONFIG_DEF)

    def start(self, props: Mapping[str, str]) -> None:
        AbstractConfig(CONFIG_DEF, props)  # a bad config fails here, before any task starts
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]  # one input stream cannot be split

    def stop(self) -> None:
        pass  # nothing runs in the connector itself

    def exactly_once_support(self, connector_config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        # a file can be re-read from an offset; stdin cannot
        filename = AbstractConfig(CONFIG_DEF, connector_config).get_string(FILE_CONFIG)
        return ExactlyOnceSupport.SUPPORTED if filename else ExactlyOnceSupport.UNSUPPORTED

    def alter_offsets(
        self,
        connector_config: Mapping[str, str],
        offsets: Mapping[Any, Mapping[str, Any] | None],
    ) -> bool:
        filename = AbstractConfig(CONFIG_DEF, connector_config).get_string(FILE_CONFIG)
        if not filename:
            raise ConnectException(
                f"Offsets cannot be changed without the '{FILE_CONFIG}' setting: stdin keeps no offsets"
            )
        for partition, offset in offsets.items():
            if offset is None:
                continue  # resetting any partition is allowed, so stale ones can be cleaned up
            position = offset.get(POSITION_FIELD)
            if isinstance(position, bool) or not isinstance(position, int):
                raise ConnectException(f"The offset needs an integer '{POSITION_FIELD}', got {position!r}")
            if position < 0:
                raise ConnectException(f"The offset '{POSITION_FIELD}' must not be negative, got {position}")
            fields = dict(partition) if partition is not None else None
            if not fields or FILENAME_FIELD not in fields:
                raise ConnectException(f"A partition needs the key '{FILENAME_FIELD}', got {fields!r}")
        return True  # the task checks the position against the file when it starts


class FileStreamSourceTask(SourceTask):
    """Tails one file by lines, ``batch.size`` records per poll at most."""

    def __init__(self) -> None:
        self._filename: str | None = None
        self._topic = ""
        self._batch_size = DEFAULT_BATCH_SIZE
        self._partition: dict[str, Any] | None = None
        self._file: Any = None  # an unbuffered binary file
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the open file
        self._stdin_fd: int | None = None
        self._stdin_done = False
        self._position = 0  # byte position just after the last line returned
        self._pending = b""  # bytes read past the position; the file is read up to position + len
        self._warned_missing = False
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # stop() closes the file; never while poll() reads it
        self._changed: threading.Event | None = None  # set by the FileChangeWatcher; None: look on a timer

    def version(self) -> str:
        return _version()

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(CONFIG_DEF, props)
        self._filename = config.get_string(FILE_CONFIG) or None
        self._topic = str(config.get_string(TOPIC_CONFIG))
        self._batch_size = max(1, int(config.get_int(BATCH_SIZE_CONFIG) or DEFAULT_BATCH_SIZE))
        self._stopping.clear()
        if self._filename is None:
            try:
                self._stdin_fd = sys.stdin.fileno()
            except (OSError, ValueError, AttributeError) as exc:
                raise ConnectException(f"FileStreamSourceTask has no file and cannot read stdin: {exc}") from exc
            # a warning: in a worker, stdin is rarely what was meant (a misspelt "file", say)
            log.warning("[%s] FileStreamSource has no %s setting: reading standard input into topic %s",
                        props.get("name", ""), FILE_CONFIG, self._topic)
        else:
            self._partition = {FILENAME_FIELD: self._filename}
            self._changed = file_change_watcher().subscribe(self._filename)

    def stop(self) -> None:
        self._stopping.set()
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()  # a poll waiting for a change returns now
            assert self._filename is not None
            file_change_watcher().unsubscribe(self._filename, changed)
        with self._lock:
            self._close()

    def poll(self) -> Sequence[SourceRecord] | None:
        """The next complete lines; after up to a second without any, None. Returns at once on stop()."""
        deadline: float | None = None
        while not self._stopping.is_set():
            changed = self._changed
            if changed is not None:
                changed.clear()  # before reading: a write from now on wakes the wait below
            with self._lock:
                if self._stopping.is_set():
                    break
                records = self._read_records()
            if records:
                return records
            now = time.monotonic()
            if deadline is None:
                deadline = now + _MAX_WAIT
            if now >= deadline:
                break
            if changed is not None:
                changed.wait(deadline - now)  # stop() sets it too
            else:
                self._stopping.wait(min(_RECHECK, deadline - now))
        return None

    # --- reading -------------------------------------------------------------------------------

    def _read_records(self) -> Sequence[SourceRecord] | None:
        if self._stdin_fd is not None:
            chunk, at_end = self._read_stdin()
        else:
            if self._file is None and not self._open():
                return None
            if len(self._pending) >= _CHUNK and b"\n" in self._pending:
                chunk, at_end = b"", False  # enough buffered already: the backlog bounds memory
            else:
                chunk = self._file.read(_CHUNK)
                at_end = not chunk
                if chunk and b"\n" not in chunk and b"\n" not in self._pending:
                    chunk, at_end = self._read_long_line(chunk)
        if chunk:
            self._pending = self._pending + chunk if self._pending else chunk
        records = self._take_lines()
        if records or not at_end:
            return records
        if self._stdin_fd is not None:
            return self._finish_stdin()
        return self._check_file_changed()

    def _read_long_line(self, first: bytes) -> tuple[bytes, bool]:
        """A line longer than one read: read on until it ends or the file does (joined once, not per read)."""
        pieces = [self._pending, first]
        self._pending = b""
        at_end = False
        while True:
            chunk = self._file.read(_CHUNK)
            if not chunk:
                at_end = True
                break
            pieces.append(chunk)
            if b"\n" in chunk:
                break
        return b"".join(pieces), at_end

    def _take_lines(self) -> SourceRecordBatch | None:
        pending = self._pending
        if b"\n" not in pending:
            return None
        parts = pending.split(b"\n", self._batch_size)
        self._pending = parts.pop()  # an unterminated line, or the lines beyond this batch
        return self._records(parts)

    def _records(self, lines: list[bytes]) -> SourceRecordBatch:
        block = b"\n".join(lines)
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = block.decode("utf-8", "replace")
            log.warning(
                "FileStreamSourceTask: %s has bytes that are not UTF-8 between positions %d and %d "
                "(first at %d); they are read as U+FFFD",
                self._describe(),
                self._position,
                self._position + len(block),
                self._position + exc.start,
            )
        texts = text.split("\n")
        if "\r" in text:
            texts = [t[:-1] if t.endswith("\r") else t for t in texts]
        start = self._position
        self._position += len(block) + 1
        positions = _Positions(start, lines) if self._partition is not None else None
        return SourceRecordBatch(self._topic, texts, value_schema=Schema.STRING_SCHEMA,
                                 source_partition=self._partition, source_offsets=positions,
                                 timestamp=int(time.time() * 1000))

    def _tail_record(self) -> list[SourceRecord] | None:
        """The unterminated last line, once nothing can follow it."""
        tail, self._pending = self._pending, b""
        if not tail:
            return None
        record = self._records([tail])[0]
        self._position -= 1  # no newline was consumed after it
        if self._partition is not None:
            record.source_offset = {POSITION_FIELD: self._position}
        return [record]

    # --- files -------------------------------------------------------------------------------------

    def _describe(self) -> str:
        return self._filename if self._filename is not None else "stdin"

    def _open(self) -> bool:
        assert self._filename is not None
        try:
            handle = open(self._filename, "rb", buffering=0)  # kept open across polls
        except FileNotFoundError:
            if not self._warned_missing:
                log.warning("FileStreamSourceTask: %s does not exist yet; waiting for it", self._filename)
                self._warned_missing = True
            return False
        except OSError as exc:
            raise ConnectException(f"Cannot open {self._filename} for FileStreamSourceTask: {exc}") from exc
        try:
            stat = os.fstat(handle.fileno())
            position = self._committed_position()
            if position > stat.st_size:
                log.warning(
                    "FileStreamSourceTask: %s is %d bytes, shorter than the committed position %d; "
                    "it was truncated, reading it again from the start",
                    self._filename,
                    stat.st_size,
                    position,
                )
                position = 0
            handle.seek(position)
        except BaseException:
            handle.close()
            raise
        self._file = handle
        self._identity = (stat.st_dev, stat.st_ino)
        self._position = position
        self._pending = b""
        self._warned_missing = False
        log.info("FileStreamSourceTask reading %s from position %d into topic %s", self._filename, position, self._topic)
        return True

    def _committed_position(self) -> int:
        offset = self.context.offset_storage_reader().offset(self._partition or {})
        position = offset.get(POSITION_FIELD) if offset else None
        if position is None:
            return 0
        if isinstance(position, bool) or not isinstance(position, int):
            raise ConnectException(f"Offset position is the incorrect type: {type(position).__qualname__}")
        return max(position, 0)

    def _check_file_changed(self) -> Sequence[SourceRecord] | None:
        """At the end of the open file: has the path been truncated or moved to another file?"""
        assert self._filename is not None and self._file is not None
        try:
            stat = os.stat(self._filename)
        except FileNotFoundError:
            return None  # rotated away and not yet re-created: keep the old file open
        if (stat.st_dev, stat.st_ino) != self._identity:
            log.info(
                "FileStreamSourceTask: %s was rotated; finished the old file at position %d, "
                "reading the new one from the start",
                self._filename,
                self._position + len(self._pending),
            )
            records = self._drain()
            self._close()
            self._open_new_from_start()
            return records or None
        if stat.st_size < self._position + len(self._pending):
            log.warning(
                "FileStreamSourceTask: %s was truncated to %d bytes below position %d; reading it again from the start",
                self._filename,
                stat.st_size,
                self._position + len(self._pending),
            )
            self._file.seek(0)
            self._position = 0
            self._pending = b""
        return None

    def _drain(self) -> list[SourceRecord]:
        """Every line left in the open file, the unterminated last one included."""
        assert self._file is not None
        while chunk := self._file.read(_CHUNK):
            self._pending += chunk
        lines = self._pending.split(b"\n")
        self._pending = lines.pop()
        records = list(self._records(lines)) if lines else []
        return records + (self._tail_record() or [])

    def _open_new_from_start(self) -> None:
        assert self._filename is not None
        try:
            handle = open(self._filename, "rb", buffering=0)  # kept open across polls
            stat = os.fstat(handle.fileno())
        except FileNotFoundError:
            return  # gone again; the next poll opens whatever is there, from the committed offset
        self._file = handle
        self._identity = (stat.st_dev, stat.st_ino)
        self._position = 0
        self._pending = b""

    def _close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                log.warning("FileStreamSourceTask: error closing %s: %s", self._filename, exc)
            self._file = None

    # --- stdin -------------------------------------------------------------------------------------

    def _read_stdin(self) -> tuple[bytes, bool]:
        """Whatever stdin has ready now, and whether it has ended; never blocks."""
        if self._stdin_done or self._stdin_fd is None:
            return b"", self._stdin_done
        try:
            ready, _, _ = select.select([self._stdin_fd], [], [], 0)
            if not ready:
                return b"", False
            chunk = os.read(self._stdin_fd, _CHUNK)
        except (OSError, ValueError) as exc:  # closed under us
            log.info("FileStreamSourceTask: stdin is no longer readable: %s", exc)
            chunk = b""
        if not chunk:
            self._stdin_done = True
            log.info("FileStreamSourceTask: end of stdin")
            return b"", True
        return chunk, False

    def _finish_stdin(self) -> list[SourceRecord] | None:
        return self._tail_record()
