"""``connect-standalone``: one worker that runs the connectors of its command line and its REST API."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from connect.api.errors import ConfigException
from connect.cli import signals
from connect.cli.exit import CliError
from connect.cli.worker_process import WorkerProcess, keep_secrets_out_of_text, rest_worker_id, run_worker
from connect.logging_setup import configure_logging

if TYPE_CHECKING:  # imported when they start: `headrace` tools need neither
    from connect.runtime.standalone import StandaloneHerder

__all__ = ["StandaloneRuntime", "standalone_main"]

log = logging.getLogger("connect.cli")


def standalone_main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # this process's own command line (`python -m` too): Ctrl-C is a quiet stop from now on
        signals.install()
    parser = argparse.ArgumentParser(
        prog="connect-standalone",
        description="Run a standalone Headrace worker with the given connector configs.",
    )
    parser.add_argument("worker_config", help="worker .properties file")
    parser.add_argument("connector_configs", nargs="*", help="connector .properties or .json files")
    args = parser.parse_args(argv)
    configure_logging()
    return run_worker(lambda: StandaloneRuntime(args.worker_config, args.connector_configs))


class StandaloneRuntime(WorkerProcess):
    """Everything a standalone worker process runs, started in order and stopped in reverse."""

    MODE = "standalone"

    def __init__(self, worker_config_path: str, connector_paths: Sequence[str]) -> None:
        from connect.runtime.worker_config import StandaloneConfig

        self.connector_paths = list(connector_paths)
        self.connector_configs: list[tuple[str, dict[str, str]]] = []
        self.herder: StandaloneHerder | None = None
        super().__init__(worker_config_path, StandaloneConfig)

    def _check_with_plugins(self, path: str) -> None:
        from connect.runtime.properties import load_config_file

        for connector_path in self.connector_paths:
            try:
                self.connector_configs.append((connector_path, load_config_file(connector_path)))
            except ConfigException as exc:
                raise CliError(str(exc)) from exc
        self._validate_connector_files()

    def _validate_connector_files(self) -> None:
        from connect.runtime.connector_validation import ConnectorConfigValidator

        validator = ConnectorConfigValidator.for_worker(self.plugins, self.config)
        lines = []
        for path, props in self.connector_configs:
            reported: set[str] = set()
            for key, err in validator.validate(props).errors:
                # one rule may fail on several keys with one message (topics and topics.regex: "Must configure
                # one of topics or topics.regex"): one line, naming the first key
                if err in reported:
                    continue
                reported.add(err)
                names_key = f"configuration {key}" in err or err.startswith(f"{key}:")
                lines.append(f"{path}: {err}" if names_key else f"{path}: {key}: {err}")
        if lines:
            raise CliError("\nERROR ".join(lines))

    def start(self) -> None:
        from connect.log import open_log_backend
        from connect.runtime.standalone import StandaloneHerder
        from connect.runtime.storage.offsets import FileOffsetStore
        from connect.runtime.storage.status import StatusStore
        from connect.runtime.worker import Worker

        # the owner: a second worker on the same embedded.log.dir is refused here, before anything runs
        backend = open_log_backend(self.config.backend_config(), owner=True)
        self.backend = backend
        signals.raise_if_requested()
        if self.config.uses_kafka:
            # As Kafka Connect does at start-up: an unreachable cluster is one error (within request.timeout.ms)
            # before the REST server or any connector starts, not a hang.
            admin = backend.admin()
            try:
                log.info("Kafka cluster id: %s", admin.cluster_id())
            finally:
                admin.close()
        offsets_file = self.config.get("offset.storage.file.filename")
        offsets = FileOffsetStore(offsets_file)
        offsets.start()
        worker_id = rest_worker_id(self.config)
        status = StatusStore()
        from connect.runtime.task_host import task_host_pool

        hosts = task_host_pool(self.config, worker_id, self.plugins, backend, status, offsets)
        worker = Worker(worker_id, self.config, self.plugins, backend, offsets, status, task_hosts=hosts)
        keep_secrets_out_of_text(worker.config_transformer, status)
        self.herder = StandaloneHerder(worker, self._config_store(backend, offsets_file, worker_id))
        signals.raise_if_requested()
        self._start_rest(self.herder)
        signals.raise_if_requested()
        from_files = {props.get("name", "").strip() for _, props in self.connector_configs}
        self.herder.start(ready=False, from_files=from_files)
        for path, props in self.connector_configs:
            signals.raise_if_requested()  # before each connector: each may take a while to start
            info = self.herder.apply_connector_file(props)
            log.info("[%s] Created connector from %s (%s, %d task(s))", info.name, path, info.type.value,
                     len(info.tasks))
        # only now: a client that waited for the REST API must find the command line's connectors there
        self.herder.mark_ready()

    def _config_store(self, backend, offsets_file: str, worker_id: str):
        """The worker's own config topic: in its embedded log, or on Kafka one named after its lasting id."""
        from connect.runtime.config_encryption import ConfigEncryption
        from connect.runtime.storage.config_store import ConfigTopicStore
        from connect.runtime.worker_identity import standalone_identity

        identity = standalone_identity(offsets_file)
        topic = self.config.get("config.storage.topic") or (
            f"connect-configs-standalone-{identity}" if self.config.uses_kafka else "connect-configs")
        # the embedded log syncs to disk only when asked; a config write is acknowledged once it is synced
        topic_configs = {} if self.config.uses_kafka else {"flush.messages": "1"}
        return ConfigTopicStore(backend, topic, self.config.get("config.storage.replication.factor"),
                                owner={"worker.id": identity, "rest.worker.id": worker_id},
                                encryption=ConfigEncryption.from_worker_config(self.config.originals, offsets_file),
                                topic_configs=topic_configs)


if __name__ == "__main__":
    sys.exit(standalone_main())
