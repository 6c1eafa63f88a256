"""What every herder shares: validation, plugin listings, status views and secret masking."""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from connect.api.config import ConfigType, Password
from connect.api.errors import ConfigException
from connect.runtime.config_store import ConfigSnapshot
from connect.runtime.connector_config import config_class_for
from connect.runtime.connector_validation import ConnectorConfigValidator, key_definition
from connect.runtime.herder import (
    BadRequestError,
    ConnectorState,
    ConnectorStateInfo,
    ConnectorTaskId,
    ConnectorType,
    Herder,
    NotFoundError,
    PluginDesc,
    State,
    TaskState,
)
from connect.runtime.plugins import PluginRegistry, connector_type
from connect.runtime.status import StatusStore
from connect.runtime.status_views import StatusViews
from connect.runtime.task_restarter import TaskAutoRestarter, TaskRestartPolicy
from connect.runtime.worker_config import WorkerConfig

__all__ = ["AbstractHerder"]

log = logging.getLogger(__name__)

_PLUGIN_KINDS = ("source", "sink", "converter", "header_converter", "transformation", "predicate")


class AbstractHerder(Herder):
    # Whether task status carries what only this worker counts (the ``metrics`` counters and automatic-restart
    # keys of the tasks it runs). A cluster's workers each count only their own tasks, so status there shows
    # only the status topic's keys, the same body on every worker; the counters are at ``task_metrics``.
    worker_counts_in_status: bool = True

    def __init__(self, worker_id: str, plugins: PluginRegistry, status: StatusStore,
                 worker_config: WorkerConfig | None = None) -> None:
        self._worker_id = worker_id
        self.plugins = plugins
        self.status = status
        self.validator = ConnectorConfigValidator.for_worker(plugins, worker_config)
        self._password_keys: dict[tuple, frozenset[str]] = {}
        self._types: dict[str, ConnectorType] = {}
        # set by a herder when task.restart.enabled: the tries and next restart shown in task status
        self.task_restarter: TaskAutoRestarter | None = None
        self._versions: dict[str, str | None] = {}  # by connector.class: version() builds a plugin
        self._unknown_keys_logged: dict[str, tuple[str, ...]] = {}  # by connector: what was last logged
        self.status_views = StatusViews()

    @property
    def worker_id(self) -> str:
        return self._worker_id

    # --- secrets -------------------------------------------------------------------------------------
    def password_keys(self, config: Mapping[str, str]) -> frozenset[str]:
        cache_key = tuple(sorted((k, v) for k, v in config.items() if k == "connector.class" or k.endswith(".type")
                                 or k in ("transforms", "predicates")))
        keys = self._password_keys.get(cache_key)
        if keys is None:
            definition = self.validator.validate(config).definition
            keys = frozenset(k.name for k in definition.config_keys.values() if k.type is ConfigType.PASSWORD)
            self._password_keys[cache_key] = keys
        return keys

    def mask(self, config: Mapping[str, str]) -> dict[str, str]:
        hidden = self.password_keys(config)
        return {k: (Password.HIDDEN if k in hidden and v else v) for k, v in config.items()}

    def unmask(self, new: Mapping[str, str], old: Mapping[str, str] | None) -> dict[str, str]:
        """A PUT of what GET showed keeps the stored secret instead of storing ``[hidden]``."""
        out = dict(new)
        if old:
            for key in self.password_keys(new):
                if out.get(key) == Password.HIDDEN and key in old:
                    out[key] = old[key]
        return out

    # --- validation --------------------------------------------------------------------------------------
    def validate_or_raise(self, config: Mapping[str, str]) -> None:
        """Refuse an invalid config; log the keys of a valid one that no definition knows."""
        result = self.validator.validate(config)
        if result.error_count:
            raise BadRequestError(result.error_message())
        self._log_unknown_keys(str(config.get("name") or ""), result.warnings)

    def log_unknown_keys(self, name: str, config: Mapping[str, str]) -> None:
        """Log the unknown keys of a connector config that is started without being validated again (restored
        from the config topic, or applied from a file unchanged)."""
        self._log_unknown_keys(name, self.validator.unknown_key_warnings(config))

    def _log_unknown_keys(self, name: str, warnings: Sequence[str]) -> None:
        # once per connector: the same config submitted again, or restored and then applied from its file,
        # says nothing new
        if self._unknown_keys_logged.get(name, ()) == tuple(warnings):
            return
        self._unknown_keys_logged[name] = tuple(warnings)
        for line in warnings:
            log.warning("[%s] %s", name, line)

    def validate_connector_config(self, config: Mapping[str, str]) -> dict[str, Any]:
        return self.validator.validate(config).to_config_infos()

    def connector_type_of(self, config: Mapping[str, str] | None) -> ConnectorType:
        if not config:
            return ConnectorType.UNKNOWN
        class_name = config.get("connector.class", "")
        known = self._types.get(class_name)
        if known is None:
            known = self._types[class_name] = self._lookup_type(class_name)
        return known

    def plugin_version(self, config: Mapping[str, str] | None) -> str | None:
        """The version of the connector plugin ``config`` names (its tasks report the same), None if unknown."""
        class_name = (config or {}).get("connector.class", "")
        if class_name not in self._versions:
            try:
                info = self.plugins.lookup(class_name) if class_name.strip() else None
            except ConfigException:
                info = None
            self._versions[class_name] = info.version if info is not None else None
        return self._versions[class_name]

    def _lookup_type(self, class_name: str) -> ConnectorType:
        config = {"connector.class": class_name}
        try:
            info = self.plugins.lookup(config.get("connector.class", ""))
        except ConfigException:
            return ConnectorType.UNKNOWN
        if info is None or not {"source", "sink"} & set(info.kinds):
            return ConnectorType.UNKNOWN
        return ConnectorType(connector_type(info.cls))

    # --- plugins -------------------------------------------------------------------------------------------------
    def connector_plugins(self, connectors_only: bool = True) -> list[PluginDesc]:
        kinds = ("source", "sink") if connectors_only else _PLUGIN_KINDS
        return [PluginDesc(p.listed_name, p.type, p.version) for p in self.plugins.plugins(kinds)]

    def connector_plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        try:
            info = self.plugins.lookup(plugin)
        except ConfigException as exc:
            raise BadRequestError(str(exc)) from exc
        if info is None or not set(info.kinds) & set(_PLUGIN_KINDS):
            raise NotFoundError(f"Unknown plugin {plugin}.")
        try:
            definition = info.cls().config()
        except Exception as exc:  # a broken plugin is the plugin's problem, reported as such
            raise BadRequestError(f"Could not read the config definition of {plugin}: {exc}") from exc
        keys = [k for k in definition.config_keys.values() if not k.internal]
        if {"source", "sink"} & set(info.kinds):
            # As Kafka Connect: after the connector's own keys, the common connector settings (name,
            # connector.class, tasks.max, converters, transforms, errors.*, ...) with their groups.
            common = config_class_for(connector_type(info.cls)).definition_for({})
            own = {k.name for k in keys}
            keys += [k for k in common.config_keys.values() if not k.internal and k.name not in own]
        return [key_definition(k) for k in keys]

    def make_task_restarter(self, worker_config: WorkerConfig,
                            restart: Callable[[ConnectorTaskId], None]) -> TaskAutoRestarter | None:
        """The automatic restarter of FAILED tasks when ``task.restart.enabled`` (not started yet)."""
        if not worker_config.task_restart_enabled:
            return None
        policy = TaskRestartPolicy.from_worker_config(worker_config)
        log.info("Automatic restart of FAILED tasks is on: %s", policy)
        self.task_restarter = TaskAutoRestarter(self.worker_id, policy, self.status, restart)
        return self.task_restarter

    # --- status ------------------------------------------------------------------------------------------------------
    def status_body(self, name: str, config: Mapping[str, str], task_count: int,
                    task_signatures: tuple[Any, ...], log_problem: str | None) -> dict[str, Any]:
        """The JSON body of ``name``'s status, built again only when something it shows has changed.

        ``task_signatures`` is the worker's ``connector_task_signatures(name)``; the other arguments are
        what ``build_status`` takes. Reading the key first keeps a stored body at least as new as its key."""
        restarts: tuple[Any, ...] = ()
        if self.task_restarter is not None and self.worker_counts_in_status:
            restarts = tuple(self.task_restarter.info(ConnectorTaskId(name, i)) for i in range(task_count))
        key = (self.status.version(name), config, task_count, log_problem, restarts, task_signatures)
        return self.status_views.body(name, key, lambda: self._body_with_lags(name, task_signatures))

    def _body_with_lags(self, name: str, task_signatures: tuple[Any, ...]) -> dict[str, Any]:
        """The status body, showing each sink task's lag as read for its key.

        Everything else in a key only grows (versions, counters), so a body read after its key is never older
        than the key. The lag does not: it can be read higher while the body is built (fresh log ends, commit
        pending) and fall back to the key's value right after (the commit), and such a body would then be
        served while the lag stood still. So the body shows the lag its key was read with."""
        body = self.connector_status(name).to_json()
        # None: no lag read by the worker for this task (a streaming task reports its own, from its progress,
        # which is part of its signature already)
        lags = {signature[0].task: signature[3] for signature in task_signatures if signature[3] is not None}
        for task in body["tasks"]:
            metrics = task.get("metrics")
            if metrics is not None and task["id"] in lags:
                metrics["lag"] = lags[task["id"]]
        return body

    def status_bodies(self, connectors: Mapping[str, Mapping[str, str]], task_configs: Mapping[str, Sequence[Any]],
                      task_signatures: Mapping[str, tuple[Any, ...]], log_problem: str | None
                      ) -> dict[str, dict[str, Any]]:
        """``status_body`` of every connector in ``connectors``, for a status listing: the configs, the worker's
        ``task_signatures()`` and the log's health are read once by the caller for all of them."""
        return {name: self.status_body(name, config, len(task_configs.get(name, ())), task_signatures.get(name, ()),
                                       log_problem)
                for name, config in connectors.items()}

    def listing_token(self, snapshot: ConfigSnapshot, log_problem: str | None) -> Hashable:
        """What a status listing's states are made of (``Herder.status_changes``): the statuses' change count,
        the configs' offset and count, the log's health."""
        return (self.status.changes(), snapshot.offset, len(snapshot.connectors), log_problem)

    def status_listing(self, snapshot: ConfigSnapshot, task_signatures: Callable[[], Mapping[str, tuple[Any, ...]]],
                       log_problem: str | None, fresh: bool = False) -> dict[str, dict[str, Any]]:
        """``status_bodies`` of every connector of ``snapshot``, reused while no status, connector config or
        connector changed and the log's health is the same, for at most a listing's max age (the counters and
        lags it shows), unless ``fresh``; ``task_signatures`` is the worker's, called only when the listing is
        built again."""
        return self.status_views.listing(self.listing_token(snapshot, log_problem), lambda: self.status_bodies(
            snapshot.connectors, snapshot.task_configs, task_signatures(), log_problem), fresh)

    def build_status(self, name: str, config: Mapping[str, str], task_count: int,
                     metrics: Callable[[], Mapping[ConnectorTaskId, Mapping[str, int | float]]] | None = None,
                     log_problem: str | None = None) -> ConnectorStateInfo:
        """``log_problem`` (the log unreachable, say) becomes the trace of RUNNING tasks: they keep running
        and retrying, and the status says why nothing moves.

        ``metrics`` is called after the statuses are read: a task counts a failed record before it reports
        FAILED, so counters read afterwards are never older than the state shown beside them."""
        cs = self.status.connector(name)
        statuses = self.status.tasks(name)
        counters = metrics() if metrics is not None else {}
        version = self.plugin_version(config)
        connector = ConnectorState(cs.state, cs.worker_id, cs.trace, version) if cs else ConnectorState(
            State.UNASSIGNED, self.worker_id, version=version)
        tasks = []
        restarts = (self.task_restarter.info if self.task_restarter is not None and self.worker_counts_in_status
                    else (lambda _tid: None))
        for i in range(task_count):
            tid = ConnectorTaskId(name, i)
            ts = statuses.get(tid)
            m = counters.get(tid)
            if ts is None:
                tasks.append(TaskState(i, State.UNASSIGNED, self.worker_id, None, m, version=version))
            else:
                trace = ts.trace or (log_problem if ts.state is State.RUNNING else None)
                tasks.append(TaskState(i, ts.state, ts.worker_id, trace, m, version=version, restart=restarts(tid)))
        return ConnectorStateInfo(name, connector, tuple(tasks), self.connector_type_of(config))
