"""A clock for tests: time moves only when the test (or a fake that waits on it) moves it."""

from __future__ import annotations

import threading

__all__ = ["FakeClock"]


class FakeClock:
    """A monotonic clock that moves only when told to, usable wherever the runtime takes a ``Clock``.

    ``sleep`` does not block: it moves the clock on by the time asked, so a task or committer that waits
    on this clock sees its deadline pass at once, and a test drives schedules (offset commits, poll
    deadlines) with ``advance`` instead of sleeping.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        """The clock's current reading in seconds."""
        return self.now

    def sleep(self, seconds: float) -> None:
        """Move the clock on by ``seconds`` at once (negative counts as zero)."""
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        """Move the clock on by ``seconds`` (negative counts as zero: a monotonic clock never goes back)."""
        with self._lock:
            self.now += max(0.0, seconds)
