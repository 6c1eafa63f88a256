"""The statuses of connectors and tasks, kept in memory (standalone mode; distributed mode's store extends it).

The ``Status`` value itself belongs to the herder interface (``connect.runtime.herder``), which REST reads.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping

import attrs

from connect.log.api import ClientStats
from connect.runtime.herder import ConnectorTaskId, Status

__all__ = ["StatusListener", "StatusStore"]


StatusListener = Callable[[str, ConnectorTaskId | None, Status | None], None]


class StatusStore:
    """In-memory status map; a distributed herder mirrors it to the status topic via ``listeners``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connectors: dict[str, Status] = {}
        # by connector, so one connector's status costs the same however many connectors there are
        self._tasks: dict[str, dict[ConnectorTaskId, Status]] = {}
        self._topics: dict[str, set[str]] = {}
        self.listeners: list[StatusListener] = []
        # a connector's version moves on every change to it or its tasks, so a status view built from it
        # can be reused until then; numbers come from one counter, so a re-created connector never repeats one
        self._versions: dict[str, int] = {}
        self._version_counter = itertools.count(1)
        self._changes = 0  # moves on every change to any connector: a listing of them all is current until then
        # blanks resolved config-provider values from traces and topic names (the worker sets it)
        self.redact: Callable[[str], str] = lambda text: text

    def client_stats(self) -> tuple[ClientStats, ...]:
        """Traffic of the log clients that carry the statuses (in memory: none)."""
        return ()

    def refresh(self, timeout: float = 10.0) -> bool:
        """Bring the map up to date with every status written before this call (in memory: it always is)."""
        return True

    def put_connector(self, name: str, status: Status) -> None:
        status = self._redacted(status)
        with self._lock:
            self._connectors[name] = status
            self._touch(name)
        for listener in self.listeners:
            listener(name, None, status)

    def put_task(self, task: ConnectorTaskId, status: Status) -> None:
        status = self._redacted(status)
        with self._lock:
            self._tasks.setdefault(task.connector, {})[task] = status
            self._touch(task.connector)
        for listener in self.listeners:
            listener(task.connector, task, status)

    def _redacted(self, status: Status) -> Status:
        if not status.trace:
            return status
        trace = self.redact(status.trace)
        return status if trace == status.trace else attrs.evolve(status, trace=trace)

    def connector(self, name: str) -> Status | None:
        with self._lock:
            return self._connectors.get(name)

    def _touch(self, name: str) -> None:
        """Moves ``name``'s version on; the caller holds the lock and has just changed its statuses."""
        self._versions[name] = next(self._version_counter)
        self._changes += 1

    def version(self, name: str) -> int:
        """Changes whenever the status of connector ``name`` or of one of its tasks does (0: none stored)."""
        return self._versions.get(name, 0)  # one dict read: atomic under the GIL, no lock needed

    def changes(self) -> int:
        """How many times any status changed (or a connector's were removed): a new number for each change."""
        return self._changes

    def connector_names(self) -> list[str]:
        with self._lock:
            return list(self._connectors)

    def task(self, task: ConnectorTaskId) -> Status | None:
        with self._lock:
            return self._tasks.get(task.connector, {}).get(task)

    def tasks(self, name: str) -> Mapping[ConnectorTaskId, Status]:
        with self._lock:
            return dict(self._tasks.get(name, {}))

    def add_topic(self, connector: str, topic: str) -> None:
        """Record that ``connector`` used ``topic`` (GET /connectors/{c}/topics)."""
        with self._lock:
            self._topics.setdefault(connector, set()).add(topic)

    def topics(self, connector: str) -> list[str]:
        with self._lock:
            topics = sorted(self._topics.get(connector, ()))
        # two resolved topics both read "[hidden]": Kafka Connect's answer is a set of names, so it is shown once
        return list(dict.fromkeys(self.redact(t) for t in topics))

    def reset_topics(self, connector: str) -> None:
        with self._lock:
            self._topics.pop(connector, None)

    def remove_task(self, task: ConnectorTaskId) -> None:
        with self._lock:
            self._tasks.get(task.connector, {}).pop(task, None)
            self._touch(task.connector)

    def remove_connector(self, name: str) -> None:
        with self._lock:
            self._connectors.pop(name, None)
            self._topics.pop(name, None)
            self._tasks.pop(name, None)
            self._versions.pop(name, None)
            self._changes += 1
