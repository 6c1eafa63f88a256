"""A Kafka client's traffic totals, from the statistics librdkafka emits every ``statistics.interval.ms``.

Kafka's Java clients count ``outgoing-byte-total``, ``incoming-byte-total`` and ``connection-count`` in
JMX, and Strimzi's Connect dashboard plots them. librdkafka keeps the same figures and hands them out as a
JSON document on the thread that polls the client; this keeps the three numbers of the latest one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from connect.log.api import ClientStats

__all__ = ["DEFAULT_STATISTICS_INTERVAL_MS", "LibrdkafkaStatistics"]

log = logging.getLogger("connect.log.kafka")

# Prometheus scrapes every 15-60 s; a report every 10 s keeps the figures as fresh as a scrape can see,
# and parsing one costs well under a millisecond even for a consumer of hundreds of partitions
DEFAULT_STATISTICS_INTERVAL_MS = 10_000


class LibrdkafkaStatistics:
    """The latest traffic totals of one client; ``settings`` wires it into the client's config."""

    def __init__(self, client_id: str, kind: str) -> None:
        self.client_id = client_id
        self.kind = kind
        self._latest: ClientStats | None = None

    def settings(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The confluent-kafka config entries that deliver this client's statistics here (an interval the
        operator set, ``0`` included, is kept)."""
        out: dict[str, Any] = {"stats_cb": self.on_statistics}
        if "statistics.interval.ms" not in config:
            out["statistics.interval.ms"] = DEFAULT_STATISTICS_INTERVAL_MS
        return out

    def on_statistics(self, document: str) -> None:
        try:
            body = json.loads(document)
            brokers = body.get("brokers") or {}
            # the coordinator entry is "logical": it shares the connection of the broker it points to
            connections = sum(1 for b in brokers.values()
                              if b.get("state") == "UP" and b.get("source") != "logical")
            self._latest = ClientStats(self.client_id, self.kind, int(body.get("tx_bytes", 0)),
                                       int(body.get("rx_bytes", 0)), connections)
        except (ValueError, TypeError, AttributeError) as exc:
            log.debug("%s %s: unreadable statistics from librdkafka: %s", self.kind, self.client_id, exc)

    def snapshot(self) -> ClientStats | None:
        return self._latest
