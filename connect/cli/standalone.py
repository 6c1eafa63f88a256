"""``connect-standalone``: one worker that runs the connectors of its command line and its REST API."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from connect.api.errors import ConfigException
from connect.cli.exit import CliError, fail
from connect.cli.worker_process import WorkerProcess, keep_secrets_out_of_text, rest_worker_id
from connect.logging_setup import configure_logging

if TYPE_CHECKING:  # imported when they start: `headrace` tools need neither
    from connect.runtime.standalone import StandaloneHerder

__all__ = ["StandaloneRuntime", "standalone_main"]

log = logging.getLogger("connect.cli")


def standalone_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="connect-standalone",
        description="Run a standalone Headrace worker with the given connector configs.",
    )
    parser.add_argument("worker_config", help="worker .properties file")
    parser.add_argument("connector_configs", nargs="*", help="connector .properties or .json files")
    args = parser.parse_args(argv)
    configure_logging()
    try:
        runtime = StandaloneRuntime(args.worker_config, args.connector_configs)
    except CliError as exc:
        return fail(str(exc))
    return runtime.run()


class StandaloneRuntime(WorkerProcess):
    """Everything a standalone worker process runs, started in order and stopped in reverse."""

    MODE = "standalone"

    def __init__(self, worker_config_path: str, connector_paths: Sequence[str]) -> None:
        from connect.runtime.properties import load_config_file
        from connect.runtime.worker_config import StandaloneConfig

        super().__init__(worker_config_path, StandaloneConfig)
        self.connector_configs: list[tuple[str, dict[str, str]]] = []
        for path in connector_paths:
            try:
                self.connector_configs.append((path, load_config_file(path)))
            except ConfigException as exc:
                raise CliError(str(exc)) from exc
        self._validate_connector_files()
        self.herder: StandaloneHerder | None = None

    def _validate_connector_files(self) -> None:
        from connect.runtime.connector_validation import ConnectorConfigValidator

        validator = ConnectorConfigValidator.for_worker(self.plugins, self.config)
        lines = []
        for path, props in self.connector_configs:
            result = validator.validate(props)
            for key, err in result.errors:
                lines.append(f"{path}: {key}: {err}" if key not in err else f"{path}: {err}")
        if lines:
            raise CliError("\nERROR ".join(lines))

    def start(self) -> None:
        from connect.log import open_log_backend
        from connect.runtime.offsets import FileOffsetStore
        from connect.runtime.standalone import StandaloneHerder
        from connect.runtime.status import StatusStore
        from connect.runtime.worker import Worker

        # the owner: a second worker on the same embedded.log.dir is refused here, before anything runs
        backend = open_log_backend(self.config.backend_config(), owner=True)
        self.backend = backend
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
        worker = Worker(worker_id, self.config, self.plugins, backend, offsets, status)
        keep_secrets_out_of_text(worker.config_transformer, status)
        self.herder = StandaloneHerder(worker, self._config_store(backend, offsets_file, worker_id))
        self._start_rest(self.herder)
        self.herder.start(ready=False)
        for path, props in self.connector_configs:
            info = self.herder.apply_connector_file(props)
            log.info("[%s] Created connector from %s (%s, %d task(s))", info.name, path, info.type.value,
                     len(info.tasks))
        # only now: a client that waited for the REST API must find the command line's connectors there
        self.herder.mark_ready()

    def _config_store(self, backend, offsets_file: str, worker_id: str):
        """The worker's own config topic: in its embedded log, or on Kafka one named after its lasting id."""
        from connect.runtime.config_encryption import ConfigEncryption
        from connect.runtime.config_store import ConfigTopicStore
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
