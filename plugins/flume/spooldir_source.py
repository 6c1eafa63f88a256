"""SpoolDirSource: Flume's spooling-directory source. Files dropped (complete, never changed afterwards) in
``spool.dir`` are read once, line by line, and renamed with ``file.suffix`` (or deleted) only once the log has
every one of their records.

Each line is one record: its value the line's bytes (decoded with ``input.charset``, written as UTF-8, cut
into records of at most ``max.line.length`` characters as Flume's LINE deserializer splits a longer line), with the optional headers
``file.header.key`` (the file's absolute path) and ``basename.header.key`` (its name). Files are taken one at
a time, in ``consume.order`` (oldest or youngest by modification time, then by name; or random); names
starting with ``.``, names ending with the suffix, and names that ``include.pattern`` does not match or
``ignore.pattern`` matches are left alone.

Restart safety: a file's source partition is its path, its offset the byte after the last line handed out
with the file's identity (device, inode and a CRC of its first bytes, so a new file under a used name starts
from 0). A file is renamed (or deleted) only after every record of it is acknowledged by the log
(``commit_record``). After a crash, a file not yet renamed is read again from its last committed offset, so
the records since the last offset commit come again: duplicates are bounded by ``offset.flush.interval.ms``,
and nothing acknowledged is lost. Only files inside ``spool.dir`` (after symlinks) are read; ``spool.dir`` is
a path the worker's ``connector.allowed.paths`` governs (the source renames and deletes files in it).
"""

from __future__ import annotations

import codecs
import logging
import os
import random
import re
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
from plugins.ingest._common import TASK_ID_CONFIG, TOPIC_CONFIG, IngestConnector, version

__all__ = ["SpoolDirSourceConnector", "SpoolDirSourceTask"]

log = logging.getLogger(__name__)

SPOOL_DIR_CONFIG = "spool.dir"
FILE_SUFFIX_CONFIG = "file.suffix"
DELETE_POLICY_CONFIG = "delete.policy"
INCLUDE_CONFIG = "include.pattern"
IGNORE_CONFIG = "ignore.pattern"
ORDER_CONFIG = "consume.order"
FILE_HEADER_CONFIG = "file.header.key"
BASENAME_HEADER_CONFIG = "basename.header.key"
MAX_LINE_CONFIG = "max.line.length"
CHARSET_CONFIG = "input.charset"
DECODE_ERRORS_CONFIG = "decode.error.policy"
BATCH_SIZE_CONFIG = "batch.size"
POLL_DELAY_CONFIG = "poll.delay.ms"

_HEAD = 256  # bytes of a file's start that tell it apart from another file under the same name
_CHUNK = 1 << 16


def _regex(_name: str, value: Any) -> str | None:
    try:
        re.compile(str(value or ""))
    except re.error as exc:
        return f"not a regular expression: {exc}"
    return None


def _charset(_name: str, value: Any) -> str | None:
    try:
        codecs.lookup(str(value))
    except LookupError:
        return "not a character set Python knows (e.g. UTF-8, ISO-8859-1)"
    return None


CONFIG_DEF = (
    ConfigDef()
    .define(SPOOL_DIR_CONFIG, ConfigType.STRING, validator=FilePath(mode="write"), importance=Importance.HIGH,
            documentation="The directory files are dropped in; they are read, then renamed or deleted there.")
    .define(TOPIC_CONFIG, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
            documentation="The topic every line is written to.")
    .define(FILE_SUFFIX_CONFIG, ConfigType.STRING, ".COMPLETED", NonEmptyString(), importance=Importance.MEDIUM,
            documentation="Appended to the name of a file once the log has all of it (delete.policy=never).")
    .define(DELETE_POLICY_CONFIG, ConfigType.STRING, "never", ValidString.in_("never", "immediate"),
            importance=Importance.MEDIUM,
            documentation="never: rename a finished file with file.suffix; immediate: delete it.")
    .define(INCLUDE_CONFIG, ConfigType.STRING, "^.*$", LambdaValidator(_regex, "a regular expression"),
            importance=Importance.MEDIUM, documentation="Only file names this regular expression matches are read.")
    .define(IGNORE_CONFIG, ConfigType.STRING, "^$", LambdaValidator(_regex, "a regular expression"),
            importance=Importance.MEDIUM, documentation="File names this regular expression matches are skipped.")
    .define(ORDER_CONFIG, ConfigType.STRING, "oldest", ValidString.in_("oldest", "youngest", "random"),
            importance=Importance.LOW,
            documentation="Which file next: oldest or youngest by modification time (then by name), or random.")
    .define(FILE_HEADER_CONFIG, ConfigType.STRING, "", importance=Importance.LOW,
            documentation="If set, a header of this name holds the file's absolute path.")
    .define(BASENAME_HEADER_CONFIG, ConfigType.STRING, "", importance=Importance.LOW,
            documentation="If set, a header of this name holds the file's name.")
    .define(MAX_LINE_CONFIG, ConfigType.INT, 2048, Range.at_least(1), importance=Importance.LOW,
            documentation="A longer line becomes one record per this many characters, as Flume's LINE "
            "deserializer splits it.")
    .define(CHARSET_CONFIG, ConfigType.STRING, "UTF-8", LambdaValidator(_charset, "a character set"),
            importance=Importance.LOW, documentation="The files' character set; records are written as UTF-8.")
    .define(DECODE_ERRORS_CONFIG, ConfigType.STRING, "FAIL", ValidString.in_("FAIL", "REPLACE", "IGNORE"),
            importance=Importance.LOW,
            documentation="Bytes that are not input.charset: FAIL the task naming the file and line, REPLACE "
            "them with U+FFFD, or IGNORE (drop) them.")
    .define(BATCH_SIZE_CONFIG, ConfigType.INT, 100, Range.at_least(1), importance=Importance.LOW,
            documentation="The most lines one poll returns.")
    .define(POLL_DELAY_CONFIG, ConfigType.INT, 500, Range.at_least(10), importance=Importance.LOW,
            documentation="How long to wait before looking for new files when there are none.")
)


