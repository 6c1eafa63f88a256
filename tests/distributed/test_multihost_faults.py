"""Distributed mode across simulated hosts (tests/distributed/multihost.py): the broker and three workers each
in a network namespace of its own, every worker on port 8083, started from the shipped
``configs/connect-distributed.properties``; faults are links taken down.

Modelled on Apache Kafka's own Connect system tests (connect_distributed_test.py) plus network partitions.
The broker (tests/distributed/conftest.py) is shared; each test is a cluster of its own on it (its own ``group.id`` and internal
topics, the only change to the shipped worker config beyond bootstrap servers, listener and paths, unless a
test says why).
"""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from collections import Counter
from datetime import datetime
from typing import Any

import httpx
import pytest

from connect.runtime.properties import load_config_file
from tests.distributed.faults import (
    FLUSH_S,
    HEARTBEAT_S,
    SESSION_S,
    LineFeed,
    assert_status_matches_logs,
    create_topic,
    kafka_view,
    leader_of,
    post_from_inside,
    running,
    seconds,
    settled,
    start_cluster,
    stop_cluster,
    wait_running,
)
from tests.distributed.multihost import NamespacedKafka, status
from tests.support import wait_until

pytestmark = pytest.mark.timeout(600)


def test_shipped_configs_on_three_hosts_forward_writes_and_give_each_worker_its_own_id(multihost_network, multihost_broker, tmp_path):
    workers = start_cluster(multihost_network, tmp_path, multihost_broker)
    try:
        ids = {w.worker_id for w in workers}
        assert len(ids) == 3
        for w in workers:  # each worker's id is its own listener's address, not the machine's shared name
            started = w.log_lines("Distributed herder started")
            assert started and f"(worker {w.worker_id}, REST {w.url})" in started[-1][1], started
        leader = leader_of(workers)
        follower = next(w for w in workers if w is not leader)
        source = tmp_path / "in.txt"
        source.write_text("".join(f"hello-{i}\n" for i in range(10)))
        config = {"connector.class": "FileStreamSink", "tasks.max": "3", "topics": "mh-hello",
                  "file": str(tmp_path / "out.txt")}
        with follower.http() as http:  # forwarded to the leader at its advertised URL
            r = http.post("/connectors", json={"name": "hello", "config": config})
        assert r.status_code == 201, r.text
        # every worker lists it and reports the same three RUNNING tasks, one on each worker
        for w in workers:
            body = wait_until(lambda w=w: (s := status(w, "hello")) and running(s, 3) and s, 60, 0.3,
                              what=f"3 tasks RUNNING as {w.worker_id} sees them")
            assert set(running(body, 3) or ()) == ids, body
        with follower.http() as http:  # a second write through the follower: the pause, answered 202
            assert http.put("/connectors/hello/pause").status_code == 202
        wait_until(lambda: (s := status(follower, "hello")) and s["connector"]["state"] == "PAUSED", 30, 0.3,
                   what="PAUSED")
    finally:
        stop_cluster(workers)



