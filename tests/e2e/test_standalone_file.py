"""The Kafka Connect file quickstart on the embedded log, driven through the real CLIs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import attrs
import pytest

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_backend
from connect.log.api import NewTopic
from tests.support import (
    FAST_OFFSET_FLUSH,
    connect_standalone,
    line_count,
    run_cli,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(180)


def _source(tmp: Path, name: str = "local-file-source", file: str = "test.txt", topic: str = "connect-test") -> Path:
    return write_properties(tmp / f"{name}.properties", {
        "name": name, "connector.class": "FileStreamSource", "tasks.max": 1, "file": tmp / file, "topic": topic,
    })


def _sink(tmp: Path, name: str = "local-file-sink", file: str = "test.sink.txt", topics: str = "connect-test") -> Path:
    return write_properties(tmp / f"{name}.properties", {
        "name": name, "connector.class": "FileStreamSink", "tasks.max": 1, "file": tmp / file, "topics": topics,
    })


def test_quickstart_copies_lines_in_order_to_every_sink(tmp_path):
    source_file = tmp_path / "test.txt"
    source_file.write_text("".join(f"line-{i:05d}\n" for i in range(1000)))
    worker = connect_standalone(tmp_path, worker_properties(tmp_path), _source(tmp_path), _sink(tmp_path),
                                _sink(tmp_path, "second-sink", "second.sink.txt"))
    try:
        wait_until(lambda: line_count(tmp_path / "test.sink.txt") >= 1000, 60, what="first sink")
        wait_until(lambda: line_count(tmp_path / "second.sink.txt") >= 1000, 60, what="second sink")
        with open(source_file, "a") as fh:
            fh.write("".join(f"line-{i:05d}\n" for i in range(1000, 1500)))
        expected = [f"line-{i:05d}" for i in range(1500)]
        for sink in ("test.sink.txt", "second.sink.txt"):
            wait_until(lambda s=sink: line_count(tmp_path / s) >= 1500, 60, what=sink)
            assert (tmp_path / sink).read_text().splitlines() == expected
        assert worker.alive()
    finally:
        assert worker.terminate() == 0, worker.log()
    log = worker.log()
    assert "local-file-source" in log and "Committed offsets" in log


def _committed_source_lines(tmp: Path, source_file: Path) -> int:
    """Lines of the source file covered by the committed source offset."""
    offsets = json.loads((tmp / "connect.offsets").read_text())["offsets"]
    position = 0
    for key, value in offsets.items():
        name, partition = json.loads(key)
        if name == "local-file-source" and partition["filename"] == str(source_file):
            position = json.loads(value)["position"]
    return source_file.read_bytes()[:position].count(b"\n")


@attrs.frozen
class _StateAtKill:
    """What a crash can duplicate: the source lines and sink records sent but not yet committed."""

    topic_end: int
    source_committed: int
    sink_committed: int
    sink_lines: int

    @property
    def duplicate_bound(self) -> int:
        return (self.topic_end - self.source_committed) + (self.sink_lines - self.sink_committed)


def _state_at_kill(tmp: Path, source_file: Path, sink_file: Path) -> _StateAtKill:
    backend = open_log_backend({"embedded.log.dir": str(tmp / "data")})
    admin = backend.admin()
    topic_end = admin.describe_topic("connect-test").offsets[0][1]
    sink_committed = admin.list_group_offsets("connect-local-file-sink").get(TopicPartition("connect-test", 0), 0)
    admin.close()
    backend.close()
    # whole lines only: a write cut by the kill leaves a piece the restarted sink's first line is appended to
    sink_lines = sink_file.read_bytes().count(b"\n") if sink_file.exists() else 0
    return _StateAtKill(topic_end, _committed_source_lines(tmp, source_file), sink_committed, sink_lines)


def _sink_committed(tmp: Path) -> int:
    backend = open_log_backend({"embedded.log.dir": str(tmp / "data")})
    try:
        admin = backend.admin()
        committed = admin.list_group_offsets("connect-local-file-sink").get(TopicPartition("connect-test", 0), 0)
        admin.close()
    finally:
        backend.close()
    return committed


@pytest.mark.slow  # several seconds of a real worker: kept out of the fast suite
def test_kill_9_mid_stream_loses_nothing_and_bounds_duplicates(tmp_path):
    """A kill -9 after both tasks' first commits, with half the file still to be written.

    The restarted source reads again from its committed position and the restarted sink from its committed
    offset, so the duplicates are exactly what was uncommitted at the kill (docs/guide/guarantees.md).
    """
    source_file = tmp_path / "test.txt"
    source_file.write_text("")
    total, before_kill, chunk = 60_000, 30_000, 500
    killed = threading.Event()

    def writer() -> None:
        with open(source_file, "a") as fh:
            for start in range(0, total, chunk):
                # the second half only after the kill: the kill is mid-stream however slow the machine is
                if start == before_kill and not killed.wait(120):
                    return
                fh.write("".join(f"line-{i:06d}\n" for i in range(start, start + chunk)))
                fh.flush()
                time.sleep(0.05)  # at most 10,000 lines a second: the stream spans several flush intervals

    # the kill must come after both tasks' first commits, with commits every second: with the shipped 10 s
    # interval the first half is written (in 3 s) before any commit
    worker_cfg = worker_properties(tmp_path, **FAST_OFFSET_FLUSH)
    src, snk = _source(tmp_path), _sink(tmp_path)
    sink_file = tmp_path / "test.sink.txt"
    worker = connect_standalone(tmp_path, worker_cfg, src, snk)
    thread = threading.Thread(target=writer)
    try:
        wait_until(lambda: "standalone worker started" in worker.log(), 60, what="the worker")
        thread.start()
        wait_until(lambda: line_count(sink_file) > 15_000 and (tmp_path / "connect.offsets").exists()
                   and _sink_committed(tmp_path) > 0,
                   90, what="sink to reach 15000 lines after a first commit of both tasks")
        worker.kill9()
        at_kill = _state_at_kill(tmp_path, source_file, sink_file)
    finally:
        killed.set()
        if thread.is_alive():
            thread.join()
    assert 0 < at_kill.source_committed <= at_kill.topic_end <= before_kill
    assert 0 < at_kill.sink_committed <= at_kill.sink_lines <= at_kill.topic_end
    bound = at_kill.duplicate_bound
    worker = connect_standalone(tmp_path, worker_cfg, src, snk)
    try:
        # a SIGTERM while the restarted worker still imports would fail its exit code
        wait_until(lambda: worker.log().count("standalone worker started") == 2, 60, what="the restarted worker")
        # done once the sink has committed the topic's end (a sink commits only what it has flushed): a count of
        # lines in the file is reached by the replayed stretch long before the replay ends
        wait_until(lambda: _all_committed(tmp_path, source_file), 120, interval=0.2,
                   what="the whole file read and the whole topic written and committed after restart")
    finally:
        assert worker.terminate() == 0, worker.log()
    topic_end = _state_at_kill(tmp_path, source_file, sink_file).topic_end
    lines = sink_file.read_text().splitlines()
    expected = {f"line-{i:06d}" for i in range(total)}
    assert expected <= set(lines), f"lost {len(expected - set(lines))} lines"
    # the restarted source sent again exactly the lines after its committed position, the restarted sink wrote
    # again exactly the records after its committed offset: no more, no fewer
    assert topic_end == total + at_kill.topic_end - at_kill.source_committed
    assert len(lines) == at_kill.sink_lines + topic_end - at_kill.sink_committed
    duplicates = len(lines) - len(set(lines))
    print(f"kill -9: {duplicates} duplicates, bound {bound} (source uncommitted + sink uncommitted at the kill: "
          f"topic {at_kill.topic_end}, source committed {at_kill.source_committed}, "
          f"sink {at_kill.sink_lines} lines, sink committed {at_kill.sink_committed})")
    assert duplicates <= bound, f"{duplicates} duplicates exceed the flush-interval bound {bound}"
    # order is kept apart from the replayed stretch: the last occurrence sequence is increasing
    last_seen = {line: i for i, line in enumerate(lines)}
    assert sorted(last_seen, key=last_seen.get) == sorted(expected)


def _all_committed(tmp: Path, source_file: Path) -> bool:
    """The source committed the whole file and the sink the whole topic: nothing is left to redeliver."""
    if _committed_source_lines(tmp, source_file) < source_file.read_bytes().count(b"\n"):
        return False
    backend = open_log_backend({"embedded.log.dir": str(tmp / "data")})
    try:
        admin = backend.admin()
        end = admin.describe_topic("connect-test").offsets[0][1]
        committed = admin.list_group_offsets("connect-local-file-sink").get(TopicPartition("connect-test", 0), 0)
        admin.close()
    finally:
        backend.close()
    return committed == end


def _cpu_hogs(seconds: float) -> list[subprocess.Popen[bytes]]:
    """One busy loop per core, each ending by itself after ``seconds``.

    Each runs in a session of its own: the kernel's autogroup scheduler shares the CPU between sessions, so
    hogs in the test's own session would hardly slow a worker started in another one, unlike other programs.
    """
    loop = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", loop], start_new_session=True)
            for _ in range(os.cpu_count() or 2)]


@pytest.mark.slow
def test_kill_9_under_cpu_load_duplicates_no_more_than_one_flush_interval(tmp_path):
    """No commit came in 3.5 s under load: each line reached the sink three times after a kill -9.

    20,000 lines, then 40,000 more in bursts (the source idles between them) while a busy loop runs on every
    core, and a kill -9. At every moment of the run, as if the kill came then, the committed offsets of both
    tasks must cover what the sink had written one flush interval (and a commit's own time) earlier; after the
    kill, nothing is lost and only the uncommitted stretch comes again.
    """
    # the check is of commits against the flush interval, so the run must span many intervals: the shipped 10 s
    # would leave none in the few seconds before the kill
    interval = FAST_OFFSET_FLUSH["offset.flush.interval.ms"] / 1000
    slack = 0.5  # a commit's own duration
    line = 12  # bytes of "line-000000\n": the sink file's size counts its lines
    first, total, burst = 20_000, 60_000, 4_000
    source_file = tmp_path / "test.txt"
    source_file.write_text("".join(f"line-{i:06d}\n" for i in range(first)))
    sink_file = tmp_path / "test.sink.txt"
    worker_cfg = worker_properties(tmp_path, **FAST_OFFSET_FLUSH)
    src, snk = _source(tmp_path), _sink(tmp_path)
    # (time, lines in the sink file, source-committed lines, sink-committed offset)
    samples: list[tuple[float, int, int, int]] = []
    stop = threading.Event()

    def sample() -> None:
        backend = open_log_backend({"embedded.log.dir": str(tmp_path / "data")})
        admin = backend.admin()
        try:
            while not stop.wait(0.02):
                at = time.monotonic()
                lines = sink_file.stat().st_size // line if sink_file.exists() else 0
                source = _committed_source_lines(tmp_path, source_file) if (tmp_path / "connect.offsets").exists() else 0
                sink = admin.list_group_offsets("connect-local-file-sink").get(TopicPartition("connect-test", 0), 0)
                samples.append((at, lines, source, sink))
        finally:
            admin.close()
            backend.close()

    def write_rest() -> None:
        with open(source_file, "a") as fh:
            for start in range(first, total, burst):
                if stop.wait(0.9):
                    return
                fh.write("".join(f"line-{i:06d}\n" for i in range(start, start + burst)))
                fh.flush()

    hogs = _cpu_hogs(40)
    sampler, writer = threading.Thread(target=sample), threading.Thread(target=write_rest)
    try:
        worker = connect_standalone(tmp_path, worker_cfg, src, snk)
        wait_until(lambda: line_count(sink_file) > 0, 60, 0.01, what="the first line in the sink")
        sampler.start()
        writer.start()
        time.sleep(6.5)  # most of the bursts, with their idle gaps
        worker.kill9()
        stop.set()
        sampler.join()
        writer.join()
    finally:
        stop.set()
        for hog in hogs:
            hog.kill()
            hog.wait()
    at_kill = _state_at_kill(tmp_path, source_file, sink_file)
    topic_end, source_committed = at_kill.topic_end, at_kill.source_committed
    sink_committed, sink_lines_at_kill = at_kill.sink_committed, at_kill.sink_lines
    bound = at_kill.duplicate_bound
    late = []
    for at, _lines, source, sink in samples:
        settled = max((n for t, n, _s, _k in samples if t <= at - interval - slack), default=0)
        if source < settled or sink < settled:
            late.append(f"{at - samples[0][0]:.2f} s: source committed {source}, sink committed {sink}, "
                        f"{settled} written by {interval + slack:.1f} s before")
    print(f"{len(samples)} samples, {len(late)} with a late commit; at the kill: sink {sink_lines_at_kill} lines, "
          f"sink committed {sink_committed}, topic {topic_end}, source committed {source_committed}")
    assert samples and samples[-1][1] > first, "the pipeline hardly moved: the machine is too slow for this test"
    assert not late, "commits came later than the flush interval:\n" + "\n".join(late[:10])

    wanted = source_file.read_bytes().count(b"\n")
    worker = connect_standalone(tmp_path, worker_cfg, src, snk)
    try:
        wait_until(lambda: worker.log().count("Headrace standalone worker started") == 2, 60, what="the restart")
        wait_until(lambda: _all_committed(tmp_path, source_file), 120, what="every line read and committed again")
    finally:
        assert worker.terminate() == 0, worker.log()
    lines = sink_file.read_text().splitlines()
    expected = {f"line-{i:06d}" for i in range(wanted)}
    assert expected <= set(lines), f"lost {len(expected - set(lines))} lines"
    duplicates = len(lines) - len(set(lines))
    print(f"kill -9 under CPU load: {duplicates} duplicates of {wanted} lines, bound {bound}")
    assert duplicates <= bound, f"{duplicates} duplicates exceed the flush-interval bound {bound}"


@pytest.mark.slow  # several seconds of a real worker: kept out of the fast suite
def test_torn_segment_tail_is_recovered_by_the_cli_tools(tmp_path):
    cfg = worker_properties(tmp_path)
    # three batches of 100 written by the log's own producer (the CLI tools are what is tested below)
    backend = open_log_backend({"embedded.log.dir": str(tmp_path / "data")})
    backend.admin().create_topic(NewTopic("torn", 1))
    producer = backend.producer()
    for part in range(3):
        producer.send_batch("torn", 0, [f"batch{part}-{i}".encode() for i in range(100)])
        assert producer.flush(30) == 0
    producer.close()
    backend.close()
    segment = sorted((tmp_path / "data" / "torn-0").glob("*.log"))[-1]
    size = segment.stat().st_size
    with open(segment, "r+b") as fh:
        fh.truncate(size - 37)  # cut the last batch in the middle
    # the timeout is the "nothing after offset 199" check: no record may come while it runs
    res = run_cli(["headrace", "console-consumer", "-c", str(cfg), "--topic", "torn", "--from-beginning",
                   "--timeout-ms", "3000"])
    assert res.returncode == 0, res.stderr
    values = res.stdout.decode().splitlines()
    assert values == [f"batch{p}-{i}" for p in range(2) for i in range(100)]
    # appends continue at the right offset after recovery
    res = run_cli(["headrace", "console-producer", "-c", str(cfg), "--topic", "torn"], input=b"after\n")
    assert res.returncode == 0, res.stderr
    res = run_cli(["headrace", "console-consumer", "-c", str(cfg), "--topic", "torn", "--from-beginning",
                   "--max-messages", "201", "--timeout-ms", "10000", "--property", "print.offset=true",
                   "--property", "key.separator=|"])
    assert res.stdout.decode().splitlines()[-1] == "0:200|after"


@pytest.mark.parametrize(
    ("props", "expect"),
    [
        ({"name": "x", "tasks.max": 1, "file": "a.txt", "topic": "t"}, ["connector.class", "Missing required"]),
        ({"name": "x", "connector.class": "NoSuchConnector", "topic": "t"}, ["connector.class", "NoSuchConnector"]),
        ({"name": "x", "connector.class": "FileStreamSource", "tasks.max": "abc", "topic": "t"},
         ["tasks.max", "abc", "Not a number"]),
        ({"name": "x", "connector.class": "FileStreamSource", "file": "a.txt"}, ["topic", "Missing required"]),
        ({"name": "x", "connector.class": "FileStreamSink", "file": "a.txt"}, ["topics", "topics.regex"]),
    ],
    ids=["missing-class", "unknown-plugin", "bad-type", "missing-required", "sink-without-topics"],
)
def test_bad_connector_config_is_refused_at_start_up(tmp_path, props, expect):
    conn = write_properties(tmp_path / "bad.properties", props)
    res = run_cli(["connect-standalone", str(worker_properties(tmp_path)), str(conn)], cwd=tmp_path, timeout=60)
    assert res.returncode != 0
    err = res.stderr.decode()
    error_lines = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert error_lines, err
    assert "Traceback" not in err
    assert "bad.properties" in error_lines[0]
    for word in expect:
        assert word in error_lines[0], error_lines[0]
    assert not (tmp_path / "data").exists(), "nothing may run before the config is accepted"


def test_bad_worker_config_is_refused(tmp_path):
    cfg = write_properties(tmp_path / "w.properties", {"key.converter": "NoSuchConverter",
                                                        "value.converter": "StringConverter",
                                                        "offset.storage.file.filename": "x"})
    res = run_cli(["connect-standalone", str(cfg)], cwd=tmp_path)
    assert res.returncode != 0
    err = res.stderr.decode()
    assert "w.properties" in err and "key.converter" in err and "Traceback" not in err
    missing = write_properties(tmp_path / "m.properties", {"value.converter": "StringConverter"})
    res = run_cli(["connect-standalone", str(missing)], cwd=tmp_path)
    assert res.returncode != 0 and "key.converter" in res.stderr.decode()
