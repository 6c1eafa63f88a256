"""FileStreamSinkConnector and its task: append each record's value to a file (or stdout) as a line.

Values are written as text: strings as they are, booleans as ``true``/``false``,
bytes decoded as UTF-8, lists and maps as Java prints them (``[a, b]``, ``{k=v}`` in
HashMap order, see connect/api/java_text.py; maps held as columns, as JsonConverter reads them and the
built-in transforms keep them, are printed from the columns), anything else with ``str()``. A null value
(a tombstone) writes nothing; Kafka's PrintStream would write the text ``null``. ``put``
buffers a whole batch in one write; ``flush`` flushes and fsyncs the file (and,
once after creating it, its directory), so offsets committed after a flush
never run ahead of what is on disk.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectException,
    FilePath,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkRecordBatch,
    SinkTask,
    Task,
    TopicPartition,
)
from connect.api.java_text import java_map_lines, java_texts, java_to_string
from connect.api.version import distribution_version

__all__ = ["FileStreamSinkConnector", "FileStreamSinkTask"]

log = logging.getLogger(__name__)

FILE_CONFIG = "file"

CONFIG_DEF = ConfigDef().define(
    FILE_CONFIG,
    ConfigType.STRING,
    None,
    FilePath(mode="write"),
    importance=Importance.HIGH,
    documentation="The file to append to. Without it the task writes to standard output.",
)



def _version() -> str:
    return distribution_version(__name__)


class FileStreamSinkConnector(SinkConnector):
    """Writes the records of its topics to one file; every task appends to it."""

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
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass  # nothing runs in the connector itself

    def alter_offsets(
        self, connector_config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        return True  # the file holds no offsets of its own, so any change is fine


_STR_ONLY = {str}


def _line(value: Any) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return java_to_string(value)  # a str as it is, a bool as true/false, a map in HashMap order


class FileStreamSinkTask(SinkTask):
    """Appends one line per record value; durable as of each flush."""

    def __init__(self) -> None:
        self._filename: str | None = None
        self._out: BinaryIO | None = None
        self._sync_directory = False  # the file was created: its directory entry needs one fsync too

    def version(self) -> str:
        return _version()

    def start(self, props: Mapping[str, str]) -> None:
        self._filename = AbstractConfig(CONFIG_DEF, props).get_string(FILE_CONFIG) or None
        if self._filename is None:
            # a warning: in a worker, stdout is rarely what was meant (a misspelt "file", say)
            log.warning("[%s] FileStreamSink has no %s setting: writing to standard output", props.get("name", ""),
                        FILE_CONFIG)
            return
        try:
            created = not os.path.exists(self._filename)
            # unbuffered: each put() is one write of whole lines, so a crash never leaves half a line
            self._out = open(self._filename, "ab", buffering=0)  # closed in stop()
        except OSError as exc:
            raise ConnectException(f"Couldn't find or create file '{self._filename}' for FileStreamSinkTask") from exc
        self._sync_directory = created
        log.info("FileStreamSinkTask appending to %s", self._filename)

    def put(self, records: Sequence[SinkRecord]) -> None:
        text = self._text(records)
        if not text:
            return
        if self._filename is None:  # stdout, through its text layer so it interleaves with other output
            sys.stdout.write(text)
            return
        if self._out is None:
            raise ConnectException(f"FileStreamSinkTask for {self._filename} is stopped")
        try:
            data = text.encode()
        except UnicodeEncodeError:  # a lone surrogate; Java writes '?' for it
            data = text.encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            written = self._out.write(view)
            view = view[written:]

    @staticmethod
    def _text(records: Sequence[SinkRecord]) -> str:
        """The lines of the records' values, each ended by a newline."""
        if isinstance(records, SinkRecordBatch):
            maps = records.value_maps()
            table = maps.table() if maps is not None else None
            if table is not None:  # schemaless maps of one key set, as columns: printed a column at a time
                return java_map_lines(table.keys, table.java_layout, table.columns, len(records), table.kinds)
            # a SinkRecordBatch gives its values without making a record per value
            values = records.values
        else:
            values = [r.value for r in records]
        if set(map(type, values)) == _STR_ONLY:  # the usual batch of a StringConverter: lines as they are
            lines = list(values)
        else:  # printed as a batch: maps sharing a key set are laid out once and printed column by column
            lines = java_texts([v for v in values if v is not None], _line)
        if not lines:
            return ""
        lines.append("")  # so the joined text ends with a newline
        return "\n".join(lines)

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        if self._filename is None:
            sys.stdout.flush()
            return
        out = self._out
        if out is None:
            return  # stopped: stop() already made everything durable
        try:
            out.flush()
            os.fsync(out.fileno())
        except (ValueError, OSError):
            if out.closed:
                return  # closed meanwhile by stop() on another thread, which flushed and synced it first
            raise
        if self._sync_directory:
            self._fsync_directory()
            self._sync_directory = False

    def _fsync_directory(self) -> None:
        directory = os.path.dirname(os.path.abspath(self._filename or "."))
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def stop(self) -> None:
        out, self._out = self._out, None
        if out is None:
            return
        try:
            out.flush()
            os.fsync(out.fileno())  # a flush() after stop() finds nothing left to make durable
        finally:
            out.close()