@pytest.mark.slow
def test_a_worker_cut_off_for_60_s_stops_its_tasks_and_its_work_moves_then_it_rejoins(multihost_network, multihost_broker, tmp_path):
    # The shipped scheduled.rebalance.max.delay.ms (5 min, Kafka Connect's default) outlasts the 60 s cut, so
    # the departed worker's work would wait for it and never move; 5 s lets it move during the cut.
    delay_s = 5.0
    workers = start_cluster(multihost_network, tmp_path, multihost_broker, **{"scheduled.rebalance.max.delay.ms": int(delay_s * 1000)})
    feed: LineFeed | None = None
    try:
        topic = f"mh-lines-{uuid.uuid4().hex[:8]}"
        create_topic(multihost_broker, topic, 6)
        source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
        source_file.touch()
        leader = leader_of(workers)
        with leader.http() as http:
            r = http.post("/connectors", json={"name": "lines-in", "config": {
                "connector.class": "FileStreamSource", "tasks.max": "1", "file": str(source_file),
                "topic": topic}})
            assert r.status_code == 201, r.text
            r = http.post("/connectors", json={"name": "lines-out", "config": {
                "connector.class": "FileStreamSink", "tasks.max": "6", "topics": topic, "file": str(sink_file)}})
            assert r.status_code == 201, r.text
        for name, count in (("lines-in", 1), ("lines-out", 6)):
            wait_until(lambda n=name, c=count: running(status(leader, n), c), 90, 0.3, what=f"{name} RUNNING")
        feed = LineFeed(source_file, rate=100).start()
        wait_until(lambda: sink_file.exists() and sink_file.stat().st_size > 2000, 90, 0.3,
                   what="lines through source, topic and sink")

        # a cut in the middle of a rebalance is another case (the unit tests have it): this one starts from a
        # group at rest, past the scheduled delays of its start-up
        wait_until(lambda: settled(workers, delay_s + HEARTBEAT_S), 90, 0.5, what="a group at rest")
        placed = {f"{n}-{t['id']}": t["worker_id"] for n, c in (("lines-in", 1), ("lines-out", 6))
                  for t in wait_running(leader, n, c)["tasks"]}
        load = Counter(placed.values())
        victim = max((w for w in workers if w is not leader), key=lambda w: load[w.worker_id])
        others = [w for w in workers if w is not victim]
        victim_tasks = sorted(t for t, owner in placed.items() if owner == victim.worker_id)
        assert victim_tasks, placed
        print(f"\ncutting {victim.worker_id} off; it runs {victim_tasks}; the tasks run on {dict(load)}")

        cut_at = time.monotonic()
        victim.host.cut()
        moved_s: float | None = None
        while time.monotonic() - cut_at < 60:
            if moved_s is None:
                bodies = [(status(w, n), c) for w in others for n, c in (("lines-in", 1), ("lines-out", 6))]
                if all((s := running(b, c)) and victim.worker_id not in s for b, c in bodies):
                    moved_s = time.monotonic() - cut_at
            time.sleep(0.3)
        victim.host.heal()
        healed_at = time.monotonic()

        lost = victim.log_lines("not a member of the group any more")
        assert moved_s is not None, "the cut worker's tasks did not move to the others during the 60 s cut"
        assert len(lost) == 1, f"expected one line saying the worker left the group, got {lost}"
        lost_s = seconds(cut_at, lost[0][0])
        print(f"cut -> all tasks RUNNING on the others: {moved_s:.1f} s (session.timeout.ms {SESSION_S:.0f} s + "
              f"scheduled.rebalance.max.delay.ms {delay_s:.0f} s); cut -> the cut worker stopped its work: "
              f"{lost_s:.1f} s")
        # the others took the work within the session timeout plus the scheduled delay (and a rebalance or two,
        # with a margin for this loaded machine)
        assert moved_s <= SESSION_S + delay_s + 15, moved_s
        # the cut worker stopped its tasks once its coordinator had been silent past the session timeout (plus
        # one search for it, heartbeat.interval.ms), long before the heal
        assert SESSION_S <= lost_s <= SESSION_S + HEARTBEAT_S + 10, lost[0]
        # and stopped every task there before the heal: ended, or given up for stopped after the graceful timeout
        # (a sink task whose offset commit waits for the unreachable broker), which then puts and reports nothing
        heal_s = healed_at - cut_at
        for task_id in victim_tasks:
            ended = [*victim.log_lines(f"{{id={task_id}}} Task stopped"),
                     *victim.log_lines(f"Graceful stop of task {task_id} failed")]
            assert any(lost_s <= seconds(cut_at, when) <= heal_s for when, _ in ended), (task_id, ended)

        # back on the network: it rejoins as a new member and is given work again (its own log says when; the
        # statuses below must then agree with it)
        def rejoined() -> datetime | None:
            return next((when for when, _, _, tasks in victim.rebalances()
                         if tasks and seconds(healed_at, when) > 0), None)

        rejoined_s = seconds(healed_at, wait_until(rejoined, 120, 0.3, what=f"work on {victim.worker_id}"))
        print(f"heal -> the cut worker rejoined and runs tasks again: {rejoined_s:.1f} s")

        # every worker tells the same, true story: each task RUNNING where it really runs
        def agreed() -> dict[str, Any] | None:
            views = {}
            for name, count in (("lines-in", 1), ("lines-out", 6)):
                bodies = [status(w, name) for w in workers]
                if any(not running(b, count) for b in bodies):
                    return None
                if len({kafka_view(b) for b in bodies if b}) != 1:
                    return None
                views[name] = bodies[0]
            return views

        views = wait_until(agreed, 90, 0.5, what="the same status on every worker")
        assert_status_matches_logs(workers, views.values())

        written = feed.stop()
        expected = {f"line-{i}" for i in range(written)}
        wait_until(lambda: set(sink_file.read_text().split()) >= expected, 120, 0.5, what="every line in the sink")
        lines = sink_file.read_text().split()
        duplicates = len(lines) - len(set(lines))
        # Duplicates (docs/guide/guarantees.md): what moved in the last flush interval before the cut is moved
        # again by the tasks' new owners (sink: from the last committed offsets; source: from the last committed
        # file position), so at most one flush interval of the feed for each of the two connectors.
        bound = int(feed.rate * FLUSH_S * 2)
        print(f"lines written {written}, in the sink {len(lines)}, distinct {len(set(lines))}, "
              f"duplicates {duplicates} (bound {bound})")
        assert duplicates <= bound
    finally:
        if feed is not None:
            feed.stop()
        stop_cluster(workers)


