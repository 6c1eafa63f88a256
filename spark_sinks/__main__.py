"""Run a Spark sink connector's job without a worker: ``python -m spark_sinks connector.properties``.

The same file works with ``spark-submit spark_sinks/__main__.py connector.properties
[--worker worker.properties]``, which is how a job moves to a Spark cluster:
spark-submit's ``--master`` (and ``--jars`` for Kafka or Avro) then decide
where it runs, unless the connector sets ``spark.master`` itself.

The job is the runtime's own: the worker file (if given) is read as a
worker's, the connector config is validated as ``connect-standalone`` does,
and the runtime's Worker runs the connector and its one task, so the
connector's class aliases, config providers, dead-letter queue, log client
settings (``bootstrap.servers`` with ``security.*``/``sasl.*``/``ssl.*``, also
``consumer.``-prefixed, else ``embedded.log.dir``), state folder
(``streaming.state.dir``) and progress lines are those of a worker. Only the
REST server, the config topic and the offset store are left out: a sink job
keeps no source offsets. Ctrl-C or SIGTERM stops the query cleanly; its
checkpoint lets a later run, or the same connector under a worker, resume
where it stopped.

Exit status: 0 once stopped, 1 for a config that cannot run, 2 when the job
failed.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType

if __package__ in (None, ""):  # run as a script (spark-submit): make the package importable, not its modules
    _here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# after the path fix above
from connect.api.connector import SinkConnector
from connect.api.errors import ConfigException, ConnectException
from connect.log import open_log_backend
from connect.log.api import LogBackend, LogError
from connect.logging_setup import configure_logging
from connect.runtime.connector_validation import ConnectorConfigValidator
from connect.runtime.herder import ConnectorTaskId, State, Status, TargetState
from connect.runtime.plugins import PluginRegistry
from connect.runtime.properties import load_config_file
from connect.runtime.storage.offsets import OffsetStore
from connect.runtime.storage.status import StatusStore
from connect.runtime.worker import Worker
from connect.runtime.worker_config import WorkerConfig

log = logging.getLogger("spark_sinks")

EXIT_CONFIG = 1
EXIT_FAILED = 2
# A streaming task converts nothing, but the worker config names converters: these pass bytes through.
_WORKER_DEFAULTS = {
    "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
    "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
    "listeners": "",
}
# Spark takes a while to stop a query (spark.sql.streaming.stopTimeout is 60 s in spark_sinks.session)
_STOP_TIMEOUT_S = 90.0


class JobError(Exception):
    """A job that cannot start or that failed: one line for the user, with its exit status."""

    def __init__(self, message: str, exit_status: int) -> None:
        super().__init__(message)
        self.exit_status = exit_status


class _NoSourceOffsets(OffsetStore):
    """The offset store of a job that runs one sink: there are no source offsets to keep."""

    def start(self) -> None:
        pass

    def _persist(self, changes: Mapping[str, str | None]) -> None:
        if changes:
            raise ConnectException("a Spark sink job keeps no source offsets")


class SinkJob:
    """One sink connector and its task, run by the runtime's Worker in this process."""

    def __init__(self, connector_path: str, worker_path: str | None = None) -> None:
        self.props = load_config_file(connector_path)  # its errors name the file
        worker_props = load_config_file(worker_path) if worker_path else {}
        try:
            self.worker_config = WorkerConfig({**_WORKER_DEFAULTS, **worker_props})
        except ConfigException as exc:
            raise JobError(f"{worker_path}: {exc}", EXIT_CONFIG) from exc
        self.name = self.props.get("name") or Path(connector_path).stem
        self.props["name"] = self.name
        self.plugins = PluginRegistry(self.worker_config.get_list("plugin.path"))
        self._check(connector_path)
        self.ended = threading.Event()
        self.failure: str | None = None
        self._task_ran = False
        self.worker: Worker | None = None
        self.backend: LogBackend | None = None

    def _check(self, path: str) -> None:
        result = ConnectorConfigValidator.for_worker(self.plugins, self.worker_config).validate(self.props)
        problems = list(dict.fromkeys(f"{key}: {err}" if key not in err else err for key, err in result.errors))
        if not problems and result.connector_class is not None:
            if not issubclass(result.connector_class, SinkConnector):
                problems.append(f"connector.class: {result.connector_class.__qualname__} is not a sink connector")
        if problems:
            raise JobError(f"{path}: " + f"\nERROR {path}: ".join(problems), EXIT_CONFIG)

    def start(self) -> None:
        """Open the log, start the connector and its task; JobError if either cannot start."""
        backend = self.backend = open_log_backend(self.worker_config.backend_config())
        status = StatusStore()
        status.listeners.append(self._on_status)
        worker_id = f"{socket.gethostname()}:spark-submit-{os.getpid()}"
        self.worker = Worker(worker_id, self.worker_config, self.plugins, backend, _NoSourceOffsets(),
                             status)
        if not self.worker.start_connector(self.name, self.props, TargetState.STARTED, lambda _name: None):
            raise JobError(f"Connector {self.name} failed to start: {self.failure}", EXIT_CONFIG)
        configs = self.worker.connector_task_configs(self.name, max_tasks=1)
        if not configs:
            raise JobError(f"Connector {self.name} gave no task config", EXIT_CONFIG)
        self.task_id = ConnectorTaskId(self.name, 0)
        if not self.worker.start_task(self.task_id, self.props, configs[0], TargetState.STARTED):
            raise JobError(f"The task of connector {self.name} failed to start: {self.failure}", EXIT_CONFIG)

    def _on_status(self, connector: str, task: ConnectorTaskId | None, status: Status | None) -> None:
        """Follows what the Worker reports: a failure (its trace's last line) or the task thread's end."""
        if status is None:
            return
        if status.state is State.FAILED:
            lines = (status.trace or "").strip().splitlines()
            self.failure = lines[-1] if lines else "failed"
            self.ended.set()
        elif task is not None and status.state in (State.RUNNING, State.PAUSED):
            self._task_ran = True
        elif task is not None and status.state is State.UNASSIGNED and self._task_ran:
            self.ended.set()  # the task's run() returned by itself

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop_tasks(self.worker.task_ids(), _STOP_TIMEOUT_S)
            for name in self.worker.connector_names():
                self.worker.stop_connector(name)
        if self.backend is not None:
            self.backend.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_sinks", description=__doc__.splitlines()[0])
    parser.add_argument("connector", help="the connector's .properties (or .json) file")
    parser.add_argument("--worker", help="a worker .properties file: where the topics are, where state goes")
    args = parser.parse_args(argv)
    configure_logging()
    stop = threading.Event()
    job: SinkJob | None = None

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("Stopping (signal %d)", signum)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        job = SinkJob(args.connector, args.worker)
        job.start()
        while not (stop.is_set() or job.ended.is_set()):
            job.ended.wait(0.5)  # short: the signal handler runs on this thread between waits
        if job.failure is not None:
            raise JobError(f"The job failed: {job.failure}", EXIT_FAILED)
    except JobError as exc:
        print(f"ERROR {exc}", file=sys.stderr, flush=True)
        return exc.exit_status
    except (ConfigException, ConnectException, LogError, OSError) as exc:
        print(f"ERROR {exc}", file=sys.stderr, flush=True)
        return EXIT_CONFIG
    finally:
        if job is not None:
            job.stop()
    log.info("Stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
