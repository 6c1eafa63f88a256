"""A sink connector's tasks on Kafka share its partitions from the start, as Java's do.

The worker runs each task in a task host process, and the hosts start a few hundred ms apart; a consumer
that joined its group just after its sibling's had settled waited for two cooperative rebalance rounds,
one heartbeat (3 s) each, so one task read every partition for the first 6 s of a connector's life.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from tests.support import (
    STRING_CONVERTERS,
    connect_standalone,
    free_port,
    rest_ready,
    run_cli,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(180)

_ASSIGNED = re.compile(r"^\[([\d-]+ [\d:,]+)\].*WorkerSinkTask\{id=([^}]+)\} Partitions assigned: (.*?) \(", re.M)


def _first_partitions(log: str) -> dict[str, datetime]:
    """When each sink task was first assigned a partition (an empty assignment does not count)."""
    first: dict[str, datetime] = {}
    for stamp, task, partitions in _ASSIGNED.findall(log):
        if partitions.strip() and task not in first:
            first[task] = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
    return first


@pytest.mark.parametrize("run", range(2))
def test_both_sink_tasks_own_a_partition_within_a_heartbeat_of_the_first(tmp_path: Path, kafka, unique_topic,
                                                                         run: int) -> None:
    topic = unique_topic("join")
    port = free_port()
    # the shipped worker config, on the session broker; task.processes=2: the default is one host per core, and
    # what this checks is two tasks in two hosts whatever the machine's cores
    cfg = worker_properties(tmp_path, port, **STRING_CONVERTERS, bootstrap_servers=kafka.bootstrap_servers,
                            config_storage_topic=unique_topic("configs"), task_processes=2)
    res = run_cli(["headrace", "topics", "create", "--topic", topic, "--partitions", "2", "-c", str(cfg)])
    assert res.returncode == 0, res.stderr
    sink = write_properties(tmp_path / "sink.properties", {
        "name": "join-sink", "connector.class": "FileStreamSink", "tasks.max": 2, "topics": topic,
        "file": tmp_path / "out.txt"})
    worker = connect_standalone(tmp_path, cfg, sink)
    try:
        wait_until(lambda: rest_ready(port) or not worker.alive(), 60, what="REST /health")
        wait_until(lambda: len(_first_partitions(worker.log())) == 2 or not worker.alive(), 60,
                   what="both tasks assigned a partition")
        first = _first_partitions(worker.log())
        assert len(first) == 2, worker.log()
        gap = abs((first["join-sink-0"] - first["join-sink-1"]).total_seconds())
        # before: 6 s (two cooperative rounds of 3 s heartbeats); now one generation, or one eager round of a 1 s
        # heartbeat (the margin is for this loaded machine)
        assert gap < 3.5, f"the second task got a partition {gap:.1f} s after the first:\n{worker.log()}"
    finally:
        assert worker.terminate() == 0, worker.log()
