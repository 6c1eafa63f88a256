"""TailDirSource: tails every file under ``directory`` that matches ``file.pattern``, as Flume's TAILDIR and
Filebeat's log input do.

Each file is known by its identity, ``<st_dev>:<st_ino>``, not by its name: its source partition is
``{"file.id": "<dev>:<ino>"}`` and its offset ``{"position": <byte after the last event>, "path": <name when
read>, "head": <CRC-32 of the file's first bytes>}``. So

- a rotation by rename (``app.log`` -> ``app.log.1``, then a new ``app.log``) loses nothing: the renamed file
  is read to its end under its identity, the new one from its start;
- a file deleted while open is read to its end, then closed;
- a truncation (copytruncate) is noticed when the file is shorter than the position: it is read again from
  the start, with a WARNING;
- an inode reused by a new file is told apart by ``head`` (the new file's first bytes differ), and read from 0;
- files created while running are found at the next scan (``scan.interval.ms``).

With ``multiline.pattern`` (a regular expression), a line that does not match it continues the event before
it (stack traces): an event is emitted when the next one starts, or ``multiline.timeout.ms`` after its last
line. Offsets only ever cover whole events, so after a crash at most the events since the last offset
flush come again (at least once, duplicates within one ``offset.flush.interval.ms``).

Only files inside ``directory`` (after symlinks) are read; ``directory`` is a path the worker's
``connector.allowed.paths`` governs. Bytes that are not UTF-8 are read as U+FFFD.
"""

from __future__ import annotations

import glob
import logging
import os
import re
import socket
import threading
import time
import zlib
from collections.abc import Mapping
from typing import Any

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectException,
    ConnectHeaders,
    FilePath,
    Importance,
    LambdaValidator,
    NonEmptyString,
    Range,
    Schema,
    SourceRecord,
    SourceTask,
    ValidString,
)
from connect.api.log_event import LOG_EVENT_SCHEMA, file_line_event, iso_timestamp
from plugins.ingest._common import TASK_ID_CONFIG, TOPIC_CONFIG, IngestConnector, version

__all__ = ["TailDirSourceConnector", "TailDirSourceTask"]

log = logging.getLogger(__name__)

DIRECTORY_CONFIG = "directory"
PATTERN_CONFIG = "file.pattern"
MULTILINE_CONFIG = "multiline.pattern"
MULTILINE_TIMEOUT_CONFIG = "multiline.timeout.ms"
SCAN_INTERVAL_CONFIG = "scan.interval.ms"
BATCH_SIZE_CONFIG = "batch.size"
MAX_EVENT_BYTES_CONFIG = "max.event.bytes"
MAX_FILES_CONFIG = "max.files"
RECORD_FORMAT_CONFIG = "record.format"
FILE_HEADER_CONFIG = "file.header.key"

_HEAD = 256  # bytes of a file's start that tell it apart from another file with a reused inode
_CHUNK = 1 << 20


def _pattern_problem(_name: str, value: Any) -> str | None:
    text = str(value or "")
    if not text:
        return "a glob pattern is needed, e.g. *.log"
    if os.path.isabs(text) or ".." in text.replace("\\", "/").split("/"):
        return "the pattern is relative to 'directory' and may not leave it (no leading /, no ..)"
    return None


def _regex_problem(_name: str, value: Any) -> str | None:
    if not value:
        return None
    try:
        re.compile(str(value))
    except re.error as exc:
        return f"not a regular expression: {exc}"
    return None


