"""The embedded log on disk: layout, offsets across batches and segments, reads mid-batch, recovery."""

from __future__ import annotations

import logging
import os
import re
import time

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log.api import NewTopic
from connect.log.embedded.backend import EmbeddedBackend

TP = TopicPartition("t", 0)
QUIET = {"log.retention.check.interval.ms": 3_600_000}


def open_backend(path) -> EmbeddedBackend:
    return EmbeddedBackend(str(path), QUIET)


def read_all(backend: EmbeddedBackend, tp: TopicPartition = TP, start: int = 0):
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([tp])
    consumer.seek(tp, start)
    offsets, values = [], []
    while True:
        got = consumer.poll(0.05, 100_000)
        if not got:
            break
        for fb in got:
            offsets.extend(fb.offsets)
            values.extend(fb.values)
    consumer.close()
    return offsets, values


def fill(backend: EmbeddedBackend, batches: int, per_batch: int = 10, tp: TopicPartition = TP) -> None:
    producer = backend.producer()
    for b in range(batches):
        producer.send_batch(tp.topic, tp.partition, [b"r%d-%d" % (b, i) for i in range(per_batch)])
    producer.flush()
    producer.close()


def segment_files(path, tp: TopicPartition = TP) -> list[str]:
    return sorted(f for f in os.listdir(os.path.join(path, str(tp))) if f.endswith(".log"))


def test_layout_and_offsets_across_batches_and_segments(tmp_path) -> None:
    backend = open_backend(tmp_path)
    backend.admin().create_topic(NewTopic("t", 1, configs={"segment.bytes": "1000", "index.interval.bytes": "200"}))
    fill(backend, 30)
    meta = (tmp_path / "t.json").read_text()
    assert '"partitions": 1' in meta and '"segment.bytes": "1000"' in meta
    logs = segment_files(tmp_path)
    assert len(logs) > 3
    for name in logs:
        assert re.fullmatch(r"\d{20}\.log", name)
        stem = name[:-4]
        assert os.path.exists(tmp_path / "t-0" / f"{stem}.index")
        assert os.path.exists(tmp_path / "t-0" / f"{stem}.timeindex")
    assert int(logs[0][:20]) == 0
    # each segment is named after the first offset it holds
    bases = [int(n[:20]) for n in logs]
    assert bases == sorted(bases) and all(b % 10 == 0 for b in bases)
    assert os.path.getsize(tmp_path / "t-0" / f"{logs[0][:20]}.index") > 0
    offsets, values = read_all(backend)
    assert offsets == list(range(300))
    assert values[123] == b"r12-3"
    backend.close()


def test_reading_from_the_middle_of_a_batch(tmp_path) -> None:
    backend = open_backend(tmp_path)
    backend.admin().create_topic(NewTopic("t", 1, configs={"segment.bytes": "700"}))
    fill(backend, 10)
    for start in (15, 10, 19, 57, 99):
        offsets, values = read_all(backend, start=start)
        assert offsets == list(range(start, 100))
        assert values[0] == b"r%d-%d" % divmod(start, 10)
    backend.close()


def test_torn_tail_is_truncated_on_reopen(tmp_path, caplog) -> None:
    backend = open_backend(tmp_path)
    backend.admin().create_topic(NewTopic("t", 1))
    fill(backend, 5)
    backend.close()
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    size = os.path.getsize(seg)
    os.truncate(seg, size - 7)  # the last batch loses its end, as in a crash mid-write

    with caplog.at_level(logging.WARNING, logger="connect.log.embedded"):
        backend = open_backend(tmp_path)
    warning = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warning) == 1
    assert "t-0" in warning[0] and "byte position" in warning[0]
    last_batch = size // 5  # all five batches have the same size
    assert f"dropping {last_batch - 7} bytes" in warning[0]
    assert os.path.getsize(seg) == size - last_batch

    offsets, values = read_all(backend)
    assert offsets == list(range(40))
    assert values[-1] == b"r3-9"
    fill(backend, 1)
    offsets, values = read_all(backend, start=38)
    assert offsets == [38, 39] + list(range(40, 50))
    assert values[2] == b"r0-0"
    backend.close()


