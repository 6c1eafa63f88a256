"""The embedded log's transactional producer: an EmbeddedProducer whose batches belong to transactions.

See transactions.py for the design. What this adds to the producer: sends only inside a transaction, each
batch tagged with the producer id and epoch, the partitions a transaction writes recorded before its
first batch lands there, and commit/abort through the TransactionCoordinator.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogError, ProducerFencedError, TransactionAbortedError
from connect.log.embedded.codec import TXN_DATA
from connect.log.embedded.producer import EmbeddedProducer
from connect.log.embedded.topics import TopicStore
from connect.log.embedded.transactions import TransactionCoordinator, TransactionState

__all__ = ["TransactionalEmbeddedProducer"]

log = logging.getLogger(__name__)


class TransactionalEmbeddedProducer(EmbeddedProducer):
    def __init__(self, store: TopicStore, config: Mapping[str, Any], worker_config: Mapping[str, Any],
                 coordinator: TransactionCoordinator) -> None:
        super().__init__(store, config, worker_config)
        self.transactional_id = str(config["transactional.id"])
        self._coordinator = coordinator
        self._state: TransactionState | None = None
        self._open = False
        self._written: dict[TopicPartition, None] = {}  # in first-write order
        self._fenced: ProducerFencedError | None = None  # once fenced, every call raises it again
        self._failed: BaseException | None = None  # an append of the open transaction that failed

    @property
    def transactional(self) -> bool:
        return True

    def _require_open(self) -> None:
        if self._fenced is not None:
            raise self._fenced
        if not self._open:
            raise LogError(f"A transactional producer ('{self.transactional_id}') sends only inside a "
                           "transaction: begin_transaction first")

    # -- hooks of EmbeddedProducer ------------------------------------------------------------------------

    def _transaction_tag(self) -> tuple[int, int, int] | None:
        state = self._state
        assert state is not None
        return (state.producer_id, state.epoch, TXN_DATA)

    def _before_append(self, tp: TopicPartition) -> None:
        self._require_open()
        if tp not in self._written:
            assert self._state is not None
            try:
                self._coordinator.begin_writes(self._state, [tp])
            except ProducerFencedError as exc:
                self._fenced = exc
                raise
            self._written[tp] = None

    def _append_columns(self, tp: TopicPartition, values: Any, keys: Any, timestamps: Any, headers: Any,
                        default_ts: int) -> list[tuple[int, int]]:
        try:
            return super()._append_columns(tp, values, keys, timestamps, headers, default_ts)
        except BaseException as exc:
            # a lost write must fail the commit even where no callback reports it (a linger drain), and so
            # must a record refused for its size before any append was tried
            if self._failed is None:
                self._failed = exc
            raise

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int | None = None,
             timestamp: int | None = None, headers: Any = None, on_delivery: Any = None) -> None:
        self._require_open()
        super().send(topic, value, key, partition, timestamp, headers, on_delivery)

    def send_batch(self, topic: str, partition: int | None, values: Any, keys: Any = None, timestamps: Any = None,
                   headers: Any = None, on_delivery: Any = None) -> None:
        self._require_open()
        super().send_batch(topic, partition, values, keys, timestamps, headers, on_delivery)

    # -- the transaction calls ------------------------------------------------------------------------------

    def init_transactions(self, timeout: float | None = None) -> None:
        self._state = self._coordinator.init(self.transactional_id)
        log.info("Transactional producer '%s' initialised (epoch %d): older producers of this id are fenced",
                 self.transactional_id, self._state.epoch)

    def begin_transaction(self) -> None:
        if self._fenced is not None:
            raise self._fenced
        if self._state is None:
            raise LogError(f"init_transactions first (transactional.id '{self.transactional_id}')")
        if self._open:
            raise LogError(f"A transaction of '{self.transactional_id}' is already open")
        self._open = True
        self._written = {}
        self._failed = None

    def commit_transaction(self, timeout: float | None = None) -> None:
        self._require_open()
        assert self._state is not None
        try:
            self.flush(timeout)
            if self._fenced is not None:
                raise self._fenced
            if self._failed is not None:
                raise LogError(f"a write of the transaction failed: {self._failed}")
            written = list(self._written)
            for tp in written:
                # the data is made as durable as the partition's other appends before the commit point: in
                # the page cache (which a killed process leaves intact), or on disk where the topic syncs
                plog = self._store.partition_log(tp.topic, tp.partition)
                if plog.syncs_writes:
                    plog.sync()
        except ProducerFencedError:
            self._open = False  # the newer producer aborted it
            raise
        except LogError as exc:
            self._abort(timeout)
            raise TransactionAbortedError(f"The transaction of '{self.transactional_id}' was aborted: {exc}") from exc
        try:
            self._coordinator.commit(self._state, written)
        except ProducerFencedError as exc:
            self._fenced = exc
            self._open = False
            raise
        self._open = False

    def abort_transaction(self, timeout: float | None = None) -> None:
        if self._open:
            self._abort(timeout)

    def _abort(self, timeout: float | None) -> None:
        assert self._state is not None
        with self._lock:
            dropped = self._acc
            self._acc = {}
        err = TransactionAbortedError(f"the transaction of '{self.transactional_id}' was aborted")
        for acc in dropped.values():
            for _, cb in acc.callbacks:
                self._done.append((cb, err, None))
        try:
            self._coordinator.abort(self._state, list(self._written))
        except ProducerFencedError as exc:
            self._fenced = exc
            raise
        finally:
            self._open = False

    def close(self, timeout: float | None = None) -> None:
        if self._open:
            try:
                self._abort(timeout)
            except LogError as exc:  # fenced: the newer producer finished it
                log.info("Closing '%s' with its transaction open: %s", self.transactional_id, exc)
        super().close(timeout)
