"""What every herder shares: the connector API over a config store (configs, status, restarts' plans, topics,
offsets), validation, plugin listings, status views and secret masking.

A herder says where its configs come from (``_snapshot``), who may write them (``_require_writer``) and what a
stored change does to the connectors it runs (the ``_on_*`` hooks); the rest is the same in both modes, as in
Kafka Connect's AbstractHerder.
"""

from __future__ import annotations

import abc
import contextlib
import logging
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any

from connect.api.config import ConfigType, Password
from connect.api.errors import ConfigException
from connect.runtime.connector_config import config_class_for
from connect.runtime.connector_validation import ConnectorConfigValidator, key_definition
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
    HerderError,
    NotFoundError,
    PayloadTooLargeError,
    PluginDesc,
    State,
    TargetState,
    TaskInfo,
    TaskState,
)
from connect.runtime.metrics_snapshot import WorkerMetrics
from connect.runtime.offset_admin import (
    STOPPED_REQUIRED,
    alter_sink_offsets,
    alter_source_offsets,
    check_offsets_with_connector,
    reset_sink_offsets,
    reset_source_offsets,
    sink_offsets,
    source_offsets,
)
from connect.runtime.plugins import connector_type
from connect.runtime.status_views import StatusViews
from connect.runtime.storage.config_store import ConfigSnapshot, ConfigWriteError, RecordTooLargeError
from connect.runtime.task_restarter import TaskAutoRestarter, TaskRestartPolicy
from connect.runtime.worker import Worker
from connect.runtime.worker_config import WorkerConfig

__all__ = ["AbstractHerder", "stored"]

log = logging.getLogger(__name__)

_PLUGIN_KINDS = ("source", "sink", "converter", "header_converter", "transformation", "predicate")


@contextlib.contextmanager
def stored(what: str) -> Iterator[None]:
    """Config-topic write failures as the herder answers them: 413 for a record too large, else 500."""
    try:
        yield
    except RecordTooLargeError as exc:
        raise PayloadTooLargeError(f"{what} not stored: {exc}") from None
    except ConfigWriteError as exc:
        raise HerderError(f"{what} not stored: {exc}") from None


