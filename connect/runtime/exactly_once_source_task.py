"""ExactlyOnceWorkerSourceTask: a source task whose records and source offsets commit in one transaction.

KIP-618, on either backend. The task's producer has ``transactional.id=<group.id>-<connector>-<task>``;
``init_transactions`` fences every older instance of the task (a zombie left on a worker that lost it)
and finishes what that instance left open. A transaction opens with the first record sent after the last
commit and ends where ``transaction.boundary`` says: after each poll's records (``poll``), after
``transaction.boundary.interval.ms`` (``interval``), or where the task asks through its
TransactionContext (``connector``). Its last step writes the offsets of every source partition the
transaction covers to the offset topic, with the same producer, so a reader with
``isolation.level=read_committed`` sees the records exactly when a restarted task would resume after
them. There is no offset committer thread: a commit is the end of a transaction, on the task thread.

Failure: anything that goes wrong in a transaction (a send, the offset write, the commit) aborts it and
fails the task; on restart the task resumes from the last committed offsets, and the aborted records
were never visible, so nothing is lost or duplicated for read_committed readers. A producer fenced by a
newer instance fails the task too: the newer instance owns the work now.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from connect.api.connector import TransactionBoundary, TransactionContext
from connect.api.errors import ConnectException, RetriableException
from connect.api.records import SourceRecord
from connect.log.api import LogError, ProducerFencedError
from connect.runtime.source_task import WorkerSourceTask, _Context
from connect.runtime.storage.offset_backing_store import KafkaOffsetStore

__all__ = ["ExactlyOnceWorkerSourceTask", "TransactionRequests"]

log = logging.getLogger(__name__)


class TransactionRequests(TransactionContext):
    """What a task asked of its TransactionContext since the worker last looked (thread-safe: a task may
    ask from any of its threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batch: str | None = None  # "commit" or "abort" after the current batch
        self._records: dict[int, tuple[SourceRecord, str]] = {}  # by id(record): record-scoped requests

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        self._request(record, "commit")

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        self._request(record, "abort")

    def _request(self, record: SourceRecord | None, what: str) -> None:
        with self._lock:
            if record is None:
                self._batch = what
            else:
                self._records[id(record)] = (record, what)

    def take_record_requests(self) -> dict[int, tuple[SourceRecord, str]]:
        with self._lock:
            out, self._records = self._records, {}
        return out

    def take_batch_request(self) -> str | None:
        with self._lock:
            out, self._batch = self._batch, None
        return out


class _ExactlyOnceContext(_Context):
    def __init__(self, *args: Any, transactions: TransactionRequests | None) -> None:
        super().__init__(*args)
        self._transactions = transactions

    def transaction_context(self) -> TransactionContext | None:
        return self._transactions


class ExactlyOnceWorkerSourceTask(WorkerSourceTask):
    """``offset_topic``: where this task's offsets go (the connector's ``offsets.storage.topic`` or the
    worker's); ``fence_zombies``: called once the producer is initialised and before the task reads its
    offsets (distributed mode: the leader fences the tasks of earlier task generations), with a callable
    that tells whether the task is being stopped meanwhile."""

    def __init__(self, *args: Any, offset_topic: KafkaOffsetStore,
                 fence_zombies: Callable[[Callable[[], bool]], None] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.offset_topic = offset_topic
        self._fence_zombies = fence_zombies
        cc = self.connector_config
        self.boundary = TransactionBoundary.parse(cc.transaction_boundary)
        interval_ms = cc.transaction_boundary_interval_ms
        self.boundary_interval = (interval_ms if interval_ms is not None
                                  else self.worker_config.offset_flush_interval_ms) / 1000
        self._requests = TransactionRequests() if self.boundary is TransactionBoundary.CONNECTOR else None
        self._open_since: float | None = None  # monotonic time the open transaction began; None: none open
        self._open_records = 0
        self.transactions_committed = 0
        self.transactions_aborted = 0
        self._last_info = float("-inf")

    # --- WorkerTask ----------------------------------------------------------------------
    def initialize_and_start(self) -> None:
        try:
            self.producer.init_transactions(self.offset_flush_timeout)
        except LogError as exc:
            raise ConnectException(f"Could not initialise the transactional producer of {self.id}: {exc}") from exc
        log.info("%s Transactional producer ready (transaction.boundary=%s); older instances are fenced", self,
                 self.boundary.value)
        if self._fence_zombies is not None:
            self._fence_zombies(lambda: self.is_stopping)
        # after fencing: no zombie can commit an offset now, so what is read here is where to resume
        if not self.offset_topic.refresh(self.offset_flush_timeout):
            raise ConnectException(f"Could not read offset topic '{self.offset_topic.topic}' to its end")
        self.task.initialize(_ExactlyOnceContext(self.task_config, self.offset_reader, transactions=self._requests))
        self.task.start(self.task_config)

    def execute(self) -> None:
        while not self.is_stopping and self.iteration():
            pass
        self.commit_offsets()  # a clean stop commits what was sent, as Kafka Connect does

    def iteration(self) -> bool:
        if self.is_paused:
            self.commit_offsets()
            return self.await_unpaused()
        if self._held is None:
            polled = self._poll()
            if polled is None:
                return True
            self._held = polled
        if self.is_paused:
            return True
        held, self._held = self._held, None
        if held:
            self._send_in_transactions(held)
        self.producer.poll(0)
        if self._send_error is not None:
            raise ConnectException(f"Unrecoverable exception from producer send callback: {self._send_error}")
        self._maybe_end_transaction()
        return True

    def _poll(self) -> Sequence[SourceRecord] | None:
        try:
            records = self.task.poll()
        except RetriableException as exc:
            self.errors.metrics.retries += 1
            log.warning("%s RetriableException from SourceTask.poll, polling again: %s", self, exc)
            self._maybe_end_transaction()
            return None
        if records:
            self.records_polled += len(records)
        return records or ()

    def close(self) -> None:
        if self._open_since is not None:
            # the task failed or is stopping mid-transaction: nothing of it may become visible
            try:
                self.producer.abort_transaction(self.offset_flush_timeout)
                self.transactions_aborted += 1
                log.info("%s Aborted the open transaction (%d records) as the task closes", self,
                         self._open_records)
            except Exception as exc:  # fenced or broken: the log aborts it on its own
                log.warning("%s Could not abort the open transaction as the task closes: %s", self, exc)
            self._open_since = None
        super().close()

    def record_counts(self) -> dict[str, int]:
        return {**super().record_counts(), "transactions_committed": self.transactions_committed,
                "transactions_aborted": self.transactions_aborted}

    def record_signature(self) -> tuple[int, ...]:
        return (*super().record_signature(), self.transactions_committed, self.transactions_aborted)

    # --- transactions -------------------------------------------------------------------------
    def _begin(self) -> None:
        if self._open_since is None:
            try:
                self.producer.begin_transaction()
            except LogError as exc:
                raise ConnectException(f"{self} could not begin a transaction: {exc}") from exc
            self._open_since = self.clock.monotonic()
            self._open_records = 0

    def _send_in_transactions(self, records: Sequence[SourceRecord]) -> None:
        """Send ``records``, ending transactions after any record the task named in a request."""
        requests = self._requests.take_record_requests() if self._requests is not None else {}
        ack = self.batch_ack(records)  # commit_batch gets the polled batch, however it is split here
        start = 0
        if requests:
            for i, record in enumerate(records):
                wanted = requests.get(id(record))
                if wanted is not None and wanted[0] is record:
                    self._send_part(records[start:i + 1], ack, records, start)
                    self._end_transaction(wanted[1])
                    start = i + 1
        if start < len(records):
            self._send_part(records[start:] if start else records, ack, records, start)

    def _send_part(self, records: Sequence[SourceRecord], ack: Any = None,
                   polled: Sequence[SourceRecord] | None = None, first: int = 0) -> None:
        """``records`` are ``polled[first:]`` (and on) of what the task's ``poll`` returned."""
        self._begin()
        self._send(records, ack, polled, first)
        self._open_records += len(records)

    def _maybe_end_transaction(self) -> None:
        if self.boundary is TransactionBoundary.POLL:
            if self._open_since is not None:
                self._end_transaction("commit")
        elif self.boundary is TransactionBoundary.INTERVAL:
            if self._open_since is not None and self.clock.monotonic() - self._open_since >= self.boundary_interval:
                self._end_transaction("commit")
        elif self._requests is not None:
            wanted = self._requests.take_batch_request()
            if wanted is not None:
                self._end_transaction(wanted)

    def _end_transaction(self, what: str) -> None:
        if what == "abort":
            self._abort()
        else:
            self.commit_offsets()

    def commit_offsets(self) -> bool:
        """Commit the open transaction with the offsets it covers; True also when none was open."""
        with self._commit_lock:
            if self._open_since is None:
                return True
            return self._commit_transaction()

    def _commit_transaction(self) -> bool:
        with self._pending_lock:
            snapshot, self._pending = self._pending, {}
        started = self.clock.monotonic()
        records = self._open_records
        try:
            changes = {key: (None if off is None else _json(off)) for key, (_p, off) in snapshot.items()}
            for key, value in changes.items():
                self.producer.send(self.offset_topic.topic, None if value is None else value.encode("utf-8"),
                                   key.encode("utf-8"), self.offset_topic.partition_for(key))
            if self.errors.dlq is not None:
                # the dead-letter topic is written outside the transaction: it must hold a failed record
                # before the offset past that record commits
                self.errors.dlq.flush(self.offset_flush_timeout)
            self.producer.commit_transaction(self.offset_flush_timeout)
        except ProducerFencedError as exc:
            self._open_since = None
            raise ConnectException(f"{self} was fenced out: a newer instance of this task has started, so this "
                                   f"one stops without committing ({exc})") from exc
        except LogError as exc:
            raise ConnectException(f"{self} could not commit its transaction of {records} records: {exc}") from exc
        self._open_since = None
        self.transactions_committed += 1
        if self._send_error is not None:
            raise ConnectException(f"Unrecoverable exception from producer send callback: {self._send_error}")
        try:
            self.task.commit()
        except Exception:
            log.exception("%s Exception thrown while calling task.commit()", self)
        now = self.clock.monotonic()
        # a transaction per poll can mean hundreds a second: one INFO line per offset.flush.interval.ms at most
        level = logging.INFO if now - self._last_info >= self.offset_flush_interval else logging.DEBUG
        log.log(level, "%s Committed a transaction of %d records with offsets of %d source partition(s) in %.0f ms "
                "(%d transactions, %d records sent so far)", self, records, len(changes), (now - started) * 1000,
                self.transactions_committed, self.records_sent)
        if level == logging.INFO:
            self._last_info = now
            self.log_metrics_summary()
        return True

    def _abort(self) -> None:
        with self._commit_lock:
            if self._open_since is None:
                return
            with self._pending_lock:
                self._pending = {}
            records = self._open_records
            try:
                self.producer.abort_transaction(self.offset_flush_timeout)
            except ProducerFencedError as exc:
                self._open_since = None
                raise ConnectException(f"{self} was fenced out while aborting a transaction ({exc})") from exc
            except LogError as exc:
                raise ConnectException(f"{self} could not abort its transaction: {exc}") from exc
            self._open_since = None
            self.transactions_aborted += 1
            log.info("%s Aborted a transaction of %d records, as the task asked", self, records)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
