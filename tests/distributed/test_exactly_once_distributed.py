"""Exactly-once sources (KIP-618) on three real ``connect-distributed`` workers and the session's broker.

The topic is read back by kcat with ``isolation.level=read_committed``, an independent client: it sees a
record only when the transaction that wrote it committed, which is what exactly-once promises consumers.
Workers start from the shipped config; every test here moves a task off a killed, frozen or restarted worker,
so it asks for ``FAILOVER_TIMINGS`` (tests/distributed/cluster.py says why).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from services.kafka import KafkaService
from tests.distributed.cluster import (
    RAW_LINES,
    ClusterNames,
    DistributedWorker,
    leader_of,
    start_cluster,
    status,
    wait_running,
)
from tests.support import wait_until

pytestmark = pytest.mark.timeout(600)

TOTAL = 500_000


@pytest.fixture
def names(unique_topic: Callable[..., str]) -> ClusterNames:
    return ClusterNames(unique_topic)


def _kcat_committed(kafka: KafkaService, topic: str, timeout: float = 120) -> list[str]:
    """The topic's values as kcat reads them with read_committed; none while the topic does not exist."""
    done = subprocess.run(["kcat", "-C", "-b", kafka.bootstrap_servers, "-t", topic, "-o", "beginning", "-e", "-q",
                           "-X", "isolation.level=read_committed", "-f", "%s\n"], capture_output=True,
                          timeout=timeout)
    if done.returncode != 0:
        assert b"Unknown topic" in done.stderr or b"UNKNOWN_TOPIC" in done.stderr, done.stderr.decode()[-500:]
        return []
    return done.stdout.decode().splitlines()


def _kcat_count(kafka: KafkaService, topic: str) -> int:
    return len(_kcat_committed(kafka, topic))


def _source(http: httpx.Client, name: str, topic: str, file: Path, **extra: str) -> httpx.Response:
    # raw lines in the topic (not the shipped JSON converter's envelopes): kcat compares them with the file's
    return http.put(f"/connectors/{name}/config", json={
        "connector.class": "FileStreamSource", "tasks.max": "1", "topic": topic, "file": str(file),
        "exactly.once.support": "required", "batch.size": "2000", **RAW_LINES, **extra})


def _owner(workers: list[DistributedWorker], name: str) -> DistributedWorker | None:
    for w in workers:
        if not w.alive():
            continue
        body = status(w, name)
        if body and body["tasks"] and body["tasks"][0]["state"] == "RUNNING":
            return next((x for x in workers if x.worker_id == body["tasks"][0]["worker_id"]), None)
    return None


def _stop_all(workers: list[DistributedWorker]) -> None:
    for w in workers:
        if w.alive():
            w.stop()


def test_every_line_once_for_read_committed_after_five_kill_9s_of_the_tasks_worker(tmp_path, kafka, names,
                                                                                   unique_topic, kcat):
    topic = unique_topic("eos")
    source = tmp_path / "input.txt"
    expected = [f"line-{i:06d}" for i in range(TOTAL)]
    source.write_text("".join(f"{line}\n" for line in expected))
    workers = start_cluster(tmp_path, kafka, names, 3, fast_failover=True, **{"exactly.once.source.support": "enabled"})
    rng = random.Random(618)
    try:
        with leader_of(workers).http() as http:
            response = _source(http, "eos", topic, source)
            assert response.status_code == 201, response.text
        for kill in range(5):
            owner = wait_until(lambda: _owner(workers, "eos"), 120, what=f"the task running (round {kill + 1})")
            time.sleep(rng.uniform(0.5, 2.0))  # mid-transaction or between two: a random moment
            index = workers.index(owner)
            owner.kill9()
            workers[index] = DistributedWorker(tmp_path, kafka, names, 10 + kill, fast_failover=True,
                                               **{"exactly.once.source.support": "enabled"}).start()
        wait_until(lambda: _kcat_count(kafka, topic) >= TOTAL, 300, interval=2.0, what="every line committed")
        lines = _kcat_committed(kafka, topic)
        assert len(lines) == len(set(lines)), f"{len(lines) - len(set(lines))} duplicates visible to read_committed"
        assert lines == expected
    finally:
        _stop_all(workers)


