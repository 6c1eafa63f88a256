"""``connect-standalone``: one worker that runs the connectors of its command line and its REST API."""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from connect.api.errors import ConfigException, ConnectException
from connect.cli.exit import EXIT_RUNTIME, CliError, fail
from connect.log.api import LogError
from connect.logging_setup import configure_logging

if TYPE_CHECKING:  # imported when they start: `headrace` tools need neither
    from connect.runtime.standalone import StandaloneHerder
    from rest import RestServer

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


def _load_worker_config(path: str, config_cls: type):  # a WorkerConfig subclass instance
    from connect.runtime.properties import load_config_file

    try:
        props = load_config_file(path)
    except ConfigException as exc:
        raise CliError(str(exc)) from exc
    try:
        return config_cls(props)
    except ConfigException as exc:
        raise CliError(f"{path}: {exc}") from exc


class StandaloneRuntime:
    """Everything a standalone worker process runs, started in order and stopped in reverse."""

    def __init__(self, worker_config_path: str, connector_paths: Sequence[str]) -> None:
        from connect.runtime.plugins import PluginRegistry
        from connect.runtime.properties import load_config_file
        from connect.runtime.worker_config import StandaloneConfig

        self.config = _load_worker_config(worker_config_path, StandaloneConfig)
        self.plugins = PluginRegistry(self.config.get_list("plugin.path"))
        self._check_worker_plugins(worker_config_path)
        self.connector_configs: list[tuple[str, dict[str, str]]] = []
        for path in connector_paths:
            try:
                self.connector_configs.append((path, load_config_file(path)))
            except ConfigException as exc:
                raise CliError(str(exc)) from exc
        self._validate_connector_files()
        self._stop = threading.Event()
        self.herder: StandaloneHerder | None = None
        self.rest: RestServer | None = None

    def _check_worker_plugins(self, path: str) -> None:
        for key, kind in (("key.converter", "converter"), ("value.converter", "converter"),
                          ("header.converter", "header_converter")):
            name = self.config.get(key)
            if name:
                try:
                    self.plugins.resolve(str(name), kind, key)
                except ConfigException as exc:
                    raise CliError(f"{path}: {exc}") from exc

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
        worker_id = _worker_id(self.config)
        status = StatusStore()
        worker = Worker(worker_id, self.config, self.plugins, backend, offsets, status)
        _keep_secrets_out_of_text(worker.config_transformer, status)
        self.herder = StandaloneHerder(worker, self._config_store(backend, offsets_file, worker_id))
        self._start_rest()
        self.herder.start()
        for path, props in self.connector_configs:
            info = self.herder.apply_connector_file(props)
            log.info("[%s] Created connector from %s (%s, %d task(s))", info.name, path, info.type.value,
                     len(info.tasks))

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

    def _start_rest(self) -> None:
        listeners = self.config.get_list("listeners")
        if not listeners:
            return
        from rest import RestConfigError, RestServer, create_app

        assert self.herder is not None, "the herder is made before the REST server"
        try:
            app = create_app(self.herder, self.config.originals)
            self.rest = RestServer(app, self.config.originals)
        except RestConfigError as exc:
            raise ConfigException(message=str(exc)) from exc
        self.rest.start()

    def run(self) -> int:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self._stop.set())
        from connect.runtime.gc_policy import settle_heap

        settle_heap()  # plugins are loaded: what is alive now lives as long as the process
        try:
            self.start()
        except (ConfigException, ConnectException, LogError, OSError) as exc:
            log.debug("start-up failed", exc_info=exc)
            self.shutdown()
            return fail(str(exc), EXIT_RUNTIME)
        except Exception as exc:  # the user gets one line; the trace goes to the log
            log.error("Worker failed to start", exc_info=exc)
            self.shutdown()
            return fail(f"worker failed to start: {exc}", EXIT_RUNTIME)
        log.info("Headrace standalone worker started")
        self._stop.wait()
        log.info("Shutting down")
        self.shutdown()
        log.info("Headrace standalone worker stopped")
        return 0

    def shutdown(self) -> None:
        if self.rest is not None:
            self.rest.stop()
        if self.herder is not None:
            self.herder.stop()
        backend = getattr(self, "backend", None)
        if backend is not None:
            backend.close()


def _keep_secrets_out_of_text(transformer, status) -> None:
    """Values resolved from config providers are blanked from every log line and status trace."""
    from connect.runtime.config_transformer import SecretRedactingFilter

    status.redact = transformer.redact
    redacting = SecretRedactingFilter(transformer)
    for handler in logging.getLogger().handlers:
        handler.addFilter(redacting)


def _worker_id(config) -> str:
    listeners = config.get_list("listeners")
    host = config.get("rest.advertised.host.name") or socket.gethostname()
    port = config.get("rest.advertised.port")
    if port is None and listeners:
        port = listeners[0].rsplit(":", 1)[-1]
    return f"{host}:{port}" if port else f"{host}:{uuid.uuid4().hex[:8]}"


if __name__ == "__main__":
    sys.exit(standalone_main())
