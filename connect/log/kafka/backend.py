"""The topic layer on a real Kafka cluster (chosen when the worker config sets ``bootstrap.servers``)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from connect.log.api import LogBackend, LogError, read_committed_of
from connect.log.kafka.admin import KafkaAdmin
from connect.log.kafka.config import client_config
from connect.log.kafka.consumer import KafkaConsumer
from connect.log.kafka.health import ClusterHealth
from connect.log.kafka.producer import KafkaProducer
from connect.log.kafka.range_reader import KafkaLogReader
from connect.log.kafka.transactions import TransactionalKafkaProducer

__all__ = ["KafkaBackend"]

_serial = itertools.count(1)


class KafkaBackend(LogBackend):
    """Makes confluent-kafka producers, consumers and admin clients from a worker config.

    ``worker_config`` is the whole worker config (Kafka Connect names, string
    values); see ``connect.log.kafka.config`` for how it maps to librdkafka.
    """

    name = "kafka"

    def __init__(self, worker_config: Mapping[str, Any]) -> None:
        servers = str(worker_config.get("bootstrap.servers") or "").strip()
        if not servers:
            raise LogError("the Kafka backend needs bootstrap.servers")
        self.worker_config = dict(worker_config)
        self.bootstrap_servers = servers
        self.health = ClusterHealth(servers, client_config(self.worker_config, "admin")[0])

    def _label(self, kind: str, cfg: Mapping[str, str]) -> str:
        cid = cfg.get("client.id")
        return f"{kind} {cid}" if cid else f"{kind}-{next(_serial)}"

    def producer(self, config: Mapping[str, Any] | None = None) -> KafkaProducer:
        cfg, own = client_config(self.worker_config, "producer", config)
        if cfg.get("transactional.id"):
            return TransactionalKafkaProducer(cfg, own, self._label("producer", cfg), self.health)
        return KafkaProducer(cfg, own, self._label("producer", cfg), self.health)

    def consumer(self, group_id: str | None = None, config: Mapping[str, Any] | None = None) -> KafkaConsumer:
        cfg, own = client_config(self.worker_config, "consumer", config)
        return KafkaConsumer(cfg, own, group_id, self._label("consumer", cfg), self.health)

    def admin(self, config: Mapping[str, Any] | None = None) -> KafkaAdmin:
        cfg, own = client_config(self.worker_config, "admin", config)
        # Admin clients do not feed the health watch: each of their calls reports its own failure, and
        # they are often used for one call (start-up checks, the tools) before any outage could matter.
        return KafkaAdmin(cfg, own, self._label("admin", cfg))

    def reader(self, isolation_level: str = "read_uncommitted") -> KafkaLogReader:
        return KafkaLogReader(self, read_committed=read_committed_of(isolation_level))

    def health_problem(self) -> str | None:
        return self.health.problem()

    def close(self) -> None:
        self.health.close()
