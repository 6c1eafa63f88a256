"""What the multi-host fault tests share: a three-worker cluster on the namespace harness
(tests/distributed/multihost.py) started from the shipped worker config, and what they read off it (leader,
settled group, RUNNING tasks, log times), plus a steady line feed for FileStreamSource."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from connect.log import open_log_backend
from connect.log.api import NewTopic
from tests.distributed.multihost import NamespacedKafka, NamespacedWorker, Network, status
from tests.support import wait_until

WORKERS = ("w1", "w2", "w3")
# the shipped worker config's timings (Kafka Connect's defaults), which the fault bounds below are made of
SESSION_S, HEARTBEAT_S, FLUSH_S = 10.0, 3.0, 10.0


def cluster_names() -> dict[str, str]:
    run = uuid.uuid4().hex[:8]
    return {"group.id": f"mh-{run}", "config.storage.topic": f"mh-{run}-configs",
            "offset.storage.topic": f"mh-{run}-offsets", "status.storage.topic": f"mh-{run}-status"}


def start_cluster(network: Network, root: Path, broker: NamespacedKafka, **changes: Any) -> list[NamespacedWorker]:
    names = cluster_names()  # a cluster of its own on the shared broker
    workers = [NamespacedWorker(network[h], root, broker, **names, **changes).start() for h in WORKERS]
    for w in workers:
        w.wait_ready()
    wait_until(lambda: all(w.rebalances() for w in workers), 90, 0.3, what="a first rebalance on every worker")
    return workers


def stop_cluster(workers: list[NamespacedWorker]) -> None:
    for w in workers:
        w.host.heal()  # a test that failed mid-cut leaves its host unplugged
    for w in workers:
        w.stop()


def leader_of(workers: list[NamespacedWorker]) -> NamespacedWorker:
    return wait_until(lambda: next((w for w in workers if w.alive() and w.is_leader()), None), 60, 0.3,
                      what="a leader")


def settled(workers: list[NamespacedWorker], quiet_s: float) -> bool:
    """Every worker completed the same, latest generation, and none rebalanced in the last ``quiet_s``."""
    last = [w.rebalances()[-1] for w in workers if w.rebalances()]
    return (len(last) == len(workers) and len({generation for _, generation, _, _ in last}) == 1
            and (datetime.now() - max(when for when, _, _, _ in last)).total_seconds() >= quiet_s)


def running(body: dict[str, Any] | None, count: int) -> Counter[str] | None:
    """Tasks per worker id when the connector and exactly ``count`` tasks are RUNNING, else None."""
    if not body or body["connector"]["state"] != "RUNNING" or len(body["tasks"]) != count:
        return None
    if any(t["state"] != "RUNNING" for t in body["tasks"]):
        return None
    return Counter(t["worker_id"] for t in body["tasks"])


def wait_running(worker: NamespacedWorker, name: str, count: int, timeout: float = 90) -> dict[str, Any]:
    def all_running() -> dict[str, Any] | None:
        body = status(worker, name)
        return body if running(body, count) else None

    return wait_until(all_running, timeout, 0.3, what=f"{name}: {count} task(s) RUNNING on {worker.worker_id}")


def kafka_view(body: dict[str, Any]) -> tuple[Any, ...]:
    """Kafka Connect's own keys of a status body (the ``metrics`` extension is only served by a task's worker)."""
    return ((body["connector"]["state"], body["connector"]["worker_id"]),
            tuple((t["id"], t["state"], t["worker_id"], t.get("trace")) for t in body["tasks"]))


class LineFeed:
    """``line-<n>`` lines appended to a file at a steady rate, from a thread (the FileStreamSource's input)."""

    def __init__(self, path: Path, rate: int) -> None:
        self.path, self.rate = path, rate
        self.written = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="line-feed", daemon=True)

    def _run(self) -> None:
        batch = max(1, self.rate // 10)
        with open(self.path, "ab", buffering=0) as out:
            while not self._stop.is_set():
                out.write("".join(f"line-{self.written + i}\n" for i in range(batch)).encode())
                self.written += batch
                self._stop.wait(batch / self.rate)

    def start(self) -> LineFeed:
        self._thread.start()
        return self

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(10)
        return self.written


def runs(worker: NamespacedWorker, started: str, stopped: str) -> bool:
    """The worker's log says it started something (a line with ``started``) and did not stop it since: a
    connector's "Connector stopped" line, or a task named in a "Stopping N task(s): ..." line."""
    starts = worker.log_lines(started)
    if stopped.startswith("["):
        stops = [when for when, _ in worker.log_lines(stopped)]
    else:
        stops = [when for when, line in worker.log_lines(" task(s): ")
                 if stopped in line.split(" task(s): ", 1)[1].split(" (")[0].split(", ")]
    return bool(starts) and (not stops or starts[-1][0] >= max(stops))


def seconds(since: float, at: datetime) -> float:
    """Seconds from the monotonic ``since`` to the wall-clock log time ``at`` (this machine's one clock)."""
    return at.timestamp() - (time.time() - (time.monotonic() - since))


def post_from_inside(worker: NamespacedWorker, name: str, config: dict[str, str], out: dict[str, Any]) -> None:
    """POST a connector to ``worker`` from a process in its own namespace (its address answers there while its
    link is down); ``out`` gets ``code`` (0 if there was no answer), ``body`` and ``ended_s``."""
    sent = time.monotonic()
    done = subprocess.run(worker.host.command([
        "curl", "-s", "--max-time", "150", "-o", "-", "-w", "\n%{http_code}", "-X", "POST",
        "-H", "Content-Type: application/json", "--data", json.dumps({"name": name, "config": config}),
        f"{worker.url}/connectors"]), capture_output=True, text=True, timeout=170)
    body, _, code = done.stdout.rpartition("\n")
    out.update(code=int(code) if code.isdigit() else 0, body=body or done.stderr, ended_s=time.monotonic() - sent)


def create_topic(broker: NamespacedKafka, topic: str, partitions: int) -> None:
    """``topic`` on the harness's broker (replication 1: one broker)."""
    backend = open_log_backend({"bootstrap.servers": broker.bootstrap_servers})
    try:
        admin = backend.admin()
        admin.create_topic(NewTopic(topic, partitions, 1))
        admin.close()
    finally:
        backend.close()


def assert_status_matches_logs(workers: list[NamespacedWorker], views: Iterable[dict[str, Any]]) -> None:
    """Each connector and task a status body places on a worker runs there, by that worker's own log."""
    by_id = {w.worker_id: w for w in workers}
    for body in views:
        name = body["name"]
        assert runs(by_id[body["connector"]["worker_id"]], f"[{name}] Starting connector",
                    f"[{name}] Connector stopped"), (name, body["connector"])
        for task in body["tasks"]:
            task_id = f"{name}-{task['id']}"
            assert runs(by_id[task["worker_id"]], f"Starting task {task_id}", task_id), (
                f"the status says {task_id} runs on {task['worker_id']}, whose log says it does not")
