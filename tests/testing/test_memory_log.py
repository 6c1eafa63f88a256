"""connect.testing's FakeClock and in-memory log: what the runtime's unit tests and a plugin author's rely on."""

from __future__ import annotations

import threading
import time

from connect.api import TopicPartition
from connect.log.api import RecordMetadata
from connect.runtime.clock import SYSTEM_CLOCK
from connect.testing import FakeClock, MemoryBackend


def test_the_fake_clock_moves_only_when_told_and_never_back() -> None:
    clock = FakeClock(start=10.0)
    assert clock.monotonic() == 10.0
    clock.advance(2.5)
    clock.sleep(0.5)  # a sleep on it returns at once, the clock moved on
    clock.advance(-100)
    assert clock.monotonic() == 13.0


def test_records_are_appended_at_flush_and_acknowledged_with_their_offsets() -> None:
    backend = MemoryBackend()
    producer = backend.producer()
    acks: list[RecordMetadata | None] = []
    producer.send("t", b"a", on_delivery=lambda err, md: acks.append(md))
    producer.send("t", b"b", on_delivery=lambda err, md: acks.append(md))
    assert backend.log.values("t") == [] and producer.unacked() == ["a", "b"]
    producer.flush()
    assert backend.log.values("t") == ["a", "b"]
    assert [(m.topic, m.partition, m.offset) for m in acks if m is not None] == [("t", 0, 0), ("t", 0, 1)]


def test_a_group_consumer_reads_from_its_committed_offset_and_an_empty_poll_moves_the_fake_clock() -> None:
    clock = FakeClock()
    backend = MemoryBackend(clock)
    backend.log.append("t", 0, [(None, b"a", 0), (None, b"b", 0)])
    first = backend.consumer("g")
    first.subscribe(["t"])
    [batch] = first.poll(1.0)
    assert list(batch.values) == [b"a", b"b"]
    first.commit({TopicPartition("t", 0): 1})
    again = backend.consumer("g")
    again.subscribe(["t"])
    assert [list(b.values) for b in again.poll(1.0)] == [[b"b"]]
    before = clock.monotonic()
    assert again.poll(2.0) == []
    assert clock.monotonic() == before + 2.0


def test_on_the_system_clock_an_empty_poll_returns_when_a_record_arrives_not_at_its_timeout() -> None:
    """A worker's task threads poll on the system clock: a record must wake the poll, or every record
    would wait out a poll timeout."""
    backend = MemoryBackend(SYSTEM_CLOCK)
    backend.log.create("t")
    consumer = backend.consumer("g")
    consumer.subscribe(["t"])
    assert consumer.poll(0.0) == []
    timer = threading.Timer(0.2, lambda: backend.log.append("t", 0, [(None, b"late", 0)]))
    timer.start()
    started = time.monotonic()
    try:
        assert [list(b.values) for b in consumer.poll(60.0)] == [[b"late"]]
        assert time.monotonic() - started < 30.0  # about 0.2 s: woken by the append
    finally:
        timer.cancel()


def test_the_reader_gives_partition_ends_and_ranges() -> None:
    backend = MemoryBackend()
    backend.log.create("t", partitions=2)
    backend.log.append("t", 1, [(b"k", b"v1", 5), (None, b"v2", 6)])
    reader = backend.reader()
    assert reader.partition_offsets(["t"]) == {TopicPartition("t", 0): (0, 0), TopicPartition("t", 1): (0, 2)}
    found = reader.read("t", 1, 1, 2)
    assert found.next_offset == 2
    assert [(list(b.offsets), list(b.values)) for b in found.batches] == [([1], [b"v2"])]
