"""The two things a worker hands a task, written for the tests against the SDK's own interfaces.

They are what a plugin's unit tests need and no more: an offset reader holding what a previous run
committed, and a sink context whose errant-record reporter keeps what it was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

import pytest
from connect.api import (
    ErrantRecordReporter,
    OffsetStorageReader,
    SinkRecord,
    SinkTaskContext,
    SourceTaskContext,
    TopicPartition,
)


# --8<-- [start:source-context]
class CommittedOffsets(OffsetStorageReader):
    def __init__(self, committed: Mapping[str, dict[str, Any]] | None = None) -> None:
        self.committed = dict(committed or {})  # str(partition) -> offset

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.committed.get(str(dict(partition)))


class SourceContext(SourceTaskContext):
    def __init__(self, props: Mapping[str, str], offsets: CommittedOffsets) -> None:
        self._props = props
        self._offsets = offsets

    def configs(self) -> Mapping[str, str]:
        return self._props

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._offsets
# --8<-- [end:source-context]


class KeptErrors(ErrantRecordReporter):
    """What the worker's reporter does with errors.tolerance=all: accepts the record and moves on."""

    def __init__(self) -> None:
        self.reported: list[tuple[SinkRecord, BaseException]] = []

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        self.reported.append((record, error))
        done: Future[None] = Future()
        done.set_result(None)
        return done


class SinkContext(SinkTaskContext):
    def __init__(self, props: Mapping[str, str], reporter: ErrantRecordReporter | None) -> None:
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


@pytest.fixture
def offsets() -> CommittedOffsets:
    return CommittedOffsets()


@pytest.fixture
def source_context() -> type[SourceContext]:
    return SourceContext


@pytest.fixture
def sink_context() -> type[SinkContext]:
    return SinkContext


@pytest.fixture
def kept_errors() -> KeptErrors:
    return KeptErrors()