CONFIG_DEF = (
    ConfigDef()
    .define(DIRECTORY_CONFIG, ConfigType.STRING, validator=FilePath(mode="read"), importance=Importance.HIGH,
            documentation="The directory whose files are tailed; only files inside it (after symlinks) are read.")
    .define(PATTERN_CONFIG, ConfigType.STRING, "*.log", LambdaValidator(_pattern_problem, "a relative glob"),
            importance=Importance.HIGH,
            documentation="Which files under the directory: a glob relative to it (** for any depth).")
    .define(TOPIC_CONFIG, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
            documentation="The topic every event is written to.")
    .define(MULTILINE_CONFIG, ConfigType.STRING, "", LambdaValidator(_regex_problem, "a regular expression"),
            importance=Importance.MEDIUM,
            documentation="A regular expression matching the first line of an event; other lines continue the "
            "event before them. Empty: one event per line.")
    .define(MULTILINE_TIMEOUT_CONFIG, ConfigType.INT, 1000, Range.at_least(1), importance=Importance.LOW,
            documentation="A multiline event is emitted this long after its last line when no new event starts.")
    .define(SCAN_INTERVAL_CONFIG, ConfigType.INT, 1000, Range.at_least(10), importance=Importance.LOW,
            documentation="How often the directory is searched for new files.")
    .define(BATCH_SIZE_CONFIG, ConfigType.INT, 5000, Range.at_least(1), importance=Importance.LOW,
            documentation="The most events one poll returns.")
    .define(MAX_EVENT_BYTES_CONFIG, ConfigType.INT, 1 << 20, Range.between(64, 64 << 20), importance=Importance.LOW,
            documentation="A longer line (or multiline event) is cut at this many bytes, with a WARNING.")
    .define(MAX_FILES_CONFIG, ConfigType.INT, 1000, Range.at_least(1), importance=Importance.LOW,
            documentation="The most files open at once; further matches wait until others are done.")
    .define(RECORD_FORMAT_CONFIG, ConfigType.STRING, "log-event", ValidString.in_("log-event", "line"),
            importance=Importance.LOW,
            documentation="log-event: each event a log event (message, file path, host); line: its bytes as they "
            "are, as Flume's TAILDIR makes its event bodies.")
    .define(FILE_HEADER_CONFIG, ConfigType.STRING, "", importance=Importance.LOW,
            documentation="If set, a header of this name holds the file's path (as Flume's fileHeader).")
)


class _File:
    """One tailed file, known by its identity."""

    __slots__ = ("fid", "path", "handle", "position", "pending", "partition", "head", "head_len", "event",
                 "event_end", "last_line_at", "done")

    def __init__(self, fid: str, path: str, handle: Any, position: int, head: int, head_len: int) -> None:
        self.fid = fid
        self.path = path
        self.handle = handle
        self.position = position  # the byte after the last event handed out
        self.pending = b""  # bytes read after the position that are not yet a whole event
        self.partition = {"file.id": fid}
        self.head = head  # CRC-32 of the file's first head_len bytes
        self.head_len = head_len
        self.event: list[bytes] = []  # the lines of the multiline event being gathered
        self.event_end = position  # the byte after the gathered event's last line
        self.last_line_at = 0.0
        self.done = False


def _identity(stat: os.stat_result) -> str:
    return f"{stat.st_dev}:{stat.st_ino}"


