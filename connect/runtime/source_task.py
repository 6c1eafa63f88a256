"""WorkerSourceTask: poll a SourceTask, transform, convert, append to the log, commit offsets.

Offsets are at-least-once: every ``offset.flush.interval.ms`` the worker's
SourceTaskOffsetCommitter flushes the task's producer (waits until the log
acknowledged everything sent so far) and only then stores the latest source
offset of every partition it has sent. The commit runs on the committer's
thread, so a ``poll`` that blocks does not delay it. After a crash, at most
the records sent since the last offset flush are produced again.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.connector import OffsetStorageReader, RecordMetadata, SourceTask, SourceTaskContext
from connect.api.errors import ConnectException, RetriableException
from connect.api.records import SourceRecord, SourceRecordBatch
from connect.log.api import (
    Admin,
    BatchDeliveryCallback,
    ClientStats,
    LogError,
    Producer,
    RecordLimit,
    record_bytes,
)
from connect.runtime.connector_config import SourceConnectorConfig
from connect.runtime.control_priority import CONTROL_PRIORITY
from connect.runtime.error_handler import Failure, Stage
from connect.runtime.offset_committer import SourceTaskOffsetCommitter
from connect.runtime.storage.offsets import OffsetStore, offset_key
from connect.runtime.topic_creation import TopicCreation
from connect.runtime.worker_task import WorkerTask

__all__ = ["RecordTooLargeError", "WorkerSourceTask", "wants_acknowledgements"]

log = logging.getLogger(__name__)


def wants_acknowledgements(task: SourceTask) -> bool:
    """Whether ``task`` is told of its records' acknowledgements (``commit_record`` or ``commit_batch``): its
    producer must then report successful deliveries too, not only failures."""
    kind = type(task)
    return kind.commit_record is not SourceTask.commit_record or kind.commit_batch is not SourceTask.commit_batch


class RecordTooLargeError(ConnectException):
    """A converted source record larger than the log takes one record (Kafka's RecordTooLargeException)."""


class _BatchAck:
    """Counts the records of one polled SourceRecordBatch down to the task's ``commit_batch``.

    Records are counted when the log acknowledges them (one count per ``send_batch`` callback, or one per
    record sent on its own) and when they are dropped or skipped; the last count calls the hook, once.
    Counts come from the task thread and from whichever thread serves the producer's callbacks.
    """

    __slots__ = ("_batch", "_hook", "_remaining", "_lock", "_owner")

    def __init__(self, batch: SourceRecordBatch, owner: WorkerSourceTask) -> None:
        self._batch = batch
        self._hook = owner.task.commit_batch
        self._owner = owner
        self._remaining = len(batch)
        self._lock = threading.Lock()

    def done(self, n: int = 1) -> None:
        with self._lock:
            self._remaining -= n
            last = self._remaining == 0
        if last:
            try:
                self._hook(self._batch)
            except Exception:  # as for a delivery callback: the task's bug must not stop the others' reports
                log.exception("%s Exception thrown while calling task.commit_batch()", self._owner)

    def delivered(self, n: int) -> BatchDeliveryCallback:
        """The ``send_batch`` callback for ``n`` of the batch's records sent together."""
        def on_delivery(err: LogError | None) -> None:
            if err is not None:
                self._owner._on_delivery(err, None)
            else:
                self.done(n)
        return on_delivery


class _Columns:
    """Polled records that can go to the log as columns: one topic and source partition, values of one schema
    (keys of one schema, if any), no Kafka partition; the send's fast form converts them a column at a time."""

    __slots__ = ("topic", "value_schema", "values", "key_schema", "keys", "timestamps", "source_partition",
                 "last_offset", "batch")

    def __init__(self, topic: str, value_schema: Any, values: Sequence[Any], timestamps: list[int] | None,
                 source_partition: Mapping[str, Any] | None, last_offset: Mapping[str, Any] | None,
                 keys: Sequence[Any] | None = None, key_schema: Any = None,
                 batch: SourceRecordBatch | None = None) -> None:
        self.topic = topic
        self.value_schema = value_schema
        self.values = values
        self.key_schema = key_schema
        self.keys = keys
        self.timestamps = timestamps  # as send_batch takes them
        self.source_partition = source_partition
        self.last_offset = last_offset  # covers every record: one source partition
        self.batch = batch  # the SourceRecordBatch, whose headers are converted from its own columns

    @staticmethod
    def of(records: Sequence[SourceRecord]) -> _Columns | None:
        """``records`` as columns: any SourceRecordBatch, or a list of one topic, source partition and value
        schema without keys, headers or Kafka partitions; None for any other list."""
        if isinstance(records, SourceRecordBatch):
            stamps = records.timestamps
            if stamps is not None:
                timestamps = _timestamps(list(stamps))
            else:
                stamp = records.timestamp
                timestamps = [stamp] * len(records) if stamp is not None else None
            return _Columns(records.topic, records.value_schema, records.values, timestamps,
                            records.source_partition, records.last_offset, records.keys, records.key_schema, records)
        if not records:
            return None
        head = records[0]
        topic, partition, schema = head.topic, head.source_partition, head.value_schema
        for r in records:
            if (r.topic != topic or r.key is not None or r.key_schema is not None or r.kafka_partition is not None
                    or r._headers or r.source_partition is not partition or r.value_schema is not schema):
                return None
        last = next((r.source_offset for r in reversed(records) if r.source_offset is not None), None)
        return _Columns(topic, schema, [r.value for r in records], _timestamps([r.timestamp for r in records]),
                        partition, last)


class _ConvertedColumns:
    """What the bulk conversion of a _Columns gave: a column is None where its converter raised (or, for
    keys and headers, where every record has none: then ``*_done`` tells which)."""

    __slots__ = ("keys", "keys_done", "values", "headers", "headers_done")

    def __init__(self) -> None:
        self.keys: list[bytes | None] | None = None
        self.keys_done = False
        self.values: list[bytes | None] | None = None
        self.headers: list[tuple[tuple[str, bytes | None], ...]] | None = None
        self.headers_done = False

    @property
    def complete(self) -> bool:
        return self.keys_done and self.values is not None and self.headers_done


class _Context(SourceTaskContext):
    def __init__(self, configs: Mapping[str, str], reader: OffsetStorageReader) -> None:
        self._configs = configs
        self._reader = reader

    def configs(self) -> Mapping[str, str]:
        return self._configs

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader


class WorkerSourceTask(WorkerTask):
    connector_config: SourceConnectorConfig

    def __init__(self, *args: Any, task: SourceTask, producer: Producer, admin: Admin | None,
                 offset_store: OffsetStore, offset_reader: OffsetStorageReader,
                 committer: SourceTaskOffsetCommitter, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.task = task
        self.committer = committer
        self.producer = producer
        self.admin = admin
        self.offset_store = offset_store
        self.offset_reader = offset_reader
        # offsets of records handed to the producer, not yet committed; swapped by the committer thread
        self._pending: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
        self._pending_lock = threading.Lock()
        self._commit_lock = threading.Lock()  # one commit at a time: the committer's or the task thread's
        self._commit_failure: BaseException | None = None
        self._held: Sequence[SourceRecord] | None = None  # polled, not yet sent
        self._last_partition: object = None
        self._last_key = ""
        self._send_error: LogError | None = None
        self._known_topics: set[str] = set()
        self._commit_record_hook = type(task).commit_record is not SourceTask.commit_record
        self._commit_batch_hook = type(task).commit_batch is not SourceTask.commit_batch
        self._refuse_hook = type(task).refuse_record is not SourceTask.refuse_record
        # per topic sent to: the largest record the log takes (None: no limit known), found as the topic is
        self._record_limits: dict[str, RecordLimit | None] = {}
        self._task_stop_lock = threading.Lock()
        self._task_stopped = False
        self.records_polled = 0
        self.records_sent = 0
        self.records_dropped = 0
        self.topic_creation = TopicCreation.from_config(self.worker_config.topic_creation_enable,
                                                    self.connector_config)

    # --- WorkerTask ----------------------------------------------------------------------
    def initialize_and_start(self) -> None:
        self.task.initialize(_Context(self.task_config, self.offset_reader))
        self.task.start(self.task_config)

    def execute(self) -> None:
        self.committer.schedule(self.id, self._commit_on_schedule, self.offset_flush_interval)
        try:
            while not self.is_stopping and self.iteration():
                pass
        finally:
            self.committer.remove(self.id)  # waits for a commit under way
        self.commit_offsets()

    def iteration(self) -> bool:
        """One turn: poll once and send what came (or, paused, wait for the resume); False to stop."""
        CONTROL_PRIORITY.yield_to_control()
        if self.is_paused:
            self.commit_offsets()
            return self.await_unpaused()
        if self._held is None:
            try:
                self._held = self.task.poll()
            except RetriableException as exc:
                # as Kafka Connect: a retriable poll failure is logged and the task is polled again
                self.errors.metrics.retries += 1
                log.warning("%s RetriableException from SourceTask.poll, polling again: %s", self, exc)
                return True
            if self._held:
                self.records_polled += len(self._held)
        if self.is_paused:
            return True  # paused while polling: the batch is held until resumed
        if self._held:
            CONTROL_PRIORITY.yield_to_control()
            self._send(self._held, polled=self._held)
        self._held = None
        self.producer.poll(0)
        if self._send_error is not None:
            raise ConnectException(f"Unrecoverable exception from producer send callback: {self._send_error}")
        if self._commit_failure is not None:
            raise self._commit_failure
        return True

    def _commit_on_schedule(self) -> None:
        """The committer thread's call; a failure is raised on the task thread, which owns the task's fate."""
        if self.is_stopping:
            return  # the task thread commits once more as it stops
        try:
            self.commit_offsets()
        except Exception as exc:  # handed over to the task thread
            if self._commit_failure is None:
                self._commit_failure = exc

    def close(self) -> None:
        self._stop_plugin()
        try:
            self.producer.close(self.offset_flush_timeout)
        except Exception:
            log.exception("%s Error closing producer", self)
        self._close_dlq_producer()

    def client_stats(self) -> tuple[ClientStats, ...]:
        own = self.producer.stats()
        return ((own,) if own is not None else ()) + super().client_stats()

    def record_counts(self) -> dict[str, int]:
        return {"records_polled": self.records_polled, "records_written": self.records_sent,
                "records_dropped": self.records_dropped}

    def record_signature(self) -> tuple[int, ...]:
        return (self.records_polled, self.records_sent, self.records_dropped)

    def _signal_stop(self) -> None:
        # SourceTask.stop may be called from another thread to interrupt a blocking poll
        self._stop_plugin()

    def _stop_plugin(self) -> None:
        with self._task_stop_lock:
            if self._task_stopped:
                return
            self._task_stopped = True
        try:
            self.task.stop()
        except Exception:
            log.exception("%s Error stopping source task", self)

    # --- sending ---------------------------------------------------------------------------------
    def batch_ack(self, records: Sequence[SourceRecord]) -> _BatchAck | None:
        """The counter that calls the task's ``commit_batch`` for ``records``, if they are a polled batch and
        the task has the hook."""
        if self._commit_batch_hook and isinstance(records, SourceRecordBatch) and len(records):
            return _BatchAck(records, self)
        return None

    def _send(self, records: Sequence[SourceRecord], ack: _BatchAck | None = None,
              polled: Sequence[SourceRecord] | None = None, first: int = 0) -> None:
        """The one route of polled records to the log: transform, convert, check each against the log's record
        limit, hand to the producer, mark the offsets to commit once the log has them.

        ``ack`` counts the records for ``commit_batch`` (made here for a whole polled batch, passed in when the
        records are a part of one). ``records`` are ``polled[first:]`` (and on) of what ``poll`` returned,
        which a refused record is reported against.

        The fast form, when no transform or ``commit_record`` needs each record: records that go as columns
        (a SourceRecordBatch, or a list of one topic, source partition and value schema without keys,
        headers or Kafka partitions) are converted a column at a time and leave in one ``send_batch``,
        without a record made for each. A column whose bulk conversion fails is converted record by record,
        where the error handling sees each record; the columns already converted are used as they are.
        """
        if ack is None:
            ack = self.batch_ack(records)
        if polled is None:
            polled = records
        converted: _ConvertedColumns | None = None
        if self.chain is None and not self._commit_record_hook:
            columns = _Columns.of(records)
            if columns is not None:
                converted = self._convert_columns(columns)
                if converted.complete:
                    self._send_columns(columns, converted, ack, polled, first)
                    return
        self._send_each(records, ack, polled, first, converted)

    def _convert_columns(self, columns: _Columns) -> _ConvertedColumns:
        """Each column of ``columns`` converted in one call; a column whose converter raises is left for the
        record-by-record conversion (its error handling names the record)."""
        topic = columns.topic
        converted = _ConvertedColumns()
        key_converter = self.converters.key
        try:
            if columns.keys is None:
                # no key column: every key is None, converted once for all (a converter may write something)
                converted.keys_done = key_converter.from_connect_data(topic, None, None, None) is None
            else:
                converted.keys = key_converter.from_connect_batch(topic, columns.key_schema, columns.keys)
                converted.keys_done = True
        except Exception:  # converted one by one, with error handling
            pass
        try:
            converted.values = self.converters.value.from_connect_batch(topic, columns.value_schema, columns.values)
        except Exception:  # converted one by one, with error handling
            pass
        batch = columns.batch
        if batch is None or not batch.has_headers():
            converted.headers_done = True
        else:
            try:
                converted.headers = self._convert_batch_headers(batch)
                converted.headers_done = True
            except Exception:  # converted one by one, with error handling
                pass
        return converted

    def _convert_batch_headers(self, batch: SourceRecordBatch) -> list[tuple[tuple[str, bytes | None], ...]]:
        """The wire headers of every record of ``batch``: the shared ones converted once, the columns per value."""
        conv = self.converters.header.from_connect_header
        topic = batch.topic
        shared = tuple((h.key, conv(topic, h.key, h.schema, h.value)) for h in batch.headers)
        if not batch.header_columns:
            return [shared] * len(batch)
        columns = [[(name, conv(topic, name, schema, v)) for v in values] for name, schema, values in batch.header_columns]
        if len(columns) == 1:
            return [(*shared, pair) for pair in columns[0]]
        return [shared + pairs for pairs in zip(*columns, strict=True)]

    def _send_columns(self, columns: _Columns, converted: _ConvertedColumns, ack: _BatchAck | None,
                      polled: Sequence[SourceRecord], first: int) -> None:
        """The fast form's end: every column converted; oversized records refused alone, the rest sent in one
        ``send_batch``. ``polled[first + i]`` is the record of value ``i``."""
        topic = columns.topic
        values = converted.values
        assert values is not None  # complete
        keys, headers, timestamps = converted.keys, converted.headers, columns.timestamps
        if topic not in self._known_topics:
            self._ensure_topic(topic)
        limit = self._record_limits.get(topic)
        if limit is not None:
            oversized = _oversized(limit.max_record_bytes, values, keys, headers)
            if oversized:
                for i, size in oversized:
                    self._refuse(polled, first + i, None, size, limit, topic)
                if ack is not None:
                    ack.done(len(oversized))
                gone = {i for i, _ in oversized}
                values = [v for i, v in enumerate(values) if i not in gone]
                if keys is not None:
                    keys = [k for i, k in enumerate(keys) if i not in gone]
                if timestamps is not None:
                    timestamps = [t for i, t in enumerate(timestamps) if i not in gone]
                if headers is not None:
                    headers = [h for i, h in enumerate(headers) if i not in gone]
        if values:
            if ack is None:
                self.producer.send_batch(topic, None, values, keys, timestamps, headers)
            else:
                self.producer.send_batch(topic, None, values, keys, timestamps, headers,
                                         on_delivery=ack.delivered(len(values)))
        with self._pending_lock:
            self._mark_offset(columns.source_partition, columns.last_offset)
        self.records_sent += len(values)

    def _send_each(self, records: Sequence[SourceRecord], ack: _BatchAck | None = None,
                   polled: Sequence[SourceRecord] | None = None, first: int = 0,
                   converted: _ConvertedColumns | None = None) -> None:
        """The general form: record by record, each failure through the error handler. ``converted``: the
        columns the fast form did convert (then there is no transformation chain)."""
        chain = self.chain
        key_conv = self.converters.key.from_connect_data
        value_conv = self.converters.value.from_connect_data
        limits = self._record_limits
        key_column: Sequence[bytes | None] | None = None
        value_column: Sequence[bytes | None] | None = None
        header_column: Sequence[Any] | None = None
        if converted is not None:
            if converted.keys_done:
                key_column = converted.keys if converted.keys is not None else [None] * len(records)
            value_column = converted.values
            if converted.headers_done:
                header_column = converted.headers if converted.headers is not None else [None] * len(records)
        processed: list[SourceRecord] = []  # marked once sent: a concurrent commit flushes only what was sent
        mark = processed.append
        staged: list[tuple[SourceRecord, SourceRecord, bytes | None, bytes | None, Any]] = []
        for i, record in enumerate(records):
            stage = Stage.TRANSFORMATION
            try:
                out = chain.apply(record) if chain is not None else record
                if out is not None:
                    stage = Stage.KEY_CONVERTER
                    key = (key_conv(out.topic, out.key_schema, out.key, out._headers) if key_column is None
                           else key_column[i])
                    stage = Stage.VALUE_CONVERTER
                    value = (value_conv(out.topic, out.value_schema, out.value, out._headers) if value_column is None
                             else value_column[i])
                    stage = Stage.HEADER_CONVERTER
                    if header_column is not None:
                        headers = header_column[i]
                    else:
                        headers = self._convert_headers(out) if out.has_headers() else None
            except Exception as exc:  # failures go through the error handler
                retried = self.errors.retry(stage, self._plugin_class(stage), functools.partial(self._convert, record),
                                            exc, source_record=record)
                if retried is None:  # skipped after a tolerated failure (or dropped once retried)
                    mark(record)
                    if self._commit_record_hook:
                        self.task.commit_record(record, None)
                    if ack is not None:
                        ack.done()
                    continue
                out, key, value, headers = retried
            mark(record)
            if out is None:
                self.records_dropped += 1
                if self._commit_record_hook:
                    self.task.commit_record(record, None)
                if ack is not None:
                    ack.done()
                continue
            if out.topic not in self._known_topics:
                self._ensure_topic(out.topic)
            limit = limits.get(out.topic)
            if limit is not None:
                size = record_bytes(key, value, headers)
                if size > limit.max_record_bytes:
                    mark(record)
                    self._refuse(records if polled is None else polled, first + i, record, size, limit, out.topic)
                    if ack is not None:
                        ack.done()
                    continue
            staged.append((record, out, key, value, headers))
        if staged:
            self._dispatch(staged, ack)
        self.records_sent += len(staged)
        if processed:
            with self._pending_lock:
                for record in processed:
                    self._mark_offset(record.source_partition, record.source_offset)

    def _dispatch(self, staged: list[tuple[SourceRecord, SourceRecord, bytes | None, bytes | None, Any]],
                  ack: _BatchAck | None = None) -> None:
        """Hand converted records to the producer: one ``send_batch`` for the common case, else one by one."""
        topic = staged[0][1].topic  # every staged record's topic is known: _send_each ensured it before staging
        if not self._commit_record_hook and all(
            k is None and h is None and o.kafka_partition is None and o.topic == topic for _, o, k, _, h in staged
        ):
            timestamps = _timestamps([o.timestamp for _, o, _, _, _ in staged])
            values = [v for _, _, _, v, _ in staged]
            if ack is None:
                self.producer.send_batch(topic, None, values, None, timestamps)
            else:
                self.producer.send_batch(topic, None, values, None, timestamps, on_delivery=ack.delivered(len(values)))
            return
        send = self.producer.send
        for record, out, key, value, headers in staged:
            callback = self._callback_for(record, ack) if self._commit_record_hook or ack is not None else None
            send(out.topic, value, key, out.kafka_partition, out.timestamp, headers, callback)

    def _refuse(self, polled: Sequence[SourceRecord], index: int, record: SourceRecord | None, size: int,
                limit: RecordLimit, topic: str) -> None:
        """Record ``index`` of ``polled`` converted to ``size`` bytes, more than ``limit``: it is not sent.

        A task with the ``refuse_record`` hook is told and goes on; any other is handled as a failed record
        (``errors.tolerance``; under ``none`` this raises and the task fails, as Kafka Connect's does).
        Offsets and ``commit_batch`` counts are the caller's.
        """
        if record is None:
            record = polled[index]
        reason = (f"converted, its record is {size + limit.overhead} bytes, more than the {limit.max_bytes}-byte "
                  f"limit of the log ({limit.setting})")
        log.warning("%s Refused record %d of a polled batch for topic %s: %s", self, index, topic, reason)
        failure = Failure(Stage.KAFKA_PRODUCE, type(self.producer).__qualname__,
                          RecordTooLargeError(f"Record {index} of a polled batch for topic {topic}: {reason}"),
                          source_record=record)
        if not self._refuse_hook:
            self.errors.tolerate_or_raise(failure)
            if self._commit_record_hook:
                self.task.commit_record(record, None)
            return
        try:
            self.task.refuse_record(polled, index, reason)
        except Exception:  # as for commit_batch: the task's bug must not stop the other records
            log.exception("%s Exception thrown while calling task.refuse_record()", self)
        self.errors.refused(failure)

    def _convert(self, record: SourceRecord) -> tuple[Any, bytes | None, bytes | None, Any] | None:
        out = self.chain.apply(record) if self.chain is not None else record
        if out is None:
            return None
        key = self.converters.key.from_connect_data(out.topic, out.key_schema, out.key, out.headers)
        value = self.converters.value.from_connect_data(out.topic, out.value_schema, out.value, out.headers)
        return out, key, value, (self._convert_headers(out) if out.has_headers() else None)

    def _convert_headers(self, record: SourceRecord) -> tuple[tuple[str, bytes | None], ...]:
        conv = self.converters.header.from_connect_header
        return tuple((h.key, conv(record.topic, h.key, h.schema, h.value)) for h in record.headers)

    def _mark_offset(self, partition: Mapping[str, Any] | None, offset: Mapping[str, Any] | None) -> None:
        """Called with ``_pending_lock`` held, after the records up to ``offset`` were handed to the producer."""
        if partition is None or offset is None:
            return
        if partition is not self._last_partition:
            self._last_partition = partition
            self._last_key = offset_key(self.id.connector, partition)
        self._pending[self._last_key] = (partition, offset)

    def _on_delivery(self, err: LogError | None, _metadata: object) -> None:
        if err is not None and self._send_error is None:
            self._send_error = err

    def _callback_for(self, record: SourceRecord, ack: _BatchAck | None = None):  # a delivery callback
        commit_record = self._commit_record_hook

        def on_delivery(err: LogError | None, metadata: Any) -> None:
            if err is not None:
                self._on_delivery(err, metadata)
                return
            try:
                if commit_record:
                    self.task.commit_record(record, RecordMetadata(metadata.topic, metadata.partition,
                                                                   metadata.offset, metadata.timestamp))
            finally:
                if ack is not None:  # the record is in the log whatever commit_record did
                    ack.done()
        return on_delivery

    # --- topic creation ---------------------------------------------------------------------------
    def _ensure_topic(self, topic: str) -> None:
        self._known_topics.add(topic)
        self.status.add_topic(self.id.connector, topic)
        if self.topic_creation is not None and self.admin is not None:
            new = self.topic_creation.new_topic(topic)
            try:
                self.admin.create_topic(new, exist_ok=True)
                log.info("%s Ensured topic '%s' exists (partitions=%d, replication.factor=%d)", self, topic,
                         new.partitions, new.replication_factor)
            except LogError as exc:
                raise ConnectException(f"Could not create topic {topic}: {exc}") from exc
        self._record_limits[topic] = self._record_limit(topic)

    def _record_limit(self, topic: str) -> RecordLimit | None:
        """The stricter of the producer's limit and the topic's ``max.message.bytes`` (on Kafka only the
        admin client knows it); None when neither is known (the log then refuses what it must, and the task
        fails on it)."""
        try:
            limit = self.producer.record_limit(topic)
        except LogError:  # the send finds out, with the log's own error
            limit = None
        if self.admin is None:
            return limit
        try:
            configured = self.admin.describe_topic(topic).configs.get("max.message.bytes")
            topic_max = int(configured) if configured is not None else None
        except (LogError, ValueError) as exc:
            log.debug("%s Could not read max.message.bytes of topic %s: %s", self, topic, exc)
            return limit
        if topic_max is None or (limit is not None and topic_max >= limit.max_bytes):
            return limit
        overhead = limit.overhead if limit is not None else _RECORD_BATCH_OVERHEAD
        return RecordLimit(topic_max, overhead, f"max.message.bytes of topic {topic}")

    # --- offsets ----------------------------------------------------------------------------------------
    def commit_offsets(self) -> bool:
        """Wait for the log to acknowledge everything sent, then store the offsets it covers.

        Called by the committer thread on schedule and by the task thread when it pauses or stops.
        """
        with self._commit_lock:
            return self._commit_offsets()

    def _commit_offsets(self) -> bool:
        with self._pending_lock:
            # every offset taken here belongs to records already handed to the producer: the flush covers them
            snapshot, self._pending = self._pending, {}
        started = self.clock.monotonic()
        try:
            try:
                remaining = self.producer.flush(self.offset_flush_timeout)
            except LogError as exc:
                raise ConnectException(f"Records could not be written to the log: {exc}") from exc
            if self._send_error is not None:
                raise ConnectException(f"Unrecoverable exception from producer send callback: {self._send_error}")
            if remaining:
                log.error("%s Failed to flush, timed out while waiting for %d records to be acknowledged", self,
                          remaining)
                self._restore(snapshot)
                return False
            if self.errors.dlq is not None:
                # a record sent to the dead-letter topic counts as processed only once that topic has it; a
                # source cannot send it again, so a failed DLQ write fails the task before its offset commits
                self.errors.dlq.flush(self.offset_flush_timeout)
        except BaseException:
            self._restore(snapshot)
            raise
        if not snapshot:
            return True
        try:
            self.offset_store.put_raw_pairs(self.id.connector, snapshot)
        except Exception as exc:  # keep the offsets for the next attempt
            self._restore(snapshot)
            log.error("%s Failed to commit offsets: %s", self, exc)
            return False
        try:
            self.task.commit()
        except Exception:
            log.exception("%s Exception thrown while calling task.commit()", self)
        log.info("%s Committed offsets for %d source partition(s) in %.0f ms (%d records sent so far)", self,
                 len(snapshot), (self.clock.monotonic() - started) * 1000, self.records_sent)
        self.log_metrics_summary()
        return True

    def _restore(self, snapshot: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any]]]) -> None:
        """Give back offsets that were not committed; newer ones marked meanwhile win."""
        if snapshot:
            with self._pending_lock:
                for key, value in snapshot.items():
                    self._pending.setdefault(key, value)