def test_a_damaged_last_batch_is_moved_aside_as_a_gap_and_its_offsets_are_not_reused(tmp_path, caplog) -> None:
    backend = open_backend(tmp_path)
    backend.admin().create_topic(NewTopic("t", 1))
    fill(backend, 4)
    backend.close()
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[-3] ^= 0xFF  # inside the last batch's value bytes: a complete batch that fails its CRC
    seg.write_bytes(bytes(data))

    with caplog.at_level(logging.WARNING, logger="connect.log.embedded"):
        backend = open_backend(tmp_path)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "t-0" in errors[0] and "offsets 30..39" in errors[0]
    damaged = tmp_path / "t-0" / f"00000000000000000000.{len(data) * 3 // 4}.damaged"
    assert damaged.read_bytes() == bytes(data[len(data) * 3 // 4:])
    offsets, _ = read_all(backend)
    assert offsets == list(range(30))
    # the lost offsets stay lost: the log end is past them and new records come after them
    assert backend.consumer().end_offsets([TP]) == {TP: 40}
    fill(backend, 1)
    assert read_all(backend, start=30)[0] == list(range(40, 50))
    (gap,) = backend.admin().describe_topic("t").gaps[0]
    assert (gap.first_offset, gap.last_offset, gap.segment) == (30, 39, "00000000000000000000.log")
    backend.close()


def test_damaged_index_is_rebuilt_and_lookups_stay_right(tmp_path, caplog) -> None:
    backend = open_backend(tmp_path)
    backend.admin().create_topic(NewTopic("t", 1, configs={"index.interval.bytes": "100"}))
    fill(backend, 20)
    backend.close()
    index = tmp_path / "t-0" / "00000000000000000000.index"
    original = index.read_bytes()
    assert len(original) >= 8 * 5
    # entries that point at wrong places, plus a torn entry at the end
    index.write_bytes(original[:16] + b"\x05\x00\x00\x00\x07\x00\x00\x00" * 3 + b"\x01\x02")

    with caplog.at_level(logging.WARNING, logger="connect.log.embedded"):
        backend = open_backend(tmp_path)
    assert any("Rebuilding the indexes of t-0" in r.getMessage() for r in caplog.records)
    assert index.read_bytes() == original
    for start in (0, 55, 123, 199):
        assert read_all(backend, start=start)[0] == list(range(start, 200))
    fill(backend, 1)
    assert read_all(backend, start=195)[0] == list(range(195, 210))
    backend.close()


def test_an_acknowledged_append_survives_reopening_without_close(tmp_path) -> None:
    backend = open_backend(tmp_path)
    backend.admin().create_topic(NewTopic("t", 1))
    producer = backend.producer({"linger.ms": "0"})
    acked = []
    producer.send("t", b"v", partition=0, on_delivery=lambda err, md: acked.append(md.offset))
    producer.poll(0)
    assert acked == [0]
    # no flush, no close: a second backend in the same process sees the bytes
    other = open_backend(tmp_path)
    assert read_all(other)[1] == [b"v"]
    other.close()
    backend.close()


@pytest.mark.parametrize("fsync", ["true", "false"])
def test_fsync_setting_is_accepted(tmp_path, fsync: str) -> None:
    backend = EmbeddedBackend(str(tmp_path), {**QUIET, "embedded.log.fsync": fsync})
    backend.admin().create_topic(NewTopic("t", 1, configs={"segment.bytes": "500"}))
    fill(backend, 5)
    assert read_all(backend)[0] == list(range(50))
    backend.close()


def test_segment_ms_rolls_by_record_time_and_log_append_time_stamps(tmp_path) -> None:
    backend = open_backend(tmp_path)
    admin = backend.admin()
    admin.create_topic(NewTopic("t", 1, configs={"segment.ms": "1000"}))
    producer = backend.producer()
    for ts in (10_000, 10_500, 11_200, 11_300, 13_000):
        producer.send_batch("t", 0, [b"x"], timestamps=[ts])
    producer.flush()
    # a new segment whenever a batch is more than segment.ms newer than its segment's first batch
    assert [int(n[:20]) for n in segment_files(tmp_path)] == [0, 2, 4]

    admin.create_topic(NewTopic("stamped", 1, configs={"message.timestamp.type": "LogAppendTime"}))
    before = int(time.time() * 1000)
    producer.send_batch("stamped", 0, [b"a", b"b"], timestamps=[5, 6])
    producer.flush()
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("stamped", 0)])
    (fb,) = consumer.poll(1.0)
    assert fb.timestamp_type == 1
    assert fb.timestamps[0] == fb.timestamps[1] >= before
    consumer.close()
    backend.close()
