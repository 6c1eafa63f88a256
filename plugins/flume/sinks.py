"""The sinks a Flume agent config names that Headrace had no match for: ``file_roll`` and ``logger``.

``FileRollSink`` writes each record's value as a line (the bytes as they are, then ``\\n``, as Flume's TEXT
serializer does) into files in ``directory`` named ``<epoch ms>-<n>``, starting a new file once
``roll.interval.ms`` has passed (0: one file for ever). Unlike Flume it does not make empty files when
nothing arrives. A file is flushed and fsynced before the worker commits the offsets of what it holds, so
a crash loses nothing committed (the records after the last commit are written again: at least once).

``LoggerSink`` logs each record at INFO with its headers and the first bytes of its value, as Flume's
logger sink does, for trying a config out.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectException,
    FilePath,
    Importance,
    Range,
    SinkConnector,
    SinkRecord,
    SinkRecordBatch,
    SinkTask,
    Task,
    TopicPartition,
)
from connect.api.version import distribution_version

__all__ = ["FileRollSinkConnector", "FileRollSinkTask", "LoggerSinkConnector", "LoggerSinkTask"]

log = logging.getLogger(__name__)

DIRECTORY_CONFIG = "directory"
ROLL_INTERVAL_CONFIG = "roll.interval.ms"
MAX_BODY_CONFIG = "max.body.bytes"

FILE_ROLL_CONFIG = (
    ConfigDef()
    .define(DIRECTORY_CONFIG, ConfigType.STRING, validator=FilePath(mode="write"), importance=Importance.HIGH,
            documentation="The directory the files are written in (created when missing).")
    .define(ROLL_INTERVAL_CONFIG, ConfigType.LONG, 30_000, Range.at_least(0), importance=Importance.MEDIUM,
            documentation="Start a new file when the current one is this old; 0 writes one file only.")
)
LOGGER_CONFIG = ConfigDef().define(
    MAX_BODY_CONFIG, ConfigType.INT, 16, Range.at_least(0), importance=Importance.LOW,
    documentation="How many bytes of each value are logged (Flume's maxBytesToLog).")


def _version() -> str:
    return distribution_version(__name__)


def _bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return str(value).encode("utf-8", "replace")


class _OneConfigSink(SinkConnector):
    CONFIG: ConfigDef
    TASK: type[Task]

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return _version()

    def config(self) -> ConfigDef:
        return ConfigDef(self.CONFIG)

    def start(self, props: Mapping[str, str]) -> None:
        AbstractConfig(self.CONFIG, props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return self.TASK

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]  # one task: the files of one directory are written in order

    def stop(self) -> None:
        pass


class FileRollSinkTask(SinkTask):
    def __init__(self) -> None:
        self._dir = ""
        self._interval = 30.0
        self._out: BinaryIO | None = None
        self._opened = 0.0
        self._count = 0
        self._name = "FileRollSink"

    def version(self) -> str:
        return _version()

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(FILE_ROLL_CONFIG, props)
        self._dir = str(config.get_string(DIRECTORY_CONFIG))
        self._interval = int(config.get_long(ROLL_INTERVAL_CONFIG) or 0) / 1000.0
        self._name = f"FileRollSink[{props.get('name', '?')}]"
        try:
            os.makedirs(self._dir, exist_ok=True)
        except OSError as exc:
            raise ConnectException(f"{self._name} cannot create directory {self._dir}: {exc}") from exc
        log.info("%s writing files in %s, a new one every %g s", self._name, self._dir, self._interval)

    def _file(self) -> BinaryIO:
        now = time.time()
        if self._out is not None and self._interval and now - self._opened >= self._interval:
            self._close()
        if self._out is None:
            self._count += 1
            path = os.path.join(self._dir, f"{int(now * 1000)}-{self._count}")
            self._out = open(path, "ab", buffering=0)  # closed on roll and in stop()
            self._opened = now
            _fsync_dir(self._dir)
            log.info("%s started file %s", self._name, path)
        return self._out

    def put(self, records: Sequence[SinkRecord]) -> None:
        values = records.values if isinstance(records, SinkRecordBatch) else [r.value for r in records]
        data = b"".join(_bytes(v) + b"\n" for v in values if v is not None)
        if not data:
            return
        out = self._file()
        view = memoryview(data)
        while view:
            view = view[out.write(view) or 0:]

    def flush(self, offsets: Mapping[TopicPartition, Any]) -> None:
        if self._out is not None:
            os.fsync(self._out.fileno())

    def _close(self) -> None:
        if self._out is not None:
            os.fsync(self._out.fileno())
            self._out.close()
            self._out = None

    def stop(self) -> None:
        self._close()


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileRollSinkConnector(_OneConfigSink):
    """Flume's file_roll: records' values as lines in files rolled by time."""

    CONFIG = FILE_ROLL_CONFIG
    TASK = FileRollSinkTask


class LoggerSinkTask(SinkTask):
    def __init__(self) -> None:
        self._max = 16
        self._name = "LoggerSink"

    def version(self) -> str:
        return _version()

    def start(self, props: Mapping[str, str]) -> None:
        self._max = int(AbstractConfig(LOGGER_CONFIG, props).get_int(MAX_BODY_CONFIG) or 0)
        self._name = f"LoggerSink[{props.get('name', '?')}]"

    def put(self, records: Sequence[SinkRecord]) -> None:
        for record in records:
            headers = {h.key: h.value for h in record.headers} if record.headers is not None else {}
            body = _bytes(record.value)[:self._max] if record.value is not None else b""
            log.info("%s Event: { headers:%s body: %s %r }", self._name, headers, body.hex(" "), body)

    def stop(self) -> None:
        pass


class LoggerSinkConnector(_OneConfigSink):
    """Flume's logger sink: each record logged at INFO (headers and the first bytes of the value)."""

    CONFIG = LOGGER_CONFIG
    TASK = LoggerSinkTask