class _Spooled:
    """One file being read, or read and waiting for the log to acknowledge its last records."""

    __slots__ = ("path", "handle", "identity", "head", "position", "line", "emitted", "acked", "read_all")

    def __init__(self, path: str, handle: Any, identity: str, head: int, position: int, line: int) -> None:
        self.path = path
        self.handle = handle
        self.identity = identity
        self.head = head
        self.position = position  # the byte after the last line handed out
        self.line = line  # lines handed out (for messages)
        self.emitted = 0
        self.acked = 0
        self.read_all = False


class SpoolDirSourceTask(SourceTask):
    def __init__(self) -> None:
        self._dir = ""
        self._topic = ""
        self._lock = threading.Lock()
        self._current: _Spooled | None = None
        self._finishing: list[_Spooled] = []
        self._by_record: dict[int, _Spooled] = {}
        self._stopping = threading.Event()
        self.name = "SpoolDirSource"

    def version(self) -> str:
        return version()

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(CONFIG_DEF, props)
        self._dir = os.path.realpath(str(config.get_string(SPOOL_DIR_CONFIG)))
        if not os.path.isdir(self._dir):
            raise ConnectException(f"SpoolDirSource: {self._dir} is not a directory")
        self._topic = str(config.get_string(TOPIC_CONFIG))
        self._suffix = str(config.get_string(FILE_SUFFIX_CONFIG))
        self._delete = config.get_string(DELETE_POLICY_CONFIG) == "immediate"
        self._include = re.compile(str(config.get_string(INCLUDE_CONFIG)))
        self._ignore = re.compile(str(config.get_string(IGNORE_CONFIG)))
        self._order = str(config.get_string(ORDER_CONFIG))
        self._file_header = str(config.get_string(FILE_HEADER_CONFIG) or "")
        self._basename_header = str(config.get_string(BASENAME_HEADER_CONFIG) or "")
        self._max_line = int(config.get_int(MAX_LINE_CONFIG) or 1)
        self._charset = str(config.get_string(CHARSET_CONFIG))
        self._errors = {"FAIL": "strict", "REPLACE": "replace", "IGNORE": "ignore"}[
            str(config.get_string(DECODE_ERRORS_CONFIG))]
        self._batch = int(config.get_int(BATCH_SIZE_CONFIG) or 1)
        self._delay = int(config.get_int(POLL_DELAY_CONFIG) or 10) / 1000.0
        self.name = f"SpoolDirSource[{props.get('name', '?')}|task-{props.get(TASK_ID_CONFIG, '0')}]"
        self._stopping.clear()
        log.info("%s reading files dropped in %s into topic %s; finished files are %s", self.name, self._dir,
                 self._topic, "deleted" if self._delete else f"renamed with {self._suffix}")

    def stop(self) -> None:
        self._stopping.set()

    # --- which file next -------------------------------------------------------------------------------

    def _candidates(self) -> list[tuple[float, str]]:
        busy = {f.path for f in self._finishing}
        out = []
        try:
            names = os.listdir(self._dir)
        except OSError as exc:
            raise ConnectException(f"{self.name} cannot list {self._dir}: {exc}") from exc
        for name in names:
            if name.startswith(".") or name.endswith(self._suffix) or not self._include.search(name) \
                    or self._ignore.search(name):
                continue
            path = os.path.join(self._dir, name)
            real = os.path.realpath(path)
            if not real.startswith(self._dir + os.sep):
                log.warning("%s skips %s: it resolves to %s, outside %s", self.name, path, real, self._dir)
                continue
            if path in busy or not os.path.isfile(real):
                continue
            try:
                out.append((os.stat(real).st_mtime, path))
            except FileNotFoundError:
                continue
        return out

    def _next_file(self) -> _Spooled | None:
        found = self._candidates()
        if not found:
            return None
        if self._order == "random":
            _, path = random.choice(found)
        else:
            found.sort(reverse=self._order == "youngest")
            _, path = found[0]
        handle = open(path, "rb")  # noqa: SIM115 - kept open while the file is read, closed in _finish
        stat = os.fstat(handle.fileno())
        identity = f"{stat.st_dev}:{stat.st_ino}"
        head = zlib.crc32(os.pread(handle.fileno(), _HEAD, 0))
        offset = self.context.offset_storage_reader().offset({"spool.file": path}) or {}
        position = line = 0
        if offset.get("id") == identity and offset.get("head") == head:
            position, line = int(offset.get("position", 0)), int(offset.get("line", 0))
            log.info("%s resumes %s at byte %d (line %d)", self.name, path, position, line)
        else:
            log.info("%s reads %s", self.name, path)
        handle.seek(position)
        return _Spooled(path, handle, identity, head, position, line)

    # --- reading -------------------------------------------------------------------------------------------

    def poll(self) -> list[SourceRecord] | None:
        self._finish_acknowledged()
        if self._current is None:
            self._current = self._next_file()
            if self._current is None:
                self._stopping.wait(self._delay)
                return None
        f = self._current
        out: list[SourceRecord] = []
        while len(out) < self._batch:
            raw = f.handle.readline()  # a last line without its newline is a line too
            if not raw:
                break
            out.extend(self._records(f, raw))
        with self._lock:
            for record in out:
                self._by_record[id(record)] = f
            f.emitted += len(out)
            if len(out) < self._batch:  # end of file
                f.read_all = True
                self._finishing.append(f)
                self._current = None
        if not out:
            self._finish_acknowledged()
            return None
        return out

    def _records(self, f: _Spooled, raw: bytes) -> list[SourceRecord]:
        """The records of one line: one, or (as Flume's LINE deserializer splits a line longer than its
        maxLineLength) one per max.line.length characters."""
        start = f.position
        f.position += len(raw)
        f.line += 1
        data = raw[:-1] if raw.endswith(b"\n") else raw
        try:
            text = data.decode(self._charset, self._errors)
        except UnicodeDecodeError as exc:
            raise ConnectException(f"{self.name}: {f.path} line {f.line}: byte {exc.start} is not "
                                   f"{self._charset} (decode.error.policy=FAIL; REPLACE or IGNORE read on)") from None
        headers = ConnectHeaders()
        if self._file_header:
            headers.add(self._file_header, f.path, Schema.OPTIONAL_STRING_SCHEMA)
        if self._basename_header:
            headers.add(self._basename_header, os.path.basename(f.path), Schema.OPTIONAL_STRING_SCHEMA)
        n = self._max_line
        pieces = [text[i:i + n] for i in range(0, len(text), n)] or [""]
        now = int(time.time() * 1000)
        out = []
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            # only the last piece's offset passes the line: a restart after a part of it reads all of it again
            offset = {"position": f.position if last else start, "line": f.line if last else f.line - 1,
                      "id": f.identity, "head": f.head}
            out.append(SourceRecord({"spool.file": f.path}, offset, self._topic, None, None, None,
                                    Schema.BYTES_SCHEMA, piece.encode("utf-8"), now, headers))
        return out

    # --- finishing ---------------------------------------------------------------------------------------

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        # called for every record once the log has it (or a transform dropped it): count it for its file
        with self._lock:
            f = self._by_record.pop(id(record), None)
            if f is not None:
                f.acked += 1

    def _finish_acknowledged(self) -> None:
        with self._lock:
            done = [f for f in self._finishing if f.read_all and f.acked >= f.emitted]
            self._finishing = [f for f in self._finishing if f not in done]
        for f in done:
            f.handle.close()
            try:
                if self._delete:
                    os.remove(f.path)
                    log.info("%s deleted %s: the log has its %d line(s)", self.name, f.path, f.line)
                else:
                    if os.path.exists(f.path + self._suffix):
                        raise OSError(f"{os.path.basename(f.path) + self._suffix} exists already: a file name was "
                                      "used twice, which a spooling directory does not allow")
                    os.rename(f.path, f.path + self._suffix)
                    log.info("%s renamed %s to %s: the log has its %d line(s)", self.name, f.path,
                             os.path.basename(f.path) + self._suffix, f.line)
            except OSError as exc:
                raise ConnectException(f"{self.name} cannot {'delete' if self._delete else 'rename'} {f.path} "
                                       f"after reading it: {exc}") from exc


class SpoolDirSourceConnector(IngestConnector):
    """Files dropped in a directory, each read once and renamed (or deleted) once the log has it, into a topic."""

    CONFIG = CONFIG_DEF
    TASK = SpoolDirSourceTask
