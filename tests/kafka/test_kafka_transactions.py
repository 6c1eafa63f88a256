"""Transactions of the Kafka backend against the real broker: visibility, fencing, a producer killed -9
mid-transaction, and kcat reading read_committed as an independent client."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogError, NewTopic, ProducerFencedError
from connect.log.kafka.admin import KafkaAdmin
from connect.log.kafka.backend import KafkaBackend
from services.kafka import KafkaService
from tests.support import wait_until

pytestmark = [pytest.mark.timeout(120), pytest.mark.kafka]


@pytest.fixture
def backend(kafka: KafkaService) -> Iterator[KafkaBackend]:
    b = KafkaBackend({"bootstrap.servers": kafka.bootstrap_servers})
    yield b
    b.close()


@pytest.fixture
def admin(backend: KafkaBackend) -> Iterator[KafkaAdmin]:
    a = backend.admin()
    yield a
    a.close()


def _values(backend: KafkaBackend, topic: str, isolation: str, settle: float = 1.5) -> list[bytes | None]:
    """Every value of partition 0 a consumer with ``isolation`` reads, once nothing more comes for ``settle`` s."""
    consumer = backend.consumer(None, {"isolation.level": isolation, "auto.offset.reset": "earliest",
                                       "enable.auto.commit": "false"})
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning([tp])
        out: list[bytes | None] = []
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < settle:
            batches = consumer.poll(0.2, 10_000)
            for b in batches:
                out.extend(b.values)
            if batches:
                quiet_since = time.monotonic()
        return out
    finally:
        consumer.close()


def _topics(admin: KafkaAdmin, unique_topic: Callable[..., str], n: int = 1) -> list[str]:
    names = [unique_topic("txn") for _ in range(n)]
    for name in names:
        admin.create_topic(NewTopic(name, 1, 1))
    return names


def test_a_commit_makes_records_in_two_topics_visible_together(backend, admin, unique_topic):
    a, b = _topics(admin, unique_topic, 2)
    producer = backend.producer({"transactional.id": unique_topic("tid")})
    assert producer.transactional
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.send_batch(a, 0, [b"a1", b"a2"])
    producer.send(b, b"b1", partition=0)
    assert _values(backend, a, "read_committed", settle=1.0) == []  # open: nothing visible
    producer.commit_transaction(30)
    assert _values(backend, a, "read_committed") == [b"a1", b"a2"]
    assert _values(backend, b, "read_committed") == [b"b1"]
    producer.close()


def test_an_aborted_transaction_is_invisible_to_read_committed_only(backend, admin, unique_topic):
    (topic,) = _topics(admin, unique_topic)
    producer = backend.producer({"transactional.id": unique_topic("tid")})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.send_batch(topic, 0, [b"gone-1", b"gone-2"])
    producer.flush(10)  # on the broker, not only queued (an abort drops what is still queued)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.send(topic, b"kept", partition=0)
    producer.commit_transaction(30)
    producer.close()
    assert _values(backend, topic, "read_committed") == [b"kept"]
    assert _values(backend, topic, "read_uncommitted") == [b"gone-1", b"gone-2", b"kept"]


def test_a_send_outside_a_transaction_is_refused(backend, admin, unique_topic):
    (topic,) = _topics(admin, unique_topic)
    producer = backend.producer({"transactional.id": unique_topic("tid")})
    producer.init_transactions(30)
    with pytest.raises(LogError, match="only inside a transaction"):
        producer.send(topic, b"x", partition=0)
    producer.close()


def test_a_newer_producer_of_the_id_fences_the_older_one(backend, admin, unique_topic):
    (topic,) = _topics(admin, unique_topic)
    tid = unique_topic("tid")
    old = backend.producer({"transactional.id": tid})
    old.init_transactions(30)
    old.begin_transaction()
    old.send(topic, b"zombie", partition=0)
    old.flush(10)
    new = backend.producer({"transactional.id": tid})
    new.init_transactions(30)  # aborts the old instance's open transaction
    with pytest.raises(ProducerFencedError, match=tid):
        old.commit_transaction(10)
    new.begin_transaction()
    new.send(topic, b"live", partition=0)
    new.commit_transaction(30)
    old.close(1)
    new.close()
    assert _values(backend, topic, "read_committed") == [b"live"]


def test_fence_producers_fences_without_a_producer_of_our_own(backend, admin, unique_topic):
    (topic,) = _topics(admin, unique_topic)
    tids = [unique_topic("tid") for _ in range(10)]
    producer = backend.producer({"transactional.id": tids[3]})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.send(topic, b"zombie", partition=0)
    producer.flush(10)
    started = time.monotonic()
    admin.fence_producers(tids)
    print(f"\nfenced 10 transactional ids in {time.monotonic() - started:.2f} s")
    with pytest.raises(ProducerFencedError):
        producer.commit_transaction(10)
    producer.close(1)
    assert _values(backend, topic, "read_committed") == []


def test_a_producer_killed_mid_transaction_leaves_nothing_visible(backend, admin, unique_topic, kafka, tmp_path):
    (topic,) = _topics(admin, unique_topic)
    tid = unique_topic("tid")
    script = textwrap.dedent(f"""
        import os, signal, sys
        from connect.log.kafka.backend import KafkaBackend
        p = KafkaBackend({{"bootstrap.servers": {kafka.bootstrap_servers!r}}}).producer({{"transactional.id": {tid!r}}})
        p.init_transactions(30)
        p.begin_transaction(); p.send({topic!r}, b"committed", partition=0); p.commit_transaction(30)
        p.begin_transaction(); p.send_batch({topic!r}, 0, [b"open-%d" % i for i in range(100)]); p.flush(30)
        print("sent", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, cwd=tmp_path)
    assert done.returncode == -9 and b"sent" in done.stdout, done.stderr.decode()[-2000:]
    assert len(_values(backend, topic, "read_uncommitted")) == 101  # the open transaction's records are there
    successor = backend.producer({"transactional.id": tid})
    successor.init_transactions(30)  # the broker aborts the dead producer's transaction first
    successor.close()
    assert _values(backend, topic, "read_committed") == [b"committed"]


def test_kcat_reading_read_committed_sees_exactly_the_committed_records(backend, admin, unique_topic, kafka, kcat):
    (topic,) = _topics(admin, unique_topic)
    producer = backend.producer({"transactional.id": unique_topic("tid")})
    producer.init_transactions(30)
    for i in range(6):
        producer.begin_transaction()
        producer.send_batch(topic, 0, [f"t{i}-{j}".encode() for j in range(3)])
        producer.flush(10)
        if i % 2:
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
    producer.close()

    def read(isolation: str) -> list[str]:
        out = subprocess.run([kcat, "-C", "-b", kafka.bootstrap_servers, "-t", topic, "-o", "beginning", "-e", "-q",
                              "-X", f"isolation.level={isolation}", "-f", "%s\\n"],
                             capture_output=True, timeout=30, check=True)
        return out.stdout.decode().split()

    committed = wait_until(lambda: read("read_committed") or None, 30, what="kcat to read the topic")
    assert committed == [f"t{i}-{j}" for i in (0, 2, 4) for j in range(3)]
    assert len(read("read_uncommitted")) == 18
