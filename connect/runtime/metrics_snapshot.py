"""What a worker counts, copied out at one instant for a metrics scrape (``Herder.metrics_snapshot``).

Plain values only: the REST layer turns a snapshot into Prometheus families without touching runtime
objects, and the runtime does no metrics work between scrapes beyond the integer counters it already keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

__all__ = ["ClientMetrics", "ConnectorMetrics", "TaskMetrics", "TaskRestartInfo", "WorkerMetrics", "without_secrets"]


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


def without_secrets(snapshot: WorkerMetrics, redact: Callable[[str], str]) -> WorkerMetrics:
    """``snapshot`` with every value a config provider resolved blanked (``redact``) from the names that come
    from connector configs: the topics of the sink lag series and the clients' ids.

    Two hidden topics may share a partition number; their lags then add up into one series, because a scrape
    holding two series with the same labels is refused whole by Prometheus, and the sum still says how many
    records those partitions are behind. Connector names are chosen by the user and are never resolved.
    """
    names: dict[str, str] = {}

    def shown(name: str) -> str:
        text = names.get(name)
        if text is None:
            text = names[name] = redact(name)
        return text

    def clients(of: tuple[ClientMetrics, ...]) -> tuple[ClientMetrics, ...]:
        if all(shown(c.client_id) == c.client_id for c in of):
            return of
        return tuple(attrs.evolve(c, client_id=shown(c.client_id)) for c in of)

    tasks = []
    for task in snapshot.tasks:
        new = task
        if any(shown(topic) != topic for topic, _ in task.partition_lag):
            lag: dict[tuple[str, int], int] = {}
            for (topic, partition), value in task.partition_lag.items():
                key = (shown(topic), partition)
                lag[key] = lag.get(key, 0) + value
            new = attrs.evolve(new, partition_lag=lag)
        task_clients = clients(task.clients)
        if task_clients is not task.clients:
            new = attrs.evolve(new, clients=task_clients)
        tasks.append(new)
    worker_clients = clients(snapshot.clients)
    if worker_clients is snapshot.clients and all(new is old for new, old in zip(tasks, snapshot.tasks, strict=True)):
        return snapshot
    return attrs.evolve(snapshot, tasks=tuple(tasks), clients=worker_clients)
