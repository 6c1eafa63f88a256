"""StandaloneHerder: one worker runs every connector; configs persist in the config topic.

Unlike Kafka Connect's standalone mode, connectors created over REST survive
a restart: their configs and target states live in a compacted config topic
(``config.storage.topic``) of the worker's own, in Kafka Connect's formats.
Connector files given on the command line are (re)applied at every start.
A change is made to the running connectors only after the config topic
has acknowledged it: a write that fails changes nothing and is answered
with the reason.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Mapping

from connect.api.errors import ConfigException
from connect.runtime.abstract_herder import AbstractHerder, stored
from connect.runtime.herder import (
    ConnectorInfo,
    ConnectorStateInfo,
    ConnectorTaskId,
    HerderError,
    TargetState,
)
from connect.runtime.storage.config_store import ConfigSnapshot, ConfigTopicStore
from connect.runtime.worker import Worker

__all__ = ["StandaloneHerder"]

log = logging.getLogger(__name__)


class StandaloneHerder(AbstractHerder):
    def __init__(self, worker: Worker, config_store: ConfigTopicStore) -> None:
        super().__init__(worker, config_store)
        self.store: ConfigTopicStore = config_store
        self._lock = threading.RLock()
        self._ready = threading.Event()
        self.make_task_restarter(worker.config, self.restart_task)

    # --- lifecycle ------------------------------------------------------------------------------------------
    def start(self, ready: bool = True, from_files: Collection[str] = ()) -> None:
        """``ready=False``: the worker still has connector files to apply, and calls ``mark_ready`` after them
        (KIP-1017: a standalone worker is ready once the connectors on its command line are started).
        ``from_files``: the names of those connectors."""
        self.store.start()
        snapshot = self.store.snapshot
        for name in sorted(snapshot.connectors):
            target = snapshot.target_state(name)
            if name in from_files:
                log.info("[%s] Restoring connector from config topic (target state %s); its file on the command "
                         "line is applied next", name, target.value)
                self._start_connector(name)
                continue
            self._start_connector(name)
            # Unlike Kafka Connect's standalone mode, such a connector outlives the run that made it: a user who
            # expects only the command line's connectors is told where this one came from
            state = "" if target is TargetState.STARTED else f"target state {target.value}; "
            log.info("Restored connector %s from config topic %s (created in an earlier run, over REST or from a "
                     "file no longer on the command line; %sDELETE /connectors/%s to remove it)",
                     name, self.store.topic, state, name)
            self.log_unknown_keys(name, snapshot.connectors[name])
        if self.task_restarter is not None:
            self.task_restarter.start()
        if ready:
            self.mark_ready()

    def mark_ready(self) -> None:
        self._ready.set()

    def stop(self) -> None:
        if self.task_restarter is not None:
            self.task_restarter.stop()  # first: no restart may start while the worker stops
        with self._lock:
            self.worker.stop()
            self.store.stop()

    def is_ready(self) -> bool:
        return self._ready.is_set()

    # --- internals -----------------------------------------------------------------------------------------------
    def _snapshot(self) -> ConfigSnapshot:
        return self.store.snapshot

    def _put_task_configs(self, name: str, task_configs: list[dict[str, str]]) -> None:
        config = self.store.snapshot.connectors[name]
        with stored(f"Task configs of connector {name}"):
            self.store.put_task_configs(name, task_configs, self._task_secret_keys(config, task_configs))

    def _start_connector(self, name: str) -> None:
        config = self.store.snapshot.connectors[name]
        target = self.store.snapshot.target_state(name)
        if self.worker.start_connector(name, config, target, self._request_reconfiguration):
            if target is TargetState.STOPPED:
                if self.store.snapshot.task_configs.get(name):
                    self._put_task_configs(name, [])
            elif target is TargetState.PAUSED:
                # As Kafka Connect: a paused connector is not asked for task configs (one created PAUSED has
                # no tasks until resumed); tasks it already has start paused.
                self._start_tasks(name)
            else:
                try:
                    self._update_task_configs(name)
                except HerderError:
                    raise
                except Exception as exc:  # the connector's task_configs() broke: it is FAILED
                    self.worker.fail_connector(name, exc)
                    return
                self._start_tasks(name)

    def _update_task_configs(self, name: str) -> bool:
        """Ask the connector for task configs; store them if they changed. True when they did."""
        config = self.store.snapshot.connectors[name]
        # stored as the connector's raw config has them: with ${...} references, not their values
        new = self.worker.config_transformer.reverse(config, self.worker.connector_task_configs(name))
        if new == self.store.snapshot.task_configs.get(name):
            return False
        self._put_task_configs(name, new)
        return True

    def _start_tasks(self, name: str) -> None:
        config = self.store.snapshot.connectors[name]
        target = self.store.snapshot.target_state(name)
        for i, task_config in enumerate(self.store.snapshot.task_configs.get(name, [])):
            self.worker.start_task(ConnectorTaskId(name, i), config, task_config, target)

    def _stop_connector_and_tasks(self, name: str) -> None:
        self.worker.stop_tasks(self.worker.task_ids(name))
        self.worker.stop_connector(name)

    def _request_reconfiguration(self, name: str) -> None:
        # called from a connector's own thread; runs the reconfiguration off it
        threading.Thread(target=self._reconfigure, args=(name,), name=f"reconfigure-{name}", daemon=True).start()

    def _reconfigure(self, name: str) -> None:
        with self._lock:
            if name not in self.store.snapshot.connectors:
                return
            if self.store.snapshot.target_state(name) is not TargetState.STARTED:
                return  # a stopped or paused connector's task configs are refreshed when it is resumed
            try:
                changed = self._update_task_configs(name)
            except HerderError as exc:
                log.error("[%s] Task reconfiguration failed; the tasks keep their configs: %s", name, exc.message)
                return
            if changed:
                log.info("[%s] Task configs changed; restarting tasks", name)
                self.worker.stop_tasks(self.worker.task_ids(name))
                self._start_tasks(name)

    # --- Herder: what a change does to the connectors this worker runs --------------------------------------------
    def _on_connector_config_stored(self, name: str, replaced: bool) -> None:
        if replaced:
            self._stop_connector_and_tasks(name)
        self._start_connector(name)

    def _on_connector_deleted(self, name: str) -> None:
        self._stop_connector_and_tasks(name)
        self.status.remove_connector(name)
        self.status_views.forget(name)
        if self.task_restarter is not None:
            self.task_restarter.forget(name)

    def restart_connector(self, name: str, include_tasks: bool, only_failed: bool) -> ConnectorStateInfo | None:
        with self._lock:
            config = self._config(name)
            if not include_tasks and not only_failed:
                self._restart_connector_instance(name)
                return None
            plan, restart_connector, tasks = self._restart_plan(self.connector_status(name), include_tasks,
                                                                only_failed)
            if restart_connector:
                self.worker.stop_tasks(tasks)
                self.worker.stop_connector(name)
                self.worker.start_connector(name, config, self.store.snapshot.target_state(name),
                                            self._request_reconfiguration)
                self._start_tasks_if_never_configured(name)
            else:
                self.worker.stop_tasks(tasks)
            self._start_task_ids(name, tasks)
            return plan

    def _restart_connector_instance(self, name: str) -> None:
        config = self._config(name)
        self.worker.stop_connector(name)
        self.worker.start_connector(name, config, self.store.snapshot.target_state(name), self._request_reconfiguration)
        self._start_tasks_if_never_configured(name)

    def _start_tasks_if_never_configured(self, name: str) -> None:
        """A connector that failed to start never produced task configs; once a restart succeeds, ask for them
        and start its tasks (Kafka Connect reconfigures tasks after every connector start)."""
        if (self.worker.is_connector_running(name) and not self.store.snapshot.task_configs.get(name)
                and self.store.snapshot.target_state(name) is not TargetState.STOPPED):
            if self._update_task_configs(name):
                self._start_tasks(name)

    def _start_task_ids(self, name: str, tasks: list[ConnectorTaskId]) -> None:
        config = self.store.snapshot.connectors[name]
        target = self.store.snapshot.target_state(name)
        task_configs = self.store.snapshot.task_configs.get(name, [])
        for tid in tasks:
            if tid.task < len(task_configs) and target is not TargetState.STOPPED:
                self.worker.start_task(tid, config, task_configs[tid.task], target)

    def restart_task(self, task: ConnectorTaskId) -> None:
        with self._lock:
            self._require_task(task)
            self.worker.stop_tasks([task])
            self._start_task_ids(task.connector, [task])

    def pause_connector(self, name: str) -> None:
        with self._lock:
            self._config(name)
            if self.store.snapshot.target_state(name) is TargetState.STOPPED:
                # Kafka pauses a stopped connector by moving it to PAUSED, starting its tasks paused
                self._put_target_state(name, TargetState.PAUSED)
                self._restart_from_stopped(name)
                return
            self._put_target_state(name, TargetState.PAUSED)
            self.worker.set_connector_target_state(name, TargetState.PAUSED)
            log.info("[%s] Connector paused", name)

    def resume_connector(self, name: str) -> None:
        with self._lock:
            self._config(name)
            was = self.store.snapshot.target_state(name)
            self._put_target_state(name, TargetState.STARTED)
            if was is TargetState.STOPPED:
                self._restart_from_stopped(name)
            else:
                self.worker.set_connector_target_state(name, TargetState.STARTED)
                if was is TargetState.PAUSED:
                    self._refresh_tasks(name)
            log.info("[%s] Connector resumed", name)

    def _refresh_tasks(self, name: str) -> None:
        """Ask a resumed connector for task configs (it was not asked while paused); restart tasks if they changed."""
        try:
            changed = self._update_task_configs(name)
        except HerderError:
            raise
        except Exception as exc:  # the connector's task_configs() broke: it is FAILED
            self.worker.fail_connector(name, exc)
            return
        if changed:
            self.worker.stop_tasks(self.worker.task_ids(name))
            self._start_tasks(name)

    def _restart_from_stopped(self, name: str) -> None:
        self.worker.stop_connector(name)
        self._start_connector(name)

    def stop_connector(self, name: str) -> None:
        with self._lock:
            self._config(name)
            self._put_target_state(name, TargetState.STOPPED)
            self.worker.stop_tasks(self.worker.task_ids(name))
            for tid in list(self.status.tasks(name)):
                self.status.remove_task(tid)
            self._put_task_configs(name, [])
            self.worker.set_connector_target_state(name, TargetState.STOPPED)
            log.info("[%s] Connector stopped", name)

    # --- used by the CLI -------------------------------------------------------------------------------------------------
    def apply_connector_file(self, config: Mapping[str, str]) -> ConnectorInfo:
        """Create or replace a connector from a config file given on the command line."""
        name = config.get("name", "").strip()
        if not name:
            raise ConfigException("name", None, 'Missing required configuration "name" which has no default value.')
        with self._lock:
            if self.store.snapshot.connectors.get(name) == dict(config):
                # restored from the config topic just before, as it is in the file: restarting it would only
                # cost its tasks a stop and start (long for a Spark query)
                log.info("[%s] Connector config from the file is unchanged; keeping the running connector", name)
                self.log_unknown_keys(name, config)
                return self._info(name)
        return self.put_connector_config(name, config, allow_replace=True)[1]
