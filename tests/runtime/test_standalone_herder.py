"""StandaloneHerder over a real Worker, the in-memory log and fake connectors: state and restarts."""

from __future__ import annotations

import pytest

from connect.runtime.herder import ConnectorTaskId, NotFoundError, State, TargetState
from connect.runtime.offset_committer import SourceTaskOffsetCommitter
from connect.runtime.standalone import StandaloneHerder
from connect.runtime.storage.config_store import ConfigTopicStore
from connect.runtime.worker import Worker
from connect.runtime.worker_config import StandaloneConfig
from tests.runtime.fakes import (
    FAILING,
    FakeClock,
    MemoryBackend,
    MemoryOffsetStore,
    RecordingStatus,
    registry,
)

SOURCE = {"connector.class": "CountingSourceConnector", "tasks.max": "1", "lines": "2"}
TASK = ConnectorTaskId("src", 0)


def herder_on_memory_log():
    """A started StandaloneHerder on the in-memory log and a fake clock; stopped when the generator closes."""
    clock = FakeClock()
    backend = MemoryBackend(clock)
    config = StandaloneConfig({"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                               "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                               "offset.storage.file.filename": "unused", "task.shutdown.graceful.timeout.ms": "2000"})
    worker = Worker("test-worker:0", config, registry(), backend, MemoryOffsetStore(), RecordingStatus(), clock=clock,
                    source_committer=SourceTaskOffsetCommitter(clock))
    herder = StandaloneHerder(worker, ConfigTopicStore(backend, "connect-configs"))
    herder.start()
    yield herder
    herder.stop()


@pytest.fixture
def herder():
    yield from herder_on_memory_log()


def _states(herder: StandaloneHerder) -> tuple[State, list[State]]:
    status = herder.connector_status("src")
    return status.connector.state, [t.state for t in status.tasks]


def test_a_created_connector_runs_its_tasks(herder):
    created, info = herder.put_connector_config("src", SOURCE, allow_replace=False)
    assert created and info.tasks == (TASK,)
    herder.status.await_task(TASK, State.RUNNING)
    assert _states(herder) == (State.RUNNING, [State.RUNNING])


def test_pause_and_resume_report_what_the_tasks_did(herder):
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    herder.status.await_task(TASK, State.RUNNING)
    herder.pause_connector("src")
    herder.status.await_task(TASK, State.PAUSED)
    assert _states(herder) == (State.PAUSED, [State.PAUSED])
    herder.resume_connector("src")
    herder.status.await_task(TASK, State.RUNNING)
    assert _states(herder) == (State.RUNNING, [State.RUNNING])


def test_a_failed_task_stays_failed_through_pause_and_resume_and_restart_only_failed_restarts_it(herder):
    FAILING.add("herder-test")
    try:
        herder.put_connector_config("src", {**SOURCE, "fail": "herder-test"}, allow_replace=False)
        herder.status.await_task(TASK, State.FAILED)
        herder.pause_connector("src")
        herder.resume_connector("src")
        assert _states(herder) == (State.RUNNING, [State.FAILED])
        FAILING.discard("herder-test")
        plan = herder.restart_connector("src", include_tasks=True, only_failed=True)
        assert plan is not None
        assert plan.connector.state is State.RUNNING  # the connector had not failed: not restarted
        assert [t.state for t in plan.tasks] == [State.RESTARTING]
        herder.status.await_task(TASK, State.RUNNING)
        assert herder.status.history[TASK][-2:] == [State.UNASSIGNED, State.RUNNING]
    finally:
        FAILING.discard("herder-test")


def test_restart_only_failed_leaves_running_tasks_alone(herder):
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    herder.status.await_task(TASK, State.RUNNING)
    before = list(herder.status.history[TASK])
    plan = herder.restart_connector("src", include_tasks=True, only_failed=True)
    assert [t.state for t in plan.tasks] == [State.RUNNING]
    assert herder.status.history[TASK] == before


def test_stop_removes_the_tasks_and_delete_forgets_the_connector(herder):
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    herder.status.await_task(TASK, State.RUNNING)
    herder.stop_connector("src")
    assert _states(herder) == (State.STOPPED, [])
    assert herder.worker.task_ids("src") == []
    assert herder.store.snapshot.target_state("src") is TargetState.STOPPED
    herder.delete_connector("src")
    assert herder.connectors() == []
    with pytest.raises(NotFoundError):
        herder.connector_status("src")