@pytest.mark.slow
def test_the_leader_cut_off_gives_way_to_a_new_one_and_writes_through_the_others_succeed(multihost_network, multihost_broker, tmp_path, kcat):
    rebalance_timeout_s = 60.0  # rebalance.timeout.ms of the shipped worker config (Kafka Connect's default)
    # With exactly-once source support the leader writes the config topic through a transactional producer
    # (KIP-618), so that a leader voted out cannot write it any more: that fencing is part of what a leader's
    # cut must show. One test rather than two (a cluster costs a minute or two): everything else a leader's cut
    # must do is the same with it on.
    workers = start_cluster(multihost_network, tmp_path, multihost_broker, **{"exactly.once.source.support": "enabled"})
    zombie_write: dict[str, Any] = {}
    try:
        wait_until(lambda: settled(workers, HEARTBEAT_S), 90, 0.5, what="a group at rest")
        old = leader_of(workers)
        rest = [w for w in workers if w is not old]
        with old.http() as http:  # some work on the leader, which it must stop once it is out of the group
            r = http.post("/connectors", json={"name": "before", "config": {
                "connector.class": "FileStreamSink", "tasks.max": "3", "topics": "mh-before",
                "file": str(tmp_path / "before.txt")}})
            assert r.status_code == 201, r.text
        wait_running(old, "before", 3)
        wait_until(lambda: settled(workers, HEARTBEAT_S), 90, 0.5, what="a group at rest")

        cut_at = time.monotonic()
        old.host.cut()
        # A write to the cut leader, from inside its own host (its address answers there while its link is down),
        # sent before it can know it lost the group: it still takes writes as the leader, and its transaction
        # must not reach the config topic once the new leader has claimed it.
        zombie = threading.Thread(target=post_from_inside, args=(old, "zombie", {
            "connector.class": "FileStreamSink", "tasks.max": "1", "topics": "mh-zombie",
            "file": str(tmp_path / "zombie.txt")}, zombie_write), daemon=True)
        zombie.start()

        def written_through_the_others() -> bool:
            for w in rest:
                try:
                    with w.http(10) as http:
                        r = http.post("/connectors", json={"name": "after", "config": {
                            "connector.class": "FileStreamSink", "tasks.max": "1", "topics": "mh-after",
                            "file": str(tmp_path / "after.txt")}})
                except httpx.HTTPError:
                    continue
                # "already exists": an earlier attempt got through after its answer was given up on
                if r.status_code == 201 or (r.status_code == 409 and "already exists" in r.text):
                    return True
            return False

        wait_until(written_through_the_others, rebalance_timeout_s, 0.5, what="a write through the others")
        write_s = time.monotonic() - cut_at
        new = next((w for w in rest if w.is_leader()), None)
        assert new is not None, [w.rebalances()[-1] for w in rest]
        # the cut leader stops its work too, once it knows it is out of the group
        wait_until(lambda: old.log_lines("not a member of the group any more"), 30, 0.3,
                   what="the cut leader giving up its membership")
        # the new leader's transactional producer of the config topic is initialised: the old one's is fenced
        claimed = wait_until(lambda: [when for when, _ in new.log_lines("transactionally as the leader")
                                      if seconds(cut_at, when) > 0], 30, 0.3, what="the new leader's claim")
        old.host.heal()
        healed_at = time.monotonic()
        print(f"\ncut -> {new.worker_id} claimed the config topic: {seconds(cut_at, claimed[0]):.1f} s")
        print(f"leader {old.worker_id} cut off: {new.worker_id} leads and a write through the others succeeded "
              f"{write_s:.1f} s after the cut (rebalance.timeout.ms {rebalance_timeout_s:.0f} s)")
        assert write_s <= rebalance_timeout_s

        # back, the old leader is a follower: a write through it goes to the new leader
        def forwarded() -> bool:
            with old.http(10) as http:
                r = http.put("/connectors/after/pause")
            return r.status_code == 202

        wait_until(forwarded, 90, 0.5, what="a write through the old leader")
        rejoined = next((when for when, _, led, _ in old.rebalances() if seconds(healed_at, when) > 0), None)
        assert rejoined is not None and not old.is_leader()
        print(f"heal -> the old leader rejoined as a follower: {seconds(healed_at, rejoined):.1f} s")
        wait_until(lambda: all((s := status(w, "after")) and s["connector"]["state"] == "PAUSED" for w in workers),
                   30, 0.3, what="PAUSED on every worker")
        assert len(old.log_lines("not a member of the group any more")) == 1

        # the zombie write: refused, never in the config topic a read_committed reader sees, on no worker
        zombie.join(180)
        assert not zombie.is_alive(), "the write to the cut leader did not end"
        print(f"the cut leader's own write ended {zombie_write['ended_s']:.1f} s after it was sent: "
              f"{zombie_write['code']} {zombie_write['body'][:300]}")
        assert zombie_write["code"] != 201, zombie_write
        # a 500 from its config-topic write, not a 409: it did try to write as the leader (else nothing was tested)
        assert zombie_write["code"] == 500 and "not stored" in zombie_write["body"], zombie_write
        time.sleep(3.0)  # what the old leader's producer could still commit would arrive by now
        config_topic = load_config_file(old.config_path)["config.storage.topic"]
        keys = _committed_keys(multihost_broker, config_topic)
        assert "connector-after" in keys, keys  # the reader reads the topic
        assert "connector-zombie" not in keys, keys
        for w in workers:
            with w.http(10) as http:
                listed = http.get("/connectors").json()
            assert "after" in listed and "zombie" not in listed, (w.worker_id, listed)
    finally:
        stop_cluster(workers)


def _committed_keys(broker: NamespacedKafka, topic: str) -> list[str]:
    """The keys of ``topic`` as a read_committed consumer (kcat) sees them."""
    done = subprocess.run(["kcat", "-C", "-b", broker.bootstrap_servers, "-t", topic, "-o", "beginning", "-e", "-q",
                           "-X", "isolation.level=read_committed", "-f", "%k\n"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    return done.stdout.splitlines()
