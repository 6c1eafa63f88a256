"""Exactly-once sources (KIP-618) across simulated hosts (tests/distributed/multihost.py): the worker that runs
an exactly-once FileStreamSource task is cut off from the broker and the other workers for 60 s.

What a consumer sees is read by kcat with ``isolation.level=read_committed`` from the root namespace (on the
bridge), an independent client: a record shows only once the transaction that wrote it committed.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from datetime import datetime
from typing import Any

import httpx
import pytest

from connect.log import open_log_reader
from connect.runtime.properties import load_config_file
from tests.distributed.faults import (
    HEARTBEAT_S,
    SESSION_S,
    LineFeed,
    cluster_names,
    create_topic,
    leader_of,
    post_from_inside,
    running,
    seconds,
    settled,
    start_cluster,
    stop_cluster,
    wait_running,
)
from tests.distributed.multihost import NamespacedKafka, NamespacedWorker, status
from tests.support import wait_until

pytestmark = pytest.mark.timeout(600)


def committed(broker: NamespacedKafka, topic: str, fmt: str = "%s\n", timeout: float = 120) -> list[str]:
    """``topic`` as a read_committed consumer sees it (kcat's ``-f`` format per record); [] before it exists."""
    done = subprocess.run(["kcat", "-C", "-b", broker.bootstrap_servers, "-t", topic, "-o", "beginning", "-e", "-q",
                           "-X", "isolation.level=read_committed", "-f", fmt], capture_output=True, timeout=timeout)
    if done.returncode != 0:
        assert b"Unknown topic" in done.stderr or b"UNKNOWN_TOPIC" in done.stderr, done.stderr.decode()[-500:]
        return []
    return done.stdout.decode().splitlines()


def stable_lines(broker: NamespacedKafka, topic: str) -> list[str]:
    """``topic``'s values as the project's own read_committed reader sees them, up to the last stable offset: it
    never waits for a transaction still open (kcat's ``-e`` may, while a task commits one after another)."""
    reader = open_log_reader({"bootstrap.servers": broker.bootstrap_servers, "isolation.level": "read_committed"})
    try:
        lines: list[str] = []
        for tp, (start, _) in sorted(reader.partition_offsets([topic]).items()):
            stable = reader.stable_offsets({tp: start}).get(tp, start)
            position = start
            while position < stable:
                got = reader.read(tp.topic, tp.partition, position, stable)
                lines += [(v or b"").decode() for batch in got.batches for v in batch.values]
                if got.next_offset <= position:
                    break
                position = got.next_offset
        return lines
    finally:
        reader.close()


def task_owner(workers: list[NamespacedWorker], body: dict[str, Any]) -> NamespacedWorker:
    return next(w for w in workers if w.worker_id == body["tasks"][0]["worker_id"])


@pytest.mark.slow
def test_a_cut_worker_running_an_exactly_once_source_is_fenced_and_every_line_is_committed_once(
        multihost_network, multihost_broker, tmp_path, kcat):
    delay_s = 5.0
    workers = start_cluster(multihost_network, tmp_path, multihost_broker, **{
        # the thing tested: source tasks write in transactions, their offsets in the same ones, and a task's
        # new instance fences the old one's producer
        "exactly.once.source.support": "enabled",
        # the shipped 5 min (Kafka Connect's default) outlasts the 60 s cut, so the departed worker's task would
        # wait for it and never move; 5 s lets it move during the cut
        "scheduled.rebalance.max.delay.ms": int(delay_s * 1000)})
    feed: LineFeed | None = None
    try:
        topic = f"mh-eos-{uuid.uuid4().hex[:8]}"
        create_topic(multihost_broker, topic, 1)  # one partition: the committed lines must also keep their order
        source_file = tmp_path / "in.txt"
        source_file.touch()
        with leader_of(workers).http() as http:
            r = http.post("/connectors", json={"name": "eos-in", "config": {
                "connector.class": "FileStreamSource", "tasks.max": "1", "file": str(source_file), "topic": topic,
                "exactly.once.support": "required",
                # raw lines in the topic, for kcat to compare (the shipped worker converter is JSON with schemas)
                "value.converter": "org.apache.kafka.connect.storage.StringConverter"}})
            assert r.status_code == 201, r.text
        wait_running(workers[0], "eos-in", 1)
        feed = LineFeed(source_file, rate=100).start()
        wait_until(lambda: len(stable_lines(multihost_broker, topic)) >= 300, 90, 1.0,
                   what="lines committed through the exactly-once source")
        wait_until(lambda: settled(workers, delay_s + HEARTBEAT_S), 90, 0.5, what="a group at rest")

        victim = task_owner(workers, wait_running(workers[0], "eos-in", 1))
        others = [w for w in workers if w is not victim]
        print(f"\ncutting {victim.worker_id} off (it runs eos-in-0{', and leads' if victim.is_leader() else ''})")
        cut_at = time.monotonic()
        victim.host.cut()
        moved_s: float | None = None
        flowing_s: float | None = None
        at_move = 0
        while time.monotonic() - cut_at < 60:
            if moved_s is None:
                bodies = [status(w, "eos-in") for w in others]
                if all(running(b, 1) and b["tasks"][0]["worker_id"] != victim.worker_id for b in bodies):
                    moved_s = time.monotonic() - cut_at
                    at_move = len(stable_lines(multihost_broker, topic))
            elif flowing_s is None and len(stable_lines(multihost_broker, topic)) > at_move + 200:
                flowing_s = time.monotonic() - cut_at
            time.sleep(0.3)
        victim.host.heal()
        healed_at = time.monotonic()

        assert moved_s is not None, "the cut worker's exactly-once task did not move to the others during the cut"
        assert flowing_s is not None, "no new lines were committed after the task moved"
        successor = task_owner(workers, wait_running(others[0], "eos-in", 1))
        print(f"cut -> eos-in-0 RUNNING on {successor.worker_id}: {moved_s:.1f} s, committed lines flowing again: "
              f"{flowing_s:.1f} s (session.timeout.ms {SESSION_S:.0f} s + scheduled.rebalance.max.delay.ms "
              f"{delay_s:.0f} s)")
        # Taken within the session timeout plus the scheduled delay, with a margin for rebalances on this
        # loaded machine (the bound of the plain cut test in test_multihost_faults.py).
        assert moved_s <= SESSION_S + delay_s + 15, moved_s

        # The successor's producer of the task's transactional id initialised after the cut: that bumps the id's
        # epoch, which fences the cut worker's producer and aborts what it had open.
        ready = [when for when, _ in successor.log_lines("eos-in-0} Transactional producer ready")]
        assert any(seconds(cut_at, when) > 0 for when in ready), ready
        # The cut worker stopped its task on losing its membership (before the heal), and its own log tells
        # how its transaction ended: aborted as it closed, or refused as fenced.
        lost = victim.log_lines("not a member of the group any more")
        assert lost and 0 < seconds(cut_at, lost[0][0]) < healed_at - cut_at, lost
        ended = [*victim.log_lines("{id=eos-in-0} Task stopped"), *victim.log_lines("Graceful stop of task eos-in-0")]
        assert any(seconds(cut_at, when) > 0 for when, _ in ended), ended
        fenced = [line for _, line in victim.log_lines("fenced") if "eos-in" in line and "older" not in line]
        aborted = [line for _, line in victim.log_lines("eos-in-0} Aborted the open transaction")]
        unaborted = [line for _, line in victim.log_lines("eos-in-0} Could not abort the open transaction")]
        print(f"the cut worker lost its membership {seconds(cut_at, lost[0][0]):.1f} s after the cut and stopped "
              f"eos-in-0; its transaction: {len(fenced)} fenced line(s), {len(aborted)} aborted as it closed, "
              f"{len(unaborted)} left to the broker to abort")
        for line in (fenced + aborted + unaborted)[:3]:
            print("  " + line[:300])

        # back on the network, it rejoins the group: a completed rebalance in the generation the others are in
        def rejoined() -> datetime | None:
            done = [r for r in victim.rebalances() if seconds(healed_at, r[0]) > 0]
            if not done or not settled(workers, HEARTBEAT_S):
                return None
            return done[0][0]

        rejoined_s = seconds(healed_at, wait_until(rejoined, 120, 0.5, what=f"{victim.worker_id} rejoining"))
        print(f"heal -> the cut worker rejoined: {rejoined_s:.1f} s")

        written = feed.stop()
        expected = [f"line-{i}" for i in range(written)]
        wait_until(lambda: len(stable_lines(multihost_broker, topic)) >= written, 120, 2.0,
                   what="every line committed")
        time.sleep(3.0)  # what a zombie could still commit would arrive by now: there must be none
        lines = committed(multihost_broker, topic)  # kcat, an independent client, once no transaction is open
        assert lines == stable_lines(multihost_broker, topic)
        duplicates = len(lines) - len(set(lines))
        print(f"lines written {written}, committed {len(lines)}, distinct {len(set(lines))}, "
              f"duplicates {duplicates}, missing {len(set(expected) - set(lines))}")
        assert duplicates == 0, "a line became visible to read_committed twice"
        assert lines == expected
    finally:
        if feed is not None:
            feed.stop()
        stop_cluster(workers)


@pytest.mark.slow
def test_a_config_write_that_times_out_in_a_cut_never_lands_and_the_leader_writes_again_after_the_heal(
        multihost_network, multihost_broker, tmp_path, kcat):
    # One worker, its own leader the whole time (no other member to take over): what a leader does after one of
    # its transactional config writes failed, with nobody else there to fence it.
    worker = NamespacedWorker(multihost_network["w1"], tmp_path, multihost_broker, **cluster_names(), **{
        # the thing tested: with it the leader writes the config topic in transactions (KIP-618)
        "exactly.once.source.support": "enabled"}).start()
    answer: dict[str, Any] = {}
    try:
        worker.wait_ready()
        wait_until(lambda: worker.is_leader() and worker.log_lines("transactionally as the leader"), 90, 0.3,
                   what="the worker leading and writing the config topic in transactions")

        def sink(name: str) -> dict[str, str]:
            return {"connector.class": "FileStreamSink", "tasks.max": "1", "topics": f"mh-{name}",
                    "file": str(tmp_path / f"{name}.txt")}

        cut_at = time.monotonic()
        worker.host.cut()
        # sent at once, from inside its host: the worker still leads and writes; the broker is out of reach
        post_from_inside(worker, "lost", sink("lost"), answer)
        print(f"\nthe write during the cut ended {answer['ended_s']:.1f} s after it was sent: {answer['code']} "
              f"{answer['body'][:300]}")
        worker.host.heal()
        healed_at = time.monotonic()
        assert answer["code"] == 500 and "not stored" in answer["body"], answer

        # the leader writes again, without a restart
        def written() -> bool:
            try:
                with worker.http(40) as http:
                    r = http.post("/connectors", json={"name": "after", "config": sink("after")})
            except httpx.HTTPError:
                return False
            return r.status_code == 201 or (r.status_code == 409 and "already exists" in r.text)

        wait_until(written, 120, 1.0, what="a write through the leader after the heal")
        print(f"heal -> a write through the leader succeeded: {time.monotonic() - healed_at:.1f} s "
              f"(cut {healed_at - cut_at:.1f} s)")
        # the write it answered 500 for never lands: not in the topic a read_committed reader sees, not listed
        time.sleep(5.0)
        config_topic = load_config_file(worker.config_path)["config.storage.topic"]
        keys = committed(multihost_broker, config_topic, "%k\n")
        assert "connector-after" in keys, keys
        assert "connector-lost" not in keys, keys
        with worker.http(10) as http:
            listed = http.get("/connectors").json()
        assert listed == ["after"], listed
    finally:
        stop_cluster([worker])

