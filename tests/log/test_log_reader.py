"""LogReader, the topic layer's read-by-range interface, on both backends through the public API only."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_backend, open_log_reader
from connect.log.api import LogReader, NewTopic, UnknownTopicError
from tests.support import wait_until


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    if request.param == "kafka":
        return {"bootstrap.servers": request.getfixturevalue("kafka").bootstrap_servers}
    return {"embedded.log.dir": str(tmp_path / "data")}


@pytest.fixture
def topics(settings: dict[str, str]) -> Iterator[tuple[str, str]]:
    """Two topics: ``main`` (2 partitions: 300 records in 0, 10 in 1) and ``other`` (1 partition, 5 records)."""
    suffix = uuid.uuid4().hex[:8]
    main, other = f"main-{suffix}", f"other-{suffix}"
    backend = open_log_backend(settings)
    try:
        admin = backend.admin()
        admin.create_topic(NewTopic(main, 2, 1))
        admin.create_topic(NewTopic(other, 1, 1))
        producer = backend.producer({"acks": "all"})
        for lo in range(0, 300, 100):
            producer.send_batch(main, 0, [f"v{i}".encode() for i in range(lo, lo + 100)],
                                keys=[f"k{i}".encode() for i in range(lo, lo + 100)],
                                headers=[(("n", str(i).encode()),) for i in range(lo, lo + 100)])
            assert producer.flush(30) == 0  # three batches in the log
        producer.send_batch(main, 1, [f"w{i}".encode() for i in range(10)])
        producer.send_batch(other, 0, [b"x"] * 5)
        assert producer.flush(30) == 0
        producer.close()
        admin.close()
    finally:
        backend.close()
    yield main, other


@pytest.fixture
def reader(settings: dict[str, str], topics: tuple[str, str]) -> Iterator[LogReader]:
    """A reader opened as a process without a worker opens one, once the log exists (a read-only open
    of the embedded log refuses a directory that holds no log)."""
    opened = open_log_reader(settings)
    yield opened
    opened.close()


def _read_all(reader: LogReader, topic: str, partition: int, start: int, end: int, max_bytes: int) -> list[Any]:
    records, offset = [], start
    while offset < end:
        got = reader.read(topic, partition, offset, end, max_bytes)
        for batch in got.batches:
            records.extend(batch.records())
        if not got.batches:
            break
        offset = got.next_offset
    return records


def test_partition_offsets_by_name_and_pattern(reader: LogReader, topics: tuple[str, str]) -> None:
    main, other = topics
    assert reader.partition_offsets([main, "no-such-topic"]) == {
        TopicPartition(main, 0): (0, 300), TopicPartition(main, 1): (0, 10)}
    suffix = main.split("-")[1]
    assert reader.partition_offsets(pattern=f".*-{suffix}") == {
        TopicPartition(main, 0): (0, 300), TopicPartition(main, 1): (0, 10), TopicPartition(other, 0): (0, 5)}
    assert reader.partition_offsets([other], pattern="no-match-.*") == {TopicPartition(other, 0): (0, 5)}


def test_bounded_reads_in_pieces_and_past_the_log_end(reader: LogReader, topics: tuple[str, str]) -> None:
    main, _ = topics
    # a range inside one partition, read in small pieces: exactly its records, in order, with their columns
    records = _read_all(reader, main, 0, 50, 220, max_bytes=500)
    assert [r.offset for r in records] == list(range(50, 220))
    assert records[0].key == b"k50" and records[0].value == b"v50" and records[0].headers == (("n", b"50"),)
    assert records[-1].value == b"v219"
    # one read returns no record at or beyond the end it was given
    got = reader.read(main, 0, 295, 298)
    assert [o for b in got.batches for o in b.offsets] == [295, 296, 297] and got.next_offset == 298

    # a range beyond what the log holds: what there is, then nothing, and where the log ends
    records = _read_all(reader, main, 1, 5, 20, max_bytes=1 << 20)
    assert [r.value for r in records] == [f"w{i}".encode() for i in range(5, 10)]
    end = reader.read(main, 1, 10, 20)
    assert end.batches == [] and end.next_offset == 10

    with pytest.raises(UnknownTopicError):
        reader.read(main, 7, 0, 10)


def test_a_backend_gives_a_reader_of_its_log(settings: dict[str, str], topics: tuple[str, str]) -> None:
    main, _ = topics
    backend = open_log_backend(settings)
    try:
        reader = backend.reader()
        assert reader.partition_offsets([main])[TopicPartition(main, 1)] == (0, 10)
        assert len(_read_all(reader, main, 1, 0, 10, max_bytes=1 << 20)) == 10
        reader.close()
    finally:
        backend.close()


def test_a_read_committed_reader_reads_committed_transactions_up_to_the_last_stable_offset(
        settings: dict[str, str]) -> None:
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0)
    backend = open_log_backend(settings)
    producers = []
    try:
        backend.admin().create_topic(NewTopic(topic, 1, 1))
        plain = backend.producer({"acks": "all", "linger.ms": 0})
        t1, t2, t3 = (backend.producer({"transactional.id": f"{topic}-{n}", "linger.ms": 0}) for n in "abc")
        producers = [plain, t1, t2, t3]
        for p in (t1, t2, t3):
            p.init_transactions()
        plain.send_batch(topic, 0, [b"p0", b"p1"])
        assert plain.flush(30) == 0
        t1.begin_transaction()
        t1.send_batch(topic, 0, [b"a1", b"a2"])
        assert t1.flush(30) == 0
        t2.begin_transaction()
        t2.send_batch(topic, 0, [b"b1"])  # still open below: the last stable offset stops here
        assert t2.flush(30) == 0
        t1.commit_transaction()  # its marker lies after b1, past the end of the first range read below
        t3.begin_transaction()
        t3.send_batch(topic, 0, [b"c1"])
        assert t3.flush(30) == 0  # in the log, then aborted
        t3.abort_transaction()
        plain.send_batch(topic, 0, [b"p2"])
        assert plain.flush(30) == 0

        everything = open_log_reader(settings)
        committed = open_log_reader({**settings, "isolation.level": "read_committed"})
        try:
            assert committed.read_committed and not everything.read_committed
            log_end = everything.partition_offsets([topic])[tp][1]
            assert everything.stable_offsets({tp: 0}) == {tp: log_end}
            seen = {r.value: r.offset for r in _read_all(everything, topic, 0, 0, log_end, 1 << 20)}
            assert set(seen) == {b"p0", b"p1", b"a1", b"a2", b"b1", b"c1", b"p2"}, "markers are never records"

            # t1's commit marker, like every marker, is written after its commit answered (see below)
            wait_until(lambda: committed.stable_offsets({tp: 0})[tp] == seen[b"b1"], 30,
                       what="the open transaction's first record as the last stable offset")
            stable = committed.stable_offsets({tp: 0})[tp]
            assert [r.value for r in _read_all(committed, topic, 0, 0, stable, 64)] == [b"p0", b"p1", b"a1", b"a2"]

            t2.commit_transaction()
            # Kafka's EndTxn answers once the commit is decided; the coordinator writes the partitions' markers
            # after that, so the last stable offset moves a moment later
            wait_until(lambda: committed.stable_offsets({tp: stable})[tp]
                       == everything.partition_offsets([topic])[tp][1], 30,
                       what="the last stable offset at the log end after the commit")
            rest = _read_all(committed, topic, 0, stable, committed.stable_offsets({tp: stable})[tp], 1 << 20)
            assert [r.value for r in rest] == [b"b1", b"p2"], "the aborted c1 is never handed out"
        finally:
            everything.close()
            committed.close()
    finally:
        for p in producers:
            p.close()
        backend.close()


def test_an_isolation_level_that_is_not_kafkas_is_refused(tmp_path: Path) -> None:
    from connect.log.api import LogError

    with pytest.raises(LogError, match="isolation.level"):
        open_log_reader({"embedded.log.dir": str(tmp_path), "isolation.level": "serializable"})