def test_restarting_a_task_id_the_connector_does_not_have_is_not_found_and_starts_nothing(herder):
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    herder.status.await_task(TASK, State.RUNNING)
    for task in (ConnectorTaskId("src", 1), ConnectorTaskId("src", -1)):
        with pytest.raises(NotFoundError, match=f"Task {task} not found"):
            herder.restart_task(task)
    assert herder.worker.task_ids("src") == [TASK]


def test_status_entries_carry_the_plugin_version_as_kafka_connect_4_1_reports(herder):
    herder.put_connector_config("src", SOURCE, allow_replace=False)
    herder.status.await_task(TASK, State.RUNNING)
    body = herder.connector_status("src").to_json()
    version = herder.plugins.lookup("CountingSourceConnector").version
    assert body["connector"]["version"] == version
    assert [t["version"] for t in body["tasks"]] == [version]
    # the RESTARTING plan a restart with includeTasks answers carries them too
    plan = herder.restart_connector("src", include_tasks=True, only_failed=False).to_json()
    assert plan["connector"]["version"] == version and [t["version"] for t in plan["tasks"]] == [version]


def test_offsets_the_connector_cannot_use_are_refused_through_its_alter_offsets_hook(herder, tmp_path):
    import plugins.file.source as file_source
    from connect.runtime.herder import BadRequestError, ConnectorOffset

    herder.plugins.scan_module(file_source)
    source = tmp_path / "in.txt"
    source.write_text("")  # nothing to read, so no offset of its own can land before the stop
    herder.put_connector_config("file", {"connector.class": "FileStreamSource", "file": str(source), "topic": "t"},
                                allow_replace=False)
    herder.stop_connector("file")
    partition = {"filename": str(source)}
    for offsets, reason in [
        ([ConnectorOffset({"file": str(source)}, {"position": 1})], "filename"),
        ([ConnectorOffset(partition, {"position": "ten"})], "position"),
        ([ConnectorOffset(partition, {"position": -1})], "negative"),
    ]:
        with pytest.raises(BadRequestError, match=reason) as refused:
            herder.alter_connector_offsets("file", offsets)
        assert "file" in refused.value.message
    assert herder.connector_offsets("file") == []  # nothing was written
    assert "altered" in herder.alter_connector_offsets("file", [ConnectorOffset(partition, {"position": 1})])
    assert [o.offset for o in herder.connector_offsets("file")] == [{"position": 1}]


def test_plugin_config_lists_the_common_connector_settings_after_the_connectors_own_keys(herder):
    import plugins.file.source as file_source

    herder.plugins.scan_module(file_source)
    keys = herder.connector_plugin_config("FileStreamSourceConnector")
    names = [k["name"] for k in keys]
    assert names[:3] == ["file", "topic", "batch.size"]
    groups = {k["name"]: k["group"] for k in keys}
    assert groups["connector.class"] == "Common" and groups["tasks.max"] == "Common"
    assert {"name", "key.converter", "transforms", "predicates", "errors.tolerance", "exactly.once.support",
            "offsets.storage.topic"} <= set(names)
    assert len(names) == len(set(names))


def test_validation_recommends_the_installed_converters(herder):
    result = herder.validate_connector_config({"connector.class": "CountingSourceConnector"})
    recommended = {c["value"]["name"]: c["value"]["recommended_values"] for c in result["configs"]}
    assert "org.apache.kafka.connect.storage.StringConverter" in recommended["key.converter"]
    assert "org.apache.kafka.connect.storage.SimpleHeaderConverter" in recommended["header.converter"]


def test_a_connector_created_paused_gets_its_tasks_when_resumed_as_in_kafka_connect(herder):
    herder.put_connector_config("src", SOURCE, allow_replace=False, initial_state=TargetState.PAUSED)
    assert herder.connector_info("src").tasks == ()
    assert herder.connector_status("src").tasks == ()
    herder.resume_connector("src")
    assert herder.connector_info("src").tasks == (TASK,)
    herder.status.await_task(TASK, State.RUNNING)
    assert _states(herder) == (State.RUNNING, [State.RUNNING])
