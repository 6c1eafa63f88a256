"""Retention (by size and by time) and compaction of the embedded log, and the cleaner thread."""

from __future__ import annotations

import os
import threading

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log.api import NewTopic
from connect.log.embedded.backend import EmbeddedBackend
from connect.log.embedded.partition import now_ms
from tests.support import wait_until

QUIET = {"log.retention.check.interval.ms": 3_600_000}
DAY = 86_400_000


def read_all(backend: EmbeddedBackend, tp: TopicPartition):
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([tp])
    consumer.seek_to_beginning([tp])
    out = []
    while got := consumer.poll(0.05, 100_000):
        out.extend(got)
    consumer.close()
    return out


def log_files(path, tp: TopicPartition) -> list[str]:
    return sorted(f for f in os.listdir(os.path.join(path, str(tp))) if f.endswith(".log"))


def test_retention_by_size_deletes_oldest_closed_segments(tmp_path) -> None:
    tp = TopicPartition("sized", 0)
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("sized", 1, configs={"segment.bytes": "2000", "retention.bytes": "5000"}))
    producer = backend.producer()
    for b in range(40):
        producer.send_batch("sized", 0, [b"%03d-%d" % (b, i) + b"x" * 40 for i in range(5)])
    producer.flush()
    before = log_files(tmp_path, tp)
    stats = backend.run_cleaner_once()
    after = log_files(tmp_path, tp)
    assert stats.segments_deleted == len(before) - len(after) > 0
    assert after == before[-len(after):]  # the oldest went, the active one stayed
    total = sum(os.path.getsize(tmp_path / str(tp) / f) for f in after)
    assert 5000 - 2000 <= total <= 5000 + 2000

    start, end = backend.admin().describe_topic("sized").offsets[0]
    assert start == int(after[0][:20]) > 0 and end == 200
    batches = read_all(backend, tp)
    assert batches[0].offsets[0] == start
    assert sum(len(b) for b in batches) == 200 - start
    # a consumer positioned below the new log start is reset to it
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([tp])
    consumer.seek(tp, 0)
    assert consumer.poll(1.0, 10)[0].offsets[0] == start
    consumer.close()
    backend.close()


def test_retention_by_time_uses_each_segments_newest_timestamp(tmp_path) -> None:
    tp = TopicPartition("timed", 0)
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("timed", 1, configs={"segment.bytes": "600", "retention.ms": str(DAY)}))
    producer = backend.producer()
    now = now_ms()
    for b in range(10):  # old records, then a few new ones
        producer.send_batch("timed", 0, [b"old%d" % b] * 5, timestamps=[now - 3 * DAY + b] * 5)
    for b in range(10):
        producer.send_batch("timed", 0, [b"new%d" % b] * 5, timestamps=[now] * 5)
    producer.flush()
    assert backend.run_cleaner_once().segments_deleted > 0
    values = [v for fb in read_all(backend, tp) for v in fb.values]
    assert values[-1] == b"new9"
    assert sum(v.startswith(b"new") for v in values) == 50
    assert all(v.startswith(b"new") for v in values[-50:])
    assert sum(v.startswith(b"old") for v in values) < 50
    # two days later everything but the active segment is gone, and it never is
    backend.run_cleaner_once(now + 2 * DAY)
    assert len(log_files(tmp_path, tp)) == 1
    start, end = backend.admin().describe_topic("timed").offsets[0]
    assert end == 100 and start == int(log_files(tmp_path, tp)[0][:20])
    backend.close()


