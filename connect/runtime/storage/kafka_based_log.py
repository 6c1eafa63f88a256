"""An internal topic read to its end, then followed: the base of the distributed config, status and offset stores.

Every worker keeps its view of the cluster by reading each internal topic from the beginning at start
and then tailing it on one thread; ``read_to_end`` waits until everything written before the call has
been applied (Kafka Connect's ``readToEnd``), which is how a worker reads its own writes and catches up
with the leader. Writes wait for the log's acknowledgement.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from connect.api.topic_partition import TopicPartition
from connect.log.api import ClientStats, Consumer, LogBackend, LogError, NewTopic, Producer

__all__ = ["KafkaBasedLog", "ensure_internal_topic"]

log = logging.getLogger(__name__)

RecordCallback = Callable[[bytes | None, bytes | None, int, int], None]


def ensure_internal_topic(backend: LogBackend, topic: str, config_key: str, partitions: int,
                          replication_factor: int) -> int:
    """Create ``topic`` compacted if it is missing; refuse one that is not compacted. Its partition count."""
    admin = backend.admin()
    try:
        admin.create_topic(NewTopic(topic, partitions, replication_factor, {"cleanup.policy": "compact"}),
                           exist_ok=True)
        deadline = time.monotonic() + 30.0
        while True:
            try:
                described = admin.describe_topic(topic)
                break
            except LogError:  # a topic just created has no partition leaders for a moment
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)
    finally:
        admin.close()
    policy = described.configs.get("cleanup.policy", "compact")
    if "compact" not in policy:
        raise LogError(f"Topic '{topic}' supplied via the '{config_key}' property is required to have "
                       f"'cleanup.policy=compact' to guarantee consistency and durability of the data it "
                       f"holds, but found '{policy}'")
    return int(described.partitions)


class KafkaBasedLog:
    def __init__(self, backend: LogBackend, topic: str, on_record: RecordCallback,
                 producer_config: Mapping[str, Any] | None = None,
                 consumer_config: Mapping[str, Any] | None = None, follow: bool = True,
                 client_id: str | None = None) -> None:
        """``follow``: tail the topic on a thread of its own; else read only inside ``read_to_end``, on the
        caller's thread (a topic only read at known moments need not keep a thread polling it)."""
        self.backend = backend
        self._follow = follow
        self._inline = threading.Lock()
        self.topic = topic
        self._on_record = on_record
        named = {"client.id": client_id} if client_id else {}
        self._producer_config = {"acks": "all", **named, **(producer_config or {})}
        self._consumer_config = {**named, **(consumer_config or {})}
        self._consumer: Consumer | None = None
        self._ends: Consumer | None = None  # a second consumer only asks for end offsets
        self._producer: Producer | None = None
        self._partitions: list[TopicPartition] = []
        self._applied: dict[TopicPartition, int] = {}
        self._wanted: dict[TopicPartition, int] = {}  # the end offsets read_to_end calls wait for
        self._progress = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._privileged = False  # writes go only through a transactional producer (use_transactional_producer)
        self._privileges_lost: str | None = None  # why the last one was given up

    def client_stats(self) -> tuple[ClientStats, ...]:
        """Traffic of the producer and the consumer that tail the topic (for /metrics)."""
        clients = (self._producer, self._consumer)
        return tuple(s for s in (c.stats() if c is not None else None for c in clients) if s is not None)

    @property
    def partitions(self) -> int:
        return len(self._partitions)

    def start(self, partitions: int, timeout: float = 60.0) -> None:
        self._partitions = [TopicPartition(self.topic, p) for p in range(partitions)]
        config = {"auto.offset.reset": "earliest", "enable.auto.commit": "false"}
        self._consumer = self.backend.consumer(None, {**config, **self._consumer_config})
        # the high watermark, whatever the reader's isolation: a read_committed end offset (the LSO) may still
        # lie before a transaction that has just committed (its markers are written after the commit returns)
        self._ends = self.backend.consumer(None, config)
        self._consumer.assign(self._partitions)
        self._consumer.seek_to_beginning(self._partitions)
        self._applied = {tp: 0 for tp in self._partitions}
        self._producer = self.backend.producer(self._producer_config)
        if self._follow:
            self._thread = threading.Thread(target=self._run, name=f"{self.topic}-reader", daemon=True)
            self._thread.start()
        if not self.read_to_end(timeout):
            raise LogError(f"Timed out after {timeout:.0f} s reading topic '{self.topic}' to its end")

    def stop(self) -> None:
        self._stop.set()
        if self._consumer is not None:
            self._consumer.wakeup()  # the follower's poll returns now rather than at its timeout
        if self._thread is not None:
            self._thread.join(10.0)
        for closeable in (self._consumer, self._ends):
            if closeable is not None:
                closeable.close()
        if self._producer is not None:
            self._producer.close(5.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._poll_once()
            except Exception as exc:  # keep following; a reader that dies would freeze the worker's view
                log.exception("Error reading topic '%s'; retrying", self.topic)
                self._failure = exc
                self._stop.wait(1.0)

    def _poll_once(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        producer = self._producer
        if producer is not None:
            # writes here take no callbacks, but librdkafka queues a delivery report for each (and the client's
            # statistics) until someone polls: served here rather than left to pile up until a flush
            producer.poll(0)  # a producer the writer closed meanwhile has nothing left to serve
        # wait for the first record only: asked for many, the client would wait out the whole timeout
        # (a config write would then take that long to be read back); then take what has arrived
        batches = consumer.poll(0.2, 1)
        if batches:
            batches += consumer.poll(0.0, 10000)
        positions: dict[TopicPartition, int] = {}
        for batch in batches:
            for key, value, offset in zip(batch.keys, batch.values, batch.offsets, strict=True):
                self._on_record(key, value, batch.partition, offset)
            positions[TopicPartition(self.topic, batch.partition)] = batch.next_offset
        # A partition may end in records a reader never sees (transaction markers, compacted-away offsets); its
        # position says how far it was read. Looked at for the partitions that had records too, so a read_to_end
        # waiting for a transaction's marker need not wait out the next empty poll.
        with self._progress:
            behind = [tp for tp, end in self._wanted.items() if self._applied[tp] < end]
        for tp in {*behind, *positions} if batches else behind:
            position = consumer.position(tp)
            if position is not None:
                positions[tp] = max(positions.get(tp, 0), position)
        with self._progress:
            for tp, position in positions.items():
                if position is not None and position >= 0:
                    self._applied[tp] = max(self._applied[tp], position)
            self._progress.notify_all()

    def read_to_end(self, timeout: float) -> bool:
        """Wait until every record written before this call has been applied; False on timeout."""
        assert self._ends is not None, "start() first"
        deadline = time.monotonic() + timeout
        while True:
            try:
                ends = self._ends.end_offsets(self._partitions)
                break
            except LogError as exc:  # a topic just created has no leader yet, a broker may be moving
                if time.monotonic() >= deadline:
                    log.warning("Could not read the end offsets of topic '%s': %s", self.topic, exc)
                    return False
                log.debug("End offsets of topic '%s' not available yet: %s", self.topic, exc)
                time.sleep(0.2)
        with self._progress:
            for tp, end in ends.items():
                self._wanted[tp] = max(self._wanted.get(tp, 0), end)
        if not self._follow:
            with self._inline:
                while any(self._applied[tp] < end for tp, end in ends.items()):
                    if time.monotonic() >= deadline:
                        return False
                    self._poll_once()
            return True
        with self._progress:
            while any(self._applied[tp] < end for tp, end in ends.items()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._progress.wait(min(left, 0.5))
        return True

    @property
    def transactional(self) -> bool:
        """Writes go through a transactional producer: true from ``use_transactional_producer`` on, also after
        a failed transaction gave the producer up (writes then fail until the next claim, never go untransacted)."""
        return self._privileged

    @property
    def privileges_lost(self) -> str | None:
        """Why the transactional producer was given up (its write failed), until it is claimed again; else None."""
        return self._privileges_lost

    def use_transactional_producer(self, transactional_id: str, timeout: float) -> None:
        """Write from now on through a producer with ``transactional_id``: initialising it fences every other
        producer of that id, so a writer that lost the right to write (a leader voted out) can write no more."""
        assert self._ends is not None, "start() first"
        producer = self.backend.producer({**self._producer_config, "transactional.id": transactional_id,
                                          "enable.idempotence": "true"})
        try:
            producer.init_transactions(timeout)
        except BaseException:
            producer.close(5.0)
            raise
        old, self._producer = self._producer, producer
        self._privileged, self._privileges_lost = True, None
        if old is not None:
            old.close(5.0)

    def send_in_transaction(self, records: list[tuple[bytes, bytes | None, int | None]], timeout: float) -> None:
        """Write ``records`` in one transaction of the transactional producer: all become visible, or none.

        A transaction that fails in any way (fenced, timed out, aborted) gives the producer up at once, as Kafka
        Connect's config store does (KIP-618): a commit that timed out would otherwise go on in the client and
        could still land after the caller was told the write failed, and the client would refuse every later
        transaction while it waits. Writes then fail until ``use_transactional_producer`` runs again, which the
        leader does only while it still leads.
        """
        producer = self._producer
        if not self._privileged or producer is None or not producer.transactional:
            raise LogError(f"No write privileges on topic '{self.topic}'" + (
                f": the last transactional write failed ({self._privileges_lost}); they are claimed again while "
                "this worker leads" if self._privileges_lost else ""))
        try:
            producer.begin_transaction()
            for key, value, partition in records:
                producer.send(self.topic, value, key, partition)
            producer.commit_transaction(timeout)
        except BaseException as exc:
            self._give_up_producer(producer, exc)
            raise

    def _give_up_producer(self, producer: Producer, cause: BaseException) -> None:
        self._producer = None  # the reader's poll and client_stats skip it from now on
        self._privileges_lost = str(cause) or type(cause).__name__
        log.warning("Topic '%s': a transactional write failed (%s); its producer is closed without waiting, so "
                    "nothing of that transaction is sent later, and writes wait for write privileges to be "
                    "claimed again", self.topic, self._privileges_lost)
        try:
            # no flush and no wait: what it still holds is dropped (a close with no time, as Kafka Connect's)
            producer.close(0.0)
        except Exception as exc:  # closing a broken client must not hide the write's own failure
            log.warning("Topic '%s': closing the failed transactional producer: %s", self.topic, exc)

    def send(self, key: bytes, value: bytes | None, partition: int | None = None) -> None:
        assert self._producer is not None, "start() first"
        self._producer.send(self.topic, value, key, partition)

    def flush(self, timeout: float) -> None:
        """Wait for every sent record's acknowledgement; LogError when one failed or did not come in time."""
        assert self._producer is not None, "start() first"
        left = self._producer.flush(timeout)
        if left:
            raise LogError(f"{left} write(s) to topic '{self.topic}' not acknowledged within {timeout:.0f} s")
