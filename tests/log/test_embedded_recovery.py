"""Damage on disk: readers change nothing, writers keep the intact batches, gaps are reported, tools check/repair."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogError, NewTopic, OffsetBeyondLogEndError
from connect.log.embedded.backend import EmbeddedBackend
from connect.log.embedded.dirlock import LogDirectoryLockedError
from tests.support import run_cli

TP = TopicPartition("t", 0)
QUIET = {"log.retention.check.interval.ms": 3_600_000}
SEGMENT = "00000000000000000000.log"


def fill(backend: EmbeddedBackend, batches: int, per_batch: int = 10, topic: str = "t") -> None:
    producer = backend.producer()
    for b in range(batches):
        producer.send_batch(topic, 0, [b"r%d-%d" % (b, i) for i in range(per_batch)])
        producer.flush()
    producer.close()


def read_all(backend: EmbeddedBackend, tp: TopicPartition = TP) -> list[int]:
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([tp])
    consumer.seek(tp, 0)
    offsets: list[int] = []
    while got := consumer.poll(0.05, 100_000):
        for fb in got:
            offsets.extend(fb.offsets)
    consumer.close()
    return offsets


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def damaged_log(tmp_path: Path, where: str) -> tuple[Path, int]:
    """Five batches of ten records in one active segment, one byte of the middle batch flipped."""
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("t", 1))
    fill(backend, 5)
    backend.close()
    seg = tmp_path / "t-0" / SEGMENT
    data = bytearray(seg.read_bytes())
    batch = len(data) // 5  # equal-sized batches
    data[2 * batch + (0 if where == "header" else batch - 4)] ^= 0xFF
    seg.write_bytes(bytes(data))
    return seg, batch


@pytest.mark.parametrize("where", ["payload", "header"])
def test_readers_change_nothing_and_a_writer_keeps_the_batches_after_the_damage(tmp_path, caplog, where) -> None:
    seg, batch = damaged_log(tmp_path, where)
    before = snapshot(tmp_path)
    res = run_cli(["headrace", "topics", "describe", "--log-dir", str(tmp_path)])
    assert res.returncode == 0, res.stderr
    assert snapshot(tmp_path) == before, "topics describe changed the log"
    res = run_cli(["headrace", "console-consumer", "--log-dir", str(tmp_path), "--topic", "t",
                   "--from-beginning", "--timeout-ms", "500"])
    # the reader hands out what precedes the damage, then names it and the way out
    assert res.stdout.decode().splitlines() == [f"r{b}-{i}" for b in range(2) for i in range(10)]
    assert "headrace log repair --topic t --partition 0" in res.stderr.decode()
    assert snapshot(tmp_path) == before, "a read-only tool changed the log"

    with caplog.at_level(logging.WARNING, logger="connect.log.embedded"):
        backend = EmbeddedBackend(str(tmp_path), QUIET)  # a writer recovers
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1, errors
    assert "t-0" in errors[0] and "offsets 20..29" in errors[0] and str(seg) in errors[0]
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    assert (tmp_path / "t-0" / f"00000000000000000000.{2 * batch}.damaged").stat().st_size == batch
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="connect.log.embedded"):
        assert read_all(backend) == [*range(20), *range(30, 50)]
    assert [r.getMessage() for r in caplog.records] == [
        f"Skipping offsets 20..29 of t-0: lost to damage in segment {SEGMENT} (moved to "
        f"00000000000000000000.{2 * batch}.damaged)"]
    (gap,) = backend.admin().log_gaps()[TP]
    assert (gap.first_offset, gap.last_offset, gap.segment, gap.position, gap.length) == (20, 29, SEGMENT,
                                                                                           2 * batch, batch)
    fill(backend, 1)
    assert read_all(backend)[-11:] == [49, *range(50, 60)]
    backend.close()
    res = run_cli(["headrace", "topics", "describe", "--log-dir", str(tmp_path), "--topic", "t"])
    assert "Gap: offsets 20..29 lost to damage in segment 00000000000000000000.log" in res.stdout.decode()


def test_a_torn_tail_is_cut_with_a_warning_and_is_no_gap(tmp_path, caplog) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("t", 1))
    fill(backend, 3)
    backend.close()
    seg = tmp_path / "t-0" / SEGMENT
    os.truncate(seg, seg.stat().st_size - 5)
    with caplog.at_level(logging.WARNING, logger="connect.log.embedded"):
        backend = EmbeddedBackend(str(tmp_path), QUIET)
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert read_all(backend) == list(range(20))
    assert backend.admin().log_gaps() == {}
    backend.close()


def test_a_committed_offset_past_the_log_end_is_an_error_not_a_reset(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("t", 1))
    fill(backend, 5)
    backend.admin().alter_group_offsets("g", {TP: 80})
    consumer = backend.consumer("g", {"auto.offset.reset": "earliest", "enable.auto.commit": "false"})
    consumer.subscribe(["t"])
    with pytest.raises(OffsetBeyondLogEndError) as err:
        for _ in range(20):
            consumer.poll(0.05)
    assert "committed offset 80 of group g for t-0 is past the log end 50" in str(err.value)
    consumer.close()
    # an explicit seek past the end still follows auto.offset.reset, as in Kafka
    plain = backend.consumer(None, {"auto.offset.reset": "earliest"})
    plain.assign([TP])
    plain.seek(TP, 500)
    assert sum(len(fb) for fb in plain.poll(1.0, 1000)) == 50
    plain.close()
    backend.close()


def test_log_check_and_repair_of_a_closed_segment(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("t", 1, configs={"segment.bytes": "500"}))
    fill(backend, 12)
    closed = sorted((tmp_path / "t-0").glob("*.log"))
    assert len(closed) > 3
    first = closed[0]
    data = bytearray(first.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the closed first segment, which holds several batches
    first.write_bytes(bytes(data))
    with pytest.raises(LogError, match="headrace log repair --topic t --partition 0"):
        read_all(backend)
    backend.close()

    res = run_cli(["headrace", "log", "check", "--dir", str(tmp_path)])
    assert res.returncode == 1
    out = res.stdout.decode()
    assert f"t-0: DAMAGED {first}" in out and "1 damaged range(s)" in out

    owner = EmbeddedBackend(str(tmp_path), QUIET, owner=True)
    res = run_cli(["headrace", "log", "repair", "--dir", str(tmp_path), "--topic", "t", "--partition", "0"])
    assert res.returncode != 0 and f"pid {os.getpid()}" in res.stderr.decode()
    assert run_cli(["headrace", "log", "check", "--dir", str(tmp_path)]).returncode == 1  # check runs beside it
    owner.close()

    res = run_cli(["headrace", "log", "repair", "--dir", str(tmp_path), "--topic", "t", "--partition", "0"])
    assert res.returncode == 0, res.stderr
    (line,) = res.stdout.decode().splitlines()
    assert line.startswith("Repaired t-0: offsets ") and " lost; " in line and ".damaged" in line
    lost = line.split("offsets ")[1].split(" ")[0]
    first_lost, last_lost = map(int, lost.split(".."))
    assert last_lost >= first_lost
    res = run_cli(["headrace", "log", "check", "--dir", str(tmp_path)])
    assert res.returncode == 0 and f"recorded gap: offsets {lost}" in res.stdout.decode()
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    assert read_all(backend) == [o for o in range(120) if not first_lost <= o <= last_lost]
    backend.close()


def test_one_owner_per_directory_while_other_writers_and_readers_go_on(tmp_path) -> None:
    owner = EmbeddedBackend(str(tmp_path), QUIET, owner=True)
    owner.admin().create_topic(NewTopic("t", 1))
    with pytest.raises(LogDirectoryLockedError, match=f"in use by another worker \\(pid {os.getpid()} on host"):
        EmbeddedBackend(str(tmp_path), QUIET, owner=True)
    res = run_cli(["headrace", "console-producer", "--log-dir", str(tmp_path), "--topic", "t"], input=b"a\nb\n")
    assert res.returncode == 0, res.stderr
    res = run_cli(["headrace", "console-consumer", "--log-dir", str(tmp_path), "--topic", "t",
                   "--from-beginning", "--max-messages", "2"])
    assert res.stdout == b"a\nb\n"
    owner.close()
    EmbeddedBackend(str(tmp_path), QUIET, owner=True).close()  # released with the owner


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_the_log_is_owner_only_whatever_the_umask(tmp_path, umask) -> None:
    old = os.umask(umask)
    try:
        root = tmp_path / "data"
        backend = EmbeddedBackend(str(root), QUIET, owner=True)
        backend.admin().create_topic(NewTopic("t", 2, configs={"segment.bytes": "300"}))
        fill(backend, 6)
        backend.admin().alter_group_offsets("g", {TP: 3})
        backend.admin().cluster_id()
        backend.close()
    finally:
        os.umask(old)
    paths = [root, *root.rglob("*")]
    assert len([p for p in paths if p.suffix == ".log"]) > 2
    for p in paths:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), f"{p} has mode {oct(mode)}"


def test_deleting_a_topic_drops_its_committed_offsets_so_a_re_created_topic_starts_over(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    admin = backend.admin()
    admin.create_topic(NewTopic("t", 1))
    admin.create_topic(NewTopic("other", 1))
    fill(backend, 3)
    admin.alter_group_offsets("g", {TP: 30, TopicPartition("other", 0): 0})
    admin.delete_topic("t")
    # as Kafka's group coordinator does: otherwise the old offset would lie past the new topic's end
    assert admin.list_group_offsets("g") == {TopicPartition("other", 0): 0}
    admin.create_topic(NewTopic("t", 1))
    fill(backend, 1)
    consumer = backend.consumer("g", {"auto.offset.reset": "earliest", "enable.auto.commit": "false"})
    consumer.assign([TP])
    assert sum(len(fb) for fb in consumer.poll(1.0)) == 10
    consumer.close()
    backend.close()