class TailDirSourceTask(SourceTask):
    def __init__(self) -> None:
        self._dir = ""
        self._pattern = "*.log"
        self._topic = ""
        self._start: re.Pattern[bytes] | None = None
        self._multiline_timeout = 1.0
        self._scan_interval = 1.0
        self._batch = 5000
        self._max_event = 1 << 20
        self._max_files = 1000
        self._raw_lines = False
        self._file_header = ""
        self._files: dict[str, _File] = {}
        self._next_scan = 0.0
        self._stopping = threading.Event()
        self._hostname = socket.gethostname()
        self.name = "TailDirSource"

    def version(self) -> str:
        return version()

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(CONFIG_DEF, props)
        self._dir = os.path.realpath(str(config.get_string(DIRECTORY_CONFIG)))
        if not os.path.isdir(self._dir):
            raise ConnectException(f"TailDirSource: {self._dir} is not a directory")
        self._pattern = str(config.get_string(PATTERN_CONFIG))
        self._topic = str(config.get_string(TOPIC_CONFIG))
        multiline = config.get_string(MULTILINE_CONFIG)
        self._start = re.compile(multiline.encode()) if multiline else None
        self._multiline_timeout = int(config.get_int(MULTILINE_TIMEOUT_CONFIG) or 1) / 1000.0
        self._scan_interval = int(config.get_int(SCAN_INTERVAL_CONFIG) or 10) / 1000.0
        self._batch = int(config.get_int(BATCH_SIZE_CONFIG) or 1)
        self._max_event = int(config.get_int(MAX_EVENT_BYTES_CONFIG) or 64)
        self._max_files = int(config.get_int(MAX_FILES_CONFIG) or 1)
        self._raw_lines = config.get_string(RECORD_FORMAT_CONFIG) == "line"
        self._file_header = str(config.get_string(FILE_HEADER_CONFIG) or "")
        self.name = f"TailDirSource[{props.get('name', '?')}|task-{props.get(TASK_ID_CONFIG, '0')}]"
        self._stopping.clear()
        log.info("%s tailing %s under %s into topic %s", self.name, self._pattern, self._dir, self._topic)

    def stop(self) -> None:
        self._stopping.set()

    # --- files ---------------------------------------------------------------------------------------------

    def _scan(self) -> None:
        paths = glob.glob(os.path.join(glob.escape(self._dir), self._pattern), recursive=True)
        for path in sorted(paths):
            if len(self._files) >= self._max_files:
                break
            real = os.path.realpath(path)
            if not real.startswith(self._dir + os.sep):
                log.warning("%s skips %s: it resolves to %s, outside %s", self.name, path, real, self._dir)
                continue
            try:
                stat = os.stat(real)
            except FileNotFoundError:
                continue
            if not os.path.isfile(real):
                continue
            fid = _identity(stat)
            known = self._files.get(fid)
            if known is not None:
                if known.path != path:
                    log.info("%s: %s is now %s (renamed; read on)", self.name, known.path, path)
                    known.path = path
                continue
            self._open(fid, path, real)

    def _open(self, fid: str, path: str, real: str) -> None:
        try:
            handle = open(real, "rb", buffering=0)  # kept open: a rename or delete does not lose it
        except OSError as exc:
            log.warning("%s cannot open %s: %s", self.name, path, exc)
            return
        stat = os.fstat(handle.fileno())
        if _identity(stat) != fid:  # replaced between stat and open: the next scan takes the new one
            handle.close()
            return
        offset = self.context.offset_storage_reader().offset({"file.id": fid}) or {}
        stored_position = offset.get("position")
        position = stored_position if isinstance(stored_position, int) else 0
        head, head_len = offset.get("head"), offset.get("head.length")
        if position:
            if position > stat.st_size:
                log.warning("%s: %s is %d bytes, shorter than its committed position %d; truncated, reading it "
                            "again from the start", self.name, path, stat.st_size, position)
                position = 0
            elif isinstance(head_len, int) and _head_crc(handle, head_len) != head:
                log.info("%s: %s has inode %s of an earlier file; reading it from the start", self.name, path, fid)
                position = 0
        if not position or not isinstance(head_len, int) or not isinstance(head, int):
            head, head_len = 0, 0
        handle.seek(position)
        self._files[fid] = _File(fid, path, handle, position, head, head_len)
        log.info("%s reading %s (file.id %s) from position %d", self.name, path, fid, position)

    def _close(self, f: _File, why: str) -> None:
        f.handle.close()
        f.done = True
        self._files.pop(f.fid, None)
        log.info("%s finished %s at position %d (%s)", self.name, f.path, f.position, why)

    # --- reading -------------------------------------------------------------------------------------------

    def poll(self) -> list[SourceRecord] | None:
        deadline = time.monotonic() + 0.5
        while not self._stopping.is_set():
            now = time.monotonic()
            if now >= self._next_scan:
                self._scan()
                self._next_scan = now + self._scan_interval
            records: list[SourceRecord] = []
            for f in list(self._files.values()):
                self._read(f, records)
                if len(records) >= self._batch:
                    break
            if records:
                return records
            if time.monotonic() >= deadline:
                return None
            self._stopping.wait(0.05)
        return None

    def _read(self, f: _File, out: list[SourceRecord]) -> None:
        chunk = f.handle.read(_CHUNK)
        if chunk:
            self._gone(f)  # keeps f.path the file's current name (a rename is seen before its new lines)
            f.pending += chunk
            self._lines(f, out)
            return
        # at the end of the file: truncated, rotated away, deleted, or a multiline event to let go?
        try:
            stat = os.fstat(f.handle.fileno())
        except OSError:
            stat = None
        read_to = f.event_end + len(f.pending) if f.event else f.position + len(f.pending)
        if stat is not None and stat.st_size < read_to:
            log.warning("%s: %s was truncated to %d bytes (read to %d); reading it again from the start",
                        self.name, f.path, stat.st_size, read_to)
            f.handle.seek(0)
            f.position = f.event_end = 0
            f.pending = b""
            f.event = []
            f.head = f.head_len = 0
            return
        if f.event and time.monotonic() - f.last_line_at >= self._multiline_timeout:
            self._emit(f, out)
        if self._gone(f):
            if f.pending or f.event:  # nothing more can come: the unterminated rest is an event too
                if f.pending:
                    self._line(f, f.pending, f.position + len(f.pending) if not f.event else
                               f.event_end + len(f.pending), out)
                    f.pending = b""
                if f.event:
                    self._emit(f, out)
            self._close(f, "renamed out of the pattern or deleted")

    def _gone(self, f: _File) -> bool:
        """The file no longer has its name under the pattern (deleted, or renamed to a name that does not match)."""
        try:
            stat = os.stat(os.path.join(self._dir, f.path) if not os.path.isabs(f.path) else f.path)
        except OSError:
            stat = None
        if stat is not None and _identity(stat) == f.fid:
            return False
        for path in glob.glob(os.path.join(glob.escape(self._dir), self._pattern), recursive=True):
            try:
                if _identity(os.stat(path)) == f.fid:
                    log.info("%s: %s is now %s (renamed; read on)", self.name, f.path, path)
                    f.path = path
                    return False
            except OSError:
                continue
        return True

    def _lines(self, f: _File, out: list[SourceRecord]) -> None:
        data = f.pending
        start = 0
        base = f.event_end if f.event else f.position  # the file position of data[0]
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            self._line(f, data[start:nl], base + nl + 1, out)
            start = nl + 1
        f.pending = data[start:]
        if len(f.pending) > self._max_event:
            log.warning("%s: a line of %s is longer than max.event.bytes=%d; it is cut there", self.name, f.path,
                        self._max_event)
            self._line(f, f.pending, base + len(data), out)
            f.pending = b""

    def _line(self, f: _File, line: bytes, end: int, out: list[SourceRecord]) -> None:
        """One line ending at file position ``end``."""
        if line.endswith(b"\r"):
            line = line[:-1]
        if self._start is None:
            out.append(self._record(f, line, end))
            f.position = end
            return
        if f.event and self._start.match(line):
            self._emit(f, out)
        f.event.append(line)
        f.event_end = end
        f.last_line_at = time.monotonic()
        if sum(len(x) for x in f.event) > self._max_event:
            self._emit(f, out)

    def _emit(self, f: _File, out: list[SourceRecord]) -> None:
        text = b"\n".join(f.event)[: self._max_event]
        out.append(self._record(f, text, f.event_end))
        f.position = f.event_end
        f.event = []

    def _record(self, f: _File, data: bytes, end: int) -> SourceRecord:
        if f.head_len < _HEAD and end > f.head_len:
            f.head_len = min(end, _HEAD)
            f.head = _head_crc(f.handle, f.head_len)
        now = time.time()
        offset = {"position": end, "path": f.path, "head": f.head, "head.length": f.head_len}
        headers = None
        if self._file_header:
            headers = ConnectHeaders()
            headers.add(self._file_header, f.path, Schema.OPTIONAL_STRING_SCHEMA)
        if self._raw_lines:
            return SourceRecord(f.partition, offset, self._topic, None, None, None, Schema.BYTES_SCHEMA, data,
                                int(now * 1000), headers)
        event = file_line_event(f.path, data.decode("utf-8", "replace"), iso_timestamp(now), self._hostname)
        return SourceRecord(f.partition, offset, self._topic, None, None, None, LOG_EVENT_SCHEMA, event,
                            int(now * 1000), headers)


def _head_crc(handle: Any, length: int) -> int:
    """The CRC-32 of a file's first ``length`` bytes, read without moving the handle."""
    return zlib.crc32(os.pread(handle.fileno(), length, 0))


class TailDirSourceConnector(IngestConnector):
    """Every file under a directory matching a glob, tailed through rotation and truncation, into a topic."""

    CONFIG = CONFIG_DEF
    TASK = TailDirSourceTask
