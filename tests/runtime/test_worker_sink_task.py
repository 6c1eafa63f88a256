"""WorkerSinkTask in-process, one loop turn at a time, with a fake clock and an in-memory log."""

from __future__ import annotations

import threading

import pytest

from connect.api.errors import ConnectException, RetriableException
from connect.api.topic_partition import TopicPartition
from connect.runtime.herder import State, TargetState
from tests.runtime.fakes import (
    WAIT,
    FakeClock,
    MemoryBackend,
    RecordingSinkTask,
    RecordingStatus,
    append,
    sink_task,
)
from tests.support import wait_until

TP = TopicPartition("lines", 0)


def _started(**kwargs):  # (WorkerSinkTask, backend, clock)
    clock = FakeClock()
    backend = MemoryBackend(clock)
    backend.log.create("lines")
    wt = sink_task(kwargs.pop("task", None) or RecordingSinkTask(), clock, backend, **kwargs)
    wt.initialize_and_start()
    return wt, backend, clock


def test_records_are_put_and_committed_after_the_interval_with_what_pre_commit_returned():
    wt, backend, clock = _started()
    append(backend, "lines", "a", "b")
    wt.iteration()
    assert wt.task.values == ["a", "b"] and wt.task.opened == [TP]
    assert backend.log.groups == {}
    clock.advance(1.0)
    wt.iteration()
    assert wt.task.flushed == [{TP: 2}]
    assert backend.log.groups["connect-snk"] == {TP: 2}


def test_a_poll_never_waits_past_the_next_commit():
    """A commit must not wait for records to arrive: the poll timeout ends at the commit deadline."""
    wt, backend, clock = _started()
    append(backend, "lines", "a")
    wt.iteration()
    clock.advance(0.8)
    wt.iteration()  # nothing to read: this poll may wait 0.2 s at most
    assert wt.consumer.poll_timeouts[-1] == pytest.approx(0.2)
    wt.iteration()  # the fake poll waited those 0.2 s: the commit is due now
    assert backend.log.groups["connect-snk"] == {TP: 1}


def test_commit_requested_by_the_task_happens_at_the_next_turn():
    wt, backend, _ = _started()
    append(backend, "lines", "a")
    wt.iteration()
    wt.context.request_commit()
    wt.iteration()
    assert backend.log.groups["connect-snk"] == {TP: 1}


def test_a_failing_pre_commit_rewinds_to_the_committed_offsets():
    wt, backend, clock = _started()
    append(backend, "lines", "a", "b")
    wt.iteration()
    wt.task.fail_pre_commit = OSError("flush failed")
    clock.advance(1.0)
    wt.iteration()  # the commit fails, the consumer goes back to offset 0 and this turn reads a and b again
    assert backend.log.groups == {}
    assert wt.task.values == ["a", "b", "a", "b"]  # delivered again: at least once
    wt.task.fail_pre_commit = None
    wt.context.request_commit()
    wt.iteration()
    assert backend.log.groups["connect-snk"] == {TP: 2}


def test_a_retriable_put_is_redelivered_and_an_other_failure_fails_the_task():
    task = RecordingSinkTask()
    task.fail_put = [RetriableException("busy")]
    wt, backend, _ = _started(task=task)
    wt.context.timeout(1)
    append(backend, "lines", "a")
    wt.iteration()
    assert task.values == ["a"] and wt.errors.metrics.retries == 1
    task.fail_put = [ValueError("no such table")]
    append(backend, "lines", "b")
    with pytest.raises(ConnectException, match="no such table"):
        wt.iteration()


def test_paused_is_reported_from_the_task_thread_and_nothing_is_put_after_it():
    """Reported PAUSED before the task paused: a record appended after PAUSED was read was still written."""
    status = RecordingStatus()
    wt, backend, clock = _started(status=status)
    append(backend, "lines", "a")
    wt.iteration()
    wt.transition_to(TargetState.PAUSED)
    assert status.state(wt.id) is None, "the target state alone reports nothing"
    wt.paused_iteration()
    assert status.state(wt.id) is State.PAUSED
    append(backend, "lines", "after-paused")
    for _ in range(3):
        wt.paused_iteration()
    assert wt.task.values == ["a"]
    assert wt.consumer.poll_timeouts[-1] <= 0.2


def test_a_paused_sink_goes_on_committing_on_time():
    wt, backend, clock = _started()
    append(backend, "lines", "a", "b")
    wt.iteration()
    wt.transition_to(TargetState.PAUSED)
    wt.paused_iteration()
    clock.advance(1.0)
    wt.paused_iteration()
    assert backend.log.groups["connect-snk"] == {TP: 2}


def test_resume_reports_running_and_keeps_partitions_the_task_paused_itself():
    status = RecordingStatus()
    clock = FakeClock()
    backend = MemoryBackend(clock)
    backend.log.create("lines", partitions=2)
    wt = sink_task(RecordingSinkTask(), clock, backend, status=status)
    wt.initialize_and_start()
    wt.iteration()
    other = TopicPartition("lines", 1)
    wt.context.pause(other)
    wt.transition_to(TargetState.PAUSED)
    wt.paused_iteration()
    assert wt.consumer.paused == {TP, other}
    wt.transition_to(TargetState.STARTED)
    thread = threading.Thread(target=wt.execute)
    thread.start()
    try:
        wait_until(lambda: status.state(wt.id) is State.RUNNING, WAIT, 0.001, "RUNNING")
        assert wt.consumer.paused == {other}
    finally:
        wt.stop()
        thread.join(WAIT)
    assert status.history[wt.id] == [State.PAUSED, State.RUNNING]


def test_a_failed_task_stays_failed_through_pause_and_resume():
    status = RecordingStatus()
    task = RecordingSinkTask()
    task.fail_put = [ValueError("broken")]
    clock = FakeClock()
    backend = MemoryBackend(clock)
    append(backend, "lines", "a")
    wt = sink_task(task, clock, backend, status=status)
    wt.start()
    assert wt.await_stop(WAIT)
    status.await_task(wt.id, State.FAILED)
    wt.transition_to(TargetState.PAUSED)
    wt.transition_to(TargetState.STARTED)
    assert status.state(wt.id) is State.FAILED
    assert status.history[wt.id] == [State.RUNNING, State.FAILED]


def test_stopping_commits_what_was_put():
    clock = FakeClock()
    backend = MemoryBackend(clock)
    append(backend, "lines", "a", "b", "c")
    wt = sink_task(RecordingSinkTask(), clock, backend)
    wt.start()
    wait_until(lambda: len(wt.task.values) == 3, WAIT, 0.001, "the records to be put")
    wt.stop()
    assert wt.await_stop(WAIT)
    assert backend.log.groups["connect-snk"] == {TP: 3}
    assert wt.task.stopped and wt.consumer.closed
