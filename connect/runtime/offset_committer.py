"""SourceTaskOffsetCommitter: commits source offsets on time, whatever the task threads are doing.

A source task thread spends its time inside ``SourceTask.poll``, which may
block for as long as the plugin likes (a file source waits up to a second
for new lines, a database source its whole poll interval). Commits scheduled
on that thread therefore came late, and a crash then duplicated more than one
``offset.flush.interval.ms`` of records. As in Kafka Connect, one named
thread per worker runs every source task's commit at its interval instead;
the task thread commits only when it pauses and when it stops.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import attrs

from connect.runtime.clock import SYSTEM_CLOCK, Clock
from connect.runtime.herder import ConnectorTaskId

__all__ = ["SourceTaskOffsetCommitter"]

log = logging.getLogger(__name__)


@attrs.define
class _Scheduled:
    task_id: ConnectorTaskId
    commit: Callable[[], object]
    interval: float
    due: float


class SourceTaskOffsetCommitter:
    """Calls each scheduled task's commit every ``interval`` seconds (fixed rate, never two at once)."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._scheduled: dict[ConnectorTaskId, _Scheduled] = {}
        self._running: ConnectorTaskId | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

    def start(self) -> None:
        """Run the schedule on the ``source-offset-committer`` thread (tests call ``commit_due`` instead)."""
        with self._cond:
            if self._thread is None and not self._stopped:
                self._thread = threading.Thread(target=self._run, name="source-offset-committer", daemon=True)
                self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def schedule(self, task_id: ConnectorTaskId, commit: Callable[[], object], interval: float) -> None:
        """Commit ``task_id`` first one ``interval`` from now, then every ``interval``."""
        interval = max(interval, 0.001)  # offset.flush.interval.ms=0: as often as possible, not a busy loop
        with self._cond:
            self._scheduled[task_id] = _Scheduled(task_id, commit, interval, self._clock.monotonic() + interval)
            self._cond.notify_all()

    def remove(self, task_id: ConnectorTaskId) -> None:
        """Stop committing ``task_id``; returns once a commit of it under way has finished."""
        with self._cond:
            self._scheduled.pop(task_id, None)
            while self._running == task_id:
                self._cond.wait()

    def scheduled(self) -> list[ConnectorTaskId]:
        with self._cond:
            return sorted(self._scheduled)

    def commit_due(self) -> float | None:
        """Run every commit that is due now; the seconds until the next one (None when nothing is scheduled)."""
        while True:
            with self._cond:
                entry, wait = self._take_due_locked()
            if entry is None:
                return wait
            self._commit(entry)

    def _take_due_locked(self) -> tuple[_Scheduled | None, float | None]:
        if not self._scheduled:
            return None, None
        now = self._clock.monotonic()
        entry = min(self._scheduled.values(), key=lambda e: e.due)
        if entry.due > now:
            return None, entry.due - now
        self._running = entry.task_id
        return entry, 0.0

    def _commit(self, entry: _Scheduled) -> None:
        try:
            entry.commit()
        except Exception:  # one task's failed commit must not stop the others'
            log.exception("[%s] Offset commit of task %s failed", entry.task_id.connector, entry.task_id)
        finally:
            with self._cond:
                self._running = None
                now = self._clock.monotonic()
                # fixed rate; a commit that overran its slot is followed by a full interval, not a burst
                entry.due = entry.due + entry.interval if entry.due + entry.interval > now else now + entry.interval
                self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
                entry, wait = self._take_due_locked()
                if entry is None:
                    self._cond.wait(wait)
                    continue
            self._commit(entry)