def test_compaction_keeps_latest_per_key_and_honours_tombstones(tmp_path) -> None:
    tp = TopicPartition("kv", 0)
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("kv", 1, configs={
        "cleanup.policy": "compact", "segment.bytes": "400", "delete.retention.ms": "500",
    }))
    producer = backend.producer({"linger.ms": "0"})
    expected: dict[bytes, tuple[int, bytes | None]] = {}
    offset = 0
    for round_ in range(6):
        for k in range(5):
            key = b"k%d" % k
            value = None if (key == b"k1" and round_ == 5) else b"v%d-%d" % (k, round_)
            producer.send("kv", value, key=key, partition=0)
            expected[key] = (offset, value)
            offset += 1
    for i in range(10):  # other keys, so the interesting records end up in closed segments
        producer.send("kv", b"filler", key=b"f%d" % i, partition=0)
        expected[b"f%d" % i] = (offset, b"filler")
        offset += 1
    producer.flush()
    segments_before = len(log_files(tmp_path, tp))
    assert segments_before > 3

    stats = backend.run_cleaner_once()
    assert stats.partitions_compacted == 1 and stats.records_removed == 25
    batches = read_all(backend, tp)
    seen = {}
    offsets = []
    for fb in batches:
        offsets.extend(fb.offsets)
        for off, key, value in zip(fb.offsets, fb.keys, fb.values, strict=True):
            assert key not in seen, "a key survived twice"
            seen[key] = (off, value)
    assert seen == expected  # latest value per key, at its original offset; the tombstone is still there
    assert seen[b"k1"][1] is None
    assert offsets == sorted(offsets) and offsets[-1] == offset - 1
    assert any(not isinstance(fb.offsets, range) for fb in batches)  # sparse after compaction
    assert len(log_files(tmp_path, tp)) < segments_before  # small cleaned segments were merged

    # before delete.retention.ms has passed the tombstone stays ...
    backend.run_cleaner_once()
    assert b"k1" in {k for fb in read_all(backend, tp) for k in fb.keys}
    # ... after it, the tombstone is gone too
    backend.run_cleaner_once(now_ms() + 1000)
    keys = [k for fb in read_all(backend, tp) for k in fb.keys]
    assert b"k1" not in keys and set(keys) == set(expected) - {b"k1"}
    # appending continues at the right offset, and a reopened log reads the same
    producer.send("kv", b"late", key=b"k0", partition=0)
    producer.flush()
    producer.close()
    backend.close()
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    batches = read_all(backend, tp)
    assert batches[-1].offsets[-1] == offset and batches[-1].values[-1] == b"late"
    backend.close()


def test_compaction_is_safe_for_a_reader_in_the_middle(tmp_path) -> None:
    tp = TopicPartition("kv", 0)
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("kv", 1, configs={"cleanup.policy": "compact", "segment.bytes": "300"}))
    producer = backend.producer({"linger.ms": "0"})
    for i in range(60):
        # a key that is never overwritten in each stretch of ten, so merged segments keep records
        key = b"u%d" % i if i % 10 == 9 else b"k%d" % (i % 3)
        producer.send("kv", b"v%d" % i, key=key, partition=0)
    producer.flush()
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([tp])
    first = consumer.poll(1.0, 7)
    assert [o for fb in first for o in fb.offsets] == list(range(7))
    backend.run_cleaner_once()
    rest = []
    while got := consumer.poll(0.05, 1000):
        rest.extend(o for fb in got for o in fb.offsets)
    # whatever the reader still sees comes after where it was, in order, up to the end,
    # and it misses nothing that survived compaction
    assert rest == sorted(rest) and rest[0] >= 7 and rest[-1] == 59
    survivors = [o for fb in read_all(backend, tp) for o in fb.offsets]
    assert len(survivors) < 60
    assert {o for o in survivors if o >= 7} <= set(rest)
    consumer.close()
    producer.close()
    backend.close()


@pytest.mark.timeout(60)
def test_cleaner_thread_runs_on_its_interval_and_stops_on_close(tmp_path) -> None:
    before = set(threading.enumerate())
    backend = EmbeddedBackend(str(tmp_path), {"log.retention.check.interval.ms": 50})
    mine = [t for t in threading.enumerate() if t not in before and t.name == "embedded-log-cleaner"]
    assert len(mine) == 1
    backend.admin().create_topic(NewTopic("r", 1, configs={"segment.bytes": "300", "retention.bytes": "0"}))
    producer = backend.producer()
    for _ in range(20):
        producer.send_batch("r", 0, [b"x" * 50, b"y" * 50])
    producer.flush()
    wait_until(lambda: len(log_files(tmp_path, TopicPartition("r", 0))) <= 1, 20, interval=0.05,
               what="the cleaner to delete the old segments")
    backend.close()
    assert not mine[0].is_alive()
