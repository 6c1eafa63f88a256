"""Kafka transactions in the topic layer: a transactional producer, and fencing by transactional id.

librdkafka does the protocol (InitProducerId, AddPartitionsToTxn, EndTxn and the markers); what is here
is the topic layer's contract on top of it: every failure becomes ProducerFencedError (a newer producer
of the id exists: stop), TransactionAbortedError (the transaction was aborted, the producer goes on) or a
plain LogError (the producer is broken), with the transactional id in the message. Retriable failures
of init and commit are retried within the call's timeout, as librdkafka's documentation asks.

Fencing (Kafka's ``Admin.fenceProducers``) is what InitProducerId does to an id: it bumps the epoch and
aborts the open transaction. confluent-kafka's AdminClient has no call for it, so a short-lived producer
per id initialises and goes.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException

from connect.log.api import (
    BatchDeliveryCallback,
    Headers,
    LogError,
    ProducerFencedError,
    TransactionAbortedError,
)
from connect.log.kafka.client_errors import kafka_error
from connect.log.kafka.health import ClusterHealth
from connect.log.kafka.producer import KafkaProducer

__all__ = ["TransactionalKafkaProducer", "fence_transactional_ids"]

log = logging.getLogger("connect.log.kafka")

_FENCED = frozenset(code for code in (getattr(KafkaError, name, None) for name in (
    "_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "INVALID_PRODUCER_ID_MAPPING")) if code is not None)


def _is_fenced(kerr: KafkaError | None) -> bool:
    return kerr is not None and kerr.code() in _FENCED


class TransactionalKafkaProducer(KafkaProducer):
    """A KafkaProducer made with ``transactional.id``: every send belongs to the open transaction."""

    def __init__(self, config: Mapping[str, str], own: Mapping[str, str], name: str = "producer",
                 health: ClusterHealth | None = None) -> None:
        self.transactional_id = str(config["transactional.id"])
        conf = {**config, "enable.idempotence": "true", "acks": "all"}
        # librdkafka refuses a record timeout longer than the transaction's (the Java client does not check);
        # a record that cannot be delivered while its transaction lives fails that transaction anyway
        txn_timeout = int(conf.get("transaction.timeout.ms", 60000))
        if int(conf.get("message.timeout.ms", 300000)) > txn_timeout:
            conf["message.timeout.ms"] = str(txn_timeout)
        super().__init__(conf, own, name, health)
        self._open = False
        self._initialised = False

    @property
    def transactional(self) -> bool:
        return True

    def _error(self, exc: BaseException, what: str) -> LogError:
        kerr = kafka_error(exc)
        text = f"{what} of transactional.id '{self.transactional_id}'"
        if _is_fenced(kerr):
            assert kerr is not None
            return ProducerFencedError(f"{text}: fenced by a newer producer with the same transactional.id "
                                       f"({kerr.str()})")
        detail = f"{kerr.str()} [{kerr.name()}]" if kerr is not None else str(exc)
        return LogError(f"{text} failed: {detail}")

    def _retrying(self, call: Callable[[float], None], timeout: float | None, what: str) -> None:
        """Run ``call(remaining)``; again while librdkafka says the failure is retriable and time is left."""
        deadline = time.monotonic() + (timeout if timeout is not None else self._api_timeout * 2)
        while True:
            try:
                call(max(0.1, deadline - time.monotonic()))
                return
            except KafkaException as exc:
                kerr = kafka_error(exc)
                if kerr is not None and kerr.retriable() and not _is_fenced(kerr) and time.monotonic() < deadline:
                    log.debug("%s of %s: %s; retrying", what, self.transactional_id, kerr.str())
                    continue
                raise

    # -- the transaction calls -------------------------------------------------------------------------------

    def init_transactions(self, timeout: float | None = None) -> None:
        try:
            self._retrying(self._p.init_transactions, timeout, "init_transactions")
        except KafkaException as exc:
            raise self._error(exc, "Initialising transactions") from None
        self._initialised = True
        log.info("Transactional producer '%s' initialised: older producers of this id are fenced",
                 self.transactional_id)

    def begin_transaction(self) -> None:
        if not self._initialised:
            raise LogError(f"init_transactions first (transactional.id '{self.transactional_id}')")
        try:
            self._p.begin_transaction()
        except KafkaException as exc:
            raise self._error(exc, "Beginning a transaction") from None
        self._open = True

    def commit_transaction(self, timeout: float | None = None) -> None:
        if not self._open:
            raise LogError(f"No open transaction to commit (transactional.id '{self.transactional_id}')")
        try:
            self._retrying(self._p.commit_transaction, timeout, "commit_transaction")
        except KafkaException as exc:
            kerr = kafka_error(exc)
            if kerr is not None and kerr.txn_requires_abort() and not _is_fenced(kerr):
                self._abort_quietly(timeout)
                raise TransactionAbortedError(
                    f"The transaction of transactional.id '{self.transactional_id}' was aborted: {kerr.str()}"
                ) from None
            self._open = False
            raise self._error(exc, "Committing a transaction") from None
        finally:
            self._clear_failures()
        self._open = False

    def abort_transaction(self, timeout: float | None = None) -> None:
        if not self._open:
            return
        try:
            self._retrying(self._p.abort_transaction, timeout, "abort_transaction")
        except KafkaException as exc:
            raise self._error(exc, "Aborting a transaction") from None
        finally:
            self._open = False
            self._clear_failures()

    def _abort_quietly(self, timeout: float | None) -> None:
        try:
            self._retrying(self._p.abort_transaction, timeout, "abort_transaction")
        except KafkaException as exc:
            log.warning("Aborting the failed transaction of '%s': %s", self.transactional_id, exc)
        self._open = False

    def _clear_failures(self) -> None:
        # a record that failed is the transaction's failure, reported by commit; not the next one's
        self._failures, self._first_failure = 0, None

    # -- sends belong to the open transaction ----------------------------------------------------------------

    def _require_open(self) -> None:
        if not self._open:
            raise LogError(f"A transactional producer ('{self.transactional_id}') sends only inside a "
                           "transaction: begin_transaction first")

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int | None = None,
             timestamp: int | None = None, headers: Headers | None = None, on_delivery: Any = None) -> None:
        self._require_open()
        super().send(topic, value, key, partition, timestamp, headers, on_delivery)

    def send_batch(self, topic: str, partition: int | None, values: Sequence[bytes | None],
                   keys: Sequence[bytes | None] | None = None, timestamps: Sequence[int] | None = None,
                   headers: Sequence[Headers] | None = None, on_delivery: BatchDeliveryCallback | None = None) -> None:
        self._require_open()
        super().send_batch(topic, partition, values, keys, timestamps, headers, on_delivery)

    def close(self, timeout: float | None = None) -> None:
        if self._open:
            self._abort_quietly(timeout)
        try:
            super().close(timeout)
        except KafkaException as exc:
            # a fenced (or otherwise failed) producer cannot flush; nothing it holds may be sent anyway
            kerr = kafka_error(exc)
            log.info("Closing transactional producer '%s' without a flush: %s", self.transactional_id,
                     kerr.str() if kerr is not None else exc)
            try:
                self._p.purge(in_queue=True, in_flight=True)
            except KafkaException:
                pass


def fence_transactional_ids(config: Mapping[str, Any], transactional_ids: Sequence[str], timeout: float) -> None:
    """Fence every producer now holding one of ``transactional_ids`` (``config``: the admin client's
    librdkafka settings: bootstrap and security). The ids are fenced in parallel; the first failure is raised
    once all were tried."""
    base = {k: v for k, v in config.items() if k not in ("error_cb", "logger")}

    def fence(tid: str) -> None:
        producer = confluent_kafka.Producer({**base, "transactional.id": tid, "log_level": 3})
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    producer.init_transactions(max(0.1, deadline - time.monotonic()))
                    return
                except KafkaException as exc:
                    kerr = kafka_error(exc)
                    if kerr is not None and kerr.retriable() and time.monotonic() < deadline:
                        continue
                    raise LogError(f"Fencing transactional.id '{tid}' failed: {exc}") from None
        finally:
            producer.flush(0)

    ids = list(dict.fromkeys(transactional_ids))
    if not ids:
        return
    with concurrent.futures.ThreadPoolExecutor(min(8, len(ids)), thread_name_prefix="fence-producers") as pool:
        results = list(pool.map(lambda tid: _outcome(fence, tid), ids))
    failures = [r for r in results if r is not None]
    if failures:
        raise failures[0]


def _outcome(fn: Callable[[str], None], arg: str) -> LogError | None:
    try:
        fn(arg)
    except LogError as exc:
        return exc
    return None
