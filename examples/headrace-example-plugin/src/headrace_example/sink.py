"""TextFileSinkConnector: one line per record, formatted by ``line.format``, appended to a file.

``put`` writes each batch in one ``write``; ``flush`` fsyncs the file, and the worker commits a sink's
offsets only after its ``flush`` (through ``pre_commit``) returns, so a committed offset never covers a
line that a crash could lose. A record the format cannot render (a value that is not text or a number,
bytes that are not UTF-8) is handed to the worker's error handling: with ``errors.tolerance=all`` it is
skipped, logged and sent to the dead-letter topic if one is set; with ``none`` the task fails, naming it.
"""

from __future__ import annotations

import logging
import os
import string
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from connect.api import (
    AbstractConfig,
    CompositeValidator,
    ConfigDef,
    ConfigType,
    ConnectException,
    DataException,
    FilePath,
    Importance,
    LambdaValidator,
    NonEmptyString,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Task,
    TopicPartition,
)
from connect.api.version import distribution_version

__all__ = ["TextFileSinkConnector", "TextFileSinkTask"]

log = logging.getLogger(__name__)

FILE_CONFIG = "file"
LINE_FORMAT_CONFIG = "line.format"
LINE_FIELDS = ("topic", "partition", "offset", "timestamp", "key", "value")


def _check_line_format(name: str, text: Any) -> str | None:
    """The LambdaValidator's check: an error message, or None when ``text`` is a usable format."""
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(text) if field is not None]
    except ValueError as exc:
        return f"Not a format string: {exc}"
    unknown = [field for field in fields if field not in LINE_FIELDS]
    if unknown:
        known = ", ".join("{" + field + "}" for field in LINE_FIELDS)
        return f"Unknown field {{{unknown[0]}}}; the fields are {known}"
    if "\n" in text:
        return "A line format cannot contain a line break"
    return None


CONFIG_DEF = (
    ConfigDef()
    .define(
        FILE_CONFIG,
        ConfigType.STRING,
        # FilePath declares the key a path the plugin writes: the worker then refuses any path outside its
        # connector.allowed.paths, before the connector starts
        validator=CompositeValidator.of(NonEmptyString(), FilePath(mode="write")),
        importance=Importance.HIGH,
        documentation="The file the lines are appended to; created if missing.",
    )
    .define(
        LINE_FORMAT_CONFIG,
        ConfigType.STRING,
        "{value}",
        LambdaValidator(_check_line_format, "a Python format string of " + ", ".join(LINE_FIELDS)),
        importance=Importance.MEDIUM,
        documentation="How each record is written: a Python format string with the fields "
        + ", ".join("{" + f + "}" for f in LINE_FIELDS) + ".",
    )
)


class TextFileSinkConnector(SinkConnector):
    """Appends the records of its topics to one file; every task appends whole batches to it."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return distribution_version(__name__)

    def config(self) -> ConfigDef:
        return ConfigDef(CONFIG_DEF)  # a copy: the worker adds its own keys to what it is given

    def start(self, props: Mapping[str, str]) -> None:
        AbstractConfig(CONFIG_DEF, props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return TextFileSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # the worker shares the topics' partitions out among the tasks; each gets the same settings
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def alter_offsets(
        self, connector_config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        return True  # the file records no offsets of its own, so any change is the worker's to make


class TextFileSinkTask(SinkTask):
    """Formats and appends records; what ``flush`` returned from is on disk."""

    def __init__(self) -> None:
        self._filename = ""
        self._line_format = "{value}"
        self._out: BinaryIO | None = None

    def version(self) -> str:
        return distribution_version(__name__)

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(CONFIG_DEF, props)
        self._filename = str(config.get_string(FILE_CONFIG))
        self._line_format = str(config.get_string(LINE_FORMAT_CONFIG))
        try:
            # unbuffered append: each put() is one write() of whole lines, never half a line on disk
            self._out = open(self._filename, "ab", buffering=0)  # closed in stop()
        except OSError as exc:
            raise ConnectException(f"{FILE_CONFIG}={self._filename}: cannot open it for appending: "
                                   f"{exc.strerror}") from exc
        log.info("TextFileSinkTask of connector %s appending to %s", props.get("name", "?"), self._filename)

    # --8<-- [start:put]
    def put(self, records: Sequence[SinkRecord]) -> None:
        lines: list[str] = []
        for record in records:
            if record.value is None:
                continue  # a tombstone (deleted key) has nothing to write
            try:
                lines.append(self._render(record))
            except DataException as exc:
                self._report(record, exc)
        if not lines:
            return
        if self._out is None:
            raise ConnectException(f"TextFileSinkTask for {self._filename} is stopped")
        data = ("\n".join(lines) + "\n").encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[self._out.write(view):]
    # --8<-- [end:put]

    def _render(self, record: SinkRecord) -> str:
        return self._line_format.format(
            topic=record.topic,
            partition=record.kafka_partition,
            offset=record.kafka_offset,
            timestamp=record.timestamp,
            key=_text(record, "key", record.key),
            value=_text(record, "value", record.value),
        )

    # --8<-- [start:report-flush-stop]
    def _report(self, record: SinkRecord, error: DataException) -> None:
        # The errant record reporter applies the connector's errors.tolerance, errors.log.* and DLQ
        # settings; without one (an older worker) failing the task is the only safe answer.
        reporter = self.context.errant_record_reporter()
        if reporter is None:
            raise error
        reporter.report(record, error)

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        if self._out is not None:
            os.fsync(self._out.fileno())  # the worker commits current_offsets only after this returns

    def stop(self) -> None:
        out, self._out = self._out, None
        if out is not None:
            try:
                os.fsync(out.fileno())
            finally:
                out.close()
    # --8<-- [end:report-flush-stop]


def _text(record: SinkRecord, part: str, value: Any) -> str:
    """``value`` as the text of a line; DataException naming the record when it has none."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataException(f"Record {_where(record)}: its {part} is not UTF-8 text ({exc.reason} "
                                f"at byte {exc.start})") from exc
    raise DataException(f"Record {_where(record)}: its {part} is a {type(value).__name__}, "
                        "which TextFileSink cannot write as text; put a converter or transform before it")


def _where(record: SinkRecord) -> str:
    return f"{record.topic}-{record.kafka_partition}@{record.kafka_offset}"
