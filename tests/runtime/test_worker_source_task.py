"""WorkerSourceTask in-process, with a fake clock, an in-memory log and a scripted SourceTask."""

from __future__ import annotations

import json
import threading

import pytest

from connect.api.errors import ConnectException, RetriableException
from connect.log.api import LogError
from connect.runtime.herder import State, TargetState
from connect.runtime.offset_committer import SourceTaskOffsetCommitter
from connect.runtime.storage.offsets import offset_key
from tests.runtime.fakes import (
    PARTITION,
    WAIT,
    FakeClock,
    MemoryBackend,
    MemoryOffsetStore,
    RecordingStatus,
    ScriptedSourceTask,
    lines_batch,
    source_task,
)
from tests.support import wait_until

KEY = offset_key("src", PARTITION)


def _committed(offsets: MemoryOffsetStore) -> int | None:
    position = None
    for commit in offsets.commits:
        if KEY in commit:
            position = json.loads(commit[KEY])["position"]
    return position


def _started(task: ScriptedSourceTask, **kwargs):  # a WorkerSourceTask ready to iterate
    clock = kwargs.pop("clock", None) or FakeClock()
    wt = source_task(task, clock, **kwargs)
    wt.initialize_and_start()
    return wt, clock


def test_sent_records_are_committed_only_after_the_log_acknowledged_them():
    offsets = MemoryOffsetStore()
    committer = SourceTaskOffsetCommitter(clock := FakeClock())
    wt, _ = _started(ScriptedSourceTask([lines_batch(0, 3)]), clock=clock, offsets=offsets, committer=committer)
    committer.schedule(wt.id, wt.commit_offsets, wt.offset_flush_interval)
    assert wt.iteration()
    assert wt.producer.unacked() == ["line-0", "line-1", "line-2"]
    assert committer.commit_due() == pytest.approx(1.0)  # not due yet: nothing flushed, nothing stored
    assert offsets.commits == [] and wt.producer.flushes == 0
    clock.advance(1.0)
    committer.commit_due()
    assert wt.producer.unacked() == [] and wt.producer.flushes == 1
    assert _committed(offsets) == 3
    assert wt.task.commits == 1


def test_offsets_commit_on_time_while_the_task_thread_is_blocked_in_poll():
    """The missing commits under load: a commit scheduled on the task thread waited for poll to return."""
    clock = FakeClock()
    committer = SourceTaskOffsetCommitter(clock)
    offsets = MemoryOffsetStore()
    plugin = ScriptedSourceTask([lines_batch(0, 5)])
    wt = source_task(plugin, clock, committer=committer, offsets=offsets)
    wt.start()
    try:
        wait_until(lambda: wt.records_sent == 5, WAIT, 0.001, "the first batch to be sent")
        plugin.hold.clear()  # the next poll blocks, as a source waiting for data does
        wait_until(plugin.in_poll.is_set, WAIT, 0.001, "the task to block in poll")
        clock.advance(1.0)
        committer.commit_due()
        assert _committed(offsets) == 5, "the commit must not wait for the blocked poll"
    finally:
        wt.stop()
        assert wt.await_stop(WAIT)
    assert committer.scheduled() == []


def test_a_failed_flush_keeps_the_offsets_and_fails_the_task_on_its_own_thread():
    offsets = MemoryOffsetStore()
    wt, clock = _started(ScriptedSourceTask([lines_batch(0, 2), lines_batch(2, 2)]), offsets=offsets)
    wt.iteration()
    wt.producer.fail_flush = LogError("disk full")
    wt._commit_on_schedule()  # what the committer thread runs: the error is handed over, not raised there
    assert offsets.commits == []
    with pytest.raises(ConnectException, match="disk full"):
        wt.iteration()


def test_a_flush_that_times_out_commits_nothing_and_the_next_commit_covers_all():
    offsets = MemoryOffsetStore()
    wt, _ = _started(ScriptedSourceTask([lines_batch(0, 2), lines_batch(2, 2)]), offsets=offsets)
    wt.iteration()
    wt.producer.unacked_on_flush = 2
    assert wt.commit_offsets() is False
    assert offsets.commits == []
    wt.iteration()
    wt.producer.unacked_on_flush = 0
    assert wt.commit_offsets() is True
    assert _committed(offsets) == 4


