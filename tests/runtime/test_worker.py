"""Worker in-process: real task threads over the in-memory log, the offset committer driven by a fake clock."""

from __future__ import annotations

import json

import pytest

from connect.runtime.herder import ConnectorTaskId, State, TargetState
from connect.runtime.offset_committer import SourceTaskOffsetCommitter
from connect.runtime.worker import Worker
from connect.runtime.worker_config import StandaloneConfig
from tests.runtime.fakes import (
    FAILING,
    IN_PUT,
    PUT_GATE,
    PUT_VALUES,
    WAIT,
    FakeClock,
    MemoryBackend,
    MemoryOffsetStore,
    RecordingStatus,
    append,
    registry,
)
from tests.support import wait_until

SOURCE = {"name": "src", "connector.class": "CountingSourceConnector", "tasks.max": "1", "lines": "3"}
TASK = ConnectorTaskId("src", 0)


def _worker(**settings: str) -> Worker:
    clock = FakeClock()
    config = StandaloneConfig({"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                               "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                               "offset.storage.file.filename": "unused", "offset.flush.interval.ms": "1000",
                               "task.shutdown.graceful.timeout.ms": "2000", **settings})
    return Worker("test-worker:0", config, registry(), MemoryBackend(clock), MemoryOffsetStore(),
                  RecordingStatus(), clock=clock, source_committer=SourceTaskOffsetCommitter(clock))


@pytest.fixture
def worker():
    worker = _worker()
    yield worker
    worker.stop()


def _start(worker: Worker, config: dict[str, str], target: TargetState = TargetState.STARTED) -> list[dict[str, str]]:
    assert worker.start_connector(config["name"], config, target, lambda _name: None)
    task_configs = worker.connector_task_configs(config["name"])
    for i, task_config in enumerate(task_configs):
        worker.start_task(ConnectorTaskId(config["name"], i), config, task_config, target)
    return task_configs


def test_task_configs_name_the_task_class(worker):
    configs = _start(worker, SOURCE)
    assert configs == [{"lines": "3", "task.class": "tests.runtime.fake_plugins.CountingSourceTask"}]
    assert worker.task_ids("src") == [TASK]


def test_a_failed_task_stays_failed_when_its_connector_is_paused_and_resumed(worker):
    """Pause then resume wrote RUNNING for a task whose thread was dead; restart?onlyFailed then skipped it."""
    FAILING.add("worker-test")
    try:
        _start(worker, {**SOURCE, "fail": "worker-test"})
        worker.status.await_task(TASK, State.FAILED)
        worker.set_connector_target_state("src", TargetState.PAUSED)
        worker.set_connector_target_state("src", TargetState.STARTED)
        assert worker.status.state(TASK) is State.FAILED
        assert worker.status.connector("src").state is State.RUNNING
    finally:
        FAILING.discard("worker-test")


def test_task_states_on_pause_and_resume_come_from_the_task_thread(worker):
    _start(worker, SOURCE)
    worker.status.await_task(TASK, State.RUNNING)
    worker.set_connector_target_state("src", TargetState.PAUSED)
    assert worker.status.connector("src").state is State.PAUSED
    worker.status.await_task(TASK, State.PAUSED)
    worker.set_connector_target_state("src", TargetState.STARTED)
    worker.status.await_task(TASK, State.RUNNING)
    assert worker.status.history[TASK] == [State.UNASSIGNED, State.RUNNING, State.PAUSED, State.RUNNING]


def test_source_offsets_are_committed_by_the_worker_committer_on_its_schedule(worker):
    _start(worker, SOURCE)
    wait_until(lambda: worker.task_metrics(TASK)["records_written"] == 3, WAIT, 0.001, "3 records sent")
    assert worker.source_committer.scheduled() == [TASK]
    assert worker.offset_store.commits == []
    worker.clock.advance(1.0)
    worker.source_committer.commit_due()
    [commit] = worker.offset_store.commits
    assert [json.loads(v) for v in commit.values()] == [{"position": 3}]
    worker.stop_tasks([TASK])
    assert worker.source_committer.scheduled() == []
    assert worker.status.state(TASK) is State.UNASSIGNED


def test_a_task_class_that_cannot_be_loaded_fails_the_task_with_the_reason(worker):
    assert worker.start_connector("src", SOURCE, TargetState.STARTED, lambda _name: None)
    assert not worker.start_task(TASK, SOURCE, {"task.class": "tests.runtime.fake_plugins.NoSuchTask"}, TargetState.STARTED)
    status = worker.status.task(TASK)
    assert status.state is State.FAILED and "not the task class of any installed connector" in status.trace
    assert worker.task_ids() == []


