"""WorkerStreamingTask: a task that reads its topics itself; the worker forwards pause/resume and reports state."""

from __future__ import annotations

from connect.runtime.herder import State, TargetState
from tests.runtime.fakes import WAIT, ControlledStreamingTask, FakeClock, RecordingStatus, streaming_task
from tests.support import wait_until


def _running(tmp_path, **kwargs):  # (WorkerStreamingTask, plugin, status)
    status = RecordingStatus()
    plugin = ControlledStreamingTask()
    wt = streaming_task(plugin, FakeClock(), status=status, state_dir=str(tmp_path / "state"), **kwargs)
    wt.start()
    return wt, plugin, status


def test_pause_and_resume_are_reported_after_the_task_did_them(tmp_path):
    wt, plugin, status = _running(tmp_path)
    try:
        assert plugin.running.wait(WAIT)
        status.await_task(wt.id, State.RUNNING)
        wt.transition_to(TargetState.PAUSED)
        assert plugin.calls == ["start", "pause"]
        assert status.state(wt.id) is State.PAUSED
        wt.transition_to(TargetState.STARTED)
        assert plugin.calls == ["start", "pause", "resume"]
        assert status.state(wt.id) is State.RUNNING
    finally:
        wt.stop()
        assert wt.await_stop(WAIT)
    assert status.history[wt.id] == [State.RUNNING, State.PAUSED, State.RUNNING, State.UNASSIGNED]


def test_a_task_whose_run_failed_stays_failed_through_pause_and_resume(tmp_path):
    wt, plugin, status = _running(tmp_path)
    plugin.fail = RuntimeError("query died")
    plugin.go_fail.set()
    assert wt.await_stop(WAIT)
    failed = status.await_task(wt.id, State.FAILED)
    assert "query died" in (failed.trace or "")
    wt.transition_to(TargetState.PAUSED)
    wt.transition_to(TargetState.STARTED)
    assert status.state(wt.id) is State.FAILED


def test_a_task_started_paused_is_paused_before_run_and_reported_paused(tmp_path):
    wt, plugin, status = _running(tmp_path, target=TargetState.PAUSED)
    try:
        assert plugin.running.wait(WAIT)
        status.await_task(wt.id, State.PAUSED)
        assert plugin.calls == ["start", "pause"]
    finally:
        wt.stop()
        assert wt.await_stop(WAIT)


def test_progress_is_merged_into_the_task_metrics(tmp_path):
    wt, plugin, _ = _running(tmp_path)
    try:
        wait_until(plugin.running.is_set, WAIT, 0.001, "run()")
        assert wt.metrics()["batches"] == 3
        assert "records_failed" in wt.metrics()
    finally:
        wt.stop()
        assert wt.await_stop(WAIT)