def test_an_offset_store_failure_is_retried_at_the_next_commit():
    offsets = MemoryOffsetStore()
    wt, _ = _started(ScriptedSourceTask([lines_batch(0, 2)]), offsets=offsets)
    wt.iteration()
    offsets.fail = OSError("read-only file system")
    assert wt.commit_offsets() is False
    assert wt.commit_offsets() is True
    assert _committed(offsets) == 2


def test_a_retriable_poll_failure_is_counted_and_polled_again():
    wt, _ = _started(ScriptedSourceTask([RetriableException("busy"), lines_batch(0, 1)]))
    assert wt.iteration()
    assert wt.errors.metrics.retries == 1 and wt.records_sent == 0
    wt.iteration()
    assert wt.records_sent == 1


def test_paused_is_reported_by_the_task_thread_once_its_poll_returned_and_nothing_is_sent_until_resumed():
    status = RecordingStatus()
    plugin = ScriptedSourceTask([lines_batch(0, 2), lines_batch(2, 2)])
    offsets = MemoryOffsetStore()
    wt = source_task(plugin, FakeClock(), status=status, offsets=offsets)
    wt.initialize_and_start()
    wt.iteration()
    plugin.hold.clear()
    turn = threading.Thread(target=wt.iteration)
    turn.start()
    wait_until(plugin.in_poll.is_set, WAIT, 0.001, "the poll")
    wt.transition_to(TargetState.PAUSED)
    assert status.state(wt.id) is None, "a task still inside poll is not PAUSED yet"
    plugin.hold.set()
    turn.join(WAIT)
    assert wt.producer.unacked() == ["line-0", "line-1"] and wt.records_sent == 2  # the second batch is held
    # the next turn commits what was sent, reports PAUSED and waits; the polled batch is held
    turn = threading.Thread(target=wt.iteration)
    turn.start()
    status.await_task(wt.id, State.PAUSED)
    assert _committed(offsets) == 2
    assert wt.records_sent == 2 and wt.records_polled == 4
    wt.transition_to(TargetState.STARTED)
    turn.join(WAIT)
    assert status.state(wt.id) is State.RUNNING
    wt.iteration()
    assert wt.records_sent == 4
    assert status.history[wt.id] == [State.PAUSED, State.RUNNING]


def test_stopping_commits_once_more_and_unschedules_the_task():
    clock = FakeClock()
    committer = SourceTaskOffsetCommitter(clock)
    offsets = MemoryOffsetStore()
    plugin = ScriptedSourceTask([lines_batch(0, 3)])
    status = RecordingStatus()
    wt = source_task(plugin, clock, committer=committer, offsets=offsets, status=status)
    wt.start()
    wait_until(lambda: wt.records_sent == 3, WAIT, 0.001, "records to be sent")
    assert committer.scheduled() == [wt.id]
    wt.stop()
    assert wt.await_stop(WAIT)
    assert committer.scheduled() == []
    assert _committed(offsets) == 3
    assert plugin.stopped.is_set() and wt.producer.closed
    assert status.history[wt.id] == [State.RUNNING, State.UNASSIGNED]


def test_a_failing_poll_fails_the_task_with_its_trace():
    status = RecordingStatus()
    wt = source_task(ScriptedSourceTask([ValueError("bad row 7")]), FakeClock(), status=status)
    wt.start()
    assert wt.await_stop(WAIT)
    failed = status.await_task(wt.id, State.FAILED)
    assert "bad row 7" in (failed.trace or "")


def test_a_task_started_paused_reports_paused_and_polls_nothing():
    status = RecordingStatus()
    plugin = ScriptedSourceTask([lines_batch(0, 1)])
    wt = source_task(plugin, FakeClock(), status=status, target=TargetState.PAUSED, backend=MemoryBackend())
    wt.start()
    try:
        status.await_task(wt.id, State.PAUSED)
        assert wt.records_polled == 0
    finally:
        wt.stop()
        assert wt.await_stop(WAIT)
    assert status.history[wt.id] == [State.PAUSED, State.UNASSIGNED]
