"""SourceTaskOffsetCommitter: the schedule of source offset commits, driven by a fake clock."""

from __future__ import annotations

import threading

import pytest

from connect.runtime.herder import ConnectorTaskId
from connect.runtime.offset_committer import SourceTaskOffsetCommitter
from tests.runtime.fakes import WAIT, FakeClock

A, B = ConnectorTaskId("a", 0), ConnectorTaskId("b", 0)


def test_commits_each_task_at_its_interval_at_a_fixed_rate():
    clock = FakeClock(0.0)
    committer = SourceTaskOffsetCommitter(clock)
    calls: list[tuple[str, float]] = []
    committer.schedule(A, lambda: calls.append(("a", clock.now)), 1.0)
    committer.schedule(B, lambda: calls.append(("b", clock.now)), 2.5)
    assert committer.commit_due() == pytest.approx(1.0)
    clock.advance(1.2)
    assert committer.commit_due() == pytest.approx(0.8)  # the next slot of A is at 2.0, not at 1.2 + 1.0
    clock.advance(1.3)
    committer.commit_due()
    assert calls == [("a", 1.2), ("a", 2.5), ("b", 2.5)]


def test_a_commit_that_overran_its_slot_is_followed_by_a_full_interval():
    clock = FakeClock(0.0)
    committer = SourceTaskOffsetCommitter(clock)
    committer.schedule(A, lambda: clock.advance(3.0), 1.0)  # a commit that takes three intervals
    clock.advance(1.0)
    assert committer.commit_due() == pytest.approx(1.0)


def test_a_failing_commit_is_logged_and_does_not_stop_the_others(caplog):
    clock = FakeClock(0.0)
    committer = SourceTaskOffsetCommitter(clock)
    done: list[str] = []

    def broken() -> None:
        raise OSError("disk full")

    committer.schedule(A, broken, 1.0)
    committer.schedule(B, lambda: done.append("b"), 1.0)
    clock.advance(1.0)
    committer.commit_due()
    assert done == ["b"]
    assert "Offset commit of task a-0 failed" in caplog.text
    assert committer.scheduled() == [A, B]


def test_remove_waits_for_the_commit_under_way():
    clock = FakeClock(0.0)
    committer = SourceTaskOffsetCommitter(clock)
    inside, release = threading.Event(), threading.Event()
    committer.schedule(A, lambda: (inside.set(), release.wait(WAIT)), 1.0)
    clock.advance(1.0)
    runner = threading.Thread(target=committer.commit_due)
    runner.start()
    assert inside.wait(WAIT)
    removed = threading.Event()
    remover = threading.Thread(target=lambda: (committer.remove(A), removed.set()))
    remover.start()
    assert not removed.wait(0.005), "remove returned while the task's commit was running"
    release.set()
    assert removed.wait(WAIT)
    runner.join(WAIT)
    remover.join(WAIT)
    assert committer.scheduled() == []


def test_the_thread_commits_on_its_own_and_stops_cleanly():
    committer = SourceTaskOffsetCommitter()  # the system clock: an interval of a millisecond
    done = threading.Event()
    committer.schedule(A, done.set, 0.001)
    committer.start()
    try:
        assert done.wait(WAIT)
    finally:
        committer.stop()
    assert committer._thread is not None and not committer._thread.is_alive()
