"""The Worker: starts and stops connector instances and tasks on this process.

A herder decides *what* runs (configs, target states, task assignment); the
Worker knows *how*: instantiating plugins, wiring converters, transforms,
error handling and log clients, and running each task in its own thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, Union

from connect.api.connector import (
    Connector,
    ConnectorContext,
    OffsetStorageReader,
    SinkConnector,
    SinkConnectorContext,
    SinkTask,
    SourceConnectorContext,
    SourceTask,
    StreamingSinkTask,
    Task,
)
from connect.api.converter import Converter, HeaderConverter
from connect.api.errors import ConfigException, ConnectException
from connect.api.topic_partition import TopicPartition
from connect.log.api import ClientStats, LogBackend, NewTopic
from connect.runtime.clock import SYSTEM_CLOCK, Clock
from connect.runtime.config_transformer import ConfigTransformer
from connect.runtime.connector_config import (
    ConnectorConfig,
    DeadLetterQueueConfig,
    SinkConnectorConfig,
    SourceConnectorConfig,
)
from connect.runtime.connector_validation import ConnectorConfigValidator
from connect.runtime.dead_letter_queue import DeadLetterQueueReporter
from connect.runtime.error_handler import ErrorHandler, ErrorMetrics
from connect.runtime.exactly_once_source_task import ExactlyOnceWorkerSourceTask
from connect.runtime.herder import ConnectorTaskId, State, Status, TargetState, format_trace
from connect.runtime.kafka_class_names import kafka_class_name
from connect.runtime.log_end_offsets import LogEndOffsets
from connect.runtime.metrics_snapshot import (
    ClientMetrics,
    ConnectorMetrics,
    TaskMetrics,
    TaskRestartInfo,
    WorkerMetrics,
    without_secrets,
)
from connect.runtime.offset_committer import SourceTaskOffsetCommitter
from connect.runtime.plugins import PluginRegistry
from connect.runtime.sink_task import WorkerSinkTask
from connect.runtime.source_task import WorkerSourceTask, wants_acknowledgements
from connect.runtime.storage.offset_topics import OffsetTopics
from connect.runtime.storage.offsets import ConnectorOffsetReader, OffsetStore
from connect.runtime.storage.status import StatusStore
from connect.runtime.streaming_task import WorkerStreamingTask
from connect.runtime.subscribe_barrier import SiblingGate, SubscribeBarrier
from connect.runtime.transformation_chain import build_chain
from connect.runtime.worker_config import WorkerConfig
from connect.runtime.worker_task import TaskConverters, WorkerTask

if TYPE_CHECKING:
    from connect.runtime.task_host import RemoteWorkerTask, TaskHostPool

__all__ = ["Worker"]

log = logging.getLogger(__name__)
C = TypeVar("C", bound=ConnectorConfig)
# a task this worker runs: in a thread of this process, or in one of its task host processes
RunningTask = Union[WorkerTask, "RemoteWorkerTask"]


class _ConnectorContext(SourceConnectorContext, SinkConnectorContext):
    def __init__(self, worker: Worker, name: str, on_reconfigure: Callable[[str], None]) -> None:
        self._worker = worker
        self._name = name
        self._on_reconfigure = on_reconfigure

    def request_task_reconfiguration(self) -> None:
        self._on_reconfigure(self._name)

    def raise_error(self, error: BaseException) -> None:
        self._worker.fail_connector(self._name, error)

    def offset_storage_reader(self) -> OffsetStorageReader:
        return ConnectorOffsetReader(self._worker.offset_store, self._name)


class WorkerConnector:
    """One running connector instance and its target state.

    ``config`` is the connector config as stored (references unresolved); ``parsed`` its framework keys,
    resolved and parsed once.
    """

    def __init__(self, name: str, connector: Connector, config: Mapping[str, str], parsed: ConnectorConfig,
                 context: ConnectorContext) -> None:
        self.name = name
        self.connector = connector
        self.config = dict(config)
        self.parsed = parsed
        self.context = context
        self.started = False

    @property
    def is_sink(self) -> bool:
        return isinstance(self.connector, SinkConnector)


class Worker:
    def __init__(
        self,
        worker_id: str,
        config: WorkerConfig,
        plugins: PluginRegistry,
        backend: LogBackend,
        offset_store: OffsetStore,
        status: StatusStore,
        clock: Clock = SYSTEM_CLOCK,
        source_committer: SourceTaskOffsetCommitter | None = None,
        task_hosts: TaskHostPool | None = None,
    ) -> None:
        """``source_committer``: given (not started) by tests that run commits themselves; else the Worker
        makes one and starts its thread with the first source task. ``task_hosts``: where the source and sink
        tasks run when given (task_host.py); else every task runs in a thread of this process."""
        self.worker_id = worker_id
        self.clock = clock
        self.config = config
        self.plugins = plugins
        self.backend = backend
        self.offset_store = offset_store
        self.status = status
        self.config_transformer = ConfigTransformer(plugins, config)
        self._lock = threading.RLock()
        self._connectors: dict[str, WorkerConnector] = {}
        self._tasks: dict[ConnectorTaskId, RunningTask] = {}
        # the same tasks by connector: status calls ask per connector, and there may be many connectors
        self._connector_tasks: dict[str, dict[ConnectorTaskId, RunningTask]] = {}
        self.task_hosts = task_hosts
        # the sink tasks started together subscribe together (a task host's worker forwards to its worker's)
        self.subscribe_barrier: SiblingGate = SubscribeBarrier()
        # called with a task's id and WorkerTask when its thread has ended (a task host tells its worker so)
        self.task_exit_listener: Callable[[ConnectorTaskId, WorkerTask], None] | None = None
        self._admin = None
        self._start_committer = source_committer is None
        self.source_committer = source_committer or SourceTaskOffsetCommitter(clock)
        topic, partitions, replication = config.offset_topic
        self.offset_topics = OffsetTopics(backend, offset_store, topic, partitions=partitions,
                                          replication_factor=replication)
        # set by a distributed herder: fences the earlier generations of a connector's exactly-once tasks
        self.zombie_fencer: Callable[[ConnectorTaskId, Callable[[], bool]], None] | None = None
        # Kafka Connect's connect-worker-metrics startup counters (read by metrics_snapshot)
        self.startup_counts = {f"{kind}_startup_{what}": 0 for kind in ("connector", "task")
                               for what in ("attempts", "success", "failure")}
        # for the sink tasks' lag (status and /metrics)
        self._log_ends = LogEndOffsets(backend.reader, all_topics=self._sink_topics)
        spark_policy = config.spark_config_override_policy
        log.info("spark.conf.override.policy=%s: %s", spark_policy.name, spark_policy.summary)

    def source_offset_stores(self, connector_config: Mapping[str, str]) -> list[OffsetStore]:
        """Where a source connector's offsets live, the store its tasks read first first: with exactly-once
        sources enabled, its offset topic (read to its end now), then the worker's own store, which its
        tasks fall back to partition by partition; otherwise the worker's store alone."""
        if not self.config.exactly_once_source_enabled:
            return [self.offset_store]
        primary = self.offset_topics.store_for(connector_config.get("offsets.storage.topic") or None)
        primary.refresh()
        return [primary] if primary is self.offset_store else [primary, self.offset_store]

    @property
    def admin(self):  # lazily made admin client of the topic layer
        if self._admin is None:
            self._admin = self.backend.admin({"client.id": f"{self.config.client_id_base}shared-admin"})
        return self._admin

    # --- connectors ------------------------------------------------------------------------------------
    def start_connector(self, name: str, config: Mapping[str, str], target: TargetState,
                        on_reconfigure: Callable[[str], None]) -> bool:
        """Instantiate and (unless STOPPED/PAUSED) start a connector; False if it failed (status says why)."""
        with self._lock:
            if name in self._connectors:
                raise ConnectException(f"Connector {name} already running on this worker")
            self.startup_counts["connector_startup_attempts"] += 1
            try:
                connector = self.plugins.new_instance(config.get("connector.class", ""), ("source", "sink"),
                                                      "connector.class")
                assert isinstance(connector, Connector)
                parsed = self._parse_connector_config(
                    SinkConnectorConfig if isinstance(connector, SinkConnector) else SourceConnectorConfig,
                    self.config_transformer.transform(config))
                context = _ConnectorContext(self, name, on_reconfigure)
                wc = WorkerConnector(name, connector, config, parsed, context)
                self._connectors[name] = wc
                connector.initialize(context)
                self._apply_connector_state(wc, target)
                self.startup_counts["connector_startup_success"] += 1
                return True
            except Exception as exc:  # a connector that fails to start is FAILED, not fatal
                self.startup_counts["connector_startup_failure"] += 1
                log.error("[%s] Failed to start connector: %s", name, exc, exc_info=exc)
                self.status.put_connector(name, Status(State.FAILED, self.worker_id, format_trace(exc)))
                return False

    def _apply_connector_state(self, wc: WorkerConnector, target: TargetState) -> None:
        if target is TargetState.STOPPED:
            if wc.started:
                wc.connector.stop()
                wc.started = False
            self.status.put_connector(wc.name, Status(State.STOPPED, self.worker_id))
            log.info("[%s] Connector is STOPPED", wc.name)
            return
        if not wc.started:
            wc.connector.start(self.config_transformer.transform(wc.config))
            wc.started = True
            log.info("[%s] Connector %s started", wc.name, type(wc.connector).__qualname__)
        state = State.PAUSED if target is TargetState.PAUSED else State.RUNNING
        self.status.put_connector(wc.name, Status(state, self.worker_id))

    def set_connector_target_state(self, name: str, target: TargetState) -> None:
        with self._lock:
            wc = self._connectors.get(name)
            if wc is not None:
                try:
                    self._apply_connector_state(wc, target)
                except Exception as exc:
                    self.fail_connector(name, exc)
            if target is TargetState.STOPPED:
                return  # the herder stops the tasks
            for task in self._connector_tasks.get(name, {}).values():
                # the task thread reports PAUSED/RUNNING once it has done it; a dead (FAILED) one reports nothing
                task.transition_to(target)

    def fail_connector(self, name: str, error: BaseException) -> None:
        log.error("[%s] Connector failed: %s", name, error)
        self.status.put_connector(name, Status(State.FAILED, self.worker_id, format_trace(error)))

    def stop_connector(self, name: str) -> None:
        with self._lock:
            wc = self._connectors.pop(name, None)
        if wc is None:
            return
        if wc.started:
            try:
                wc.connector.stop()
            except Exception:
                log.exception("[%s] Error while stopping connector", name)
        log.info("[%s] Connector stopped", name)

    def is_connector_running(self, name: str) -> bool:
        with self._lock:
            wc = self._connectors.get(name)
            return wc is not None and wc.started

    def connector_task_configs(self, name: str, max_tasks: int | None = None) -> list[dict[str, str]]:
        """Ask the running connector for at most ``max_tasks`` (default: its ``tasks.max``) task configs; adds
        ``task.class`` and, for sinks, the topics."""
        with self._lock:
            wc = self._connectors.get(name)
        if wc is None or not wc.started:
            return []
        if max_tasks is None:
            max_tasks = wc.parsed.tasks_max
        configs = wc.connector.task_configs(max_tasks)
        task_class = wc.connector.task_class()
        out = []
        for cfg in configs[:max_tasks] if wc.parsed.tasks_max_enforce else configs:
            task_cfg = {str(k): str(v) for k, v in cfg.items()}
            # Kafka's name for a stand-in of Kafka's own task, as Kafka Connect tools expect; both resolve
            task_cfg["task.class"] = kafka_class_name(f"{task_class.__module__}.{task_class.__qualname__}")
            if wc.is_sink:
                for key in ("topics", "topics.regex"):
                    if wc.config.get(key):
                        task_cfg[key] = wc.config[key]
            out.append(task_cfg)
        return out

    # --- tasks ----------------------------------------------------------------------------------------------
    def start_task(self, task_id: ConnectorTaskId, connector_config: Mapping[str, str], task_config: Mapping[str, str],
                   target: TargetState) -> bool:
        with self._lock:
            if task_id in self._tasks:
                raise ConnectException(f"Task {task_id} already running on this worker")
            self.startup_counts["task_startup_attempts"] += 1
            kind = self.task_hosts.can_host(task_config) if self.task_hosts is not None else None
            task: RunningTask
            try:
                if kind is not None and self.task_hosts is not None:
                    task = self.task_hosts.task(task_id, kind, connector_config, task_config, target)
                else:
                    built = task = self._build_task(task_id, connector_config, task_config, target)
                    if self.task_exit_listener is not None:
                        listener = self.task_exit_listener
                        built.on_exit = lambda: listener(task_id, built)
            except Exception as exc:  # the task is FAILED with the reason as its trace
                self.startup_counts["task_startup_failure"] += 1
                log.error("[%s] Failed to start task %s: %s", task_id.connector, task_id, exc, exc_info=exc)
                self.status.put_task(task_id, Status(State.FAILED, self.worker_id, format_trace(exc)))
                return False
            self.startup_counts["task_startup_success"] += 1
            if task.is_sink:
                # before it starts: a sibling that reaches its subscribe first waits for it
                self.subscribe_barrier.expect(task_id)
                task.siblings = self.subscribe_barrier
            self._tasks[task_id] = task
            self._connector_tasks.setdefault(task_id.connector, {})[task_id] = task
            self.status.put_task(task_id, Status(State.UNASSIGNED, self.worker_id))
            if isinstance(task, WorkerSourceTask) and self._start_committer:  # a host commits its own
                self.source_committer.start()
            task.start()
            return True

    def _parse_connector_config(self, config_class: type[C], resolved: Mapping[str, str]) -> C:
        """A resolved connector config's framework keys, parsed once (ConfigException names a bad key); client
        overrides and spark.* keys the worker's policies refuse fail here too (validation refused them already,
        but a config stored under a laxer policy may still arrive)."""
        parsed = config_class(resolved)
        refused = (self.config.client_config_override_policy.refusals(parsed.originals)
                   + self.config.spark_config_override_policy.refusals(parsed.originals))
        if refused:
            key, message = refused[0]
            raise ConfigException(key, None, message)
        return parsed

    def _build_task(self, task_id: ConnectorTaskId, connector_config: Mapping[str, str],
                    task_config: Mapping[str, str], target: TargetState) -> WorkerTask:
        cc = self.config_transformer.transform(connector_config)
        tc = self.config_transformer.transform(task_config)
        task_class_name = tc.get("task.class", "")
        task = _new_task(self.plugins, self.config, cc, tc)
        parsed = self._parse_connector_config(SourceConnectorConfig if isinstance(task, SourceTask)
                                              else SinkConnectorConfig, cc)
        converters = self._converters(parsed)
        chain = build_chain(self.plugins, parsed)
        stop_event = threading.Event()
        metrics = ErrorMetrics()
        dlq = self._dlq(parsed, task_id, metrics)
        errors = ErrorHandler(parsed, task_id.connector, task_id.task, stop_event, dlq, metrics)
        common = dict(
            task_id=task_id, worker_id=self.worker_id, connector_config=parsed, task_config=tc,
            converters=converters, chain=chain, errors=errors, status=self.status, target_state=target,
            worker_config=self.config, clock=self.clock,
        )
        if isinstance(task, SourceTask) and self.config.exactly_once_source_enabled:
            return self._exactly_once_source_task(task_id, task, parsed, common)  # type: ignore[arg-type]
        if isinstance(task, SourceTask):
            overrides = parsed.client_overrides("producer")
            if not wants_acknowledgements(task):
                # nothing waits on each record's ack, only failures need reporting (a Kafka producer then skips
                # a delivery callback per record; the embedded log ignores the setting)
                overrides = {"delivery.report.only.error": "true", **overrides}
            producer = self.backend.producer({"client.id": f"connector-producer-{task_id.connector}-{task_id.task}",
                                              **overrides})
            return WorkerSourceTask(task=task, producer=producer, admin=self.admin, offset_store=self.offset_store,
                                    offset_reader=ConnectorOffsetReader(self.offset_store, task_id.connector),
                                    committer=self.source_committer, **common)  # type: ignore[arg-type]
        if isinstance(task, SinkTask):
            consumer_config = {"auto.offset.reset": "earliest", "enable.auto.commit": "false",
                               "client.id": f"connector-consumer-{task_id.connector}-{task_id.task}",
                               **parsed.client_overrides("consumer")}
            consumer = self.backend.consumer(f"connect-{task_id.connector}", consumer_config)
            return WorkerSinkTask(task=task, consumer=consumer, **common)  # type: ignore[arg-type]
        if isinstance(task, StreamingSinkTask):
            # reads its topics itself: no consumer; the DLQ is the connector's, as for any sink
            return WorkerStreamingTask(task=task, **common)  # type: ignore[arg-type]
        raise ConfigException("task.class", task_class_name, "not a SourceTask, SinkTask or StreamingSinkTask")

    def _exactly_once_source_task(self, task_id: ConnectorTaskId, task: SourceTask, parsed: SourceConnectorConfig,
                                  common: dict[str, Any]) -> ExactlyOnceWorkerSourceTask:
        offset_topic = self.offset_topics.store_for(parsed.offsets_storage_topic)
        transactional_id = f"{self.config.transactional_id_prefix}{task_id.connector}-{task_id.task}"
        # the transaction settings are the worker's to make; an override of them would break the guarantee
        overrides = parsed.client_overrides("producer")
        if not wants_acknowledgements(task):
            overrides = {"delivery.report.only.error": "true", **overrides}  # as for other source tasks
        producer = self.backend.producer({"client.id": f"connector-producer-{task_id.connector}-{task_id.task}",
                                          **overrides, "transactional.id": transactional_id,
                                          "enable.idempotence": "true", "acks": "all"})
        fencer = self.zombie_fencer
        return ExactlyOnceWorkerSourceTask(
            task=task, producer=producer, admin=self.admin, offset_store=offset_topic,
            offset_reader=self.offset_topics.reader_for(task_id.connector, offset_topic),
            committer=self.source_committer, offset_topic=offset_topic,
            fence_zombies=(lambda stopping: fencer(task_id, stopping)) if fencer is not None else None,
            **common)

    def _dlq(self, cc: DeadLetterQueueConfig, task_id: ConnectorTaskId,
             metrics: ErrorMetrics) -> DeadLetterQueueReporter | None:
        topic = cc.dlq_topic_name
        if not topic:
            return None
        replication = cc.dlq_replication_factor
        try:
            self.admin.create_topic(NewTopic(topic, 1, replication), exist_ok=True)
        except Exception as exc:  # a cluster with fewer brokers: fall back to its default
            log.warning("[%s] Could not create DLQ topic %s with replication factor %d (%s); using the default",
                        task_id.connector, topic, replication, exc)
            self.admin.create_topic(NewTopic(topic, 1, -1), exist_ok=True)
        producer = self.backend.producer({"client.id": f"connector-dlq-producer-{task_id.connector}-{task_id.task}",
                                          **cc.client_overrides("producer")})
        return DeadLetterQueueReporter(producer, topic, task_id.connector, task_id.task,
                                       cc.dlq_context_headers_enable, metrics)

    def _converters(self, cc: ConnectorConfig) -> TaskConverters:
        key = self._converter(cc, "key.converter", True)
        value = self._converter(cc, "value.converter", False)
        header = self._header_converter(cc)
        return TaskConverters(key, value, header)  # type: ignore[arg-type]

    def _converter_settings(self, cc: ConnectorConfig, key: str) -> tuple[str, dict[str, Any]]:
        """The connector's converter class and ``<key>.*`` settings when it names one, else the worker's."""
        class_name = cc.converter_class(key)
        if class_name:
            return class_name, cc.originals_with_prefix(key + ".")
        return self.config.converter_class(key), self.config.originals_with_prefix(key + ".")

    def _converter(self, cc: ConnectorConfig, key: str, is_key: bool) -> Converter:
        class_name, settings = self._converter_settings(cc, key)
        conv = self.plugins.new_instance(class_name, "converter", key)
        conv.configure(settings, is_key)  # type: ignore[attr-defined]
        return conv  # type: ignore[return-value]

    def _header_converter(self, cc: ConnectorConfig) -> HeaderConverter:
        class_name, settings = self._converter_settings(cc, "header.converter")
        conv = self.plugins.new_instance(class_name, "header_converter", "header.converter")
        conv.configure(settings)  # type: ignore[attr-defined]
        return conv  # type: ignore[return-value]

    def stop_tasks(self, task_ids: list[ConnectorTaskId], timeout: float | None = None, report: bool = True) -> None:
        """Signal all, then wait for all (so shutting down N tasks takes one timeout, not N). ``report=False``:
        the tasks report no state as they stop (this worker has lost them to others, which report them)."""
        if timeout is None:
            timeout = self.config.task_shutdown_graceful_timeout_ms / 1000
        tasks = self.signal_stop(task_ids, report)
        deadline = time.monotonic() + timeout
        for tid, task in tasks:
            if not task.await_stop(max(0.0, deadline - time.monotonic())):
                log.error("[%s] Graceful stop of task %s failed: still running after %.1f s", tid.connector, tid,
                          timeout)
                task.cancel()

    def signal_stop(self, task_ids: list[ConnectorTaskId], report: bool = True
                    ) -> list[tuple[ConnectorTaskId, RunningTask]]:
        """Take the tasks off this worker and ask each to stop, without waiting; the tasks, to wait for."""
        with self._lock:
            tasks = [(tid, self._tasks.pop(tid)) for tid in task_ids if tid in self._tasks]
            for tid, _ in tasks:
                self._connector_tasks.get(tid.connector, {}).pop(tid, None)
        for tid, task in tasks:
            self.subscribe_barrier.forget(tid)
            if not report:
                task.cancel()
            task.stop()
        return tasks

    def task(self, task_id: ConnectorTaskId) -> RunningTask | None:
        with self._lock:
            return self._tasks.get(task_id)

    def task_ids(self, connector: str | None = None) -> list[ConnectorTaskId]:
        with self._lock:
            return sorted(t for t in self._tasks if connector is None or t.connector == connector)

    def task_metrics(self, task_id: ConnectorTaskId) -> dict[str, int | float] | None:
        with self._lock:
            task = self._tasks.get(task_id)
        return task.metrics() if task is not None else None

    def connector_task_metrics(self, connector: str) -> dict[ConnectorTaskId, dict[str, int | float]]:
        """The counters of the connector's tasks on this worker; a sink task's also carry ``lag``, the records
        of its partitions not yet committed (for the status page's lag column, from the same status call)."""
        with self._lock:
            tasks = list(self._connector_tasks.get(connector, {}).items())
        out = {tid: task.metrics() for tid, task in tasks}
        committed = {tid: task.committed_offsets() for tid, task in tasks if task.is_sink}
        for tid, lags in self._sink_lags(committed, wait=False).items():
            out[tid]["lag"] = sum(lags.values())
        return out

    def connector_task_signatures(self, connector: str
                                  ) -> tuple[tuple[ConnectorTaskId, int, tuple[Any, ...], int | None], ...]:
        """Which task objects run for ``connector`` and their counters, cheaply: equal between two calls
        exactly when ``connector_task_metrics`` would be (a restarted task is a new object, so a new id).
        A sink task's lag is part of it: it grows while the task's own counters stand still (a paused sink)."""
        with self._lock:
            tasks = list(self._connector_tasks.get(connector, {}).items())
        return self._signatures(tasks, self._sink_lags_now(tasks))

    def task_signatures(self) -> dict[str, tuple[tuple[ConnectorTaskId, int, tuple[Any, ...], int | None], ...]]:
        """``connector_task_signatures`` of every connector with tasks on this worker, in one pass: one lock and
        one log-end lookup for all of them, where a status listing would otherwise pay both per connector."""
        with self._lock:
            by_connector = {name: list(tasks.items()) for name, tasks in self._connector_tasks.items()}
        lags = self._sink_lags_now([pair for tasks in by_connector.values() for pair in tasks])
        return {name: self._signatures(tasks, lags) for name, tasks in by_connector.items()}

    def _sink_lags_now(self, tasks: list[tuple[ConnectorTaskId, RunningTask]]
                       ) -> dict[ConnectorTaskId, dict[tuple[str, int], int]]:
        committed = {tid: task.committed_offsets() for tid, task in tasks if task.is_sink}
        return self._sink_lags(committed, wait=False) if committed else {}

    @staticmethod
    def _signatures(tasks: list[tuple[ConnectorTaskId, RunningTask]],
                    lags: Mapping[ConnectorTaskId, Mapping[tuple[str, int], int]]
                    ) -> tuple[tuple[ConnectorTaskId, int, tuple[Any, ...], int | None], ...]:
        return tuple((tid, id(task), task.metrics_signature(), sum(lags[tid].values()) if tid in lags else None)
                     for tid, task in tasks)

    def metrics_snapshot(self, restarts: Callable[[ConnectorTaskId], TaskRestartInfo | None] | None = None
                         ) -> WorkerMetrics:
        """The connectors and tasks on this worker with their states and counters, copied for a metrics scrape.

        Everything here is read at scrape time from what the runtime counts anyway; the only extra work is
        one log-end lookup for the sink tasks' partitions (their lag)."""
        with self._lock:
            connectors = list(self._connectors.values())
            tasks = list(self._tasks.items())
        running = {wc.name for wc in connectors}
        failed_connectors = [name for name in self.status.connector_names() if name not in running]
        out_tasks: list[TaskMetrics] = []
        by_connector: dict[str, dict[str, int]] = {}
        committed: dict[ConnectorTaskId, dict[TopicPartition, int]] = {}
        states: dict[ConnectorTaskId, str] = {}
        for tid, task in tasks:
            st = self.status.task(tid)
            state = states[tid] = st.state.value if st is not None else State.UNASSIGNED.value
            per_state = by_connector.setdefault(tid.connector, {})
            per_state[state] = per_state.get(state, 0) + 1
            if task.is_sink:
                committed[tid] = task.committed_offsets()
        lags = self._sink_lags(committed)
        for tid, task in tasks:
            counters = task.metrics()
            if task.is_sink:
                counters["partition_count"] = len(committed.get(tid, ()))
                counters["offset_commit_completion"] = task.offset_commits
            out_tasks.append(TaskMetrics(
                tid.connector, tid.task, task.kind,
                states[tid], counters, lags.get(tid, {}), restarts(tid) if restarts is not None else None,
                client_metrics(task.client_stats())))
        out_connectors = []
        for wc in connectors:
            st = self.status.connector(wc.name)
            cls = type(wc.connector)
            out_connectors.append(ConnectorMetrics(
                wc.name, f"{cls.__module__}.{cls.__qualname__}", "sink" if wc.is_sink else "source",
                _version(wc.connector), st.state.value if st is not None else State.UNASSIGNED.value,
                by_connector.get(wc.name, {})))
        for name in failed_connectors:  # failed to start: no instance here, still worth a series
            st = self.status.connector(name)
            if st is not None and st.worker_id == self.worker_id and st.state is State.FAILED:
                out_connectors.append(ConnectorMetrics(name, "", "unknown", "", st.state.value,
                                                       by_connector.get(name, {})))
        admin = self._admin.stats() if self._admin is not None else None
        # a sink's topics may come from a config provider: labels show them as /topics does
        return without_secrets(WorkerMetrics(self.worker_id, tuple(out_connectors), tuple(out_tasks),
                                             dict(self.startup_counts),
                                             clients=client_metrics((admin,) if admin is not None else ())),
                               self.config_transformer.redact)

    def _sink_topics(self) -> set[str]:
        """The topics of the partitions this worker's sink tasks have committed offsets for."""
        with self._lock:
            tasks = [t for t in self._tasks.values() if t.is_sink]
        return {tp.topic for task in tasks for tp in task.committed_offsets()}

    def _sink_lags(self, committed: Mapping[ConnectorTaskId, Mapping[TopicPartition, int]], wait: bool = True
                   ) -> dict[ConnectorTaskId, dict[tuple[str, int], int]]:
        """Log end offset minus committed offset of every partition the sink tasks hold (one lookup for all).

        ``wait=False`` (status requests) takes the ends known now and has stale ones read in the background:
        a status request must answer while the log is unreachable, not wait out the log's timeouts."""
        topics = sorted({tp.topic for offsets in committed.values() for tp in offsets})
        if not topics:
            return {}
        try:
            ends = self._log_ends.ends(topics) if wait else self._log_ends.known_ends(topics)
        except Exception as exc:  # the log unreachable: the scrape goes on without lag
            log.warning("Could not read the log end offsets for the sink lag metrics: %s", exc)
            return {}
        out: dict[ConnectorTaskId, dict[tuple[str, int], int]] = {}
        for tid, offsets in committed.items():
            out[tid] = {(tp.topic, tp.partition): max(0, ends[tp] - off)
                        for tp, off in offsets.items() if tp in ends}
        return out

    def log_problem(self) -> str | None:
        """None while the log is reachable, as this worker's clients and its task hosts' see it; else one line on
        what is wrong (shown in the statuses of RUNNING tasks)."""
        problem = self.backend.health_problem()
        if problem is None and self.task_hosts is not None:
            problem = self.task_hosts.log_problem()
        return problem

    def connector_names(self) -> list[str]:
        with self._lock:
            return sorted(self._connectors)

    def stop(self) -> None:
        self.stop_tasks(self.task_ids())
        self.source_committer.stop()
        for name in self.connector_names():
            self.stop_connector(name)
        if self.task_hosts is not None:
            self.task_hosts.close()
        self.offset_topics.close()
        self._log_ends.close()
        if self._admin is not None:
            self._admin.close()


def client_metrics(stats: Iterable[ClientStats]) -> tuple[ClientMetrics, ...]:
    """Log clients' traffic as the metrics snapshot carries it."""
    return tuple(ClientMetrics(s.client_id, s.kind, s.outgoing_bytes, s.incoming_bytes, s.connections) for s in stats)


def _version(connector: Connector) -> str:
    try:
        return str(connector.version())
    except Exception:  # a plugin's version() is informative only
        return ""


def _new_task(plugins: PluginRegistry, worker_config: WorkerConfig, connector_config: Mapping[str, str],
              task_config: Mapping[str, str]) -> Task:
    """The registered task class ``task.class`` names, made once the task's file paths pass the worker's policy
    again (validation ran when the config was submitted; a path may have become a symlink since)."""
    validator = ConnectorConfigValidator.for_worker(plugins, worker_config)
    validator.check_task_paths(connector_config, task_config)
    return plugins.new_task(str(task_config.get("task.class", "")))
