"""The Kafka backend of the topic layer against a real single-node broker (and kcat)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import KafkaException, Producer

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_backend
from connect.log.api import (
    FetchedBatch,
    LogError,
    NewTopic,
    RebalanceListener,
    RecordMetadata,
    TopicExistsError,
    UnknownTopicError,
)
from connect.log.kafka.admin import KafkaAdmin
from connect.log.kafka.backend import KafkaBackend
from connect.log.kafka.config import _CONSUMER, _GLOBAL, _PRODUCER, client_config, librdkafka_scope
from connect.log.kafka.consumer import librdkafka_pattern
from services.kafka import KafkaService
from tests.support import drain, wait_until

pytestmark = pytest.mark.timeout(120)

# Faster group rebalances than librdkafka's 3 s heartbeat; nothing else differs.
FAST_GROUP = {"heartbeat.interval.ms": "500", "session.timeout.ms": "6000", "auto.offset.reset": "earliest"}


# -- no broker needed ------------------------------------------------------------------


@pytest.mark.beside_services  # no broker: nothing of the session's services
def test_config_precedence_and_translation() -> None:
    worker = {
        "bootstrap.servers": "h:1",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "group.id": "connect-cluster",  # the worker's own group, not the tasks'
        "session.timeout.ms": "10000",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p\\"w";',
        "producer.linger.ms": "10",
        "producer.key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
        "producer.buffer.memory": "33554432",
        "producer.max.block.ms": "1000",
        "consumer.max.poll.records": "100",
        "consumer.fetch.max.wait.ms": "200",
        "consumer.partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor",
        "admin.request.timeout.ms": "5000",
    }
    prod, prod_own = client_config(worker, "producer", {"linger.ms": 20, "acks": "all"})
    assert prod["bootstrap.servers"] == "h:1"
    assert prod["linger.ms"] == "20"  # per-call wins over producer.* which wins over defaults
    assert prod["acks"] == "all" and prod["enable.idempotence"] == "true"
    assert prod["queue.buffering.max.kbytes"] == "32768"
    assert prod["sasl.username"] == "u" and prod["sasl.password"] == 'p\\"w'
    assert "key.serializer" not in prod and "group.id" not in prod and "session.timeout.ms" not in prod
    assert "key.converter" not in prod
    assert prod_own["max.block.ms"] == "1000"

    cons, _ = client_config(worker, "consumer", {"auto.offset.reset": "earliest"})
    assert cons["fetch.wait.max.ms"] == "200"
    assert cons["partition.assignment.strategy"] == "range"
    assert cons["enable.auto.commit"] == "false" and cons["auto.offset.reset"] == "earliest"
    assert "group.id" not in cons and "max.poll.records" not in cons and "linger.ms" not in cons

    strict_reset, _ = client_config(worker, "consumer", {"auto.offset.reset": "none"})
    assert strict_reset["auto.offset.reset"] == "error"

    adm, adm_own = client_config(worker, "admin")
    assert adm_own["request.timeout.ms"] == "5000"
    assert "linger.ms" not in adm and "request.timeout.ms" not in adm

    # Weaker acks without a word about idempotence: idempotence steps aside.
    weak, _ = client_config(worker, "producer", {"acks": "1"})
    assert weak["enable.idempotence"] == "false"
    strict, _ = client_config(worker, "producer", {"acks": "1", "enable.idempotence": True})
    assert strict["enable.idempotence"] == "true"


@pytest.mark.beside_services  # no broker: nothing of the session's services
def test_every_mapped_name_is_known_to_librdkafka() -> None:
    for name in (_GLOBAL + _CONSUMER + _PRODUCER).split():
        assert librdkafka_scope(name) is not None
        try:
            Producer({name: "1", "logger": _Silent(), "bootstrap.servers": "127.0.0.1:1"})
        except KafkaException as exc:
            assert "No such configuration property" not in str(exc), name
        except Exception:  # a bad value is fine; only the name matters
            pass


class _Silent:
    def log(self, *args: object, **kwargs: object) -> None:
        pass


@pytest.mark.beside_services  # no broker: nothing of the session's services
def test_invalid_client_setting_is_a_log_error() -> None:
    backend = KafkaBackend({"bootstrap.servers": "127.0.0.1:1"})
    with pytest.raises(LogError, match="invalid producer"):
        backend.producer({"acks": "sometimes"})
    with pytest.raises(LogError, match="bootstrap.servers"):
        KafkaBackend({"bootstrap.servers": ""})


@pytest.mark.beside_services  # no broker: nothing of the session's services
def test_pattern_is_anchored_like_java() -> None:
    assert librdkafka_pattern("orders-.*") == "^(orders-.*)$"
    assert librdkafka_pattern("^orders$") == "^(orders)$"


@pytest.mark.beside_services  # no broker: nothing of the session's services
def test_unreachable_bootstrap_fails_within_timeout() -> None:
    backend = open_log_backend({"bootstrap.servers": "127.0.0.1:1", "request.timeout.ms": "2000"})
    assert isinstance(backend, KafkaBackend)
    admin = backend.admin()
    started = time.monotonic()
    with pytest.raises(LogError, match="cannot reach Kafka at bootstrap.servers=127.0.0.1:1"):
        admin.cluster_id()
    assert time.monotonic() - started < 6
    started = time.monotonic()
    with pytest.raises(LogError):
        admin.create_topic(NewTopic("nowhere"))
    assert time.monotonic() - started < 10
    admin.close()


# -- against the broker -------------------------------------------------------------------


@pytest.fixture
def backend(kafka: KafkaService) -> Iterator[KafkaBackend]:
    b = KafkaBackend(
        {"bootstrap.servers": kafka.bootstrap_servers, "key.converter": "x", "group.id": "workers"}
    )
    yield b
    b.close()


@pytest.fixture
def admin(backend: KafkaBackend) -> Iterator[KafkaAdmin]:
    a = backend.admin()
    yield a
    a.close()


@pytest.mark.kafka
def test_round_trip_keeps_keys_values_headers_timestamps(
    backend: KafkaBackend, admin: KafkaAdmin, unique_topic: Callable[..., str]
) -> None:
    topic = unique_topic()
    admin.create_topic(NewTopic(topic, partitions=1))
    producer = backend.producer()
    acks: list[tuple[LogError | None, RecordMetadata | None]] = []

    def on_delivery(err: LogError | None, meta: RecordMetadata | None) -> None:
        acks.append((err, meta))

    producer.send(topic, b"v0", b"k0", 0, 1_600_000_000_000, (("h1", b"x"), ("h2", None)), on_delivery)
    producer.send(topic, None, b"tombstone-key", 0, on_delivery=on_delivery)
    producer.send(topic, b"no-key", None, 0)
    producer.send(topic, None, None, 0)
    assert producer.flush(10) == 0
    producer.close()
    assert [e for e, _ in acks] == [None, None]
    assert [m.offset for _, m in acks if m] == [0, 1]
    assert acks[0][1] == RecordMetadata(topic, 0, 0, 1_600_000_000_000)

    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0)])
    records = [r for b in drain(consumer, 4) for r in b.records()]
    consumer.close()
    assert [(r.offset, r.key, r.value) for r in records] == [
        (0, b"k0", b"v0"),
        (1, b"tombstone-key", None),
        (2, None, b"no-key"),
        (3, None, None),
    ]
    assert records[0].timestamp == 1_600_000_000_000
    assert records[0].headers == (("h1", b"x"), ("h2", None))
    assert records[1].headers == ()
    assert abs(records[1].timestamp - time.time() * 1000) < 120_000
    assert all(r.timestamp_type == 0 for r in records)


@pytest.mark.kafka
def test_send_batch_comes_back_as_columns(
    backend: KafkaBackend, admin: KafkaAdmin, unique_topic: Callable[..., str]
) -> None:
    topic = unique_topic()
    admin.create_topic(NewTopic(topic, partitions=2))
    producer = backend.producer()
    n = 2000
    values = [f"v{i}".encode() for i in range(n)]
    keys = [f"k{i}".encode() if i % 3 else None for i in range(n)]
    producer.send_batch(topic, 0, values, keys)
    producer.send_batch(
        topic,
        1,
        values[:10],
        None,
        [1000 + i for i in range(10)],
        [(("i", str(i).encode()),) for i in range(10)],
    )
    assert producer.flush(20) == 0
    producer.close()

    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    batches = drain(consumer, n + 10)
    consumer.close()
    by_part: dict[int, list[FetchedBatch]] = {}
    for b in batches:
        assert b.topic == topic
        assert list(b.offsets) == list(range(b.offsets[0], b.offsets[0] + len(b)))
        assert len(b.keys) == len(b.values) == len(b.timestamps) == len(b)
        by_part.setdefault(b.partition, []).append(b)
    p0 = by_part[0]
    assert [v for b in p0 for v in b.values] == values
    assert [k for b in p0 for k in b.keys] == keys
    assert all(b.headers is None for b in p0)
    p1 = by_part[1]
    assert [t for b in p1 for t in b.timestamps] == [1000 + i for i in range(10)]
    assert [h for b in p1 for h in (b.headers or ())] == [(("i", str(i).encode()),) for i in range(10)]
    assert p1[-1].next_offset == 10


@pytest.mark.kafka
def test_send_batch_reports_the_whole_batch_once_to_its_callback(
    backend: KafkaBackend, admin: KafkaAdmin, unique_topic: Callable[..., str]
) -> None:
    topic = unique_topic()
    admin.create_topic(NewTopic(topic, partitions=1))
    producer = backend.producer()
    reports: list[object] = []
    producer.send_batch(topic, None, [b"a", b"b", b"c"], on_delivery=reports.append)
    assert producer.flush(20) == 0
    assert reports == [None]
    producer.close()
    quiet = backend.producer({"delivery.report.only.error": "true"})
    with pytest.raises(LogError, match="delivery.report.only.error"):
        quiet.send_batch(topic, None, [b"x"], on_delivery=reports.append)
    quiet.close()


@pytest.mark.kafka
def test_seek_position_pause_resume_end_offsets(
    backend: KafkaBackend, admin: KafkaAdmin, unique_topic: Callable[..., str]
) -> None:
    topic = unique_topic()
    admin.create_topic(NewTopic(topic, partitions=1))
    tp = TopicPartition(topic, 0)
    producer = backend.producer()
    producer.send_batch(topic, 0, [str(i).encode() for i in range(50)])
    producer.flush(10)
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([tp])
    assert consumer.assignment() == {tp}
    assert consumer.position(tp) == 0
    assert consumer.end_offsets([tp]) == {tp: 50}
    # Before anything was fetched librdkafka refuses a plain seek.
    consumer.seek(tp, 40)
    assert consumer.position(tp) == 40
    got = drain(consumer, 10)
    assert got[0].offsets[0] == 40 and consumer.position(tp) == 50
    consumer.seek_to_beginning([tp])
    assert consumer.position(tp) == 0
    consumer.pause([tp])
    assert consumer.poll(1.0) == []
    consumer.resume([tp])
    assert drain(consumer, 50)[0].offsets[0] == 0
    assert consumer.committed([tp]) == {tp: None}
    with pytest.raises(LogError, match="group"):
        consumer.commit({tp: 1})
    with pytest.raises(LogError, match="not assigned"):
        consumer.seek(TopicPartition(topic, 7), 0)
    consumer.close()
    producer.close()


@pytest.mark.kafka
def test_no_offset_with_reset_none_is_an_error(
    backend: KafkaBackend, admin: KafkaAdmin, unique_topic: Callable[..., str]
) -> None:
    topic = unique_topic()
    admin.create_topic(NewTopic(topic, partitions=1))
    consumer = backend.consumer(unique_topic("group"), {"auto.offset.reset": "none"})
    consumer.assign([TopicPartition(topic, 0)])
    with pytest.raises(LogError, match="auto.offset.reset is none"):
        consumer.position(TopicPartition(topic, 0))
    with pytest.raises(LogError) as info:
        wait_until(lambda: consumer.poll(0.2) and False, 20, interval=0, what="poll to raise")
    assert not info.value.retriable
    consumer.close()


class Recorder(RebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[TopicPartition]]] = []
        self.lock = threading.Lock()

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        with self.lock:
            self.events.append(("assigned", frozenset(partitions)))

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        with self.lock:
            self.events.append(("revoked", frozenset(partitions)))

    def of(self, kind: str) -> set[TopicPartition]:
        return {tp for k, tps in self.events if k == kind for tp in tps}


@pytest.mark.kafka
def test_group_commit_is_visible_to_admin_and_kafka_tools(
    kafka: KafkaService, backend: KafkaBackend, admin: KafkaAdmin, unique_topic: Callable[..., str]
) -> None:
    topic, group = unique_topic(), unique_topic("group")
    admin.create_topic(NewTopic(topic, partitions=2))
    producer = backend.producer()
    producer.send_batch(topic, 0, [b"a"] * 7)
    producer.send_batch(topic, 1, [b"b"] * 3)
    producer.flush(10)
    producer.close()

    consumer = backend.consumer(group, FAST_GROUP)
    listener = Recorder()
    consumer.subscribe([topic], listener=listener)
    drain(consumer, 10)
    assert listener.of("assigned") == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
    consumer.commit({TopicPartition(topic, 0): 5, TopicPartition(topic, 1): 3})
    assert consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)]) == {
        TopicPartition(topic, 0): 5,
        TopicPartition(topic, 1): 3,
    }
    consumer.close()
    # Closing revokes what the member held, as the Java consumer does.
    assert listener.of("revoked") == {TopicPartition(topic, 0), TopicPartition(topic, 1)}

    assert admin.list_group_offsets(group) == {TopicPartition(topic, 0): 5, TopicPartition(topic, 1): 3}
    described = kafka.consumer_groups("--describe", "--group", group)
    assert described.returncode == 0, described.stderr
    rows = {}
    for line in described.stdout.splitlines():
        cols = line.split()
        if len(cols) >= 6 and cols[0] == group and cols[1] == topic:
            rows[int(cols[2])] = (int(cols[3]), int(cols[4]), int(cols[5]))
    assert rows == {0: (5, 7, 2), 1: (3, 3, 0)}

    # Reset one partition and move the other; the group is empty now.
    admin.alter_group_offsets(group, {TopicPartition(topic, 0): None, TopicPartition(topic, 1): 1})
    assert admin.list_group_offsets(group) == {TopicPartition(topic, 1): 1}
    admin.delete_group(group)
    admin.delete_group(group)  # already gone: fine
    assert admin.list_group_offsets(group) == {}


@pytest.mark.kafka
@pytest.mark.parametrize("strategy", [None, "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"])
def test_two_members_split_partitions_and_listeners_see_deltas(
    backend: KafkaBackend, admin: KafkaAdmin, unique_topic: Callable[..., str], strategy: str | None
) -> None:
    """The default is Java's: eager range, the first member gives up everything and gets its share back; a
    consumer that asks for the cooperative protocol gives up only what moves."""
    topic, group = unique_topic(), unique_topic("group")
    admin.create_topic(NewTopic(topic, partitions=4))
    all_parts = {TopicPartition(topic, p) for p in range(4)}
    first, second = Recorder(), Recorder()
    settings = {**FAST_GROUP, **({"partition.assignment.strategy": strategy} if strategy else {})}
    c1 = backend.consumer(group, settings)
    c1.subscribe([topic], listener=first)
    wait_until(lambda: bool(c1.poll(0.1) or True) and c1.assignment() == all_parts)
    assert first.events == [("assigned", frozenset(all_parts))]

    c2 = backend.consumer(group, settings)
    c2.subscribe(pattern=topic.replace("-", "[-]"), listener=second)

    def balanced() -> bool:
        c1.poll(0.05)
        c2.poll(0.05)
        return len(c1.assignment()) == 2 and len(c2.assignment()) == 2

    wait_until(balanced, timeout=45)
    assert c1.assignment() | c2.assignment() == all_parts
    assert not c1.assignment() & c2.assignment()
    if strategy:  # cooperative: the first member only gave up what moved, nothing more
        assert first.of("revoked") == c2.assignment()
    else:  # eager range (Java's default): partitions 0-1 to the member whose id sorts first
        assert first.of("revoked") == all_parts
        assert {tp.partition for tp in c1.assignment()} in ({0, 1}, {2, 3})
    assert second.of("assigned") == c2.assignment()
    assert not second.of("revoked")
    c2.close()
    c1.close()


@pytest.mark.kafka
def test_admin_topics(admin: KafkaAdmin, unique_topic: Callable[..., str]) -> None:
    topic = unique_topic()
    admin.create_topic(
        NewTopic(topic, partitions=3, replication_factor=1, configs={"retention.ms": "3600000"})
    )
    with pytest.raises(TopicExistsError):
        admin.create_topic(NewTopic(topic, partitions=3))
    admin.create_topic(NewTopic(topic, partitions=3), exist_ok=True)
    assert topic in admin.list_topics()
    assert "__consumer_offsets" not in admin.list_topics()
    desc = admin.describe_topic(topic)
    assert desc.name == topic and desc.partitions == 3
    assert desc.configs["retention.ms"] == "3600000"
    assert desc.configs["cleanup.policy"] == "delete"
    assert desc.offsets == {0: (0, 0), 1: (0, 0), 2: (0, 0)}
    with pytest.raises(LogError, match="cleanup.policy=compact"):
        admin.ensure_compacted(topic)

    compacted = unique_topic("compact")
    admin.create_topic(NewTopic(compacted, configs={"cleanup.policy": "compact"}))
    admin.ensure_compacted(compacted)
    assert len(admin.cluster_id()) >= 22

    admin.delete_topic(topic)
    wait_until(lambda: topic not in admin.list_topics())
    with pytest.raises(UnknownTopicError):
        admin.describe_topic(topic)
    with pytest.raises(UnknownTopicError):
        admin.delete_topic(topic)


@pytest.mark.kafka
def test_producer_rides_out_a_broker_crash(
    kafka: KafkaService, backend: KafkaBackend, admin: KafkaAdmin, unique_topic: Callable[..., str]
) -> None:
    topic = unique_topic()
    admin.create_topic(NewTopic(topic, partitions=1))
    producer = backend.producer()
    producer.send_batch(topic, 0, [b"before"])
    assert producer.flush(10) == 0
    kafka.kill()
    try:
        producer.send_batch(topic, 0, [b"during"] * 10)
        assert producer.flush(0.5) == 10  # nothing can be acknowledged now
    finally:
        kafka.start()
    assert producer.flush(30) == 0
    producer.close()
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0)])
    values = [v for b in drain(consumer, 11) for v in b.values]
    consumer.close()
    assert values == [b"before"] + [b"during"] * 10


# -- interoperability with an independent client ------------------------------------------------

@pytest.mark.kafka
def test_kcat_interop(
    kcat: str, kafka: KafkaService, backend: KafkaBackend, admin: KafkaAdmin, unique_topic: Callable[..., str]
) -> None:
    to_us, from_us = unique_topic("kcat-in"), unique_topic("kcat-out")
    admin.create_topic(NewTopic(to_us, partitions=1))
    admin.create_topic(NewTopic(from_us, partitions=1))

    # kcat -> backend
    subprocess.run(
        [kcat, "-b", kafka.bootstrap_servers, "-P", "-t", to_us, "-p", "0", "-K", ":", "-H", "source=kcat"],
        input=b"k1:hello\nk2:world\n",
        check=True,
        timeout=30,
    )
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(to_us, 0)])
    records = [r for b in drain(consumer, 2) for r in b.records()]
    consumer.close()
    assert [(r.key, r.value, r.headers) for r in records] == [
        (b"k1", b"hello", (("source", b"kcat"),)),
        (b"k2", b"world", (("source", b"kcat"),)),
    ]

    # backend -> kcat
    producer = backend.producer()
    producer.send(
        from_us, b"payload-1", b"key-1", headers=(("via", b"headrace"),), timestamp=1_700_000_000_000
    )
    producer.send(from_us, b"payload-2", None)
    assert producer.flush(10) == 0
    producer.close()
    out = subprocess.run(
        [kcat, "-b", kafka.bootstrap_servers, "-C", "-t", from_us, "-o", "beginning", "-e", "-J"],
        capture_output=True,
        check=True,
        timeout=30,
    )
    seen = [json.loads(line) for line in out.stdout.decode().splitlines() if line.startswith("{")]
    assert [(m["key"], m["payload"]) for m in seen] == [("key-1", "payload-1"), (None, "payload-2")]
    assert seen[0]["headers"] == ["via", "headrace"]
    assert seen[0]["ts"] == 1_700_000_000_000