def test_an_unknown_connector_class_fails_the_connector(worker):
    assert not worker.start_connector("x", {"connector.class": "NoSuchConnector"}, TargetState.STARTED,
                                      lambda _name: None)
    status = worker.status.connector("x")
    assert status.state is State.FAILED and "NoSuchConnector" in status.trace


def test_a_connector_started_paused_has_paused_tasks(worker):
    _start(worker, SOURCE, TargetState.PAUSED)
    worker.status.await_task(TASK, State.PAUSED)
    assert worker.status.connector("src").state is State.PAUSED
    assert worker.task_metrics(TASK)["records_polled"] == 0


def test_a_sink_is_reported_paused_only_once_its_put_returned_and_then_puts_nothing(worker):
    """PAUSED was written at once while a put was under way; a record appended after it was still written."""
    sink = {"name": "snk", "connector.class": "NullSinkConnector", "tasks.max": "1", "topics": "lines"}
    task = ConnectorTaskId("snk", 0)
    append(worker.backend, "lines", "a")
    PUT_GATE.clear()
    PUT_VALUES.clear()
    try:
        _start(worker, sink)
        assert IN_PUT.wait(WAIT)
        worker.set_connector_target_state("snk", TargetState.PAUSED)
        assert worker.status.state(task) is State.RUNNING, "PAUSED while the task is still inside put"
        PUT_GATE.set()
        worker.status.await_task(task, State.PAUSED)
        append(worker.backend, "lines", "after-paused")
        worker.clock.advance(1.0)  # the paused task commits on time, and puts nothing
        wait_until(lambda: worker.backend.log.groups.get("connect-snk"), WAIT, 0.001, "a commit while paused")
        assert PUT_VALUES == ["a"]
        worker.set_connector_target_state("snk", TargetState.STARTED)
        wait_until(lambda: PUT_VALUES == ["a", "after-paused"], WAIT, 0.001, "the put after the resume")
        worker.status.await_task(task, State.RUNNING)
    finally:
        PUT_GATE.set()


def test_tasks_get_the_parsed_connector_and_worker_settings():
    """The worker handed tasks raw string maps, and each task parsed them again with its own defaults."""
    worker = _worker(**{"consumer.max.poll.records": "40", "offset.flush.timeout.ms": "750"})
    try:
        sink = {"name": "snk", "connector.class": "NullSinkConnector", "tasks.max": "1",
                "topics": " lines, ,more",
                "errors.tolerance": "all", "errors.retry.timeout": "-1", "errors.log.enable": "true"}
        _start(worker, sink)
        task = worker._tasks[ConnectorTaskId("snk", 0)]
        assert task.max_records == 40 and task.offset_flush_timeout == 0.75
        assert task.connector_config.topics == ["lines", "more"]
        assert task.errors.tolerate and task.errors.retry_timeout_ms == -1 and task.errors.log_enabled
        _start(worker, {**sink, "name": "snk2", "consumer.override.max.poll.records": "7"})
        assert worker._tasks[ConnectorTaskId("snk2", 0)].max_records == 7
    finally:
        worker.stop()


def test_tasks_max_comes_from_the_parsed_connector_config(worker):
    assert len(_start(worker, {**SOURCE, "tasks.max": "3"})) == 3
    assert worker.task_ids("src") == [ConnectorTaskId("src", i) for i in range(3)]


def test_a_bad_value_in_a_stored_connector_config_fails_the_connector_naming_the_key(worker):
    assert not worker.start_connector("src", {**SOURCE, "tasks.max.enforce": "perhaps"}, TargetState.STARTED,
                                      lambda _name: None)
    status = worker.status.connector("src")
    assert status.state is State.FAILED
    assert "tasks.max.enforce" in status.trace and "true or false" in status.trace


def test_a_stored_config_with_an_override_the_policy_now_refuses_does_not_run():
    """A config stored while the policy allowed an override may come back after the policy changed."""
    worker = _worker(**{"connector.client.config.override.policy": "None"})
    config = {**SOURCE, "producer.override.acks": "1"}
    try:
        assert not worker.start_connector("src", config, TargetState.STARTED, lambda _name: None)
        assert "The 'None' policy does not allow 'acks'" in worker.status.connector("src").trace
        task_config = {"lines": "3", "task.class": "tests.runtime.fake_plugins.CountingSourceTask"}
        assert not worker.start_task(TASK, config, task_config, TargetState.STARTED)
        status = worker.status.task(TASK)
        assert status.state is State.FAILED and "producer.override.acks" in status.trace
        assert worker.task_ids() == []
    finally:
        worker.stop()
