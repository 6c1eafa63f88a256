"""An in-memory Herder for REST tests: real enough in its rules (validation, 404s, STOPPED-only
offsets) that the REST layer's status codes and bodies can be checked against it."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import attrs

from connect.runtime.herder import (
    AlreadyExistsError,
    BadRequestError,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorState,
    ConnectorStateInfo,
    ConnectorTaskId,
    ConnectorType,
    Herder,
    NotFoundError,
    PluginDesc,
    State,
    TargetState,
    TaskInfo,
    TaskState,
)

WORKER_ID = "127.0.0.1:8083"
SOURCE = "plugins.file.FileStreamSourceConnector"
SINK = "plugins.file.FileStreamSinkConnector"

PLUGINS = (
    PluginDesc(SINK, "sink", "0.1.0"),
    PluginDesc(SOURCE, "source", "0.1.0"),
    PluginDesc("plugins.converters.JsonConverter", "converter", "0.1.0"),
    PluginDesc("plugins.converters.SimpleHeaderConverter", "header_converter", "0.1.0"),
    PluginDesc("plugins.transforms.InsertField$Value", "transformation", "0.1.0"),
    PluginDesc("plugins.predicates.TopicNameMatches", "predicate", "0.1.0"),
)
CONNECTOR_TYPES = {"source", "sink"}


def _definition(name: str, type_: str, required: bool, default: str | None, doc: str, order: int) -> dict[str, Any]:
    return {
        "name": name,
        "type": type_,
        "required": required,
        "default_value": default,
        "importance": "HIGH" if required else "LOW",
        "documentation": doc,
        "group": "Common",
        "order": order,
        "width": "MEDIUM",
        "display_name": name,
        "dependents": [],
    }


CONNECTOR_DEFS = (
    _definition("name", "STRING", True, None, "Globally unique name of the connector.", 1),
    _definition("connector.class", "STRING", True, None, "Class name or alias of the connector.", 2),
    _definition("tasks.max", "INT", False, "1", "Maximum number of tasks.", 3),
    _definition("topics", "LIST", False, "", "Topics a sink consumes.", 4),
    _definition("file", "STRING", False, None, "File to read or write.", 5),
)


def resolve_plugin(name: str, types: set[str] | None = None) -> PluginDesc | None:
    for plugin in PLUGINS:
        if types is not None and plugin.type not in types:
            continue
        simple = plugin.class_name.rsplit(".", 1)[-1]
        alias = simple[: -len("Connector")] if simple.endswith("Connector") else simple
        if name in (plugin.class_name, simple, alias):
            return plugin
    return None


@attrs.define
class _Connector:
    config: dict[str, str]
    target: TargetState
    type: ConnectorType
    tasks: int
    failed_tasks: set[int] = attrs.Factory(set)
    connector_failed: bool = False
    topics: set[str] = attrs.Factory(set)
    offsets: dict[str, ConnectorOffset] = attrs.Factory(dict)


class FakeHerder(Herder):
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._connectors: dict[str, _Connector] = {}
        self.ready = True
        self.problem: str | None = None
        self.cluster_id = "fake-cluster-id"
        self.calls: list[tuple[Any, ...]] = []

    # --- test helpers ------------------------------------------------------------------------
    def fail_task(self, name: str, task: int) -> None:
        self._get(name).failed_tasks.add(task)

    def fail_connector(self, name: str) -> None:
        self._get(name).connector_failed = True

    def add_topic(self, name: str, topic: str) -> None:
        self._get(name).topics.add(topic)

    def target_state(self, name: str) -> TargetState:
        return self._get(name).target

    # --- identity and health -------------------------------------------------------------------
    @property
    def worker_id(self) -> str:
        return WORKER_ID

    def kafka_cluster_id(self) -> str:
        return self.cluster_id

    def is_ready(self) -> bool:
        return self.ready

    def health_problem(self) -> str | None:
        return self.problem

    # --- connectors --------------------------------------------------------------------------
    def _get(self, name: str) -> _Connector:
        with self._lock:
            conn = self._connectors.get(name)
        if conn is None:
            raise NotFoundError(f"Connector {name} not found")
        return conn

    def connectors(self) -> list[str]:
        with self._lock:
            return sorted(self._connectors)

    def _info(self, name: str, conn: _Connector) -> ConnectorInfo:
        tasks = tuple(ConnectorTaskId(name, i) for i in range(conn.tasks))
        return ConnectorInfo(name=name, config=dict(conn.config), tasks=tasks, type=conn.type)

    def connector_info(self, name: str) -> ConnectorInfo:
        return self._info(name, self._get(name))

    def connector_config(self, name: str) -> dict[str, str]:
        conn = self._get(name)
        return {k: ("[hidden]" if k.endswith("password") else v) for k, v in conn.config.items()}

    @staticmethod
    def _errors(name: str, config: Mapping[str, str]) -> tuple[PluginDesc | None, list[str]]:
        errors = []
        if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in name):
            errors.append("Connector name must not contain ISO control characters")
        cls = config.get("connector.class")
        plugin = resolve_plugin(cls, CONNECTOR_TYPES) if cls else None
        if not cls:
            errors.append('Missing required configuration "connector.class" which has no default value.')
        elif plugin is None:
            errors.append(f"Invalid value {cls} for configuration connector.class: no such connector plugin")
        tasks_max = config.get("tasks.max", "1")
        if not tasks_max.isdigit() or not 1 <= int(tasks_max) <= 1000:
            errors.append(f"Invalid value {tasks_max} for configuration tasks.max: must be an integer from 1 to 1000")
        if plugin is not None and plugin.type == "sink" and not config.get("topics"):
            errors.append("A sink connector needs 'topics'")
        return plugin, errors

    def put_connector_config(
        self,
        name: str,
        config: Mapping[str, str],
        allow_replace: bool,
        initial_state: TargetState | None = None,
    ) -> tuple[bool, ConnectorInfo]:
        self.calls.append(("put", name, dict(config), allow_replace, initial_state))
        plugin, errors = self._errors(name, config)
        if errors:
            raise BadRequestError(
                f"Connector configuration is invalid and contains the following {len(errors)} error(s):\n"
                + "\n".join(errors)
            )
        assert plugin is not None
        with self._lock:
            existing = self._connectors.get(name)
            if existing is not None and not allow_replace:
                raise AlreadyExistsError(f"Connector {name} already exists")
            target = existing.target if existing is not None else (initial_state or TargetState.STARTED)
            conn = _Connector(
                config=dict(config),
                target=target,
                type=ConnectorType(plugin.type),
                tasks=0 if target is TargetState.STOPPED else int(config.get("tasks.max", "1")),
            )
            if existing is not None:
                conn.topics, conn.offsets = existing.topics, existing.offsets
            self._connectors[name] = conn
            return existing is None, self._info(name, conn)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        merged = dict(self._get(name).config)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        merged["name"] = name
        return self.put_connector_config(name, merged, allow_replace=True)[1]

    def delete_connector(self, name: str) -> None:
        with self._lock:
            self._get(name)
            del self._connectors[name]

    def _state(self, name: str, conn: _Connector, restarting: set[int] | None = None,
               connector_restarting: bool = False) -> ConnectorStateInfo:
        base = {TargetState.STARTED: State.RUNNING, TargetState.PAUSED: State.PAUSED,
                TargetState.STOPPED: State.STOPPED}[conn.target]
        c_state = State.RESTARTING if connector_restarting else (State.FAILED if conn.connector_failed else base)
        trace = "java.lang.RuntimeException: boom" if conn.connector_failed and not connector_restarting else None
        tasks = []
        for i in range(conn.tasks):
            if restarting is not None and i in restarting:
                tasks.append(TaskState(i, State.RESTARTING, WORKER_ID))
            elif i in conn.failed_tasks:
                tasks.append(TaskState(i, State.FAILED, WORKER_ID, trace="Traceback: task failed"))
            else:
                tasks.append(TaskState(i, base, WORKER_ID))
        return ConnectorStateInfo(name, ConnectorState(c_state, WORKER_ID, trace), tuple(tasks), conn.type)

    def connector_status(self, name: str) -> ConnectorStateInfo:
        return self._state(name, self._get(name))

    def task_status(self, task: ConnectorTaskId) -> TaskState:
        conn = self._get(task.connector)
        if not 0 <= task.task < conn.tasks:
            raise NotFoundError(f"No status found for task {task}")
        return self._state(task.connector, conn).tasks[task.task]

    def task_configs(self, name: str) -> list[TaskInfo]:
        conn = self._get(name)
        cls = conn.config["connector.class"]
        return [TaskInfo(ConnectorTaskId(name, i), {**conn.config, "task.class": cls + "Task"})
                for i in range(conn.tasks)]

    def restart_connector(self, name: str, include_tasks: bool, only_failed: bool) -> ConnectorStateInfo | None:
        self.calls.append(("restart", name, include_tasks, only_failed))
        conn = self._get(name)
        with self._lock:
            if not include_tasks and not only_failed:
                conn.connector_failed = False
                return None
            connector_restarting = conn.connector_failed or not only_failed
            restarting = set()
            if include_tasks:
                restarting = {i for i in range(conn.tasks) if i in conn.failed_tasks or not only_failed}
            state = self._state(name, conn, restarting, connector_restarting)
            conn.failed_tasks -= restarting
            if connector_restarting:
                conn.connector_failed = False
            return state

    def restart_task(self, task: ConnectorTaskId) -> None:
        self.task_status(task)
        self._get(task.connector).failed_tasks.discard(task.task)

    def pause_connector(self, name: str) -> None:
        conn = self._get(name)
        if conn.target is not TargetState.STOPPED:
            conn.target = TargetState.PAUSED

    def resume_connector(self, name: str) -> None:
        conn = self._get(name)
        if conn.target is TargetState.STOPPED:
            conn.tasks = int(conn.config.get("tasks.max", "1"))
        conn.target = TargetState.STARTED

    def stop_connector(self, name: str) -> None:
        conn = self._get(name)
        conn.target = TargetState.STOPPED
        conn.tasks = 0

    # --- topics and offsets --------------------------------------------------------------------
    def connector_active_topics(self, name: str) -> list[str]:
        return sorted(self._get(name).topics)

    def reset_connector_active_topics(self, name: str) -> None:
        self._get(name).topics.clear()

    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        return list(self._get(name).offsets.values())

    @staticmethod
    def _require_stopped(name: str, conn: _Connector) -> None:
        if conn.target is not TargetState.STOPPED:
            raise BadRequestError(f"Connector {name} must be STOPPED before its offsets can be changed")

    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> str:
        conn = self._get(name)
        self._require_stopped(name, conn)
        if conn.type is ConnectorType.SINK:
            for o in offsets:
                if "kafka_topic" not in o.partition or "kafka_partition" not in o.partition:
                    raise BadRequestError("Sink partitions need kafka_topic and kafka_partition")
        for o in offsets:
            key = repr(sorted(o.partition.items()))
            if o.offset is None:
                conn.offsets.pop(key, None)
            else:
                conn.offsets[key] = o
        return "The offsets for this connector have been altered successfully"

    def reset_connector_offsets(self, name: str) -> str:
        conn = self._get(name)
        self._require_stopped(name, conn)
        conn.offsets.clear()
        return "The offsets for this connector have been reset successfully"

    # --- plugins and validation ------------------------------------------------------------------
    def connector_plugins(self, connectors_only: bool = True) -> list[PluginDesc]:
        return [p for p in PLUGINS if not connectors_only or p.type in CONNECTOR_TYPES]

    def connector_plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        if resolve_plugin(plugin) is None:
            raise NotFoundError(f"Unknown plugin {plugin}")
        return [dict(d) for d in CONNECTOR_DEFS]

    def validate_connector_config(self, config: Mapping[str, str]) -> dict[str, Any]:
        cls = config.get("connector.class")
        if not cls:
            raise BadRequestError("Connector config has no connector.class")
        if resolve_plugin(cls, CONNECTOR_TYPES) is None:
            raise BadRequestError(f"No connector plugin named {cls}")
        _, errors = self._errors(config.get("name", "x"), config)
        configs = []
        for d in CONNECTOR_DEFS:
            key_errors = [e for e in errors if d["name"] in e]
            if d["required"] and not config.get(d["name"]) and d["name"] == "name":
                key_errors.append(f'Missing required configuration "{d["name"]}" which has no default value.')
            configs.append({
                "definition": dict(d),
                "value": {"name": d["name"], "value": config.get(d["name"], d["default_value"]),
                          "recommended_values": [], "errors": key_errors, "visible": True},
            })
        return {
            "name": resolve_plugin(cls, CONNECTOR_TYPES).class_name,  # type: ignore[union-attr]
            "error_count": sum(len(c["value"]["errors"]) for c in configs),
            "groups": ["Common"],
            "configs": configs,
        }
