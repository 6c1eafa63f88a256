"""librdkafka errors as the topic layer's errors, and librdkafka's logs in Python logging."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException

from connect.log.api import (
    InvalidTopicError,
    LogError,
    RetriableLogError,
    TopicExistsError,
    UnknownTopicError,
)

if TYPE_CHECKING:
    from connect.log.kafka.health import ClusterHealth

__all__ = ["ClientEvents", "kafka_error", "to_log_error"]

log = logging.getLogger("connect.log.kafka")

_UNKNOWN_TOPIC = frozenset(
    {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION}
)
# librdkafka marks these non-retriable, yet waiting does help: the broker is
# away or slow, not the request wrong.
_TRANSIENT = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError._MSG_TIMED_OUT,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        KafkaError._WAIT_COORD,
    }
)


def kafka_error(exc: BaseException) -> KafkaError | None:
    """The KafkaError inside a KafkaException (or the error itself), if any."""
    if isinstance(exc, KafkaError):
        return exc
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def to_log_error(err: KafkaError | BaseException, what: str) -> LogError:
    """``what`` failed because of ``err``: the matching LogError, retriable when a retry may help."""
    kerr = kafka_error(err) if not isinstance(err, KafkaError) else err
    if kerr is None:
        return LogError(f"{what}: {err}")
    code = kerr.code()
    text = f"{what}: {kerr.str()} [{kerr.name()}]"
    if code == KafkaError.TOPIC_ALREADY_EXISTS:
        exc: LogError = TopicExistsError(text)
    elif code in _UNKNOWN_TOPIC:
        exc = UnknownTopicError(text)
    elif code == KafkaError.TOPIC_EXCEPTION:
        exc = InvalidTopicError(text)
    elif not kerr.fatal() and (kerr.retriable() or code in _TRANSIENT):
        exc = RetriableLogError(text)
    else:
        exc = LogError(text)
    exc.kafka_code = code  # type: ignore[attr-defined]
    return exc


class ClientEvents:
    """Receives one client's librdkafka log lines and error events.

    librdkafka reports a refused connection twice (a log line and an error
    event) on every reconnect attempt; left alone that floods stderr during
    any broker outage. Here log lines go to the ``connect.log.kafka`` logger,
    connection failures at DEBUG, and error events at WARNING at most once a
    minute per error code. A fatal error is kept so that the next call on the
    client raises it.
    """

    REPEAT_AFTER = 60.0

    def __init__(self, client: str, health: ClusterHealth | None = None, quiet: bool = False) -> None:
        """``health`` hears every error event; ``quiet`` logs them at DEBUG only, for clients
        whose calls report their own failures (admin clients)."""
        self.client = client
        self.health = health
        self.quiet = quiet
        self.fatal: KafkaError | None = None
        self._last: dict[int, float] = {}
        self._lock = threading.Lock()

    # confluent-kafka calls logger.log(level, "%s [%s] %s", facility, name, text)
    def log(self, level: int, msg: str, *args: Any, **kwargs: Any) -> None:
        facility = args[0] if args else ""
        if facility in ("FAIL", "ERROR") and level >= logging.WARNING:
            level = logging.DEBUG
        if log.isEnabledFor(level):
            log.log(level, msg, *args)

    def on_error(self, err: KafkaError) -> None:
        if self.health is not None:
            self.health.on_error(err)
        if err.fatal():
            self.fatal = err
            log.error("%s: fatal error: %s [%s]", self.client, err.str(), err.name())
            return
        now = time.monotonic()
        code = err.code()
        with self._lock:
            last = self._last.get(code)
            if last is not None and now - last < self.REPEAT_AFTER:
                quiet = True
            else:
                self._last[code] = now
                quiet = False
        log.log(
            logging.DEBUG if quiet or self.quiet else logging.WARNING, "%s: %s [%s]", self.client, err.str(), err.name()
        )

    def raise_if_fatal(self, what: str) -> None:
        if self.fatal is not None:
            raise to_log_error(self.fatal, f"{what}: {self.client} failed earlier")

    def settings(self) -> dict[str, Any]:
        """The confluent-kafka config entries that route this client's events here."""
        return {"logger": self, "error_cb": self.on_error}
