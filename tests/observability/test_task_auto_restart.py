"""task.restart.*: a real connect-standalone restarts FAILED tasks after growing delays, up to max tries."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.observability.test_metrics_endpoint import plugin_dir, samples, value
from tests.support import RestWorker, line_count, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def starts(path: Path) -> list[float]:
    return [float(x) for x in path.read_text().split()] if path.exists() else []


def test_flaky_task_recovers_and_a_broken_one_stays_failed_after_max_tries(tmp_path: Path) -> None:
    worker = RestWorker(tmp_path, plugin_path=plugin_dir(tmp_path), task_restart_enabled="true",
                        task_restart_initial_delay_ms=400, task_restart_multiplier=2, task_restart_max_tries=3,
                        task_restart_max_delay_ms=5000).start()
    http = worker.http()
    flaky, broken = tmp_path / "flaky.starts", tmp_path / "broken.starts"
    try:
        for name, path, fails in (("flaky", flaky, 2), ("broken", broken, 1000)):
            assert http.put(f"/connectors/{name}/config", json={
                "connector.class": "FailingSourceConnector", "starts.file": str(path),
                "fail.starts": str(fails)}).status_code == 201

        def task(name: str) -> dict:
            return http.get(f"/connectors/{name}/status").json()["tasks"][0]

        # while a restart is planned, status and metrics say when
        planned = wait_until(lambda: task("broken").get("next_restart_ms"), 30, interval=0.05, what="a planned restart")
        assert planned > time.time() * 1000 - 1000
        wait_until(lambda: value(samples(http.get("/metrics").text), "headrace_task_next_restart_timestamp_seconds",
                                 connector="broken") is not None, 30, interval=0.05, what="next restart in /metrics")
        wait_until(lambda: task("flaky")["state"] == "RUNNING" and line_count(flaky) == 3, 30, what="flaky RUNNING")
        t0, t1, t2 = starts(flaky)
        assert t1 - t0 >= 0.4 and t2 - t1 >= 0.8  # initial delay, then times the multiplier
        status = task("flaky")
        assert status["restart_tries"] == 2 and status["next_restart_ms"] is None
        assert "trace" not in status

        # 1 start + 3 restarts (0.4 + 0.8 + 1.6 s), then it is left FAILED with its last trace
        wait_until(lambda: line_count(broken) == 4 and task("broken")["state"] == "FAILED"
                   and task("broken").get("next_restart_ms") is None, 30, what="broken out of tries")
        status = task("broken")
        assert status["restart_tries"] == 3 and status["restart_max_tries"] == 3
        assert "start 4 fails on purpose" in status["trace"]
        scraped = samples(http.get("/metrics").text)
        assert value(scraped, "headrace_task_restart_tries", connector="broken", task="0") == 3
        assert value(scraped, "kafka_connect_connector_task_status", connector="broken", status="failed") == 1
        assert value(scraped, "kafka_connect_connector_task_status", connector="flaky", status="running") == 1
    finally:
        http.close()
        log = worker.stop()
    assert line_count(broken) == 4  # nothing more was tried
    assert "automatic restart 3 of 3" in log.lower() and "leaving it FAILED" in log
