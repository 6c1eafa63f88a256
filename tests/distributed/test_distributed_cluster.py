"""Three real ``connect-distributed`` workers on the session's broker: spreading work, failover, a worker's
return, leader loss, a burst of creates, and refusals of bad set-ups.

Each test has a cluster of its own (group and internal topics). Workers start from the shipped
``configs/connect-distributed.properties``; the failover tests add ``FAILOVER_TIMINGS`` (short session timeouts
and a 3 s ``scheduled.rebalance.max.delay.ms``, tests/distributed/cluster.py says why) so that failover is
measured in seconds, as a production cluster's would be in its own configured times.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from connect.log import open_log_backend
from connect.log.api import NewTopic
from services.kafka import KafkaService
from tests.distributed.cluster import (
    FAILOVER_TIMINGS,
    RAW_LINES,
    ClusterNames,
    DistributedWorker,
    leader_of,
    running_tasks,
    start_cluster,
    status,
    wait_running,
)
from tests.support import line_count, wait_until

pytestmark = pytest.mark.timeout(300)

FLUSH_S = 10.0  # offset.flush.interval.ms of configs/connect-distributed.properties


class Feed:
    """Lines ``line-<n>`` produced to every partition of a topic at a steady rate, from a thread."""

    def __init__(self, kafka: KafkaService, topic: str, partitions: int, rate: int = 400) -> None:
        self.backend = open_log_backend({"bootstrap.servers": kafka.bootstrap_servers})
        admin = self.backend.admin()
        admin.create_topic(NewTopic(topic, partitions, 1))
        admin.close()
        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="feed", daemon=True)

    def _run(self) -> None:
        producer = self.backend.producer({"acks": "all"})
        batch = max(1, self.rate // 20)
        while not self._stop.is_set():
            values = [f"line-{self.sent + i}".encode() for i in range(batch)]
            for i, value in enumerate(values):
                producer.send(self.topic, value, partition=(self.sent + i) % self.partitions)
            producer.flush(30)
            self.sent += batch
            self._stop.wait(batch / self.rate)
        producer.close(10)

    def start(self) -> Feed:
        self._thread.start()
        return self

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(30)
        self.backend.close()
        return self.sent


def _sink(http: httpx.Client, name: str, topic: str, file: Path, tasks: int = 6) -> httpx.Response:
    # the topics hold Feed's raw lines, not the shipped JSON converter's envelopes
    return http.put(f"/connectors/{name}/config", json={
        "connector.class": "FileStreamSink", "tasks.max": str(tasks), "topics": topic, "file": str(file),
        **RAW_LINES})


def _stop_all(workers: list[DistributedWorker]) -> None:
    for w in workers:
        w.stop()


@pytest.fixture
def names(unique_topic: Callable[..., str]) -> ClusterNames:
    return ClusterNames(unique_topic)


def test_six_sink_tasks_created_through_a_follower_run_two_per_worker(tmp_path, kafka, names, unique_topic):
    topic = unique_topic("six")
    Feed(kafka, topic, 6).backend.close()
    workers = start_cluster(tmp_path, kafka, names, 3)
    try:
        leader = leader_of(workers)
        follower = next(w for w in workers if w is not leader)
        with follower.http() as http:
            r = _sink(http, "spread", topic, tmp_path / "sink.txt")
        assert r.status_code == 201, r.text
        body = wait_running(leader, "spread", 6)
        spread = running_tasks(body, 6)
        assert spread is not None and sorted(spread.values()) == [2, 2, 2], body
        assert set(spread) == {w.worker_id for w in workers}
        # Kafka's own tools see the cluster as a classic group of protocol type connect (kafka-groups.sh
        # --list); kafka-consumer-groups.sh --describe names the type and declines to describe it further
        listed = kafka.run_tool("org.apache.kafka.tools.GroupsCommand", "--bootstrap-server",
                                kafka.bootstrap_servers, "--list")
        row = next((line.split() for line in listed.stdout.splitlines() if line.startswith(names.group + " ")), None)
        assert row is not None and row[1:] == ["Classic", "connect"], listed.stdout + listed.stderr
        described = kafka.consumer_groups("--describe", "--group", names.group)
        assert f"GroupId {names.group} is not a consumer group (connect)" in described.stdout + described.stderr
        # every worker reports the same, from the status topic
        for w in workers:
            seen = wait_until(lambda w=w: (s := status(w, "spread")) and running_tasks(s, 6) == spread and s,
                              30, what=f"status on {w.worker_id}")
            assert {t["id"]: t["worker_id"] for t in seen["tasks"]} == {
                t["id"]: t["worker_id"] for t in body["tasks"]}
            assert seen["connector"]["worker_id"] in spread
    finally:
        _stop_all(workers)


def test_kill_9_moves_the_work_then_the_returning_worker_gets_its_share(tmp_path, kafka, names, unique_topic):
    topic = unique_topic("failover")
    sink_file = tmp_path / "sink.txt"
    feed = Feed(kafka, topic, 6)
    workers = start_cluster(tmp_path, kafka, names, 3, fast_failover=True)
    try:
        leader = leader_of(workers)
        with leader.http() as http:
            assert _sink(http, "failover", topic, sink_file).status_code == 201
        wait_running(leader, "failover", 6)
        feed.start()
        wait_until(lambda: line_count(sink_file) > 1000, 60, what="lines reaching the sink")

        victim = next(w for w in workers if w is not leader)
        survivors = [w for w in workers if w is not victim]
        killed_at = time.monotonic()
        victim.kill9()
        wait_running(leader, "failover", 6, timeout=120, on={w.worker_id for w in survivors})
        recovery = time.monotonic() - killed_at
        print(f"\nkill -9 to all 6 tasks RUNNING on the 2 survivors: {recovery:.1f} s "
              f"(session.timeout.ms {FAILOVER_TIMINGS['session.timeout.ms']} + scheduled.rebalance.max.delay.ms "
              f"{FAILOVER_TIMINGS['scheduled.rebalance.max.delay.ms']})")

        # the worker comes back: it gets two tasks, and the survivors restart none of theirs
        started_before = {w.worker_id: Counter(w.started_tasks()) for w in survivors}
        back = DistributedWorker(tmp_path, kafka, names, 9, fast_failover=True).start()
        workers.append(back)
        body = wait_running(leader, "failover", 6, timeout=120)
        wait_until(lambda: (s := running_tasks(status(leader, "failover"), 6)) and s.get(back.worker_id) == 2,
                   60, what="two tasks on the returning worker")
        body = status(leader, "failover")
        spread = running_tasks(body, 6)
        assert spread is not None and sorted(spread.values()) == [2, 2, 2], body
        for w in survivors:
            assert Counter(w.started_tasks()) == started_before[w.worker_id], (
                f"{w.worker_id} restarted tasks that did not need to move")

        sent = feed.stop()
        expected = {f"line-{i}" for i in range(sent)}
        wait_until(lambda: set(sink_file.read_text().split()) >= expected, 90, what="every line in the sink")
        lines = sink_file.read_text().split()
        duplicates = len(lines) - len(set(lines))
        # What the killed worker's two tasks wrote after their last commit is written again by their new owner:
        # at most one flush interval of their share of the feed, plus the feed that arrived while the group
        # noticed the kill (those tasks' partitions were still assigned to the dead consumer).
        bound = int(feed.rate * (FLUSH_S + 1.0))
        print(f"lines {len(lines)}, distinct {len(set(lines))}, duplicates {duplicates} (bound {bound})")
        assert duplicates <= bound
    finally:
        if not feed._stop.is_set():
            feed.stop()
        _stop_all(workers)


def test_a_new_leader_takes_over_and_follower_writes_are_forwarded(tmp_path, kafka, names, unique_topic):
    topic = unique_topic("leader")
    Feed(kafka, topic, 3).backend.close()
    workers = start_cluster(tmp_path, kafka, names, 3, fast_failover=True)
    try:
        old = leader_of(workers)
        old.kill9()
        rest = [w for w in workers if w is not old]
        new = wait_until(lambda: next((w for w in rest if w.is_leader()), None), 90, what="a new leader")
        follower = next(w for w in rest if w is not new)

        def created() -> bool:
            with follower.http() as http:
                r = _sink(http, "after-leader", topic, tmp_path / "sink.txt", tasks=3)
            return r.status_code in (200, 201)
        wait_until(created, 60, 0.5, what="a write through the follower")
        body = wait_running(new, "after-leader", 3, on={w.worker_id for w in rest})
        assert running_tasks(body, 3) is not None
        with follower.http() as http:  # a second write through the follower: forwarded, answered 200
            r = http.put("/connectors/after-leader/pause")
            assert r.status_code == 202, r.text
        wait_until(lambda: (s := status(new, "after-leader")) and s["connector"]["state"] == "PAUSED", 30,
                   what="PAUSED")
    finally:
        _stop_all(workers)


def test_fifty_connectors_created_in_a_burst_all_run(tmp_path, kafka, names, unique_topic):
    topic = unique_topic("burst")
    Feed(kafka, topic, 1).backend.close()
    workers = start_cluster(tmp_path, kafka, names, 3)
    try:
        before = {w.worker_id: len(w.rebalances()) for w in workers}
        errors: list[str] = []

        def create(worker: DistributedWorker, names_: list[str]) -> None:
            with worker.http() as http:
                for name in names_:
                    for _ in range(60):
                        r = _sink(http, name, topic, tmp_path / f"{name}.txt", tasks=1)
                        if r.status_code != 409:  # 409: a rebalance is under way; retry as a client would
                            break
                        time.sleep(0.5)
                    if r.status_code != 201:
                        errors.append(f"{name}: {r.status_code} {r.text}")

        all_names = [f"burst-{i:02d}" for i in range(50)]
        threads = [threading.Thread(target=create, args=(workers[i % 3], all_names[i::5])) for i in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(240)
        assert not errors, errors
        for name in all_names:
            wait_running(workers[0], name, 1, timeout=120)
        rounds = max(len(w.rebalances()) - before[w.worker_id] for w in workers)
        print(f"\n50 connectors: {rounds} rebalance(s) on the busiest worker")
        # without coalescing each create would take two rounds (its connector, then its task): 100; the
        # tick thread applies config updates in batches and a rebalance under way absorbs the requests
        assert rounds <= 20
    finally:
        _stop_all(workers)


def test_a_config_topic_with_two_partitions_is_refused(tmp_path, kafka, names):
    backend = open_log_backend({"bootstrap.servers": kafka.bootstrap_servers})
    admin = backend.admin()
    admin.create_topic(NewTopic(names.configs, 2, 1, {"cleanup.policy": "compact"}))
    admin.close()
    backend.close()
    w = DistributedWorker(tmp_path, kafka, names, 0).start(wait=False)
    assert w.proc is not None and w.proc.proc is not None
    code = w.proc.proc.wait(90)
    out = w.log()
    assert code != 0
    assert f"Topic '{names.configs}' supplied via the 'config.storage.topic' property is required to have a " \
           "single partition" in out, out
    assert "Traceback" not in out


def test_a_missing_converter_class_is_refused(tmp_path, kafka, names):
    w = DistributedWorker(tmp_path, kafka, names, 0, **{"value.converter": "com.example.NoSuchConverter"})
    w.start(wait=False)
    assert w.proc is not None and w.proc.proc is not None
    code = w.proc.proc.wait(60)
    out = w.log()
    assert code != 0 and "value.converter" in out and "com.example.NoSuchConverter" in out, out
    assert "Traceback" not in out


def test_a_second_cluster_on_the_same_topics_is_refused(tmp_path, kafka, names, unique_topic):
    first = start_cluster(tmp_path, kafka, names, 1)
    try:
        other = DistributedWorker(tmp_path, kafka, names, 5, **{"group.id": unique_topic("other-cluster")})
        other.start(wait=False)
        assert other.proc is not None and other.proc.proc is not None
        code = other.proc.proc.wait(90)
        out = other.log()
        assert code != 0
        assert names.group in out and "group.id" in out, out
        assert "Traceback" not in out
        assert first[0].alive()
    finally:
        _stop_all(first)


def test_one_eager_worker_makes_the_whole_group_use_the_eager_protocol(tmp_path, kafka, names, unique_topic):
    topic = unique_topic("eager")
    Feed(kafka, topic, 4).backend.close()
    workers = [DistributedWorker(tmp_path, kafka, names, 0),
               DistributedWorker(tmp_path, kafka, names, 1, **{"connect.protocol": "eager"})]
    try:
        for w in workers:
            w.start()
        with workers[0].http() as http:
            wait_until(lambda: _sink(http, "eager", topic, tmp_path / "sink.txt", tasks=4).status_code in (200, 201),
                       60, 0.5, what="the connector created")
        body = wait_running(workers[1], "eager", 4)
        assert sorted(running_tasks(body, 4).values()) == [2, 2]  # type: ignore[union-attr]
        for w in workers:
            joins = re.findall(r"Joined group \S+ generation \d+ as \S+ with protocol (\w+)", w.log())
            assert joins and joins[-1] == "default", joins
        # the sessioned worker offers sessioned first, so only the eager one made the group settle on default
        assert "with protocol sessioned" not in workers[1].log()
    finally:
        _stop_all(workers)


@pytest.mark.parametrize("separate", ["false", "true"], ids=["rest-in-worker", "rest-front-process"])
def test_every_endpoint_works_through_a_follower(tmp_path, kafka, names, unique_topic, separate):
    topic = unique_topic("endpoints")
    source_file = tmp_path / "in.txt"
    source_file.write_text("a\nb\nc\n")
    workers = start_cluster(tmp_path, kafka, names, 2, **{"rest.separate.process": separate})
    try:
        leader = leader_of(workers)
        follower = next(w for w in workers if w is not leader)
        src = {"connector.class": "FileStreamSource", "tasks.max": "1", "topic": topic, "file": str(source_file)}
        with follower.http() as http:
            assert http.get("/").json()["kafka_cluster_id"]
            assert http.get("/health").status_code == 200
            assert http.get("/openapi.json").status_code == 200
            r = http.post("/connectors", json={"name": "src", "config": src})
            assert r.status_code == 201, r.text
            assert http.post("/connectors", json={"name": "src", "config": src}).status_code == 409
            wait_running(follower, "src", 1)
            assert http.get("/connectors").json() == ["src"]
            expanded = http.get("/connectors?expand=status&expand=info").json()
            assert expanded["src"]["status"]["connector"]["state"] == "RUNNING"
            assert expanded["src"]["info"]["config"]["file"] == str(source_file)
            assert http.get("/connectors/src").json()["tasks"] == [{"connector": "src", "task": 0}]
            assert http.get("/connectors/src/config").json()["topic"] == topic
            assert http.patch("/connectors/src/config", json={"batch.size": "10"}).status_code == 200
            assert http.put("/connectors/src/config", json={**src, "batch.size": "20"}).status_code == 200
            wait_until(lambda: http.get("/connectors/src/config").json().get("batch.size") == "20", 30)
            assert http.get("/connectors/src/tasks").json()[0]["id"] == {"connector": "src", "task": 0}
            wait_until(lambda: http.get("/connectors/src/tasks/0/status").json()["state"] == "RUNNING", 60)
            assert http.post("/connectors/src/tasks/0/restart").status_code == 204
            r = http.post("/connectors/src/restart?includeTasks=true&onlyFailed=false")
            assert r.status_code == 202 and r.json()["tasks"][0]["state"] == "RESTARTING", r.text
            assert http.post("/connectors/src/restart").status_code == 204
            wait_running(follower, "src", 1)
            wait_until(lambda: http.get("/connectors/src/topics").json() == {"src": {"topics": [topic]}}, 60)
            assert http.put("/connectors/src/topics/reset").status_code == 202
            assert http.put("/connectors/src/pause").status_code == 202
            wait_until(lambda: http.get("/connectors/src/status").json()["connector"]["state"] == "PAUSED", 30)
            assert http.put("/connectors/src/resume").status_code == 202
            wait_running(follower, "src", 1)
            wait_until(lambda: http.get("/connectors/src/offsets").json()["offsets"] == [
                {"partition": {"filename": str(source_file)}, "offset": {"position": 6}}], 60)
            assert http.patch("/connectors/src/offsets", json={"offsets": []}).status_code == 400  # not STOPPED
            assert http.put("/connectors/src/stop").status_code == 204
            wait_until(lambda: http.get("/connectors/src/status").json()["connector"]["state"] == "STOPPED", 30)
            r = http.patch("/connectors/src/offsets", json={"offsets": [
                {"partition": {"filename": str(source_file)}, "offset": {"position": 2}}]})
            assert r.status_code == 200, r.text
            wait_until(lambda: http.get("/connectors/src/offsets").json()["offsets"][0]["offset"] == {"position": 2},
                       30)
            assert http.delete("/connectors/src/offsets").status_code == 200
            wait_until(lambda: http.get("/connectors/src/offsets").json()["offsets"] == [], 30)
            assert any(p["class"].endswith("FileStreamSourceConnector") for p in http.get("/connector-plugins").json())
            assert http.get("/connector-plugins/FileStreamSource/config").status_code == 200
            r = http.put("/connector-plugins/FileStreamSource/config/validate", json={**src, "tasks.max": "x"})
            assert r.status_code == 200 and any(c["value"]["name"] == "tasks.max" and c["value"]["errors"]
                                                for c in r.json()["configs"]), r.text
            assert http.get("/admin/loggers").status_code == 200
            assert http.put("/admin/loggers/connect.runtime", json={"level": "DEBUG"}).status_code == 200
            assert http.get("/admin/loggers/connect.runtime").json()["level"] == "DEBUG"
            unsigned = http.post("/connectors/src/tasks", json=[{"a": "b"}])
            assert unsigned.status_code in (400, 409) and (
                "signature" in unsigned.text or "leader" in unsigned.text), unsigned.text
            assert http.delete("/connectors/src").status_code == 204
            wait_until(lambda: http.get("/connectors").json() == [], 30)
            assert http.get("/connectors/src/status").status_code == 404
    finally:
        _stop_all(workers)


def test_a_connector_created_paused_gets_its_tasks_only_when_resumed(tmp_path, kafka, names, unique_topic):
    """As in Kafka Connect: a paused connector is not asked for task configs (found side by side with Java)."""
    source_file = tmp_path / "in.txt"
    source_file.write_text("a\n")
    workers = start_cluster(tmp_path, kafka, names, 1)
    try:
        src = {"connector.class": "FileStreamSource", "tasks.max": "1", "topic": unique_topic("paused"),
               "file": str(source_file)}
        with workers[0].http() as http:
            r = http.post("/connectors", json={"name": "src", "config": src, "initial_state": "PAUSED"})
            assert r.status_code == 201 and r.json()["tasks"] == [], r.text
            wait_until(lambda: http.get("/connectors/src/status").json()["connector"]["state"] == "PAUSED", 30)
            assert http.get("/connectors/src/status").json()["tasks"] == []
            assert http.get("/connectors/src").json()["tasks"] == []
            assert http.put("/connectors/src/resume").status_code == 202
            wait_running(workers[0], "src", 1)
    finally:
        _stop_all(workers)
