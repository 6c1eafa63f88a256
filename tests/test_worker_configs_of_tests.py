"""Issue #36 item 2: the workers tests start are the shipped ``configs/`` files with only ports, paths,
addresses and a cluster's names changed; any other change is one a test asks for by name (and says why).

A test-only setting can hide a defect of the default (the harness's ``rest.advertised.host.name`` hid that
every forwarded write failed with the shipped config), so these compare what the helpers write with the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from connect.runtime.properties import load_config_file
from tests.distributed.cluster import FAILOVER_TIMINGS, RAW_LINES, ClusterNames, DistributedWorker
from tests.support import FAST_OFFSET_FLUSH, REPO, STRING_CONVERTERS, worker_properties

CONFIGS = REPO / "configs"
# what a test may change without saying why: where the worker listens and keeps its files, what it connects to
STANDALONE_LOCAL = {"embedded.log.dir", "offset.storage.file.filename", "connector.allowed.paths", "listeners"}
DISTRIBUTED_LOCAL = {"bootstrap.servers", "listeners", "connector.allowed.paths", "group.id",
                     "config.storage.topic", "offset.storage.topic", "status.storage.topic"}


class _Broker:
    """Stands in for the session's broker: the worker config needs only its address."""

    bootstrap_servers = "127.0.0.1:9"


def _changes(written: Path, shipped: str) -> dict[str, tuple[str | None, str | None]]:
    """Every key whose value in ``written`` differs from the shipped file: (shipped, written)."""
    ours, theirs = load_config_file(written), load_config_file(CONFIGS / shipped)
    return {k: (theirs.get(k), ours.get(k)) for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k)}


def test_a_standalone_test_worker_is_the_shipped_config_with_only_ports_and_paths_changed(tmp_path: Path) -> None:
    changed = _changes(worker_properties(tmp_path, 18083), "connect-standalone.properties")
    assert set(changed) <= STANDALONE_LOCAL, changed
    assert changed["listeners"][1] == "http://127.0.0.1:18083"
    assert changed["embedded.log.dir"][1] == str(tmp_path / "data")


def test_a_distributed_test_worker_is_the_shipped_config_with_only_addresses_paths_and_names_changed(
        tmp_path: Path) -> None:
    names = ClusterNames(lambda prefix: f"{prefix}-unit")
    worker = DistributedWorker(tmp_path, _Broker(), names, 0)  # type: ignore[arg-type]
    changed = _changes(worker.config_path, "connect-distributed.properties")
    assert set(changed) <= DISTRIBUTED_LOCAL, changed
    assert changed["group.id"][1] == "cluster-unit" and changed["listeners"][1] == worker.url


def test_the_failover_timings_are_the_only_other_change_a_distributed_test_worker_may_ask_for(
        tmp_path: Path) -> None:
    names = ClusterNames(lambda prefix: f"{prefix}-unit")
    worker = DistributedWorker(tmp_path, _Broker(), names, 0, fast_failover=True)  # type: ignore[arg-type]
    changed = _changes(worker.config_path, "connect-distributed.properties")
    assert set(changed) - DISTRIBUTED_LOCAL == set(FAILOVER_TIMINGS), changed
    for key, value in FAILOVER_TIMINGS.items():
        assert changed[key][1] == str(value)  # what the shipped file has, if anything, is replaced
    # heartbeats well inside the session, as Kafka requires of any group member
    assert FAILOVER_TIMINGS["heartbeat.interval.ms"] * 3 <= FAILOVER_TIMINGS["session.timeout.ms"]


def test_the_named_changes_are_real_changes_of_the_shipped_values() -> None:
    """A named change that equals the shipped value would be dead weight that says something untrue."""
    shipped: dict[str, Any] = {**load_config_file(CONFIGS / "connect-standalone.properties")}
    for named in (STRING_CONVERTERS, FAST_OFFSET_FLUSH, RAW_LINES):
        for key, value in named.items():
            assert shipped.get(key) != str(value), key
