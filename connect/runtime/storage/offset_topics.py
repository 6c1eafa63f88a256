"""The offset topics of exactly-once source tasks, opened once per topic and shared by the worker's tasks.

An exactly-once task writes its source offsets to a topic inside its transactions: the connector's
``offsets.storage.topic`` or else the worker's ``offset.storage.topic`` (in standalone mode too, where
the other tasks keep offsets in a file). Each topic is read with ``isolation.level=read_committed``, so an
aborted transaction's offsets are never seen. A task resumes from its connector's offsets in that topic
and, for a source partition it has none for there, from the worker's own store, as Kafka Connect does
(a connector moved to exactly-once, or to a topic of its own, picks up where it was).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from connect.api.connector import OffsetStorageReader
from connect.log.api import LogBackend
from connect.runtime.storage.offset_backing_store import KafkaOffsetStore
from connect.runtime.storage.offsets import OffsetStore

__all__ = ["LayeredOffsetReader", "OffsetTopics"]


class LayeredOffsetReader(OffsetStorageReader):
    """A connector's offsets from ``primary``, falling back to ``fallback`` partition by partition."""

    def __init__(self, primary: OffsetStore, fallback: OffsetStore | None, connector: str) -> None:
        self.primary = primary
        self.fallback = fallback
        self.connector = connector

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        found = self.primary.get(self.connector, partition)
        if found is None and self.fallback is not None and self.fallback is not self.primary:
            found = self.fallback.get(self.connector, partition)
        return found


class OffsetTopics:
    """``worker_store``: the worker's own offset store; when it already reads ``worker_topic`` (distributed
    mode), that topic is not opened twice."""

    def __init__(self, backend: LogBackend, worker_store: OffsetStore, worker_topic: str, *, partitions: int,
                 replication_factor: int) -> None:
        self.backend = backend
        self.worker_store = worker_store
        self.worker_topic = worker_topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self._lock = threading.Lock()
        self._stores: dict[str, KafkaOffsetStore] = {}

    def store_for(self, topic: str | None) -> KafkaOffsetStore:
        """The started store of ``topic`` (None: the worker's offset topic)."""
        topic = topic or self.worker_topic
        store = self.worker_store
        if isinstance(store, KafkaOffsetStore) and store.topic == topic:
            return store
        with self._lock:
            found = self._stores.get(topic)
            if found is None:
                # read when a task starts (refresh), not followed: a thread polling it would wake at every
                # append to the log (the embedded log signals appends per directory)
                found = KafkaOffsetStore(self.backend, topic, partitions=self.partitions,
                                         replication_factor=self.replication_factor, read_committed=True,
                                         follow=False)
                found.start()
                self._stores[topic] = found
            return found

    def reader_for(self, connector: str, store: KafkaOffsetStore) -> LayeredOffsetReader:
        return LayeredOffsetReader(store, self.worker_store, connector)

    def close(self) -> None:
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.stop()
