"""WorkerSinkTask: consume from the log, convert, transform, ``put``, and commit what the task flushed.

The consumer is a member of group ``connect-<connector>``; partition
assignment drives SinkTask.open/close. Offsets are committed every
``offset.flush.interval.ms`` (or on ``request_commit``), after
``pre_commit`` says what is durable, so after a crash at most the records
consumed since the last commit are delivered again. A poll never waits past
the next commit, and a paused task goes on committing, so a commit is late by
at most one ``put``.
"""

from __future__ import annotations

import bisect
import functools
import logging
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from connect.api.connector import ErrantRecordReporter, SinkTask, SinkTaskContext
from connect.api.errors import ConnectException, RetriableException
from connect.api.headers import ConnectHeaders, Header
from connect.api.records import SinkRecord, SinkRecordBatch, TimestampType
from connect.api.topic_partition import TopicPartition
from connect.log.api import ClientStats, Consumer, ConsumerRecord, FetchedBatch, LogError, RebalanceListener
from connect.runtime.connector_config import SinkConnectorConfig
from connect.runtime.control_priority import CONTROL_PRIORITY
from connect.runtime.error_handler import ErrantRecordReporterImpl, Stage, TaskStoppingError
from connect.runtime.subscribe_barrier import SUBSCRIBE_TOGETHER_WAIT
from connect.runtime.worker_task import WorkerTask

__all__ = ["WorkerSinkTask"]

log = logging.getLogger(__name__)

_TS_TYPES = {0: TimestampType.CREATE_TIME, 1: TimestampType.LOG_APPEND_TIME}

POLL_TIMEOUT = 0.5  # the longest a poll waits for records (shorter when a commit is due sooner)
PAUSED_POLL_TIMEOUT = 0.2  # while paused: how soon a resume is noticed
# With a consumer that stop, pause and resume can wake (``Consumer.wakeup``), an idle task (everything it
# consumed is committed) waits this long in one poll: a thousand idle tasks then cost no CPU.
IDLE_POLL_TIMEOUT = 60.0


