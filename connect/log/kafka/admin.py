"""The Kafka admin client of the topic layer, on confluent-kafka."""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec, ResourceType
from confluent_kafka.admin import NewTopic as KNewTopic

from connect.api.topic_partition import TopicPartition
from connect.log.api import (
    Admin,
    ClientStats,
    LogError,
    NewTopic,
    RetriableLogError,
    TopicDescription,
    UnknownTopicError,
)
from connect.log.kafka.client_errors import ClientEvents, kafka_error, to_log_error
from connect.log.kafka.client_stats import LibrdkafkaStatistics

__all__ = ["KAFKA_INTERNAL_TOPICS", "KafkaAdmin"]

T = TypeVar("T")

log = logging.getLogger("connect.log.kafka")

# The topics Kafka itself flags as internal.
KAFKA_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})

# A partition's leadership still settling (a topic just created, a broker just restarted): asking again helps.
_LEADER_MOVING = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.UNKNOWN_LEADER_EPOCH,
                            KafkaError.LEADER_NOT_AVAILABLE, KafkaError.FENCED_LEADER_EPOCH})
_UNREACHABLE = frozenset({KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN})


class KafkaAdmin(Admin):
    """Topic and consumer-group administration; every call is bounded by ``request.timeout.ms``."""

    def __init__(self, config: Mapping[str, str], own: Mapping[str, str], name: str = "admin") -> None:
        # Quiet: every call reports its own failure, naming bootstrap.servers.
        self._events = ClientEvents(name, quiet=True)
        self._bootstrap = config.get("bootstrap.servers", "")
        self._timeout = float(own.get("request.timeout.ms", "15000")) / 1000.0
        self._config = dict(config)  # fence_producers makes producers with the same connection settings
        conf: dict[str, Any] = dict(config)
        conf.update(self._events.settings())
        self._statistics = LibrdkafkaStatistics(str(conf.get("client.id") or "rdkafka"), "admin")
        conf.update(self._statistics.settings(conf))
        try:
            self._a = AdminClient(conf)
        except KafkaException as exc:
            raise to_log_error(exc, f"invalid {name} configuration") from None
        self._cluster_id: str | None = None

    def stats(self) -> ClientStats | None:
        self._a.poll(0)  # statistics, like log lines, are only handed over on poll
        return self._statistics.snapshot()

    # -- plumbing ------------------------------------------------------------------

    def _wait(self, future: concurrent.futures.Future[Any], what: str) -> Any:
        try:
            # librdkafka enforces request_timeout itself; the extra margin only
            # guards against a future that never completes.
            return future.result(timeout=self._timeout + 5.0)
        except KafkaException as exc:
            kerr = kafka_error(exc)
            if kerr is not None and kerr.code() in _UNREACHABLE:
                what = f"{what} (is Kafka at bootstrap.servers={self._bootstrap} reachable?)"
            raise to_log_error(exc, what) from None
        except concurrent.futures.TimeoutError:
            raise RetriableLogError(f"{what}: no answer from Kafka within {self._timeout:g}s") from None
        finally:
            # Serve queued log lines (they are only delivered on poll).
            self._a.poll(0)

    def _metadata(self, topic: str | None = None) -> Any:
        try:
            if topic is None:
                return self._a.list_topics(timeout=self._timeout)
            return self._a.list_topics(topic, timeout=self._timeout)
        except KafkaException as exc:
            kerr = kafka_error(exc)
            code = kerr.code() if kerr is not None else None
            if code in _UNREACHABLE:
                raise RetriableLogError(
                    f"cannot reach Kafka at bootstrap.servers={self._bootstrap} "
                    f"within {self._timeout:g}s (request.timeout.ms): {kerr.str() if kerr else exc}"
                ) from None
            raise to_log_error(exc, "fetching cluster metadata") from None
        finally:
            self._a.poll(0)

    # -- topics ----------------------------------------------------------------------

    def create_topic(self, topic: NewTopic, exist_ok: bool = False) -> None:
        spec = KNewTopic(
            topic.name,
            num_partitions=topic.partitions,
            replication_factor=topic.replication_factor,
            config={k: str(v) for k, v in topic.configs.items()},
        )
        futures = self._a.create_topics(
            [spec], operation_timeout=self._timeout, request_timeout=self._timeout
        )
        try:
            self._wait(futures[topic.name], f"creating topic {topic.name}")
        except LogError as exc:
            if exist_ok and getattr(exc, "kafka_code", None) == KafkaError.TOPIC_ALREADY_EXISTS:
                return
            raise
        self._wait_until_visible(topic.name)

    def _wait_until_visible(self, name: str) -> None:
        # The controller has the topic; the broker's metadata cache may lag a
        # moment. Clients that start right after creation should find it.
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            md = self._metadata()
            tm = md.topics.get(name)
            # A partition without a leader yet answers NOT_LEADER_FOR_PARTITION to the first ListOffsets.
            if (tm is not None and tm.error is None and tm.partitions
                    and all(pm.leader >= 0 for pm in tm.partitions.values())):
                return
            time.sleep(0.05)

    def list_topics(self, include_internal: bool = False) -> list[str]:
        names = self._metadata().topics.keys()
        return sorted(n for n in names if include_internal or n not in KAFKA_INTERNAL_TOPICS)

    def topic_configs(self, name: str) -> dict[str, str]:
        """The topic's effective configuration, defaults included (sensitive values left out)."""
        futures = self._a.describe_configs(
            [ConfigResource(ResourceType.TOPIC, name)], request_timeout=self._timeout
        )
        (future,) = futures.values()
        entries = self._wait(future, f"describing configs of topic {name}")
        return {k: e.value for k, e in entries.items() if e.value is not None}

    def describe_topic(self, name: str) -> TopicDescription:
        tm = self._metadata().topics.get(name)
        if tm is None:
            raise UnknownTopicError(f"topic {name} does not exist")
        if tm.error is not None:
            raise to_log_error(tm.error, f"describing topic {name}")
        partitions = sorted(tm.partitions)
        configs = self.topic_configs(name)
        offsets: dict[int, tuple[int, int]] = {}
        if partitions:
            low = self._list_offsets(name, partitions, OffsetSpec.earliest())
            high = self._list_offsets(name, partitions, OffsetSpec.latest())
            offsets = {p: (low[p], high[p]) for p in partitions}
        return TopicDescription(name, len(partitions), configs, offsets)

    def _idempotent(self, call: Callable[[], T]) -> T:
        """``call`` again on a retriable error until the timeout: a partition whose leader was just
        elected answers NOT_LEADER_FOR_PARTITION or UNKNOWN_LEADER_EPOCH for a moment."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                return call()
            except RetriableLogError as exc:
                if getattr(exc, "kafka_code", None) not in _LEADER_MOVING or time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    def _list_offsets(self, topic: str, partitions: list[int], spec: Any) -> dict[int, int]:
        def ask() -> dict[int, int]:
            request = {KTP(topic, p): spec for p in partitions}
            futures = self._a.list_offsets(request, request_timeout=self._timeout)
            return {k.partition: int(self._wait(f, f"offsets of {topic}").offset) for k, f in futures.items()}

        return self._idempotent(ask)

    def partition_offsets(self, names: Sequence[str], read_committed: bool = False
                          ) -> dict[TopicPartition, tuple[int, int]]:
        """(log start offset, log end offset) of every partition of the topics ``names`` that exist, asked for
        in one metadata and two ListOffsets requests whatever the number of partitions. ``read_committed``:
        the end is the last stable offset (where the first still-open transaction begins)."""
        isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        topics = self._metadata().topics
        parts = [KTP(t, p) for t in dict.fromkeys(names)
                 if (tm := topics.get(t)) is not None and tm.error is None for p in sorted(tm.partitions)]
        if not parts:
            return {}
        bounds: list[dict[TopicPartition, int]] = []
        for spec in (OffsetSpec.earliest(), OffsetSpec.latest()):
            def ask(spec: Any = spec) -> dict[TopicPartition, int]:
                futures = self._a.list_offsets({k: spec for k in parts}, isolation_level=isolation,
                                               request_timeout=self._timeout)
                return {TopicPartition(k.topic, k.partition): int(self._wait(f, f"offsets of {k.topic}").offset)
                        for k, f in futures.items()}

            bounds.append(self._idempotent(ask))
        low, high = bounds
        return {tp: (low[tp], high[tp]) for tp in low}

    def delete_topic(self, name: str) -> None:
        futures = self._a.delete_topics(
            [name], operation_timeout=self._timeout, request_timeout=self._timeout
        )
        self._wait(futures[name], f"deleting topic {name}")

    def ensure_compacted(self, name: str) -> None:
        """Raise a LogError naming the fix unless ``name`` has ``cleanup.policy=compact`` (and nothing else).

        Kafka Connect refuses internal topics that may delete records by age,
        because losing a config or offset record loses state; so do we.
        """
        policy = self.topic_configs(name).get("cleanup.policy", "delete")
        if {p.strip() for p in policy.split(",")} != {"compact"}:
            raise LogError(
                f"topic {name} has cleanup.policy={policy}, but internal topics must have "
                f"cleanup.policy=compact, or their records are deleted with age; fix it with "
                f"kafka-configs.sh --alter --entity-type topics --entity-name {name} "
                f"--add-config cleanup.policy=compact"
            )

    # -- consumer groups -----------------------------------------------------------

    def list_group_offsets(self, group: str) -> dict[TopicPartition, int]:
        futures = self._a.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=self._timeout
        )
        try:
            result = self._wait(futures[group], f"listing offsets of group {group}")
        except LogError as exc:
            if getattr(exc, "kafka_code", None) == KafkaError.GROUP_ID_NOT_FOUND:
                return {}
            raise
        out: dict[TopicPartition, int] = {}
        for k in result.topic_partitions or ():
            if k.error is not None:
                raise to_log_error(k.error, f"offset of {k.topic}[{k.partition}] in group {group}")
            if k.offset >= 0:
                out[TopicPartition(k.topic, k.partition)] = int(k.offset)
        return out

    def alter_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int | None]) -> None:
        to_set = {tp: off for tp, off in offsets.items() if off is not None}
        to_delete = {tp for tp, off in offsets.items() if off is None}
        if to_delete:
            # confluent-kafka has no call for deleting single partitions'
            # offsets. The group must be empty anyway, so deleting the group
            # and committing back what should stay has the same outcome.
            current = self.list_group_offsets(group)
            if to_delete & current.keys():
                keep = {tp: off for tp, off in current.items() if tp not in to_delete and tp not in to_set}
                self.delete_group(group)
                to_set = {**keep, **to_set}
        if not to_set:
            return
        request = ConsumerGroupTopicPartitions(
            group, [KTP(tp.topic, tp.partition, off) for tp, off in to_set.items()]
        )
        futures = self._a.alter_consumer_group_offsets([request], request_timeout=self._timeout)
        try:
            result = self._wait(futures[group], f"altering offsets of group {group}")
        except LogError as exc:
            raise self._busy_group(group, exc) from None
        for k in result.topic_partitions or ():
            if k.error is not None:
                raise self._busy_group(
                    group, to_log_error(k.error, f"altering {k.topic}[{k.partition}] of group {group}")
                )

    @staticmethod
    def _busy_group(group: str, exc: LogError) -> LogError:
        if getattr(exc, "kafka_code", None) in (KafkaError.UNKNOWN_MEMBER_ID, KafkaError.NON_EMPTY_GROUP):
            return LogError(
                f"consumer group {group} has active members; its offsets can only change once it is empty ({exc})"
            )
        return exc

    def delete_group(self, group: str) -> None:
        futures = self._a.delete_consumer_groups([group], request_timeout=self._timeout)
        try:
            self._wait(futures[group], f"deleting consumer group {group}")
        except LogError as exc:
            code = getattr(exc, "kafka_code", None)
            if code == KafkaError.GROUP_ID_NOT_FOUND:
                return
            raise self._busy_group(group, exc) from None

    # -- cluster -----------------------------------------------------------------------

    def cluster_id(self) -> str:
        if self._cluster_id is None:
            cid = self._metadata().cluster_id
            if not cid:
                raise LogError(f"Kafka at {self._bootstrap} reported no cluster id")
            self._cluster_id = str(cid)
        return self._cluster_id

    def fence_producers(self, transactional_ids: Sequence[str]) -> None:
        from connect.log.kafka.transactions import fence_transactional_ids

        fence_transactional_ids(self._config, transactional_ids, self._timeout * 2)

    def close(self) -> None:
        # AdminClient has no close(); serve what is queued and let it go.
        self._a.poll(0)
