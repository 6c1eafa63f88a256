"""Whether the Kafka cluster of one backend is reachable, as its clients see it.

librdkafka tells a client when it has lost every broker (``_ALL_BROKERS_DOWN``)
but never when they are back: it just reconnects and carries on. So the
clients' error events only raise a suspicion; a small probe (a metadata
request from a client of its own, once a second) confirms the outage and
notices the end of it. Nothing runs while the cluster is reachable.

The runtime shows the answer of ``problem()`` in task statuses: during an
outage tasks stay RUNNING, hold their records and retry.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import KafkaError

__all__ = ["ClusterHealth"]

log = logging.getLogger("connect.log.kafka")

# Error events that make a client think the whole cluster is gone.
_SUSPICIOUS = frozenset({KafkaError._ALL_BROKERS_DOWN})


class ClusterHealth:
    """Tracks outages of one cluster; ``on_error`` is fed by every client of a backend."""

    def __init__(self, bootstrap_servers: str, admin_config: Mapping[str, Any], interval: float = 1.0,
                 probe_timeout: float = 2.0) -> None:
        self.bootstrap_servers = bootstrap_servers
        self._admin_config = dict(admin_config)
        self.interval = interval
        self.probe_timeout = probe_timeout
        self._lock = threading.Lock()
        self._suspect_since: float | None = None  # wall clock of the first error event of an outage
        self._down_since: float | None = None  # set once the probe confirmed it
        self._last_error = ""
        self._probe_thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._client: Any = None

    # --- fed by the clients' error callbacks (on whatever thread polls them) -------------------------
    def on_error(self, err: KafkaError) -> None:
        if err.code() not in _SUSPICIOUS or self._closed.is_set():
            return
        with self._lock:
            self._last_error = f"{err.str()} [{err.name()}]"
            if self._suspect_since is None:
                self._suspect_since = time.time()
            if self._probe_thread is None:
                self._probe_thread = threading.Thread(target=self._probe_loop, name="kafka-health-probe",
                                                      daemon=True)
                self._probe_thread.start()

    # --- what the runtime asks ------------------------------------------------------------------------------
    def problem(self) -> str | None:
        """None while the cluster answers; else one line saying since when it does not, and why."""
        with self._lock:
            since, error = self._down_since, self._last_error
        if since is None:
            return None
        stamp = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return (f"Kafka at bootstrap.servers={self.bootstrap_servers} unreachable since {stamp} "
                f"({time.time() - since:.0f} s): {error}; the task keeps running and retries until Kafka is back")

    def close(self) -> None:
        # The probe (a daemon thread) ends within one probe; nothing waits for it.
        self._closed.set()

    # --- the probe ----------------------------------------------------------------------------------------------
    def _probe_loop(self) -> None:
        try:
            while not self._closed.is_set():
                error = self._probe()
                if error is None:
                    self._recovered()
                    return
                self._confirmed(error)
                self._closed.wait(self.interval)
        except Exception:  # a broken probe must not take anything else down
            log.exception("Kafka health probe failed")
        with self._lock:
            self._probe_thread = None

    def _confirmed(self, error: str) -> None:
        with self._lock:
            if error:
                self._last_error = error
            newly_down = self._down_since is None
            if newly_down:
                self._down_since = self._suspect_since or time.time()
            error = self._last_error
        if newly_down:
            log.warning("Kafka at bootstrap.servers=%s is unreachable (%s); its clients hold their records and "
                        "keep retrying until it is back", self.bootstrap_servers, error)

    def _recovered(self) -> None:
        with self._lock:
            was_down = self._down_since
            self._suspect_since = self._down_since = None
            self._probe_thread = None
        if was_down is not None:
            log.info("Kafka at bootstrap.servers=%s is reachable again after %.0f s", self.bootstrap_servers,
                     time.time() - was_down)

    def _probe(self) -> str | None:
        """None if a broker answered a metadata request, else why not ("" when there is nothing to add)."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        if self._client is None:
            conf = dict(self._admin_config)
            # Its own connection failures are what it is here to find; keep them out of the log.
            conf["logger"] = _QUIET
            conf["error_cb"] = _ignore
            # Notice a returning broker within a second, not librdkafka's 10 s backoff.
            conf["reconnect.backoff.max.ms"] = "1000"
            self._client = AdminClient(conf)
        try:
            md = self._client.list_topics(timeout=self.probe_timeout)
        except KafkaException as exc:
            kerr = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            return f"{kerr.str()} [{kerr.name()}]" if kerr is not None else str(exc)
        return None if md.brokers else ""


def _ignore(_err: KafkaError) -> None:
    pass


class _Quiet:
    def log(self, level: int, msg: str, *args: Any, **kwargs: Any) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug(msg, *args)


_QUIET = _Quiet()
