"""Run one source or sink task directly, on the test's thread, with no worker, log or converters.

These drive a task through the calls the worker makes, in the worker's order,
so a plugin's unit test sees what its task produced or was asked to write::

    records = run_source_task(MySourceTask, {"topic": "lines", "file": path}, polls=2)
    run = run_sink_task(MySinkTask, {"url": url}, sink_records("lines", ["a", "b"]))

For a connector with its converters, transforms and offset commits, run it on an
``InProcessWorker`` instead.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import attrs

from connect.api.connector import (
    ErrantRecordReporter,
    OffsetStorageReader,
    RecordMetadata,
    SinkTask,
    SinkTaskContext,
    SourceTask,
    SourceTaskContext,
)
from connect.api.records import SinkRecord, SourceRecord, SourceRecordBatch
from connect.api.schema import Schema
from connect.api.topic_partition import TopicPartition

__all__ = ["RecordingReporter", "SinkTaskRun", "run_sink_task", "run_source_task", "sink_records"]


def _partition_key(partition: Mapping[str, Any]) -> str:
    return json.dumps(partition, sort_keys=True, default=str)


class _OffsetReader(OffsetStorageReader):
    def __init__(self, offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> None:
        self._offsets = {_partition_key(partition): dict(offset) for partition, offset in offsets}

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        found = self._offsets.get(_partition_key(partition))
        return dict(found) if found is not None else None


class _SourceContext(SourceTaskContext):
    def __init__(self, config: Mapping[str, str], reader: OffsetStorageReader) -> None:
        self._config = config
        self._reader = reader

    def configs(self) -> Mapping[str, str]:
        return self._config

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader


def run_source_task(task: type[SourceTask] | SourceTask, config: Mapping[str, str], *, polls: int = 1,
                    offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]] = ()) -> list[SourceRecord]:
    """Start a source task, poll it ``polls`` times, commit and stop it; every record its polls returned.

    ``task`` is the task class or an instance (pass an instance to look at it afterwards). ``offsets`` are
    (source partition, source offset) pairs the task's offset storage reader returns, as if an earlier run
    had committed them. After each poll every record is acknowledged as the log would acknowledge it
    (``commit_record`` with its topic, partition and an offset counted per partition from 0, then
    ``commit_batch`` for a SourceRecordBatch); after the last, ``commit`` is called. ``stop`` is always
    called, also when a call raised; the exception then propagates.
    """
    instance = task() if isinstance(task, type) else task
    instance.initialize(_SourceContext(config, _OffsetReader(offsets)))
    records: list[SourceRecord] = []
    next_offsets: dict[tuple[str, int], int] = {}
    instance.start(config)
    try:
        for _ in range(polls):
            polled = instance.poll()
            if not polled:
                continue
            for record in polled:
                where = (record.topic, record.kafka_partition or 0)
                offset = next_offsets.get(where, 0)
                next_offsets[where] = offset + 1
                instance.commit_record(record, RecordMetadata(record.topic, where[1], offset, record.timestamp or 0))
            if isinstance(polled, SourceRecordBatch):
                instance.commit_batch(polled)
            records.extend(polled)
        instance.commit()
    finally:
        instance.stop()
    return records


@attrs.frozen
class SinkTaskRun:
    """What a sink task told the framework during ``run_sink_task``."""

    committed: Mapping[TopicPartition, int]
    """The offsets ``pre_commit`` returned as safe to commit (the next offset to read, per partition)."""
    errant: Sequence[tuple[SinkRecord, BaseException]]
    """The records the task reported through ``errant_record_reporter()``, with the reason, in order."""


class RecordingReporter(ErrantRecordReporter):
    """An errant record reporter that keeps what a sink task reports (``reported``: record and reason, in
    order), as the worker's would hand it to the dead letter queue; its futures are done at once."""

    def __init__(self) -> None:
        self.reported: list[tuple[SinkRecord, BaseException]] = []

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        self.reported.append((record, error))
        done: Future[None] = Future()
        done.set_result(None)
        return done


class _SinkContext(SinkTaskContext):
    def __init__(self, config: Mapping[str, str], partitions: Collection[TopicPartition]) -> None:
        self._config = config
        self._partitions = set(partitions)
        self.reporter = RecordingReporter()

    def configs(self) -> Mapping[str, str]:
        return self._config

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        pass  # nothing is consumed again: every record was handed over already

    def timeout(self, timeout_ms: int) -> None:
        pass

    def assignment(self) -> set[TopicPartition]:
        return set(self._partitions)

    def pause(self, *partitions: TopicPartition) -> None:
        pass

    def resume(self, *partitions: TopicPartition) -> None:
        pass

    def request_commit(self) -> None:
        pass  # pre_commit comes anyway, right after put

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self.reporter


def run_sink_task(task: type[SinkTask] | SinkTask, config: Mapping[str, str],
                  records: Sequence[SinkRecord]) -> SinkTaskRun:
    """Start a sink task, hand it ``records`` in one ``put``, commit, close and stop it.

    The calls are the worker's: ``initialize``, ``start(config)``, ``open`` with the records' partitions,
    ``put(records)``, ``pre_commit`` (by default ``flush``) with the offset after each partition's last
    record, ``close``, ``stop``. ``task`` is the task class or an instance. ``stop`` is always called, also
    when a call raised; the exception then propagates. Records the task reports as errant are kept, not
    sent anywhere (as with ``errors.tolerance=all``).
    """
    instance = task() if isinstance(task, type) else task
    partitions = sorted({TopicPartition(r.topic, r.kafka_partition or 0) for r in records})
    context = _SinkContext(config, partitions)
    instance.initialize(context)
    instance.start(config)
    try:
        instance.open(partitions)
        instance.put(records)
        current: dict[TopicPartition, int] = {}
        for record in records:
            tp = TopicPartition(record.topic, record.kafka_partition or 0)
            current[tp] = max(current.get(tp, 0), record.kafka_offset + 1)
        committed = dict(instance.pre_commit(current))
        instance.close(partitions)
    finally:
        instance.stop()
    return SinkTaskRun(committed, list(context.reporter.reported))


def sink_records(topic: str, values: Iterable[Any], *, partition: int = 0, first_offset: int = 0,
                 value_schema: Schema | None = None, key: Any = None,
                 key_schema: Schema | None = None) -> list[SinkRecord]:
    """Sink records of ``values`` as the worker hands them to ``put``: one partition of ``topic``, with
    offsets counted from ``first_offset``; each with ``key`` and the given schemas (None: schemaless)."""
    return [SinkRecord(topic, partition, key_schema, key, value_schema, value, first_offset + i)
            for i, value in enumerate(values)]
