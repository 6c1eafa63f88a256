from connect.runtime.herder import TargetState
from connect.runtime.storage.config_store import ConfigSnapshot


def test_task_configs_apply_only_on_commit():
    snap = ConfigSnapshot()
    snap.apply("connector-c", {"properties": {"name": "c"}})
    snap.apply("task-c-0", {"properties": {"a": "1"}})
    snap.apply("task-c-1", {"properties": {"a": "2"}})
    assert "c" not in snap.task_configs
    snap.apply("commit-c", {"tasks": 2})
    assert snap.task_configs["c"] == [{"a": "1"}, {"a": "2"}]


def test_target_state_v2_wins_and_tombstones_delete():
    snap = ConfigSnapshot()
    snap.apply("connector-c", {"properties": {"name": "c"}})
    assert snap.target_state("c") is TargetState.STARTED
    snap.apply("target-state-c", {"state": "PAUSED", "state.v2": "STOPPED"})
    assert snap.target_state("c") is TargetState.STOPPED
    snap.apply("target-state-c", {"state": "PAUSED"})
    assert snap.target_state("c") is TargetState.PAUSED
    snap.apply("connector-c", None)
    snap.apply("target-state-c", None)
    assert "c" not in snap.connectors and snap.target_state("c") is TargetState.STARTED


def test_task_names_with_dashes():
    snap = ConfigSnapshot()
    for i in range(4):
        snap.apply(f"task-my-conn-{i}", {"properties": {"x": str(i)}})
    snap.apply("commit-my-conn", {"tasks": 4})
    assert snap.task_configs["my-conn"][3] == {"x": "3"}


def test_a_commit_without_all_its_task_records_leaves_the_connector_inconsistent():
    snap = ConfigSnapshot()
    snap.apply("task-c-0", {"properties": {"x": "0"}})
    snap.apply("commit-c", {"tasks": 1})
    snap.apply("task-c-1", {"properties": {"x": "1"}})  # compaction lost task-c-0 of the second set
    snap.apply("commit-c", {"tasks": 2})
    assert snap.task_configs["c"] == [{"x": "0"}] and snap.inconsistent == {"c"}
    snap.apply("task-c-0", {"properties": {"x": "new"}})
    snap.apply("commit-c", {"tasks": 1})
    assert snap.task_configs["c"] == [{"x": "new"}] and snap.inconsistent == set()
