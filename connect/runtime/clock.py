"""The time source of the runtime's schedules (offset commits, poll deadlines).

Tasks, the offset committer and the herder take a ``Clock`` through their
constructors, so unit tests drive schedules with a fake clock instead of
sleeping or patching ``time.monotonic`` process-wide.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (only differences mean anything)."""
        ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The process's own monotonic clock."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM_CLOCK: Clock = SystemClock()
