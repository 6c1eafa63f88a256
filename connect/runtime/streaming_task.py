"""WorkerStreamingTask: runs a StreamingSinkTask, one that reads its topics itself (a Spark query, say).

The worker does not consume for such a task. It hands the task a context
(its config, how to reach the worker's log, a state directory of the
connector's own, the connector's dead-letter topic and the worker config's
settings for the task's engine, e.g. ``spark.*``), calls ``start`` and
then the blocking ``run`` on the task thread, forwards pause/resume from the
connector's target state, and calls ``stop`` from the stopping thread. The
task's ``progress()`` is merged into the task status ``metrics`` and logged
as one INFO line at most every ``PROGRESS_LOG_INTERVAL`` seconds while it
changes.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.connector import DeadLetterQueue, StreamingSinkTask, StreamingSinkTaskContext
from connect.api.errors import ConnectException
from connect.log.api import ConsumerRecord
from connect.runtime.connector_config import SinkConnectorConfig
from connect.runtime.dead_letter_queue import DeadLetterQueueReporter
from connect.runtime.error_handler import Failure, Stage
from connect.runtime.streaming_state import StreamingStateFolder
from connect.runtime.worker_config import WorkerConfig
from connect.runtime.worker_task import WorkerTask

__all__ = ["WorkerStreamingTask", "log_settings"]

log = logging.getLogger(__name__)

PROGRESS_LOG_INTERVAL = 10.0

# Kafka client settings a task needs to read the same cluster as the worker (security and the like).
_CLIENT_PREFIXES = ("security.", "sasl.", "ssl.")


def log_settings(worker_config: WorkerConfig, consumer_overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
    """How a streaming task reaches the worker's log: ``bootstrap.servers`` (+ security) or ``embedded.log.dir``,
    and ``isolation.level`` when the worker's ``consumer.`` settings or the connector's consumer overrides set it
    (``read_committed``: only committed transactions, as exactly-once sources write them)."""
    isolation = (consumer_overrides or {}).get("isolation.level") or worker_config.originals_with_prefix(
        "consumer.").get("isolation.level")
    extra = {"isolation.level": str(isolation)} if isolation else {}
    if worker_config.uses_kafka:
        out = {"bootstrap.servers": ",".join(worker_config.bootstrap_servers)}
        for key, value in worker_config.originals.items():
            if key.startswith(_CLIENT_PREFIXES) and value not in (None, ""):
                out[key] = str(value)
        for key, value in worker_config.originals_with_prefix("consumer.").items():
            if key.startswith(_CLIENT_PREFIXES):
                out[key] = str(value)
        return {**out, **extra}
    return {"embedded.log.dir": os.path.abspath(worker_config.embedded_log_dir), **extra}


class _DeadLetterQueue(DeadLetterQueue):
    """The SDK's DeadLetterQueue over the worker's DLQ reporter (same topic, headers and metrics as sinks)."""

    def __init__(self, reporter: DeadLetterQueueReporter, plugin_class: str) -> None:
        self._reporter = reporter
        self._plugin_class = plugin_class
        self._lock = threading.Lock()

    def report(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
               headers: Sequence[tuple[str, bytes | None]], error: BaseException | str) -> None:
        err = error if isinstance(error, BaseException) else ConnectException(str(error))
        headers = tuple((str(k), v) for k, v in headers)
        consumed = ConsumerRecord(topic, partition, offset, -1, key, value, headers)
        with self._lock:
            self._reporter.metrics.records_failed += 1
            self._reporter.metrics.records_skipped += 1
            self._reporter.report(Failure(Stage.TASK_PUT, self._plugin_class, err, consumed), key, value, headers)

    def flush(self, timeout: float | None = None) -> None:
        with self._lock:
            self._reporter.flush(timeout)


class _Context(StreamingSinkTaskContext):
    def __init__(self, owner: WorkerStreamingTask) -> None:
        self._owner = owner

    def configs(self) -> Mapping[str, str]:
        return self._owner.task_config

    def log_settings(self) -> Mapping[str, str]:
        return self._owner.log_settings

    def state_dir(self) -> str:
        os.makedirs(self._owner.state_dir, exist_ok=True)
        return self._owner.state_dir

    def dead_letter_queue(self) -> DeadLetterQueue | None:
        return self._owner.dead_letter_queue

    def worker_settings(self, prefix: str) -> Mapping[str, str]:
        return self._owner.worker_config.passthrough_settings(prefix)

    def connector_name(self) -> str:
        return self._owner.id.connector


class WorkerStreamingTask(WorkerTask):
    connector_config: SinkConnectorConfig
    kind = "sink"

    def __init__(self, *args: Any, task: StreamingSinkTask, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.task = task
        self.log_settings = log_settings(self.worker_config, self.connector_config.client_overrides("consumer"))
        self.state_folder = StreamingStateFolder(self.worker_config, self.id.connector, self.log_settings,
                                                 self.connector_config.topics, self.connector_config.topics_regex or None)
        self.state_dir = self.state_folder.path
        dlq = self.errors.dlq
        self.dead_letter_queue = (
            _DeadLetterQueue(dlq, type(task).__qualname__) if dlq is not None else None
        )
        self.context = _Context(self)
        self._paused_task = False
        self._target_lock = threading.Lock()
        self._running = threading.Event()  # set while run() is executing on the task thread
        self._last_logged: dict[str, Any] | None = None
        self._reporter = threading.Thread(target=self._report_progress, name=f"task-{self.id}-progress",
                                          daemon=True)

    # --- WorkerTask ------------------------------------------------------------------------------
    def initialize_and_start(self) -> None:
        self.state_folder.claim()  # before the task can read a checkpoint written for another log
        self.task.initialize(self.context)
        self.task.start(self.task_config)
        if self.is_paused:
            self._apply_target()

    def execute(self) -> None:
        self._reporter.start()
        log.info("%s Streaming sink task running (state dir %s, log %s)", self, self.state_dir,
                 ", ".join(f"{k}={v}" for k, v in self.log_settings.items() if k in ("bootstrap.servers",
                                                                                       "embedded.log.dir")))
        with self._target_lock:
            self._running.set()
            # what the task did about a change that came while it was starting
            if self._paused_task:
                self.report_paused()
            else:
                self.report_running()
        self._apply_target()
        try:
            self.task.run()
        finally:
            self._running.clear()

    def close(self) -> None:
        try:
            self.task.stop()
        except Exception:
            log.exception("%s Error stopping streaming sink task", self)
        dlq = self.errors.dlq
        if dlq is not None:
            try:
                dlq.flush(self.offset_flush_timeout)
            except Exception:
                log.exception("%s Error flushing the dead letter queue", self)
            try:
                dlq.producer.close(self.offset_flush_timeout)
            except Exception:
                log.exception("%s Error closing the dead letter queue producer", self)
        self._log_progress(force=True)

    def _signal_stop(self) -> None:
        try:
            self.task.stop()
        except Exception:  # stopping must go on
            log.exception("%s Error asking streaming sink task to stop", self)

    def _signal_state_change(self) -> None:
        self._apply_target()

    def _apply_target(self) -> None:
        with self._target_lock:
            paused = self.is_paused
            if paused == self._paused_task:
                return
            try:
                if paused:
                    self.task.pause()
                else:
                    self.task.resume()
            except Exception:  # a failed pause/resume is logged; run() reports real failures
                log.exception("%s Error changing the target state of the streaming sink task", self)
                return
            self._paused_task = paused
            log.info("%s Streaming sink task %s", self, "paused" if paused else "resumed")
            # reported once the task has done it, and only while its run() is alive: a FAILED task stays FAILED
            if self._running.is_set() and not self.is_stopping:
                if paused:
                    self.report_paused()
                else:
                    self.report_running()

    # --- progress --------------------------------------------------------------------------------
    def progress(self) -> dict[str, Any]:
        try:
            return dict(self.task.progress())
        except Exception:  # progress is informative only
            log.debug("%s progress() failed", self, exc_info=True)
            return {}

    def metrics(self) -> dict[str, Any]:
        return {**self.progress(), **super().metrics()}

    def metrics_signature(self) -> tuple[Any, ...]:
        # the engine's progress is part of metrics(), so a status body made before a batch must not outlive it
        return (*self.progress().items(), *super().metrics_signature())

    def _log_progress(self, force: bool = False) -> None:
        progress = self.progress()
        if not progress or (progress == self._last_logged and not force):
            return
        self._last_logged = progress
        log.info("%s Progress of connector %s task %d: %s", self, self.id.connector, self.id.task,
                 ", ".join(f"{k}={v}" for k, v in progress.items()))

    def _report_progress(self) -> None:
        while not self._stopping.wait(PROGRESS_LOG_INTERVAL):
            self._log_progress()
