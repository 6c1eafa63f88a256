"""Source offsets of the whole cluster in ``offset.storage.topic``, as Kafka Connect keeps them.

Key: the JSON text of ``["<connector>", {source partition}]``; value: the JSON text of the offset map, a
tombstone for a reset. Keys are written canonically and placed on a partition by murmur2 of their bytes,
as Java's producer does, so a key written by Java and by Headrace is one key on one partition and
compaction keeps only its latest offset. Keys read from the topic are normalised, so an offset Java wrote
is found by the same lookup. A task that moves to this worker reads the topic to its end first
(``refresh``), so it resumes at the last offset its previous worker committed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from connect.log.api import ClientStats, LogBackend, LogError
from connect.log.key_partition import partition_for_key
from connect.runtime.storage.kafka_based_log import KafkaBasedLog, ensure_internal_topic
from connect.runtime.storage.offsets import OffsetStore, offset_key

__all__ = ["KafkaOffsetStore", "offset_partition"]

log = logging.getLogger(__name__)

_WRITE_TIMEOUT_S = 30.0


def offset_partition(key: bytes, partitions: int) -> int:
    """The partition Java's default partitioner picks for ``key``."""
    return partition_for_key(key, partitions)


def _canonical(raw_key: bytes) -> str | None:
    try:
        parsed = json.loads(raw_key)
    except ValueError:
        return None
    if not (isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[0], str)
            and isinstance(parsed[1], dict)):
        return None
    return offset_key(parsed[0], parsed[1])


class KafkaOffsetStore(OffsetStore):
    """``read_committed``: read only offsets of committed transactions, as workers running exactly-once
    sources must (an aborted transaction's offsets would skip records that never became visible).
    ``follow=False``: the topic is read only by ``start`` and ``refresh``."""

    def __init__(self, backend: LogBackend, topic: str, *, partitions: int = 25, replication_factor: int = 3,
                 read_committed: bool = False, follow: bool = True, client_id: str | None = None) -> None:
        super().__init__()
        self.backend = backend
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        isolation = {"isolation.level": "read_committed"} if read_committed else {}
        self._log = KafkaBasedLog(backend, topic, self._on_record, consumer_config=isolation, follow=follow,
                                  client_id=client_id)
        self._partition_count = partitions

    def client_stats(self) -> tuple[ClientStats, ...]:
        return self._log.client_stats()

    def start(self, timeout: float = 60.0) -> None:
        self._partition_count = ensure_internal_topic(self.backend, self.topic, "offset.storage.topic",
                                                      self.partitions, self.replication_factor)
        self._log.start(self._partition_count, timeout)
        log.info("Read offset topic '%s': %d source partition offset(s)", self.topic, len(self._data))

    def stop(self) -> None:
        self._log.stop()

    def refresh(self, timeout: float = 30.0) -> bool:
        """Read the topic to its end: offsets other workers committed are then known here."""
        return self._log.read_to_end(timeout)

    def _on_record(self, key: bytes | None, value: bytes | None, partition: int, offset: int) -> None:
        if key is None:
            return
        canonical = _canonical(key)
        if canonical is None:
            log.warning("Offset topic '%s': key %r is not [connector, partition]; ignored", self.topic, key[:200])
            return
        with self._lock:
            if value is None:
                self._data.pop(canonical, None)
            else:
                try:
                    self._data[canonical] = json.dumps(json.loads(value), separators=(",", ":"),
                                                       ensure_ascii=False)
                except ValueError:
                    log.warning("Offset topic '%s': value of %s is not JSON; ignored", self.topic, canonical)

    def partition_for(self, key: str) -> int:
        """The partition of the topic an offset ``key`` is written to (by its writer's producer or ours)."""
        return offset_partition(key.encode("utf-8"), self._partition_count)

    def _persist(self, changes: Mapping[str, str | None]) -> None:
        try:
            for key, value in changes.items():
                raw = key.encode("utf-8")
                self._log.send(raw, None if value is None else value.encode("utf-8"),
                               offset_partition(raw, self._partition_count))
            self._log.flush(_WRITE_TIMEOUT_S)
        except LogError as exc:
            raise LogError(f"Offsets not written to topic '{self.topic}': {exc}") from None
