"""The topic layer and its backends; ``open_log_backend`` picks one from a worker config, ``open_log_reader``
a reader of one for a process that runs no worker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.log.api import LogBackend, LogReader, read_committed_of


def open_log_backend(worker_config: Mapping[str, Any], *, owner: bool = False, read_only: bool = False) -> LogBackend:
    """Kafka when ``bootstrap.servers`` is set, else the embedded log under ``embedded.log.dir``.

    ``owner``: a worker, which locks an embedded log directory for itself; ``read_only``: a tool that only
    looks. Both mean nothing to Kafka.
    """
    servers = worker_config.get("bootstrap.servers")
    if servers:
        from connect.log.kafka.backend import KafkaBackend

        return KafkaBackend(worker_config)
    from connect.log.embedded.backend import EmbeddedBackend

    return EmbeddedBackend(str(worker_config.get("embedded.log.dir") or "./headrace-data"), worker_config,
                           owner=owner, read_only=read_only)


def open_log_reader(settings: Mapping[str, Any]) -> LogReader:
    """A LogReader of the log ``settings`` name (``bootstrap.servers`` and client settings, else
    ``embedded.log.dir``), for a process that runs no worker: a Spark executor, say. It reads with the
    ``isolation.level`` the settings give (``read_uncommitted`` unless they say otherwise). Close it when done."""
    read_committed = read_committed_of(settings.get("isolation.level"))
    if settings.get("bootstrap.servers"):
        from connect.log.kafka.backend import KafkaBackend
        from connect.log.kafka.range_reader import KafkaLogReader

        client = {k: v for k, v in settings.items() if k != "isolation.level"}
        return KafkaLogReader(KafkaBackend(client), owns_backend=True, read_committed=read_committed)
    from connect.log.embedded.range_reader import EmbeddedLogReader

    return EmbeddedLogReader.open(str(settings.get("embedded.log.dir") or "./headrace-data"), read_committed)
