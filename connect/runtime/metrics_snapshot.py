"""What a worker counts, copied out at one instant for a metrics scrape (``Herder.metrics_snapshot``).

Plain values only: the REST layer turns a snapshot into Prometheus families without touching runtime
objects, and the runtime does no metrics work between scrapes beyond the integer counters it already keeps.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

__all__ = ["ClientMetrics", "ConnectorMetrics", "TaskMetrics", "TaskRestartInfo", "WorkerMetrics"]


@attrs.frozen
class ClientMetrics:
    """A log client's traffic (the topic layer's ``ClientStats``, copied: the REST layer never sees that layer)."""

    client_id: str
    kind: str  # "producer", "consumer" or "admin"
    outgoing_bytes: int
    incoming_bytes: int
    connections: int | None  # None where the log is not reached over a network


@attrs.frozen
class TaskRestartInfo:
    """Automatic restarts of a FAILED task: how many were made, and when the next one is due (None: none)."""

    tries: int
    max_tries: int
    next_restart_ms: int | None


@attrs.frozen
class TaskMetrics:
    connector: str
    task: int
    kind: str  # "source" or "sink"
    state: str  # RUNNING, PAUSED, FAILED, ...
    counters: Mapping[str, int | float]  # WorkerTask.metrics(): record counts, then the error counters
    partition_lag: Mapping[tuple[str, int], int] = attrs.field(factory=dict)  # sinks: log end - committed
    restart: TaskRestartInfo | None = None
    clients: tuple[ClientMetrics, ...] = ()  # the task's producer or consumer, and its dead letter queue's


@attrs.frozen
class ConnectorMetrics:
    name: str
    connector_class: str
    type: str  # "source", "sink" or "unknown"
    version: str
    state: str
    task_states: Mapping[str, int]  # tasks of this connector on this worker, by state


@attrs.frozen
class WorkerMetrics:
    worker_id: str
    connectors: tuple[ConnectorMetrics, ...]
    tasks: tuple[TaskMetrics, ...]
    startup: Mapping[str, int]  # connector_startup_attempts, ..._success, ..._failure; task_startup_*
    rebalance: Mapping[str, int | float] | None = None  # distributed mode only
    clients: tuple[ClientMetrics, ...] = ()  # the worker's own log clients (its shared admin)
