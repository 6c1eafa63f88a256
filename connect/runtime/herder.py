"""The Herder interface: everything a REST server (or a CLI) may ask of a worker cluster.

The REST layer talks only to this interface. Standalone and distributed
herders implement it. Calls are synchronous and raise HerderError subclasses,
which say what happened; ``rest/errors.py`` alone turns them into HTTP statuses
(as Kafka Connect's ConnectExceptionMapper does). The tree::

    ConnectException              (connect.api.errors: the root of every Connect failure)
     └── HerderError              the request could not be carried out (storage, a peer worker, a timeout)
          ├── BadRequestError     the request itself is wrong: a config, offsets, a signature left out
          ├── NotFoundError       no such connector, task or plugin; also the SDK's NotFoundException
          ├── AlreadyExistsError  a connector of that name exists; also the SDK's AlreadyExistsException
          ├── ConflictError       a rebalance is under way or no leader is known: the client retries
          ├── NotLeaderError      another worker serves it; ``leader_url`` names that worker
          ├── ForbiddenError      a request between workers whose signature does not verify
          ├── ServiceUnavailableError  the worker cannot serve it yet (no session key read so far)
          └── PayloadTooLargeError     a config too large for the config topic to store

HerderError is a ConnectException because Kafka Connect's herder refuses with
ConnectExceptions (NotFoundException, AlreadyExistsException, BadRequestException):
whoever catches the SDK's root around a herder call sees its refusals too.
"""

from __future__ import annotations

import abc
import enum
import traceback
from collections.abc import Hashable, Mapping
from typing import Any

import attrs

from connect.api.errors import AlreadyExistsException, ConnectException, NotFoundException
from connect.runtime.metrics_snapshot import TaskRestartInfo, WorkerMetrics

__all__ = [
    "AlreadyExistsError",
    "BadRequestError",
    "ConflictError",
    "ConnectorInfo",
    "ConnectorOffset",
    "ConnectorState",
    "ConnectorStateInfo",
    "ConnectorTaskId",
    "ConnectorType",
    "ForbiddenError",
    "Herder",
    "HerderError",
    "InternalRequestSignature",
    "NO_LEADER_MESSAGE",
    "NotFoundError",
    "NotLeaderError",
    "PayloadTooLargeError",
    "PluginDesc",
    "ServiceUnavailableError",
    "State",
    "Status",
    "TargetState",
    "TaskInfo",
    "TaskState",
    "format_trace",
    "task_metrics_body",
]


class HerderError(ConnectException):
    """A request the herder could not carry out; ``message`` says why (the module docstring has the tree)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequestError(HerderError):
    """The request is wrong: an invalid config or offsets, a malformed request between workers."""


class NotFoundError(HerderError, NotFoundException):
    """No connector, task or plugin of that name (Kafka's herder raises the SDK's NotFoundException)."""


class AlreadyExistsError(HerderError, AlreadyExistsException):
    """A connector of that name exists already (Kafka's herder raises the SDK's AlreadyExistsException)."""


class ConflictError(HerderError):
    """A rebalance is in progress or no leader is known; the client should retry."""


class NotLeaderError(HerderError):
    """This worker cannot serve the request; ``leader_url`` is the worker that can (the leader, or the worker
    a task runs on), and the REST layer forwards the request there."""

    def __init__(self, message: str, leader_url: str | None) -> None:
        super().__init__(message)
        self.leader_url = leader_url


# Kafka Connect's words for a request that arrives while the cluster has no leader (a rebalance is under way)
NO_LEADER_MESSAGE = ("Cannot complete request momentarily due to no known leader URL, likely because a rebalance "
                     "was underway.")


class ForbiddenError(HerderError):
    """A request between workers whose signature does not verify under the cluster's session key."""


class ServiceUnavailableError(HerderError):
    """The worker cannot serve the request yet (it has not read the cluster's session key); retry later."""


class PayloadTooLargeError(HerderError):
    """A config too large for the config topic to store."""


@attrs.frozen
class InternalRequestSignature:
    """What a worker's request to another worker carries to prove it comes from the cluster (KIP-507):
    ``signature`` is the base64 HMAC of ``body`` under the cluster's session key, made with ``algorithm``."""

    body: bytes
    algorithm: str | None
    signature: str | None


class TargetState(enum.Enum):
    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


class State(enum.Enum):
    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    STOPPED = "STOPPED"
    DESTROYED = "DESTROYED"


class ConnectorType(enum.Enum):
    SOURCE = "source"
    SINK = "sink"
    UNKNOWN = "unknown"


@attrs.frozen(order=True)
class ConnectorTaskId:
    connector: str
    task: int

    def to_json(self) -> dict[str, Any]:
        return {"connector": self.connector, "task": self.task}

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


