"""What the worker gives a task, reduced to what plugin tests use: the Redis tasks, the ingestion and Flume sources, and bench/bench_redis.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConfigValue,
    ErrantRecordReporter,
    OffsetStorageReader,
    SinkTaskContext,
    SourceTaskContext,
    TopicPartition,
)
from connect.testing import RecordingReporter

Reporter = RecordingReporter  # the name these tests have used for it


class SinkContext(SinkTaskContext):
    def __init__(self, props: Mapping[str, str], reporter: ErrantRecordReporter | None = None) -> None:
        self._props = props
        self._reporter = reporter

    def configs(self) -> Mapping[str, str]:
        return self._props

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        pass

    def timeout(self, timeout_ms: int) -> None:
        pass

    def assignment(self) -> set[TopicPartition]:
        return set()

    def pause(self, *partitions: TopicPartition) -> None:
        pass

    def resume(self, *partitions: TopicPartition) -> None:
        pass

    def request_commit(self) -> None:
        pass

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self._reporter


class NoOffsets(OffsetStorageReader):
    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return None


class SourceContext(SourceTaskContext):
    def __init__(self, props: Mapping[str, str]) -> None:
        self._props = props

    def configs(self) -> Mapping[str, str]:
        return self._props

    def offset_storage_reader(self) -> OffsetStorageReader:
        return NoOffsets()


def config_errors(values: Mapping[str, ConfigValue]) -> dict[str, list[str]]:
    """The keys a validation found fault with, and what it said."""
    return {name: cv.errors for name, cv in values.items() if cv.errors}