# What a batch of one record adds to its bytes, at most, in the formats of the logs this runtime knows
_RECORD_BATCH_OVERHEAD = 100


def _longest(column: Sequence[bytes | None]) -> int:
    try:
        return max(map(len, column), default=0)  # type: ignore[arg-type]  # a None makes it raise
    except TypeError:
        return max((len(v) for v in column if v is not None), default=0)


def _oversized(max_bytes: int, values: Sequence[bytes | None], keys: Sequence[bytes | None] | None,
               headers: Sequence[tuple[tuple[str, bytes | None], ...]] | None) -> list[tuple[int, int]]:
    """(index, record_bytes) of each record above ``max_bytes``: none after a few passes in C when even the
    longest value, key and headers together are within it, as they are unless a record is near the limit."""
    largest = _longest(values) + (_longest(keys) if keys is not None else 0)
    header_sizes: list[int] | None = None
    if headers:
        shared = headers[0]
        if headers.count(shared) == len(headers):  # a batch's shared headers: one tuple repeated
            header_sizes = [record_bytes(None, None, shared)] * len(headers)
        else:  # each distinct tuple measured once
            distinct = dict(zip(map(id, headers), headers, strict=True))
            size_of = {key: record_bytes(None, None, h) for key, h in distinct.items()}
            header_sizes = [size_of[id(h)] for h in headers]
        largest += max(header_sizes)
    if largest <= max_bytes:
        return []
    out = []
    for i, value in enumerate(values):
        size = len(value) if value is not None else 0
        if keys is not None and keys[i] is not None:
            size += len(keys[i])  # type: ignore[arg-type]
        if header_sizes is not None:
            size += header_sizes[i]
        if size > max_bytes:
            out.append((i, size))
    return out


def _timestamps(stamps: list[int | None]) -> list[int] | None:
    """Record timestamps for ``send_batch``: None when no record has one, else the missing ones set to now."""
    if stamps.count(None) == len(stamps):
        return None
    if None in stamps:
        now = int(time.time() * 1000)
        return [now if t is None else t for t in stamps]
    return stamps  # type: ignore[return-value]