def test_a_stopped_zombie_is_fenced_and_cannot_commit_when_it_resumes(tmp_path, kafka, names, unique_topic, kcat):
    topic = unique_topic("zombie")
    source = tmp_path / "input.txt"
    first = [f"line-{i:06d}" for i in range(50_000)]
    source.write_text("".join(f"{line}\n" for line in first))
    workers = start_cluster(tmp_path, kafka, names, 3, fast_failover=True, **{"exactly.once.source.support": "enabled"})
    zombie: DistributedWorker | None = None
    try:
        with leader_of(workers).http() as http:
            assert _source(http, "zombie", topic, source, **{"transaction.boundary": "interval",
                                                            "transaction.boundary.interval.ms": "2000"}
                           ).status_code == 201
        wait_until(lambda: _kcat_count(kafka, topic) >= len(first), 120, what="the first lines committed")
        zombie = wait_until(lambda: _owner(workers, "zombie"), 60, what="the task's worker")
        assert zombie.proc is not None and zombie.proc.proc is not None
        pid = zombie.proc.proc.pid
        os.kill(pid, signal.SIGSTOP)  # a long GC pause or a frozen VM: alive, but silent to the group
        try:
            more = [f"line-{i:06d}" for i in range(len(first), len(first) + 20_000)]
            with open(source, "a") as fh:
                fh.write("".join(f"{line}\n" for line in more))
            others = [w for w in workers if w is not zombie]
            wait_running(others[0], "zombie", 1, timeout=120, on={w.worker_id for w in others})
            wait_until(lambda: _kcat_count(kafka, topic) >= len(first) + len(more), 120,
                       what="the new owner committing the appended lines")
        finally:
            os.kill(pid, signal.SIGCONT)
        # the zombie wakes inside its open transaction: its producer was fenced, so it can commit nothing
        wait_until(lambda: "fenced" in zombie.log() or not zombie.alive(), 60, what="the zombie to notice")
        time.sleep(3.0)  # what a zombie could still write would arrive now: there must be none of it
        lines = _kcat_committed(kafka, topic)
        assert len(lines) == len(set(lines)), "a zombie's transaction became visible"
        assert lines == first + more
    finally:
        _stop_all(workers)


def test_preparing_to_enabled_rolling_upgrade_loses_nothing(tmp_path, kafka, names, unique_topic, kcat):
    topic = unique_topic("upgrade")
    source = tmp_path / "input.txt"
    expected = [f"line-{i:06d}" for i in range(100_000)]
    source.write_text("".join(f"{line}\n" for line in expected[:30_000]))
    workers = start_cluster(tmp_path, kafka, names, 3, fast_failover=True, **{"exactly.once.source.support": "preparing"})
    try:
        with leader_of(workers).http() as http:
            body = {"connector.class": "FileStreamSource", "tasks.max": "1", "topic": topic, "file": str(source),
                    **RAW_LINES}
            assert http.put("/connectors/upgrade/config", json=body).status_code == 201
        wait_until(lambda: _kcat_count(kafka, topic) >= 30_000, 120, what="lines before the upgrade")
        written = 30_000
        for i, old in enumerate(list(workers)):
            old.stop()
            workers[i] = DistributedWorker(tmp_path, kafka, names, 20 + i, fast_failover=True,
                                           **{"exactly.once.source.support": "enabled"}).start()
            chunk = expected[written:written + 20_000]
            with open(source, "a") as fh:
                fh.write("".join(f"{line}\n" for line in chunk))
            written += len(chunk)
        with open(source, "a") as fh:
            fh.write("".join(f"{line}\n" for line in expected[written:]))
        wait_until(lambda: set(_kcat_committed(kafka, topic)) >= set(expected), 180, interval=2.0,
                   what="every line after the upgrade")
        assert "Transactional producer ready" in "".join(w.log() for w in workers), "no task ran exactly once"
    finally:
        _stop_all(workers)
