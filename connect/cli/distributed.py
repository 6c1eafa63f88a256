"""``connect-distributed``: one worker of a Connect cluster on Kafka; connectors are managed over REST."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from typing import Any

from connect.cli import signals
from connect.cli.exit import CliError
from connect.cli.worker_process import WorkerProcess, keep_secrets_out_of_text, rest_worker_id, run_worker
from connect.logging_setup import configure_logging

__all__ = ["DistributedRuntime", "distributed_main"]

log = logging.getLogger("connect.cli")


def distributed_main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # this process's own command line (`python -m` too): Ctrl-C is a quiet stop from now on
        signals.install()
    parser = argparse.ArgumentParser(prog="connect-distributed",
                                     description="Run one worker of a distributed Headrace (Kafka Connect) cluster.")
    parser.add_argument("worker_config", help="worker .properties file (group.id, the three storage topics, "
                                              "bootstrap.servers)")
    args = parser.parse_args(argv)
    configure_logging()
    return run_worker(lambda: DistributedRuntime(args.worker_config))


def rest_url(config: Any, worker_id: str) -> str:
    """The URL other workers reach this one at: the advertised host and port, with the listener's scheme."""
    listeners = config.get_list("listeners")
    scheme = config.get("rest.advertised.listener") or (listeners[0].split("://", 1)[0] if listeners else "http")
    return f"{scheme}://{worker_id}"


class DistributedRuntime(WorkerProcess):
    MODE = "distributed"

    def __init__(self, worker_config_path: str) -> None:
        from connect.runtime.worker_config import DistributedConfig

        super().__init__(worker_config_path, DistributedConfig)

    def _check_config(self, path: str) -> None:
        # before the REST front process starts: a config refused here has nothing listening
        if not self.config.uses_kafka:
            raise CliError(f"{path}: bootstrap.servers: a distributed worker needs a Kafka cluster "
                           "(its workers share the internal topics there); without Kafka, run connect-standalone")
        if not self.config.get_list("listeners"):
            raise CliError(f"{path}: listeners: a distributed worker needs a REST listener (the "
                           "workers forward requests to each other)")

    def start(self) -> None:
        from connect.log import open_log_backend
        from connect.runtime.distributed.herder import DistributedHerder
        from connect.runtime.storage.config_backing_store import KafkaConfigBackingStore
        from connect.runtime.storage.offset_backing_store import KafkaOffsetStore
        from connect.runtime.storage.status_backing_store import KafkaStatusBackingStore
        from connect.runtime.worker import Worker

        config = self.config
        self.backend = backend = open_log_backend(config.backend_config(), owner=True)
        admin = backend.admin()
        try:
            # an unreachable cluster is one error before the REST server or any connector starts
            log.info("Kafka cluster id: %s", admin.cluster_id())
        finally:
            admin.close()
        signals.raise_if_requested()
        worker_id = rest_worker_id(config)
        url = rest_url(config, worker_id)
        offsets = KafkaOffsetStore(backend, config.offset_storage_topic,
                                   partitions=config.get("offset.storage.partitions"),
                                   replication_factor=config.get("offset.storage.replication.factor"),
                                   read_committed=config.exactly_once_source_enabled,
                                   client_id=f"{config.client_id_base}offsets")
        status = KafkaStatusBackingStore(backend, config.status_storage_topic, worker_id,
                                         partitions=config.get("status.storage.partitions"),
                                         replication_factor=config.get("status.storage.replication.factor"),
                                         client_id=f"{config.client_id_base}statuses")
        store = KafkaConfigBackingStore(backend, config.config_storage_topic,
                                        replication_factor=config.get("config.storage.replication.factor"),
                                        encryption=_encryption(config), group_id=config.group_id,
                                        exactly_once=config.exactly_once_source_support.lower() != "disabled",
                                        client_id=f"{config.client_id_base}configs")
        offsets.start()
        status.start()
        from connect.runtime.task_host import task_host_pool

        hosts = task_host_pool(config, worker_id, self.plugins, backend, status, offsets)
        worker = Worker(worker_id, config, self.plugins, backend, offsets, status, task_hosts=hosts)
        keep_secrets_out_of_text(worker.config_transformer, status)
        self.herder = herder = DistributedHerder(
            worker, store, url, member_factory=lambda listener, state, refresh: _group_member(
                config, url, listener, state, refresh),
            group_id=config.group_id, key_ttl_ms=config.inter_worker_key_ttl_ms,
            sync_timeout_ms=config.worker_sync_timeout_ms, rebalance_timeout_ms=config.rebalance_timeout_ms,
            on_fatal=self.fail_fatal)
        store.listener = herder.cluster
        self._start_rest(herder)
        herder.start()
        log.info("Worker %s (REST %s) joining Connect cluster '%s'", worker_id, url, config.group_id)


def _encryption(config: Any) -> Any:
    """PASSWORD values are encrypted only with a key every worker of the cluster has."""
    from connect.runtime.config_encryption import ConfigEncryption

    if not (config.get("config.storage.encryption.key") or config.get("config.storage.encryption.key.file")):
        return None
    return ConfigEncryption.from_worker_config(config.originals, "")


def _group_member(config: Any, url: str, listener: Any, state: Any, refresh: Any) -> Any:
    from connect.runtime.distributed.coordinator import WorkerGroupMember

    return WorkerGroupMember(
        bootstrap_servers=",".join(config.bootstrap_servers), group_id=config.group_id, rest_url=url,
        connect_protocol=config.connect_protocol, session_timeout_ms=config.session_timeout_ms,
        heartbeat_interval_ms=config.heartbeat_interval_ms, rebalance_timeout_ms=config.rebalance_timeout_ms,
        scheduled_rebalance_max_delay_ms=config.scheduled_rebalance_max_delay_ms, config_state=state,
        refresh_config=refresh, listener=listener, client_configs=config.originals)
