"""The embedded log's admin client: topics, group offsets and the cluster id, over the stores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from connect.api.topic_partition import TopicPartition
from connect.log.api import Admin, LogError, LogGap, NewTopic, TopicDescription
from connect.log.embedded.coordinator import group_has_members
from connect.log.embedded.groups import GroupOffsetStore
from connect.log.embedded.topics import TopicStore
from connect.log.embedded.transactions import TransactionCoordinator


class EmbeddedAdmin(Admin):
    def __init__(self, store: TopicStore, offsets: GroupOffsetStore,
                 transactions: TransactionCoordinator | None = None) -> None:
        self._store = store
        self._offsets = offsets
        self._transactions = transactions

    def create_topic(self, topic: NewTopic, exist_ok: bool = False) -> None:
        # replication_factor means nothing for a single copy on local disk
        self._store.create(topic.name, topic.partitions, topic.configs, exist_ok=exist_ok)

    def list_topics(self, include_internal: bool = False) -> list[str]:
        return self._store.list(include_internal)

    def describe_topic(self, name: str) -> TopicDescription:
        meta = self._store.reload_meta(name)  # what is on disk now, not what we cached
        offsets = {}
        for p in range(meta.partitions):
            plog = self._store.partition_log(name, p)
            offsets[p] = (plog.start_offset(), plog.end_offset())
        config = self._store.topic_config(meta)
        gaps = self._gaps_of(name, meta.partitions)
        return TopicDescription(name, meta.partitions, dict(config.effective), offsets,
                                {tp.partition: tuple(g) for tp, g in gaps.items()})

    def _gaps_of(self, name: str, partitions: int) -> dict[TopicPartition, list[LogGap]]:
        out = {}
        for p in range(partitions):
            gaps = self._store.partition_log(name, p).gaps()
            if gaps:
                out[TopicPartition(name, p)] = list(gaps)
        return out

    def log_gaps(self, topics: Sequence[str] | None = None) -> dict[TopicPartition, list[LogGap]]:
        out: dict[TopicPartition, list[LogGap]] = {}
        for name in topics if topics is not None else self._store.list(include_internal=True):
            out.update(self._gaps_of(name, self._store.meta(name).partitions))
        return out

    def delete_topic(self, name: str) -> None:
        self._store.delete(name)
        self._offsets.forget_topic(name)

    def list_group_offsets(self, group: str) -> dict[TopicPartition, int]:
        return self._offsets.read(group)

    def _require_empty(self, group: str) -> None:
        if group_has_members(self._store.root, group):
            raise LogError(f"Group {group!r} has active members in this process; stop them first")

    def alter_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int | None]) -> None:
        self._require_empty(group)
        self._offsets.commit(group, offsets)

    def delete_group(self, group: str) -> None:
        self._require_empty(group)
        self._offsets.delete(group)

    def cluster_id(self) -> str:
        return self._store.cluster_id()

    def fence_producers(self, transactional_ids: Sequence[str]) -> None:
        if self._transactions is None:
            raise LogError("This admin client cannot fence producers")
        self._transactions.fence(transactional_ids)

    def close(self) -> None:
        pass
