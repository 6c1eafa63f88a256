"""Issue #36 item 4: a connector's status is the same body whichever worker answers.

Kafka Connect's keys come from the status topic on every worker; Headrace's per-task counters (and its
automatic-restart keys), which only the worker running a task knows, are served by
``GET /connectors/{c}/tasks/{t}/metrics`` on every worker, which asks the task's owner."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from connect.log import open_log_backend
from connect.log.api import NewTopic
from tests.distributed.cluster import (
    ClusterNames,
    leader_of,
    running_tasks,
    start_cluster,
    status,
    wait_running,
)
from tests.support import wait_until

pytestmark = [pytest.mark.timeout(300), pytest.mark.kafka]


@pytest.fixture
def names(unique_topic: Callable[..., str]) -> ClusterNames:
    return ClusterNames(unique_topic)


def test_status_and_task_metrics_are_the_same_from_every_worker(tmp_path, kafka, names, unique_topic):
    topic = unique_topic("status-same")
    backend = open_log_backend({"bootstrap.servers": kafka.bootstrap_servers})
    admin = backend.admin()
    admin.create_topic(NewTopic(topic, 2, 1))
    admin.close()
    backend.close()
    workers = start_cluster(tmp_path, kafka, names, 2)
    try:
        leader = leader_of(workers)
        with leader.http() as http:
            r = http.put("/connectors/same/config", json={
                "connector.class": "FileStreamSink", "tasks.max": "2", "topics": topic,
                "file": str(tmp_path / "sink.txt")})
        assert r.status_code == 201, r.text
        body = wait_running(leader, "same", 2)
        spread = running_tasks(body, 2)
        assert spread is not None and set(spread) == {w.worker_id for w in workers}, body  # one task on each

        # the whole body, not only the states: before the fix each worker added `metrics` to its own task only
        seen: list[dict | None] = []

        def same_everywhere() -> list[dict | None] | None:
            seen[:] = [status(w, "same") for w in workers]
            return seen if all(b == seen[0] for b in seen) and running_tasks(seen[0], 2) else None

        try:
            bodies = list(wait_until(same_everywhere, 30, 0.5, what="the same status body from every worker"))
        except AssertionError:
            raise AssertionError(f"the workers' status bodies differ: {seen}") from None
        assert bodies[0] is not None
        for task in bodies[0]["tasks"]:
            assert set(task) <= {"id", "state", "worker_id", "trace", "version"}, task
        for w in workers:
            with w.http() as http:
                listed = http.get("/connectors?expand=status").json()["same"]["status"]
                assert listed == bodies[0]
                assert http.get("/connectors/same/tasks/0/status").json() == bodies[0]["tasks"][0]

        # the counters: every worker serves each task's, from the worker that runs it
        owners = {t["id"]: t["worker_id"] for t in bodies[0]["tasks"]}
        for w in workers:
            for task_id, owner in owners.items():
                with w.http() as http:
                    r = http.get(f"/connectors/same/tasks/{task_id}/metrics")
                assert r.status_code == 200, (w.worker_id, r.text)
                shown = r.json()
                assert shown["id"] == task_id and shown["worker_id"] == owner, shown
                assert "records_read" in shown["metrics"], shown
            with w.http() as http:
                unknown = http.get("/connectors/nope/tasks/0/metrics")
                assert unknown.status_code == 404 and "nope" in unknown.json()["message"], unknown.text
                no_task = http.get("/connectors/same/tasks/7/metrics")
                assert no_task.status_code == 404, no_task.text

        # an owner that does not answer: a clear error naming it, quickly, and status still answers
        gone = next(w for w in workers if w is not leader)
        gone_task = next(t for t, owner in owners.items() if owner == gone.worker_id)
        gone.kill9()
        started = time.monotonic()
        with leader.http() as http:
            r = http.get(f"/connectors/same/tasks/{gone_task}/metrics")
            after = http.get("/connectors/same/status")
        elapsed = time.monotonic() - started
        assert elapsed < 15, elapsed
        if r.status_code != 200:  # the status topic may already have moved the task to the leader
            assert r.status_code == 503, r.text
            assert gone.worker_id in r.json()["message"], r.text
        assert after.status_code == 200, after.text
    finally:
        for w in workers:
            w.stop()

