"""Transactions on the embedded log: visibility at commit, aborts, the last stable offset, fencing, recovery
after a producer process is killed with -9, and compaction that leaves transactions whole."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogError, NewTopic, ProducerFencedError
from connect.log.embedded.backend import EmbeddedBackend
from connect.log.embedded.txn_filter import TransactionFilter


@pytest.fixture
def backend(tmp_path: Path):
    b = EmbeddedBackend(str(tmp_path / "data"), owner=True)
    admin = b.admin()
    for topic in ("a", "b"):
        admin.create_topic(NewTopic(topic, 1, 1))
    yield b
    b.close()


def _read(backend: EmbeddedBackend, topic: str, isolation: str = "read_committed",
          group: str | None = None) -> list[bytes | None]:
    consumer = backend.consumer(group, {"isolation.level": isolation, "auto.offset.reset": "earliest",
                                        "enable.auto.commit": "false"})
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        out: list[bytes | None] = []
        while batches := consumer.poll(0.05, 1000):
            for b in batches:
                out.extend(b.values)
        return out
    finally:
        consumer.close()


def _producer(backend: EmbeddedBackend, tid: str = "t-1"):
    p = backend.producer({"transactional.id": tid, "linger.ms": 0})
    p.init_transactions()
    return p


def test_a_commit_makes_two_topics_visible_together_and_nothing_is_visible_before(backend):
    p = _producer(backend)
    p.begin_transaction()
    p.send_batch("a", 0, [b"a1", b"a2"])
    p.send("b", b"b1", partition=0)
    p.flush()
    assert _read(backend, "a") == [] and _read(backend, "b") == []
    assert _read(backend, "a", "read_uncommitted") == [b"a1", b"a2"]
    p.commit_transaction()
    assert _read(backend, "a") == [b"a1", b"a2"] and _read(backend, "b") == [b"b1"]
    assert _read(backend, "a", "read_uncommitted") == [b"a1", b"a2"], "markers are never handed out"


@pytest.mark.parametrize("linger_ms", [0, 50])
def test_a_record_refused_for_its_size_fails_the_commit(backend, linger_ms):
    # refused before any append is tried, with no delivery callback to report it: the commit must not pass
    p = backend.producer({"transactional.id": "t-big", "linger.ms": linger_ms})
    p.init_transactions()
    p.begin_transaction()
    p.send("a", b"small", partition=0)
    p.send("a", b"x" * (2 << 20), partition=0)
    with pytest.raises(LogError, match="exceeds"):
        p.commit_transaction()
    p.abort_transaction()
    assert _read(backend, "a") == []
    p.close()


def test_a_batch_refused_for_its_size_fails_the_commit_even_when_its_caller_went_on(backend):
    # Kafka's producer fails the commit of a transaction any of whose sends failed, whatever the caller did
    p = _producer(backend, "t-big-batch")
    p.begin_transaction()
    p.send_batch("a", 0, [b"small"])
    with pytest.raises(LogError, match="exceeds"):
        p.send_batch("a", 0, [b"x" * (2 << 20)])
    with pytest.raises(LogError, match="a write of the transaction failed"):
        p.commit_transaction()
    p.abort_transaction()
    assert _read(backend, "a") == []
    p.close()


def test_aborted_records_are_skipped_and_later_ones_read(backend):
    p = _producer(backend)
    p.begin_transaction()
    p.send_batch("a", 0, [b"gone"])
    p.abort_transaction()
    plain = backend.producer({"linger.ms": 0})
    plain.send_batch("a", 0, [b"plain"])
    plain.flush()
    p.begin_transaction()
    p.send_batch("a", 0, [b"kept"])
    p.commit_transaction()
    assert _read(backend, "a") == [b"plain", b"kept"]
    assert _read(backend, "a", "read_uncommitted") == [b"gone", b"plain", b"kept"]


def test_read_committed_stops_at_an_open_transaction_and_its_position_does_not_pass_it(backend):
    plain = backend.producer({"linger.ms": 0})
    p = _producer(backend)
    plain.send_batch("a", 0, [b"before"])
    plain.flush()
    p.begin_transaction()
    p.send_batch("a", 0, [b"open"])
    plain.send_batch("a", 0, [b"after"])
    plain.flush()
    consumer = backend.consumer("g", {"isolation.level": "read_committed", "auto.offset.reset": "earliest",
                                      "enable.auto.commit": "false"})
    tp = TopicPartition("a", 0)
    consumer.assign([tp])
    got = [v for b in consumer.poll(0.1, 100) for v in b.values]
    assert got == [b"before"]
    assert not consumer.poll(0.05, 100)
    assert consumer.position(tp) == 1, "the position stays at the open transaction"
    p.commit_transaction()
    got = [v for b in consumer.poll(0.5, 100) for v in b.values]
    assert got == [b"open", b"after"]
    consumer.commit({tp: consumer.position(tp)})
    consumer.close()


def test_a_newer_producer_fences_the_older_and_aborts_its_transaction(backend):
    old = _producer(backend, "same")
    old.begin_transaction()
    old.send_batch("a", 0, [b"zombie"])
    new = _producer(backend, "same")
    with pytest.raises(ProducerFencedError, match="same"):
        old.commit_transaction()
    with pytest.raises(ProducerFencedError):
        old.begin_transaction()
        old.send_batch("b", 0, [b"more"])
    new.begin_transaction()
    new.send_batch("a", 0, [b"live"])
    new.commit_transaction()
    assert _read(backend, "a") == [b"live"]


def test_admin_fence_producers_fences(backend):
    p = _producer(backend, "f")
    p.begin_transaction()
    p.send_batch("a", 0, [b"x"])
    backend.admin().fence_producers(["f", "never-used"])
    with pytest.raises(ProducerFencedError):
        p.commit_transaction()
    assert _read(backend, "a") == []


def test_sends_outside_a_transaction_are_refused(backend):
    p = _producer(backend)
    with pytest.raises(LogError, match="only inside a transaction"):
        p.send_batch("a", 0, [b"x"])


_CHILD = textwrap.dedent("""
    import os, signal, sys
    from connect.log.embedded.backend import EmbeddedBackend
    b = EmbeddedBackend(sys.argv[1], owner=True)
    p = b.producer({"transactional.id": "child", "linger.ms": 0})
    p.init_transactions()
    p.begin_transaction(); p.send_batch("a", 0, [b"committed"]); p.commit_transaction()
    p.begin_transaction(); p.send_batch("a", 0, [b"open-%d" % i for i in range(50)]); p.send_batch("b", 0, [b"o"])
    if sys.argv[2] == "prepared":
        # the commit point is recorded, then the process dies before any marker is written
        from connect.log.embedded.transactions import PREPARE_COMMIT
        with p._coordinator.locked("child") as state:
            state.state = PREPARE_COMMIT
            p._coordinator.save(state)
    print("ready", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.parametrize("stage", ["open", "prepared"])
def test_a_producer_killed_mid_transaction_is_finished_when_the_next_owner_opens_the_log(tmp_path, stage):
    data = tmp_path / "data"
    setup = EmbeddedBackend(str(data), owner=True)
    for topic in ("a", "b"):
        setup.admin().create_topic(NewTopic(topic, 1, 1))
    setup.close()
    done = subprocess.run([sys.executable, "-c", _CHILD, str(data), stage], capture_output=True, timeout=60)
    assert done.returncode == -9 and b"ready" in done.stdout, done.stderr.decode()[-2000:]
    backend = EmbeddedBackend(str(data), owner=True)
    try:
        opened = [b"open-%d" % i for i in range(50)]
        if stage == "open":
            assert _read(backend, "a") == [b"committed"], "the dead producer's open transaction is aborted"
            assert _read(backend, "b") == []
        else:
            assert _read(backend, "a") == [b"committed", *opened], "a recorded commit is completed"
            assert _read(backend, "b") == [b"o"]
        # and read_committed readers are not held up behind it: a new transaction shows at once
        p = _producer(backend, "another")
        p.begin_transaction()
        p.send_batch("a", 0, [b"next"])
        p.commit_transaction()
        assert _read(backend, "a")[-1] == b"next"
    finally:
        backend.close()


def test_compaction_keeps_transactions_whole(tmp_path):
    backend = EmbeddedBackend(str(tmp_path / "data"), owner=True)
    try:
        backend.admin().create_topic(NewTopic("c", 1, 1, {"cleanup.policy": "compact", "segment.bytes": "200"}))
        p = _producer(backend)
        plain = backend.producer({"linger.ms": 0})
        for i in range(20):
            plain.send("c", b"plain-%d" % i, b"k", partition=0)
            plain.flush()
        p.begin_transaction()
        p.send("c", b"aborted", b"k", partition=0)
        p.abort_transaction()
        for i in range(20):
            plain.send("c", b"filler-%d" % i, b"other", partition=0)
            plain.flush()
        backend.run_cleaner_once()
        values = _read(backend, "c")
        assert b"plain-19" in values and b"aborted" not in values, values
        assert values.count(b"plain-19") == 1
    finally:
        backend.close()


def test_the_filter_releases_in_offset_order_and_drops_a_fenced_epochs_data():
    from connect.log.embedded.codec import TXN_COMMIT, TXN_DATA, TXN_NONE, decode, encode, parse_header

    def batch(offset: int, value: bytes | None, txn: tuple[int, int, int] | None):
        e = encode([value], None, transaction=txn)
        raw = b"".join([e.frame(offset), *e.parts])
        return decode(raw, 0, parse_header(raw))

    f = TransactionFilter(committed_only=True)
    out = f.feed([batch(0, b"p0", None), batch(1, b"t1", (5, 0, TXN_DATA)), batch(2, b"p2", None)])
    assert [b.values[0] for b in out] == [b"p0"] and f.resolved == 1
    out = f.feed([batch(3, b"z", (6, 0, TXN_DATA)), batch(4, None, (5, 0, TXN_COMMIT))])
    assert [b.values[0] for b in out] == [b"t1", b"p2"] and f.resolved == 3, "held behind producer 6's data"
    out = f.feed([batch(5, b"new", (6, 1, TXN_DATA)), batch(6, None, (6, 1, TXN_COMMIT))])
    assert [b.values[0] for b in out] == [b"new"], "epoch 0 of producer 6 was fenced: its data is dropped"
    assert f.resolved == 7
    assert TXN_NONE == 0