def format_trace(error: BaseException) -> str:
    return "".join(traceback.format_exception(error)).rstrip()


@attrs.frozen
class Status:
    """The reported state of a connector or of a task: where it runs and, when FAILED, why."""

    state: State
    worker_id: str
    trace: str | None = None
    generation: int = 0


@attrs.frozen
class ConnectorInfo:
    name: str
    config: Mapping[str, str]
    tasks: tuple[ConnectorTaskId, ...]
    type: ConnectorType

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "config": dict(self.config),
            "tasks": [t.to_json() for t in self.tasks],
            "type": self.type.value,
        }


@attrs.frozen
class ConnectorState:
    state: State
    worker_id: str
    trace: str | None = None
    # The connector plugin's version, reported since Kafka Connect 4.1 (KIP-891); None: not known
    version: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"state": self.state.value, "worker_id": self.worker_id}
        if self.trace:
            body["trace"] = self.trace
        if self.version is not None:
            body["version"] = self.version
        return body


@attrs.frozen
class TaskState:
    id: int
    state: State
    worker_id: str
    trace: str | None = None
    # Headrace extension: per-task record counters (records failed, skipped, retried, sent to the DLQ, ...)
    metrics: Mapping[str, int | float] | None = None
    version: str | None = None  # the task's plugin version, as for ConnectorState
    # Headrace extension: automatic restarts of this task (task.restart.enabled), None when there were none
    restart: TaskRestartInfo | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"id": self.id, "state": self.state.value, "worker_id": self.worker_id}
        if self.trace:
            body["trace"] = self.trace
        if self.version is not None:
            body["version"] = self.version
        if self.metrics:
            body["metrics"] = dict(self.metrics)
        if self.restart is not None:
            body["restart_tries"] = self.restart.tries
            body["restart_max_tries"] = self.restart.max_tries
            body["next_restart_ms"] = self.restart.next_restart_ms
        return body


def task_metrics_body(task: int, worker_id: str, metrics: Mapping[str, int | float] | None,
                      restart: TaskRestartInfo | None) -> dict[str, Any]:
    """The body of ``GET /connectors/{c}/tasks/{t}/metrics``: the worker that counted, its counters, and the
    automatic-restart keys named as in a standalone task status."""
    body: dict[str, Any] = {"id": task, "worker_id": worker_id, "metrics": dict(metrics or {})}
    if restart is not None:
        body["restart_tries"] = restart.tries
        body["restart_max_tries"] = restart.max_tries
        body["next_restart_ms"] = restart.next_restart_ms
    return body


@attrs.frozen
class ConnectorStateInfo:
    name: str
    connector: ConnectorState
    tasks: tuple[TaskState, ...]
    type: ConnectorType

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "connector": self.connector.to_json(),
            "tasks": [t.to_json() for t in self.tasks],
            "type": self.type.value,
        }


@attrs.frozen
class TaskInfo:
    id: ConnectorTaskId
    config: Mapping[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id.to_json(), "config": dict(self.config)}


