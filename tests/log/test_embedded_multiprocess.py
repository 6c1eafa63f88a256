"""Several OS processes on one embedded log directory: concurrent appends, tailing, kill -9."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log.api import NewTopic
from connect.log.embedded.backend import EmbeddedBackend
from tests.support import wait_until

pytestmark = pytest.mark.timeout(120)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TP = TopicPartition("t", 0)
QUIET = {"log.retention.check.interval.ms": 3_600_000}

WRITER = textwrap.dedent(
    """
    import os, random, sys, time
    from connect.log.embedded.backend import EmbeddedBackend
    directory, name, batches, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    backend = EmbeddedBackend(directory, {"log.retention.check.interval.ms": 3600000})
    producer = backend.producer()
    print("ready", flush=True)
    while not os.path.exists(os.path.join(directory, "go")):
        time.sleep(0.001)
    rng = random.Random(name)
    sent = 0
    for b in range(batches):
        n = rng.randint(1, 20)
        producer.send_batch("t", 0, [b"%s:%d" % (name.encode(), sent + i) for i in range(n)])
        producer.flush()
        sent += n
        print(sent, flush=True)
        if pause:
            time.sleep(pause)
    producer.close()
    backend.close()
    """
)


def spawn_writers(directory, names: list[str], batches: int, pause: float = 0.0) -> list[subprocess.Popen[str]]:
    """Start writer processes and release them together once all are ready."""
    env = {**os.environ, "PYTHONPATH": REPO}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(directory), name, str(batches), str(pause)],
            stdout=subprocess.PIPE, text=True, env=env,
        )
        for name in names
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    (directory / "go").touch()
    return procs


def read_everything(backend: EmbeddedBackend) -> tuple[list[int], list[bytes]]:
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([TP])
    offsets: list[int] = []
    values: list[bytes] = []
    while batches := consumer.poll(0.05, 100_000):
        for fb in batches:
            offsets.extend(fb.offsets)
            values.extend(fb.values)
    consumer.close()
    return offsets, values


def check_writer_records(values: list[bytes], name: str, count: int) -> None:
    mine = [int(v.split(b":")[1]) for v in values if v.startswith(name.encode() + b":")]
    assert mine == list(range(count)), f"{name}: records missing, duplicated or out of order"


def test_two_processes_append_to_one_partition(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    # small segments so that rolls happen while both processes append
    backend.admin().create_topic(NewTopic("t", 1, configs={"segment.bytes": "20000", "index.interval.bytes": "512"}))
    # a short pause after each batch lets the other writer in even on a loaded machine, where a writer
    # could otherwise finish its whole time slice (and all its batches) alone
    writers = spawn_writers(tmp_path, ["a", "b"], 400, pause=0.001)
    totals = {}
    for name, proc in zip(("a", "b"), writers, strict=True):
        out, _ = proc.communicate(timeout=90)
        assert proc.returncode == 0
        totals[name] = int(out.split()[-1])
    offsets, values = read_everything(backend)
    assert offsets == list(range(totals["a"] + totals["b"]))
    assert len(set(values)) == len(values)
    for name, count in totals.items():
        check_writer_records(values, name, count)
    # the two really did interleave, rather than one finishing before the other began
    switches = sum(1 for x, y in itertools.pairwise(values) if x[:1] != y[:1])
    assert switches > 10
    assert len([f for f in os.listdir(tmp_path / "t-0") if f.endswith(".log")]) > 1
    backend.close()


def test_reader_tails_a_writer_in_another_process(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("t", 1, configs={"segment.bytes": "4000"}))
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    consumer.assign([TP])
    (writer,) = spawn_writers(tmp_path, ["w"], 60, pause=0.01)
    values: list[bytes] = []

    def caught_up() -> bool:
        next_offset = len(values)
        for fb in consumer.poll(0.2, 1000):
            assert fb.offsets[0] == next_offset  # in order, nothing skipped, nothing twice
            next_offset = fb.offsets[-1] + 1
            values.extend(fb.values)
        return writer.poll() is not None and consumer.end_offsets([TP])[TP] <= next_offset

    wait_until(caught_up, 60, interval=0, what="the reader to reach the writer's end")
    total = int(writer.communicate()[0].split()[-1])
    assert writer.returncode == 0
    check_writer_records(values, "w", total)
    consumer.close()
    backend.close()


def test_appends_acknowledged_before_kill_9_survive(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    backend.admin().create_topic(NewTopic("t", 1))
    backend.close()
    (writer,) = spawn_writers(tmp_path, ["k"], 100_000)
    acked = 0
    assert writer.stdout is not None
    for line in writer.stdout:
        acked = int(line)
        if acked > 2000:
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()

    backend = EmbeddedBackend(str(tmp_path), QUIET)
    offsets, values = read_everything(backend)
    assert len(offsets) >= acked
    check_writer_records(values, "k", len(values))
    # and the log goes on from where the dead writer stopped
    producer = backend.producer()
    producer.send_batch("t", 0, [b"after"])
    producer.flush()
    assert read_everything(backend)[0] == list(range(len(offsets) + 1))
    backend.close()