class _Context(SinkTaskContext):
    def __init__(self, owner: WorkerSinkTask) -> None:
        self._owner = owner
        self.rewinds: dict[TopicPartition, int] = {}
        self.timeout_ms = 0
        self.commit_requested = False
        self.paused_by_task: set[TopicPartition] = set()  # kept paused when the connector resumes

    def configs(self) -> Mapping[str, str]:
        return self._owner.task_config

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.rewinds.update(offsets)

    def timeout(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms

    def assignment(self) -> set[TopicPartition]:
        return self._owner.consumer.assignment()

    def pause(self, *partitions: TopicPartition) -> None:
        self.paused_by_task.update(partitions)
        self._owner.consumer.pause(list(partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        self.paused_by_task.difference_update(partitions)
        if not self._owner.is_paused:
            self._owner.consumer.resume(list(partitions))

    def request_commit(self) -> None:
        self.commit_requested = True

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self._owner.errant_record_reporter()


class _Rebalance(RebalanceListener):
    def __init__(self, owner: WorkerSinkTask) -> None:
        self._owner = owner

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        self._owner.on_assigned(partitions)

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        self._owner.on_revoked(partitions, lost=False)

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        self._owner.on_revoked(partitions, lost=True)


class WorkerSinkTask(WorkerTask):
    connector_config: SinkConnectorConfig
    kind = "sink"
    is_sink = True

    def __init__(self, *args: Any, task: SinkTask, consumer: Consumer, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.task = task
        self.consumer = consumer
        self.context = _Context(self)
        self.max_records = (self.connector_config.max_poll_records
                            or self.worker_config.consumer_max_poll_records)
        self._current: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._next_commit = self.clock.monotonic() + self.offset_flush_interval
        self._consumer_paused = False  # all partitions paused for the connector's PAUSED target state
        self.records_read = 0
        self.records_put = 0
        self.records_dropped = 0
        self.offset_commits = 0  # completed commits (Kafka Connect's offset-commit-completion-total)
        self._reporter: ErrantRecordReporterImpl | None = None
        # the fetched batches of the records last handed to put: where an errant record's original bytes are
        self._in_put: Sequence[FetchedBatch] = ()
        self._wakeable = False  # whether the consumer's polls can be interrupted (known after the first wakeup)
        self._stop_commit_deadline: float | None = None  # once stopping: how long a commit may still wait

    # --- WorkerTask ------------------------------------------------------------------------------
    def initialize_and_start(self) -> None:
        # a consumer that can be woken lets an idle task wait long; probing it wakes the first poll, harmlessly
        self._wakeable = self.consumer.wakeup()
        try:
            self.task.initialize(self.context)
            self.task.start(self.task_config)
        except BaseException:
            if self.siblings is not None:
                self.siblings.forget(self.id)
            raise
        topics = self.connector_config.topics
        regex = self.connector_config.topics_regex
        if self.siblings is not None:
            if not regex:
                self.consumer.prepare_to_join(topics, SUBSCRIBE_TOGETHER_WAIT)
            self.siblings.wait(self.id, self._stopping, SUBSCRIBE_TOGETHER_WAIT)
        if regex:
            self.consumer.subscribe(pattern=re.compile(regex), listener=_Rebalance(self))
        else:
            self.consumer.subscribe(topics=topics, listener=_Rebalance(self))
        log.info("%s Sink task subscribed to %s", self, f"pattern {regex}" if regex else topics)

    def execute(self) -> None:
        while not self.is_stopping:
            if self.is_paused:
                self.paused_iteration()
                continue
            if self._consumer_paused:
                self._resume_all()
                self.report_running()
            self.iteration()
        if not self.is_cancelled:
            self.commit_offsets(closing=True)
        else:
            # its worker lost it to another (group membership lost): the new owner resumes from the last
            # commit, and a commit from here could not reach the log anyway, only hold up the stop
            log.info("%s Cancelled: the final commit of offsets is left out", self)

    def paused_iteration(self) -> None:
        """One turn while the connector is PAUSED: no put, but commits on time and group membership kept."""
        if not self._consumer_paused:
            self._pause_all()
            self.report_paused()  # from this thread, between two puts: nothing moves until resumed
        self._maybe_commit()
        batches = self.consumer.poll(self._poll_timeout(PAUSED_POLL_TIMEOUT), 1)
        for batch in batches:  # a partition assigned and not yet paused: read again after the resume
            self.consumer.seek(TopicPartition(batch.topic, batch.partition), batch.offsets[0])

    def close(self) -> None:
        try:
            assigned = list(self.consumer.assignment())
            if assigned:
                self.task.close(assigned)
        except Exception:
            log.exception("%s Error closing sink task partitions", self)
        try:
            self.task.stop()
        except Exception:
            log.exception("%s Error stopping sink task", self)
        self._close_dlq_producer()
        try:
            self.consumer.close()
        except Exception:
            log.exception("%s Error closing consumer", self)

    def committed_offsets(self) -> dict[TopicPartition, int]:
        """The offsets last committed for the assigned partitions (a copy; read by metrics scrapes)."""
        return dict(self._committed)

    def client_stats(self) -> tuple[ClientStats, ...]:
        own = self.consumer.stats()
        return ((own,) if own is not None else ()) + super().client_stats()

    def record_counts(self) -> dict[str, int]:
        return {"records_read": self.records_read, "records_put": self.records_put,
                "records_dropped": self.records_dropped}

    def record_signature(self) -> tuple[int, ...]:
        return (self.records_read, self.records_put, self.records_dropped)

    # --- one loop turn ------------------------------------------------------------------------------
    def iteration(self) -> None:
        CONTROL_PRIORITY.yield_to_control()
        self._maybe_commit()
        self._apply_rewinds()
        batches = self.consumer.poll(self._poll_timeout(POLL_TIMEOUT), self.max_records)
        if batches and self.is_stopping:
            # asked to stop meanwhile (a blocking commit or poll returned late): these records are not put and not
            # committed, so whoever runs this task next reads them again; its partitions may be theirs already
            return
        if batches:
            CONTROL_PRIORITY.yield_to_control()
            try:
                records = self._convert_batches(batches)
            except TaskStoppingError as exc:
                log.info("%s %s; the batch is left for the next start", self, exc)
                return
            self._in_put = batches
            CONTROL_PRIORITY.yield_to_control()
            if not self._deliver(records):
                return  # stopping while put was being retried: these records are not done
            for batch in batches:
                self._current[TopicPartition(batch.topic, batch.partition)] = batch.next_offset
        if self.errors.dlq is not None:
            self.errors.dlq.producer.poll(0)  # completes the Futures of reported errant records

    def _maybe_commit(self) -> None:
        if self.context.commit_requested or self.clock.monotonic() >= self._next_commit:
            self.context.commit_requested = False
            self.commit_offsets()

    def _poll_timeout(self, longest: float) -> float:
        """A poll returns by the next commit: a commit must not wait for records to arrive. With nothing left
        to commit and a consumer that stop and state changes can wake, an idle task waits long."""
        if self._wakeable and self._current == self._committed and not self.context.commit_requested:
            return IDLE_POLL_TIMEOUT
        return max(0.0, min(longest, self._next_commit - self.clock.monotonic()))

    def _signal_stop(self) -> None:
        # the worker waits task.shutdown.graceful.timeout.ms for the stop: commits get the first half of it,
        # closing the task and its clients (a consumer's leave of the group) the rest
        graceful = self.worker_config.task_shutdown_graceful_timeout_ms / 1000
        self._stop_commit_deadline = self.clock.monotonic() + graceful / 2
        self.consumer.wakeup()  # ends a commit under way; the final commit then waits only within the above

    def cancel(self) -> None:
        super().cancel()
        # given up for stopped: a commit it still waits for (an unreachable coordinator) ends now
        self.consumer.wakeup()

    def _commit_timeout(self, started: float) -> float:
        """How long a commit may wait for the log: what is left of ``offset.flush.timeout.ms`` since the commit
        began (flushing the DLQ and ``pre_commit`` count), and, once stopping, of its share of the graceful stop."""
        now = self.clock.monotonic()
        left = self.offset_flush_timeout - (now - started)
        if self._stop_commit_deadline is not None:
            left = min(left, self._stop_commit_deadline - now)
        return max(0.0, left)

    def _signal_state_change(self) -> None:
        self.consumer.wakeup()

    def _deliver(self, records: Sequence[SinkRecord]) -> bool:
        """``put`` the batch; a RetriableException redelivers it after the task's timeout.

        False when the task was asked to stop while waiting to redeliver (the batch is then not done).
        """
        while True:
            try:
                self.task.put(records)
                self.records_put += len(records)
                return True
            except RetriableException as exc:
                self.errors.metrics.retries += 1
                wait_ms = self.context.timeout_ms or 1000
                log.warning("%s RetriableException from SinkTask.put, redelivering %d records in %d ms: %s", self,
                            len(records), wait_ms, exc)
                if self.errors.stop_event.wait(wait_ms / 1000):
                    log.info("%s Stopping while redelivery of %d records was pending", self, len(records))
                    return False
            except Exception as exc:
                raise ConnectException(
                    f"Exiting WorkerSinkTask due to unrecoverable exception from SinkTask.put: {exc}") from exc

    # --- errant record reporter -------------------------------------------------------------------
    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        """As Kafka Connect: a reporter when a DLQ topic or the error log is configured, else None."""
        if self._reporter is None:
            if self.errors.dlq is None and not self.errors.log_enabled:
                return None
            self._reporter = ErrantRecordReporterImpl(self.errors, type(self.task).__qualname__,
                                                      self._consumed_record, self._serialize)
        return self._reporter

    def _consumed_record(self, record: SinkRecord) -> ConsumerRecord | None:
        """The consumed record (original bytes) behind a SinkRecord of the batch being put, if it is there."""
        topic, partition, offset = record.original_topic, record.original_kafka_partition, record.original_kafka_offset
        for batch in self._in_put:
            offsets = batch.offsets
            if (batch.partition != partition or batch.topic != topic or not offsets
                    or not offsets[0] <= offset <= offsets[-1]):
                continue
            i = bisect.bisect_left(offsets, offset)
            if i < len(offsets) and offsets[i] == offset:
                hdrs = batch.headers
                return ConsumerRecord(batch.topic, batch.partition, offset, batch.timestamps[i], batch.keys[i],
                                      batch.values[i], hdrs[i] if hdrs is not None else (), batch.timestamp_type)
        return None

    def _serialize(self, record: SinkRecord) -> ConsumerRecord:
        """A record no longer among the fetched batches: convert it back to bytes with the task's converters."""
        topic = record.original_topic
        conv = self.converters
        try:
            key = conv.key.from_connect_data(topic, record.key_schema, record.key, record._headers)
            value = conv.value.from_connect_data(topic, record.value_schema, record.value, record._headers)
            headers = tuple((h.key, conv.header.from_connect_header(topic, h.key, h.schema, h.value))
                            for h in record.headers) if record.has_headers() else ()
        except Exception as exc:  # still report the record, without its data
            log.warning("%s Could not convert errant record %s-%s@%s back to bytes: %s", self, topic,
                        record.original_kafka_partition, record.original_kafka_offset, exc)
            key = value = None
            headers = ()
        ts_type = 1 if record.timestamp_type is TimestampType.LOG_APPEND_TIME else 0
        return ConsumerRecord(topic, record.original_kafka_partition, record.original_kafka_offset,
                              record.timestamp if record.timestamp is not None else -1, key, value, headers, ts_type)

    def _convert_batches(self, batches: Sequence[FetchedBatch]) -> Sequence[SinkRecord]:
        """The records of the fetched batches; a SinkRecordBatch when every batch could be converted by column."""
        columns = SinkRecordBatch()
        out: list[SinkRecord] = []
        append = out.append
        chain = self.chain
        key_conv = self.converters.key.to_connect_data
        value_conv = self.converters.value.to_connect_data
        dropped = 0
        for batch in batches:
            self.records_read += len(batch)
            topic = batch.topic
            partition = batch.partition
            keys, values, stamps = batch.keys, batch.values, batch.timestamps
            hdrs = batch.headers
            ts_type = _TS_TYPES.get(batch.timestamp_type, TimestampType.CREATE_TIME)
            if hdrs is None:
                # converted by column; without transforms the records are not even made (see SinkRecordBatch).
                # Once a record went to ``out``, later batches follow it there: ``columns`` goes first.
                converted = columns if chain is None and not out else SinkRecordBatch()
                if self._convert_columns(batch, ts_type, converted):
                    if chain is not None:
                        dropped += self._transform(batch, converted, columns, out)
                    elif converted is not columns:
                        out += converted
                    continue
            for i, offset in enumerate(batch.offsets):
                stage = Stage.HEADER_CONVERTER
                try:
                    headers = self._convert_headers(topic, hdrs[i]) if hdrs is not None and hdrs[i] else None
                    stage = Stage.KEY_CONVERTER
                    k = key_conv(topic, keys[i], headers)
                    stage = Stage.VALUE_CONVERTER
                    v = value_conv(topic, values[i], headers)
                    made = SinkRecord(topic, partition, k.schema, k.value, v.schema, v.value, offset, stamps[i],
                                      ts_type, headers)
                    if chain is None:
                        append(made)
                        continue
                    stage = Stage.TRANSFORMATION
                    record = chain.apply(made)
                    if record is None:
                        dropped += 1
                        continue
                    append(record)
                except Exception as exc:  # failures go through the error handler
                    consumed = ConsumerRecord(topic, partition, offset, stamps[i], keys[i], values[i],
                                              hdrs[i] if hdrs is not None else (), batch.timestamp_type)
                    retried = self.errors.retry(stage, self._plugin_class(stage),
                                                functools.partial(self._convert_one, consumed), exc, consumed=consumed)
                    if retried is not None:
                        append(retried)
        self.records_dropped += dropped
        if not out:
            return columns
        return [*columns, *out] if len(columns) else out

    def _transform(self, batch: FetchedBatch, records: SinkRecordBatch, columns: SinkRecordBatch,
                   out: list[SinkRecord]) -> int:
        """The transform chain over one batch's converted records, into ``columns`` (while the transforms
        keep them columns) or ``out``; how many it dropped.

        A ``batched`` chain first takes the batch whole; if a transform raises, it runs again record by
        record, so that the failing record alone goes through the error handler.
        """
        chain = self.chain
        assert chain is not None
        try:
            transformed = chain.apply_batch(records) if chain.batched else None
        except Exception:  # found and handled record by record below
            transformed = None
        if transformed is not None:
            if isinstance(transformed, SinkRecordBatch) and not out:
                columns.extend(transformed)
            else:
                out += transformed
            return len(records) - len(transformed)
        append = out.append
        dropped = 0
        for i, record in enumerate(records):
            try:
                result = chain.apply(record)
            except Exception as exc:  # failures go through the error handler
                consumed = ConsumerRecord(batch.topic, batch.partition, batch.offsets[i], batch.timestamps[i],
                                          batch.keys[i], batch.values[i], (), batch.timestamp_type)
                result = self.errors.retry(Stage.TRANSFORMATION, self._plugin_class(Stage.TRANSFORMATION),
                                           functools.partial(self._convert_one, consumed), exc, consumed=consumed)
                if result is None:  # skipped, and counted, by the error handler
                    continue
            if result is None:
                dropped += 1
                continue
            append(result)
        return dropped

    def _convert_columns(self, batch: FetchedBatch, ts_type: TimestampType, columns: SinkRecordBatch) -> bool:
        """A batch without headers, converted by column (the converters' bulk methods) into ``columns``.

        False, with nothing added, if a converter fails: the per-record path then converts the batch
        again with error handling, so the bad record is found and treated as configured.
        """
        topic = batch.topic
        try:
            key_schemas, keys = self.converters.key.to_connect_batch(topic, batch.keys)
            value_schemas, values = self.converters.value.to_connect_batch(topic, batch.values)
        except Exception:  # the per-record path converts again, with error handling
            return False
        try:
            columns.add(topic, batch.partition, batch.offsets, batch.timestamps, ts_type, key_schemas, keys,
                        value_schemas, values)
        except ValueError as exc:
            raise ConnectException(f"{type(self.converters.key).__qualname__} or "
                                   f"{type(self.converters.value).__qualname__} returned a wrong number of "
                                   f"converted records: {exc}") from exc
        return True

    def _convert_one(self, c: ConsumerRecord) -> SinkRecord | None:
        headers = self._convert_headers(c.topic, c.headers) if c.headers else None
        k = self.converters.key.to_connect_data(c.topic, c.key, headers)
        v = self.converters.value.to_connect_data(c.topic, c.value, headers)
        record = SinkRecord(c.topic, c.partition, k.schema, k.value, v.schema, v.value, c.offset, c.timestamp,
                            _TS_TYPES.get(c.timestamp_type, TimestampType.CREATE_TIME), headers)
        return self.chain.apply(record) if self.chain is not None else record  # type: ignore[return-value]

    def _convert_headers(self, topic: str, raw: Sequence[tuple[str, bytes | None]]) -> ConnectHeaders:
        conv = self.converters.header.to_connect_header
        return ConnectHeaders([Header(k, *conv(topic, k, v)) for k, v in raw])

    # --- partitions and offsets ------------------------------------------------------------------------------
    def on_assigned(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            position = self.consumer.position(tp)
            self._current[tp] = position
            self._committed[tp] = position
            self.status.add_topic(self.id.connector, tp.topic)
        log.info("%s Partitions assigned: %s", self, ", ".join(map(str, partitions)))
        self.task.open(partitions)
        if self.is_paused:
            self.consumer.pause(partitions)

    def on_revoked(self, partitions: list[TopicPartition], lost: bool) -> None:
        if not lost:
            self.commit_offsets(only=partitions)
        log.info("%s Partitions %s: %s", self, "lost" if lost else "revoked", ", ".join(map(str, partitions)))
        self.task.close(partitions)
        for tp in partitions:
            self._current.pop(tp, None)
            self._committed.pop(tp, None)

    def _apply_rewinds(self) -> None:
        if not self.context.rewinds:
            return
        rewinds, self.context.rewinds = self.context.rewinds, {}
        assigned = self.consumer.assignment()
        for tp, offset in rewinds.items():
            if tp in assigned:
                log.info("%s Rewinding %s to offset %d", self, tp, offset)
                self.consumer.seek(tp, offset)
                self._current[tp] = offset

    def _pause_all(self) -> None:
        self._consumer_paused = True
        assigned = list(self.consumer.assignment())
        if assigned:
            self.consumer.pause(assigned)

    def _resume_all(self) -> None:
        """Resume after the connector's pause; partitions the task paused itself stay paused."""
        self._consumer_paused = False
        assigned = [tp for tp in self.consumer.assignment() if tp not in self.context.paused_by_task]
        if assigned:
            self.consumer.resume(assigned)

    def commit_offsets(self, closing: bool = False, only: Collection[TopicPartition] | None = None) -> None:
        self._next_commit = self.clock.monotonic() + self.offset_flush_interval
        current = {tp: off for tp, off in self._current.items() if only is None or tp in only}
        if not current:
            return
        started = self.clock.monotonic()
        try:
            if self.errors.dlq is not None:
                self.errors.dlq.flush(self.offset_flush_timeout)
            committable = dict(self.task.pre_commit(dict(current)))
        except Exception as exc:  # the task could not flush: rewind to what is committed
            log.error("%s Commit of offsets threw an unexpected exception: %s; rewinding to the last committed "
                      "offsets", self, exc)
            for tp, off in self._committed.items():
                if tp in current:
                    self.consumer.seek(tp, off)
                    self._current[tp] = off
            if closing:
                return
            return
        to_commit = {tp: off for tp, off in committable.items()
                     if tp in current and off is not None and self._committed.get(tp) != off}
        if not to_commit:
            return
        if self.is_cancelled:
            return  # given up for stopped: the next owner resumes from the last commit
        try:
            self.consumer.commit(to_commit, timeout=self._commit_timeout(started))
        except LogError as exc:
            # As Kafka Connect: a failed commit is logged, not fatal; the next commit covers these offsets
            # (the log unreachable, a rebalance under way). Records since the last commit may come again.
            # One that timed out counts as not made, though it may still land.
            then = ("the records since the last commit may come again to whoever runs this task next"
                    if self.is_stopping else "retrying at the next commit")
            log.log(logging.WARNING if exc.retriable else logging.ERROR,
                    "%s Commit of offsets failed; %s: %s", self, then, exc)
            return
        self._committed.update(to_commit)
        self.offset_commits += 1
        log.info("%s Committed offsets for %d partition(s) in %.0f ms (%d records put so far)", self, len(to_commit),
                 (self.clock.monotonic() - started) * 1000, self.records_put)
        self.log_metrics_summary()
