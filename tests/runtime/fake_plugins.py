"""Plugins for the runtime unit tests: scripted source and sink tasks, and connectors the Worker starts by name."""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.config import ConfigDef
from connect.api.connector import (
    SinkConnector,
    SinkTask,
    SourceConnector,
    SourceTask,
    StreamingSinkTask,
    Task,
)
from connect.api.errors import ConnectException
from connect.api.records import SinkRecord, SourceRecord
from connect.api.schema import Schema
from connect.api.topic_partition import TopicPartition
from connect.runtime.plugins import PluginRegistry
from plugins.converters import header as header_module
from plugins.converters import string as string_module

WAIT = 5.0  # the longest a test waits for another thread; a passing test waits microseconds

PARTITION = {"file": "lines"}


def lines_batch(start: int, count: int, topic: str = "lines") -> list[SourceRecord]:
    return [SourceRecord(PARTITION, {"position": i + 1}, topic, value_schema=Schema.STRING_SCHEMA, value=f"line-{i}")
            for i in range(start, start + count)]


class ScriptedSourceTask(SourceTask):
    """Polls return the scripted batches in turn (an exception in the script is raised), then None.

    ``hold`` makes poll block until it is set (a source waiting for data); ``in_poll`` is set meanwhile.
    """

    def __init__(self, script: Sequence[Any] = ()) -> None:
        self.script = list(script)
        self.hold = threading.Event()
        self.hold.set()
        self.in_poll = threading.Event()
        self.stopped = threading.Event()
        self.commits = 0

    def version(self) -> str:
        return "test"

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def poll(self) -> Sequence[SourceRecord] | None:
        self.in_poll.set()
        try:
            self.hold.wait(WAIT)
        finally:
            self.in_poll.clear()
        if not self.script:
            return None
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def commit(self) -> None:
        self.commits += 1

    def stop(self) -> None:
        self.stopped.set()
        self.hold.set()


class RecordingSinkTask(SinkTask):
    """Keeps the values it was given; ``fail_put``/``fail_pre_commit`` make those calls raise."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.flushed: list[dict[TopicPartition, int]] = []
        self.opened: list[TopicPartition] = []
        self.fail_put: list[BaseException] = []
        self.fail_pre_commit: BaseException | None = None
        self.stopped = False

    def version(self) -> str:
        return "test"

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def open(self, partitions: Any) -> None:
        self.opened.extend(partitions)

    def put(self, records: Sequence[SinkRecord]) -> None:
        if self.fail_put:
            raise self.fail_put.pop(0)
        self.values.extend(r.value for r in records)

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        if self.fail_pre_commit is not None:
            raise self.fail_pre_commit
        self.flushed.append(dict(current_offsets))
        return current_offsets

    def stop(self) -> None:
        self.stopped = True


class ControlledStreamingTask(StreamingSinkTask):
    """run() blocks until stopped (or raises ``fail`` once ``go_fail`` is set); records pause/resume calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.stop_event = threading.Event()
        self.go_fail = threading.Event()
        self.fail: BaseException | None = None
        self.running = threading.Event()

    def version(self) -> str:
        return "test"

    def start(self, props: Mapping[str, str]) -> None:
        self.calls.append("start")

    def run(self) -> None:
        self.running.set()
        while not self.stop_event.is_set():
            if self.go_fail.wait(0.001) and self.fail is not None:
                raise self.fail

    def pause(self) -> None:
        self.calls.append("pause")

    def resume(self) -> None:
        self.calls.append("resume")

    def progress(self) -> Mapping[str, Any]:
        return {"batches": 3}

    def stop(self) -> None:
        self.stop_event.set()


# connectors the Worker and the herder start by class name; task behaviour comes from the task config
FAILING: set[str] = set()  # ``fail`` tokens of CountingSourceTasks whose polls fail for now


class CountingSourceTask(SourceTask):
    """Sends ``lines`` records, then idles; its polls fail while its ``fail`` token is in ``FAILING``."""

    def version(self) -> str:
        return "test"

    def start(self, props: Mapping[str, str]) -> None:
        self.left = int(props.get("lines", "3"))
        self.fail = props.get("fail", "")
        self.stopping = threading.Event()

    def poll(self) -> Sequence[SourceRecord] | None:
        if self.fail in FAILING:
            raise ConnectException("the source broke")
        if self.left:
            count, self.left = self.left, 0
            return lines_batch(0, count, "counted")
        self.stopping.wait(0.002)
        return None

    def stop(self) -> None:
        self.stopping.set()


class CountingSourceConnector(SourceConnector):
    def version(self) -> str:
        return "test"

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[Task]:
        return CountingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{k: v for k, v in self.props.items() if k in ("lines", "fail")} for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ConfigDef()


PUT_GATE = threading.Event()  # NullSinkTask.put waits for it (set: puts return at once)
PUT_GATE.set()
IN_PUT = threading.Event()  # set while a NullSinkTask is inside put
PUT_VALUES: list[Any] = []


class NullSinkTask(SinkTask):
    """Keeps the values it was put in ``PUT_VALUES``; a put waits for ``PUT_GATE``."""

    def version(self) -> str:
        return "test"

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def put(self, records: Sequence[SinkRecord]) -> None:
        if not records:
            return
        IN_PUT.set()
        try:
            PUT_GATE.wait(WAIT)
        finally:
            IN_PUT.clear()
        PUT_VALUES.extend(r.value for r in records)

    def stop(self) -> None:
        PUT_GATE.set()


class NullSinkConnector(SinkConnector):
    def version(self) -> str:
        return "test"

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[Task]:
        return NullSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{} for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ConfigDef()



def registry() -> PluginRegistry:
    """The converters and the fake connectors, without scanning the installed entry points."""
    plugins = PluginRegistry(use_entry_points=False)
    for module in (string_module, header_module, sys.modules[__name__]):
        plugins.scan_module(module)
    return plugins