@attrs.frozen
class ConnectorOffset:
    partition: Mapping[str, Any]
    offset: Mapping[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {"partition": dict(self.partition), "offset": None if self.offset is None else dict(self.offset)}


@attrs.frozen
class PluginDesc:
    class_name: str
    type: str  # source, sink, converter, header_converter, transformation, predicate
    version: str

    def to_json(self) -> dict[str, Any]:
        return {"class": self.class_name, "type": self.type, "version": self.version}


class Herder(abc.ABC):
    """Manages connectors for a worker (standalone) or a cluster of workers (distributed)."""

    # --- identity and health -------------------------------------------------------------
    @property
    @abc.abstractmethod
    def worker_id(self) -> str: ...

    @abc.abstractmethod
    def kafka_cluster_id(self) -> str: ...

    @abc.abstractmethod
    def is_ready(self) -> bool:
        """False while the herder is still starting (REST /health answers 503)."""

    @abc.abstractmethod
    def health_problem(self) -> str | None:
        """None when healthy; otherwise why not (REST /health answers 500)."""

    # --- connectors ----------------------------------------------------------------------
    @abc.abstractmethod
    def connectors(self) -> list[str]: ...

    @abc.abstractmethod
    def connector_info(self, name: str) -> ConnectorInfo: ...

    @abc.abstractmethod
    def connector_config(self, name: str) -> dict[str, str]:
        """The stored config with PASSWORD values shown as ``[hidden]``."""

    @abc.abstractmethod
    def put_connector_config(
        self,
        name: str,
        config: Mapping[str, str],
        allow_replace: bool,
        initial_state: TargetState | None = None,
    ) -> tuple[bool, ConnectorInfo]:
        """Create or update; returns (created, info). BadRequestError for an invalid config."""

    @abc.abstractmethod
    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo: ...

    @abc.abstractmethod
    def delete_connector(self, name: str) -> None: ...

    @abc.abstractmethod
    def connector_status(self, name: str) -> ConnectorStateInfo: ...

    def connector_status_body(self, name: str) -> dict[str, Any]:
        """``connector_status(name).to_json()``; a herder may return one shared, prepared body, so callers
        serialise it and never change it (status listings read it per connector per request)."""
        return self.connector_status(name).to_json()

    def status_changes(self) -> Hashable:
        """A value that changes whenever a connector's or task's state, a connector config, the set of
        connectors or the log's health does (not the counters): a status listing made while it held is
        current in its states. The default never repeats, so every listing counts as changed."""
        return object()

    def connector_status_bodies(self, fresh: bool = False) -> dict[str, dict[str, Any]]:
        """``connector_status_body`` of every connector, for a status listing; a connector deleted while the
        listing is made is left out. A herder may gather what the bodies need once for all of them, and reuse
        a listing whose states are current while its counters are young; ``fresh`` gathers them now."""
        bodies: dict[str, dict[str, Any]] = {}
        for name in self.connectors():
            try:
                bodies[name] = self.connector_status_body(name)
            except NotFoundError:
                continue
        return bodies

    @abc.abstractmethod
    def task_status(self, task: ConnectorTaskId) -> TaskState: ...

    def task_metrics(self, task: ConnectorTaskId) -> dict[str, Any]:
        """Headrace extension: ``task``'s counters and automatic-restart keys as counted by the worker that runs
        it (``task_metrics_body``). A worker that does not run it raises NotLeaderError naming the one that does.
        By default they are what the task's status carries (one worker: status is the same everywhere)."""
        state = self.task_status(task)
        return task_metrics_body(task.task, state.worker_id, state.metrics, state.restart)

    @abc.abstractmethod
    def task_configs(self, name: str) -> list[TaskInfo]: ...

    @abc.abstractmethod
    def restart_connector(self, name: str, include_tasks: bool, only_failed: bool) -> ConnectorStateInfo | None:
        """None when only the connector was restarted (REST 204), else the state with RESTARTING targets."""

    @abc.abstractmethod
    def restart_task(self, task: ConnectorTaskId) -> None: ...

    @abc.abstractmethod
    def pause_connector(self, name: str) -> None: ...

    @abc.abstractmethod
    def resume_connector(self, name: str) -> None: ...

    @abc.abstractmethod
    def stop_connector(self, name: str) -> None: ...

    # --- topics and offsets ----------------------------------------------------------------
    @abc.abstractmethod
    def connector_active_topics(self, name: str) -> list[str]: ...

    @abc.abstractmethod
    def reset_connector_active_topics(self, name: str) -> None: ...

    @abc.abstractmethod
    def connector_offsets(self, name: str) -> list[ConnectorOffset]: ...

    @abc.abstractmethod
    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> str:
        """Only when STOPPED (else BadRequestError); returns the message for the 200 body."""

    @abc.abstractmethod
    def reset_connector_offsets(self, name: str) -> str: ...

    # --- plugins and validation -------------------------------------------------------------
    @abc.abstractmethod
    def connector_plugins(self, connectors_only: bool = True) -> list[PluginDesc]: ...

    @abc.abstractmethod
    def connector_plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        """Config key definitions (the ``definition`` shape of validate) for a plugin class or alias."""

    @abc.abstractmethod
    def validate_connector_config(self, config: Mapping[str, str]) -> dict[str, Any]:
        """The ConfigInfos body: ``{"name","error_count","groups","configs":[...]}``."""

    # --- metrics ------------------------------------------------------------------------------------
    def metrics_snapshot(self) -> WorkerMetrics:
        """The connectors and tasks on this worker with their states and counters (REST ``/metrics``)."""
        raise NotFoundError("This worker exports no metrics")

    # --- requests between workers -------------------------------------------------------------------
    def put_task_configs(self, name: str, configs: list[dict[str, str]],
                         signature: InternalRequestSignature) -> None:
        """A worker running connector ``name`` hands its new task configs to the leader, which stores them
        (``POST /connectors/{name}/tasks``). Only distributed herders accept it."""
        # Kafka Connect fails with a server error here; nothing is wrong with the worker, so this is a NotFound
        raise NotFoundError("Kafka Connect in standalone mode does not support externally setting task "
                            "configurations.")

    def fence_zombies(self, name: str, signature: InternalRequestSignature) -> None:
        """A worker about to start exactly-once tasks of ``name`` asks the leader to fence the connector's
        earlier task generation (``PUT /connectors/{name}/fence``, KIP-618). Only distributed herders accept it."""
        raise NotFoundError("Kafka Connect in standalone mode does not support zombie fencing requests; a "
                            "standalone worker fences its own tasks.")
