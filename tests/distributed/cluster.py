"""Real ``connect-distributed`` processes on the session's broker, and what tests read off them."""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import httpx

from connect.runtime.properties import load_config_file
from services.kafka import KafkaService
from tests.support import REPO, CliProcess, free_port, rest_ready, wait_until, write_properties

SHIPPED_CONFIG = REPO / "configs" / "connect-distributed.properties"
JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
# Per connector, as Kafka Connect users do, for a test that feeds or reads raw lines (``line-<n>``) in a topic:
# the shipped worker converters are JSON with schemas, which would want (and write) envelopes.
RAW_LINES = {"key.converter": STRING, "value.converter": STRING}

# The only worker settings the tests here change beyond addresses, paths and names. A failover test (kill -9,
# a lost leader, a frozen zombie) would otherwise wait the shipped scheduled.rebalance.max.delay.ms (5 min)
# before a departed worker's tasks move, and the 10 s worker / 45 s consumer session timeouts before the group
# notices it; these keep each such test to seconds. A test asks for them with ``fast_failover=True``; the
# shipped timings run unchanged in the multi-host suite (test_multihost_*.py).
FAILOVER_TIMINGS = {
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 1000,  # a third of the session timeout, as the shipped 3 s is of 10 s
    "scheduled.rebalance.max.delay.ms": 3000,
    # the sink tasks' consumer groups, so that a dead worker's partitions reach their new tasks in seconds
    "consumer.session.timeout.ms": 6000,
    "consumer.heartbeat.interval.ms": 1000,
}

_REBALANCE = re.compile(r"Rebalance done \(generation (\d+), leader \S+ at (\S+?)(, this worker is the leader)?\)")
_STARTING_TASK = re.compile(r"\] Starting task (\S+)")


def connect_distributed_command() -> list[str]:
    exe = Path(sys.executable).with_name("connect-distributed")
    return [str(exe)] if exe.exists() else ["connect-distributed"]


class ClusterNames:
    """The group and internal topics one test's cluster uses."""

    def __init__(self, unique: Callable[..., str]) -> None:
        self.group = unique("cluster")
        self.configs = unique("configs")
        self.offsets = unique("offsets")
        self.status = unique("status")


class DistributedWorker:
    """``connect-distributed`` from ``configs/connect-distributed.properties``, as a user would start it.

    Only the bootstrap servers, the listener (a free loopback port), ``connector.allowed.paths`` (the test's
    directory) and the cluster's names (its own group and internal topics) are changed; ``extra`` is what a
    test changes beyond that, and the test says why. ``fast_failover`` applies ``FAILOVER_TIMINGS``.
    """

    def __init__(self, root: Path, kafka: KafkaService, names: ClusterNames, index: int, *,
                 fast_failover: bool = False, **extra: Any) -> None:
        self.dir = root / f"worker-{index}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        props: dict[str, Any] = dict(load_config_file(SHIPPED_CONFIG))
        props.update({
            "bootstrap.servers": kafka.bootstrap_servers,
            "listeners": f"http://127.0.0.1:{self.port}",
            "connector.allowed.paths": str(root),
            "group.id": names.group,
            "config.storage.topic": names.configs,
            "offset.storage.topic": names.offsets,
            "status.storage.topic": names.status,
        })
        if fast_failover:
            props.update(FAILOVER_TIMINGS)
        props.update(extra)
        self.config_path = write_properties(self.dir / "worker.properties", props)
        self.proc: CliProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def worker_id(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, wait: bool = True) -> DistributedWorker:
        self.proc = CliProcess([*connect_distributed_command(), str(self.config_path)], self.dir).start()
        if wait:
            proc = self.proc
            wait_until(lambda: rest_ready(self.port) or not proc.alive(), 60, what=f"REST of {self.worker_id}")
            assert proc.alive(), proc.log()
        return self

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill9()

    def stop(self) -> None:
        if self.proc is not None and self.proc.alive():
            self.proc.terminate(30)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def log(self) -> str:
        return self.proc.log() if self.proc is not None else ""

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60)

    def rebalances(self) -> list[tuple[int, bool]]:
        """(generation, this worker led it) of every rebalance this worker completed."""
        return [(int(m.group(1)), bool(m.group(3))) for m in _REBALANCE.finditer(self.log())]

    def is_leader(self) -> bool:
        done = self.rebalances()
        return bool(done) and done[-1][1]

    def started_tasks(self) -> list[str]:
        return _STARTING_TASK.findall(self.log())


def status(worker: DistributedWorker, name: str) -> dict[str, Any] | None:
    try:
        r = httpx.get(f"{worker.url}/connectors/{name}/status", timeout=10)
    except httpx.HTTPError:
        return None
    return r.json() if r.status_code == 200 else None


def running_tasks(body: dict[str, Any] | None, count: int) -> Counter[str] | None:
    """Tasks per worker id when the connector and exactly ``count`` tasks are RUNNING, else None."""
    if not body or body["connector"]["state"] != "RUNNING" or len(body["tasks"]) != count:
        return None
    if any(t["state"] != "RUNNING" for t in body["tasks"]):
        return None
    return Counter(t["worker_id"] for t in body["tasks"])


def wait_running(worker: DistributedWorker, name: str, count: int, timeout: float = 90,
                 on: Iterable[str] | None = None) -> dict[str, Any]:
    allowed = set(on) if on is not None else None

    def ready() -> dict[str, Any] | None:
        body = status(worker, name)
        spread = running_tasks(body, count)
        if spread is None or (allowed is not None and not set(spread) <= allowed):
            return None
        return body

    return wait_until(ready, timeout, 0.2, what=f"{name}: {count} task(s) RUNNING")


def leader_of(workers: Iterable[DistributedWorker]) -> DistributedWorker:
    live = [w for w in workers if w.alive()]
    return wait_until(lambda: next((w for w in live if w.is_leader()), None), 60, what="a leader")


def start_cluster(root: Path, kafka: KafkaService, names: ClusterNames, size: int, *, fast_failover: bool = False,
                  **extra: Any) -> list[DistributedWorker]:
    workers = [DistributedWorker(root, kafka, names, i, fast_failover=fast_failover, **extra) for i in range(size)]
    for w in workers:
        w.start(wait=False)
    for w in workers:
        proc = w.proc
        assert proc is not None
        wait_until(lambda w=w, proc=proc: rest_ready(w.port) or not proc.alive(), 90, what=f"REST of {w.worker_id}")
        assert proc.alive(), proc.log()
    # every worker has completed a rebalance with all of them in the group
    wait_until(lambda: all(w.rebalances() for w in workers), 60, what="the first rebalance on every worker")
    return workers
