"""Honest readiness (issue #36 item 3): a real ``connect-standalone`` whose start is slow answers every
endpoint but ``/health`` with 503 and ``Retry-After`` until it can take requests, so a client that waits for
``GET /`` and then writes is never refused.

The start is slowed the way a real one is: the worker restores a connector from its config topic whose
``start()`` takes seconds (it waits for the system it reads from). Both REST set-ups are covered: the
listeners in the REST front process (the default) and in the worker itself; and a distributed worker, which
is ready once it has joined its group and started what it was assigned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from services.kafka import KafkaService
from tests.distributed.cluster import ClusterNames, DistributedWorker
from tests.support import CliProcess, RestWorker, connect_standalone, wait_until, write_properties

# real workers whose start a test plugin slows by 5 s: the full suite runs them, the fast one leaves them out
pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

START_DELAY_S = 5.0

# imports only the SDK, as any third-party plugin; copied into a folder on plugin.path
SLOW_PLUGIN = '''
import time

from connect.api import ConfigDef, ConfigType, Importance, SourceConnector, SourceTask


class SlowStartSource(SourceConnector):
    """Its start waits ``start.delay.s`` seconds, like a connector that waits for the system it reads."""

    def version(self):
        return "1.0"

    def start(self, props):
        self.props = dict(props)
        time.sleep(float(props.get("start.delay.s", "0")))

    def task_class(self):
        return IdleTask

    def task_configs(self, max_tasks):
        return [{}]

    def stop(self):
        pass

    def config(self):
        return ConfigDef().define("start.delay.s", ConfigType.DOUBLE, 0.0, importance=Importance.LOW,
                                  documentation="seconds start() takes")


class IdleTask(SourceTask):
    def version(self):
        return "1.0"

    def start(self, props):
        pass

    def poll(self):
        time.sleep(0.2)
        return []

    def stop(self):
        pass
'''


SLOW_CONNECTOR = {"connector.class": "SlowStartSource", "start.delay.s": str(START_DELAY_S), "topic": "slow"}


def _plugins(tmp: Path) -> Path:
    folder = tmp / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / "slow_start_plugin.py").write_text(SLOW_PLUGIN)
    return folder


def _poll_until_ready(base_url: str, proc: CliProcess, tmp: Path, status_settles_s: float = 0.0) -> None:
    """Polls a starting worker from before it listens, as a client that waits for ``GET /`` and then writes;
    asserts what it sees on the way: no answer but 503 with Retry-After (and /health's starting body) until
    the worker can take requests, and then the write succeeds."""
    seen_starting = 0
    with httpx.Client(base_url=base_url, timeout=30) as client:
        deadline = time.monotonic() + 120
        while True:
            assert time.monotonic() < deadline, "the worker did not become ready within 120 s"
            assert proc.alive(), proc.log()
            try:
                root = client.get("/")
            except httpx.TransportError:
                time.sleep(0.02)  # not listening yet: as good as 503 for a client that waits
                continue
            if root.status_code == 200:
                # the worker has started the connector it was starting, before it said it could take requests
                asked = time.monotonic()
                status = client.get("/connectors/slow/status")
                # answered at once, not after waiting behind the connector's start
                assert time.monotonic() - asked < START_DELAY_S / 2, "GET / answered 200 while the worker still started"
                assert status.status_code == 200, status.text
                if status_settles_s:  # in distributed mode the state comes back through the status topic
                    wait_until(lambda: client.get("/connectors/slow/status").json()["connector"]["state"]
                               == "RUNNING", status_settles_s, what="slow RUNNING")
                else:
                    assert status.json()["connector"]["state"] == "RUNNING", status.text
                # what a client does once GET / answers: it writes, and must not be refused
                r = client.post("/connectors", json={"name": "probe", "config": {
                    "connector.class": "FileStreamSink", "topics": "probe", "file": str(tmp / "probe.txt")}})
                assert r.status_code == 201, f"GET / answered 200 but a POST then got {r.status_code}: {r.text}"
                break
            seen_starting += 1
            assert root.status_code == 503, root.text
            assert root.headers.get("Retry-After", "").isdigit(), f"503 without Retry-After: {root.headers}"
            assert "starting" in root.json()["message"], root.text
            for method, path in (("GET", "/connectors?expand=status"), ("GET", "/connectors/slow/status"),
                                 ("GET", "/connector-plugins"), ("DELETE", "/connectors/nope")):
                other = client.request(method, path)
                if other.status_code != 503:
                    # the worker may have become ready between the two requests; it must be so now
                    assert client.get("/health").status_code == 200, (method, path, other.status_code, other.text)
                    continue
                assert other.headers.get("Retry-After", "").isdigit(), (method, path, other.headers)
            health = client.get("/health")
            if health.status_code == 503:  # KIP-1017, unchanged: the starting body
                assert health.json() == {"status": "starting", "message": health.json()["message"]}, health.text
            time.sleep(0.05)
        assert seen_starting > 0, "the start-up window was never seen: the test did not slow the start"
        health = client.get("/health")
        assert health.status_code == 200 and health.json()["status"] == "healthy", health.text


@pytest.mark.parametrize("separate_process", ["true", "false"])
def test_a_worker_restoring_a_slow_connector_answers_nothing_but_health_before_a_write_would_succeed(
        tmp_path: Path, separate_process: str) -> None:
    worker = RestWorker(tmp_path, plugin_path=_plugins(tmp_path), rest_separate_process=separate_process,
                        connector_allowed_paths=str(tmp_path))
    worker.start()
    with worker.http() as c:
        r = c.post("/connectors", json={"name": "slow", "config": SLOW_CONNECTOR})
        assert r.status_code == 201, r.text
    worker.stop()

    # the restart restores "slow" from the config topic: its start() holds the worker's start for seconds
    proc = connect_standalone(tmp_path, worker.cfg)
    try:
        _poll_until_ready(worker.url, proc, tmp_path)
    finally:
        assert proc.terminate() == 0, proc.log()


def test_a_worker_is_ready_only_once_the_connectors_on_its_command_line_are_started(tmp_path: Path) -> None:
    # KIP-1017: a standalone worker is ready once it has started the connectors named on its command line
    connector = write_properties(tmp_path / "slow.properties", {"name": "slow", **SLOW_CONNECTOR})
    worker = RestWorker(tmp_path, connector, plugin_path=_plugins(tmp_path), connector_allowed_paths=str(tmp_path))
    proc = connect_standalone(tmp_path, worker.cfg, connector)
    try:
        _poll_until_ready(worker.url, proc, tmp_path)
    finally:
        assert proc.terminate() == 0, proc.log()


def test_a_distributed_worker_restoring_a_slow_connector_answers_nothing_but_health_before_it_joined(
        tmp_path: Path, kafka: KafkaService, unique_topic: Callable[..., str]) -> None:
    # issue #36: a client that waited for GET / and then wrote was refused on 4 of 4 restarts on a real broker
    worker = DistributedWorker(tmp_path, kafka, ClusterNames(unique_topic), 0, **{"plugin.path": _plugins(tmp_path)})
    worker.start()
    try:
        with worker.http() as c:
            r = c.post("/connectors", json={"name": "slow", "config": SLOW_CONNECTOR})
            assert r.status_code == 201, r.text
    finally:
        worker.stop()
    # its restart rejoins the group and is assigned "slow", whose start() holds the first rebalance for seconds
    worker.start(wait=False)
    assert worker.proc is not None
    try:
        _poll_until_ready(worker.url, worker.proc, tmp_path, status_settles_s=10.0)
    finally:
        assert worker.proc.terminate(30) == 0, worker.log()