class AbstractHerder(Herder):
    # Whether task status carries what only this worker counts (the ``metrics`` counters and automatic-restart
    # keys of the tasks it runs). A cluster's workers each count only their own tasks, so status there shows
    # only the status topic's keys, the same body on every worker; the counters are at ``task_metrics``.
    worker_counts_in_status: bool = True

    def __init__(self, worker: Worker, config_store: Any) -> None:
        """``config_store``: a ConfigTopicStore (standalone) or a KafkaConfigBackingStore (distributed), read
        through ``_snapshot``."""
        self.worker = worker
        self.store = config_store
        self._worker_id = worker.worker_id
        self.plugins = worker.plugins
        self.status = worker.status
        self.validator = ConnectorConfigValidator.for_worker(worker.plugins, worker.config)
        # held by the changes of connectors and the reads that must not see one half made; a herder whose
        # changes are applied by a thread of its own (distributed: the tick thread) needs none
        self._lock: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
        self._cluster_id: str | None = None
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

    # --- what each mode says -----------------------------------------------------------------------------------
    @abc.abstractmethod
    def _snapshot(self) -> ConfigSnapshot:
        """The config topic as this worker has read it."""

    def _require_writer(self) -> None:
        """Raise unless this worker may write the config topic now (distributed: only the leader)."""

    def _on_connector_config_stored(self, name: str, replaced: bool) -> None:
        """A connector's new config is in the config topic; a herder that applies it at once does so here."""

    def _on_connector_deleted(self, name: str) -> None:
        """A connector's removal is in the config topic; a herder that applies it at once does so here."""

    def _refresh_source_offsets(self) -> None:
        """Read the offsets other workers committed, before source offsets are read or reset."""

    def _reported_stopped(self, name: str) -> bool:
        """Whether the status of ``name`` (whose target state is STOPPED) says it has stopped, or says nothing."""
        status = self.status.connector(name)
        return status is None or status.state is State.STOPPED

    # --- identity and health ---------------------------------------------------------------------------------------
    def kafka_cluster_id(self) -> str:
        if self._cluster_id is None:
            self._cluster_id = self.worker.admin.cluster_id()
        return self._cluster_id

    def health_problem(self) -> str | None:
        return None

    def metrics_snapshot(self) -> WorkerMetrics:
        return self.worker.metrics_snapshot(self.task_restarter.info if self.task_restarter is not None else None)

    # --- reading the config topic --------------------------------------------------------------------------------
    def _config(self, name: str) -> dict[str, str]:
        config = self._snapshot().connectors.get(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return config

    def _require_task(self, task: ConnectorTaskId) -> None:
        """NotFoundError unless ``task``'s connector and the task are in the config topic."""
        self._config(task.connector)
        if not 0 <= task.task < len(self._snapshot().task_configs.get(task.connector, [])):
            raise NotFoundError(f"Task {task} not found")

    def _config_and_task_count(self, name: str) -> tuple[dict[str, str], int]:
        """``name``'s config and its number of tasks, read from one snapshot."""
        snapshot = self._snapshot()
        config = snapshot.connectors.get(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return config, len(snapshot.task_configs.get(name, []))

    def _info(self, name: str) -> ConnectorInfo:
        config, count = self._config_and_task_count(name)
        tasks = tuple(ConnectorTaskId(name, i) for i in range(count))
        return ConnectorInfo(name, self.mask(config), tasks, self.connector_type_of(config))

    def _task_secret_keys(self, config: Mapping[str, str], task_configs: list[dict[str, str]]) -> set[str]:
        """Keys of task configs to encrypt: the connector's PASSWORD keys, and any key holding one of their values."""
        keys = set(self.password_keys(config))
        secrets = {config[k] for k in keys if config.get(k)}
        for task_config in task_configs:
            keys.update(k for k, v in task_config.items() if v in secrets)
        return keys

    # --- Herder: connectors -------------------------------------------------------------------------------------
    def connectors(self) -> list[str]:
        return sorted(self._snapshot().connectors)

    def connector_info(self, name: str) -> ConnectorInfo:
        with self._lock:
            return self._info(name)

    def connector_config(self, name: str) -> dict[str, str]:
        with self._lock:
            return self.mask(self._config(name))

    def task_configs(self, name: str) -> list[TaskInfo]:
        snapshot = self._snapshot()
        if name not in snapshot.connectors:
            raise NotFoundError(f"Connector {name} not found")
        return [TaskInfo(ConnectorTaskId(name, i), self.mask(cfg))
                for i, cfg in enumerate(snapshot.task_configs.get(name, []))]

    def put_connector_config(self, name: str, config: Mapping[str, str], allow_replace: bool,
                             initial_state: TargetState | None = None) -> tuple[bool, ConnectorInfo]:
        with self._lock:
            self._require_writer()
            existing = self._snapshot().connectors.get(name)
            if existing is not None and not allow_replace:
                raise AlreadyExistsError(f"Connector {name} already exists")
            config = self.unmask({**config, "name": name} if "name" not in config else config, existing)
            if config.get("name") != name:
                raise BadRequestError(
                    f"Connector name configuration ({config.get('name')}) doesn't match connector name in the URL "
                    f"({name})")
            self.validate_or_raise(config)
            # stored first: if the config topic refuses it, the old connector keeps running as it was
            with stored(f"Connector {name}'s config"):
                self.store.put_connector_config(name, config, None if existing is not None else (
                    initial_state or TargetState.STARTED), self.password_keys(config))
            log.info("[%s] Connector config %s", name, "updated" if existing is not None else "created")
            self._on_connector_config_stored(name, existing is not None)
            return existing is None, self._info(name)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        with self._lock:
            self._require_writer()
            config = dict(self._config(name))
            for key, value in patch.items():
                if value is None:
                    config.pop(key, None)
                else:
                    config[key] = value
            return self.put_connector_config(name, config, allow_replace=True)[1]

    def delete_connector(self, name: str) -> None:
        with self._lock:
            self._require_writer()
            self._config(name)
            with stored(f"Deletion of connector {name}"):
                self.store.remove_connector(name)
            self._on_connector_deleted(name)
            log.info("[%s] Connector deleted", name)

    def _put_target_state(self, name: str, target: TargetState) -> None:
        with stored(f"Target state {target.value} of connector {name}"):
            self.store.put_target_state(name, target)

    @staticmethod
    def _restart_plan(before: ConnectorStateInfo, include_tasks: bool,
                      only_failed: bool) -> tuple[ConnectorStateInfo, bool, list[ConnectorTaskId]]:
        """What a restart request restarts, from the status ``before`` it: the answer (the targets RESTARTING),
        whether the connector restarts, and the tasks that do."""
        restart_connector = not only_failed or before.connector.state is State.FAILED
        tasks = [ConnectorTaskId(before.name, t.id) for t in before.tasks
                 if include_tasks and (not only_failed or t.state is State.FAILED)]
        restarting = {tid.task for tid in tasks}
        plan = ConnectorStateInfo(
            before.name,
            ConnectorState(State.RESTARTING, before.connector.worker_id, version=before.connector.version)
            if restart_connector else before.connector,
            tuple(TaskState(t.id, State.RESTARTING, t.worker_id, version=t.version) if t.id in restarting else t
                  for t in before.tasks),
            before.type,
        )
        return plan, restart_connector, tasks

    # --- Herder: status --------------------------------------------------------------------------------------------
    def connector_status(self, name: str) -> ConnectorStateInfo:
        config, count = self._config_and_task_count(name)
        metrics = ((lambda: self.worker.connector_task_metrics(name)) if self.worker_counts_in_status else None)
        return self.build_status(name, config, count, metrics, self.worker.log_problem())

    def connector_status_body(self, name: str) -> dict[str, Any]:
        try:
            config, count = self._config_and_task_count(name)
        except NotFoundError:
            self.status_views.forget(name)
            raise
        # without this worker's counters in the body, its task signatures (which key the body on them) are left out
        signatures = self.worker.connector_task_signatures(name) if self.worker_counts_in_status else ()
        return self.status_body(name, config, count, signatures, self.worker.log_problem())

    def status_changes(self) -> Hashable:
        return self.listing_token(self._snapshot(), self.worker.log_problem())

    def connector_status_bodies(self, fresh: bool = False) -> dict[str, dict[str, Any]]:
        signatures = self.worker.task_signatures if self.worker_counts_in_status else dict
        return self.status_listing(self._snapshot(), signatures, self.worker.log_problem(), fresh)

    def task_status(self, task: ConnectorTaskId) -> TaskState:
        for t in self.connector_status(task.connector).tasks:
            if t.id == task.task:
                return t
        raise NotFoundError(f"No status found for task {task}")

    # --- Herder: topics and offsets --------------------------------------------------------------------------------
    def connector_active_topics(self, name: str) -> list[str]:
        self._config(name)
        return self.status.topics(name)

    def reset_connector_active_topics(self, name: str) -> None:
        self._config(name)
        self.status.reset_topics(name)

    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        config = self._config(name)
        if self.connector_type_of(config) is ConnectorType.SINK:
            return sink_offsets(self.worker.admin, name, self.worker.config_transformer.redact)
        self._refresh_source_offsets()
        return source_offsets(self.worker.source_offset_stores(config), name,
                              self.worker.config_transformer.redact)

    def _require_stopped(self, name: str) -> dict[str, str]:
        self._require_writer()
        config = self._config(name)
        if self._snapshot().target_state(name) is not TargetState.STOPPED or not self._reported_stopped(name):
            raise BadRequestError(STOPPED_REQUIRED.replace("{name}", name))
        return config

    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> str:
        with self._lock:
            config = self._require_stopped(name)
            check_offsets_with_connector(self.plugins.new_instance(config.get("connector.class", ""),
                                                                   ("source", "sink"), "connector.class"),
                                         name, config, offsets)
            if self.connector_type_of(config) is ConnectorType.SINK:
                alter_sink_offsets(self.worker.admin, name, offsets)
            else:
                alter_source_offsets(self.worker.source_offset_stores(config), name, offsets)
            log.info("[%s] Offsets altered for %d partition(s)", name, len(offsets))
            return "The offsets for this connector have been altered successfully"

    def reset_connector_offsets(self, name: str) -> str:
        with self._lock:
            config = self._require_stopped(name)
            if self.connector_type_of(config) is ConnectorType.SINK:
                reset_sink_offsets(self.worker.admin, name)
            else:
                self._refresh_source_offsets()
                reset_source_offsets(self.worker.source_offset_stores(config), name)
            log.info("[%s] Offsets reset", name)
            return "The offsets for this connector have been reset successfully"
