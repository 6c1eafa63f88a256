"""Lets control requests (REST) run ahead of the record path on the GIL.

A task thread moving records at full speed wants the GIL all the time. A REST request needs it for about a
millisecond of Python, but gives it up at every socket read and write and then waits behind the task threads
for it again, a switch interval (1 ms) or more each time: about five such waits per request. Under a steady
request rate that queueing, not the request's own work, made status listings slow beside a busy pipeline.

So while a request is being served, task threads step aside between two batches (they never stop mid-batch)
until it is answered, for at most ``max_yield_s`` from the moment the first of the requests under way came
in: a request that blocks (on a lock, a slow client) cannot hold the record path back longer than that.
The GIL is one per process, so is this: one shared instance, ``CONTROL_PRIORITY``.
"""

from __future__ import annotations

import threading
import time

__all__ = ["CONTROL_PRIORITY", "ControlPriority"]

DEFAULT_MAX_YIELD_S = 0.005


class ControlPriority:
    """Counts control requests under way; record-path threads call :meth:`yield_to_control` between batches."""

    def __init__(self, max_yield_s: float = DEFAULT_MAX_YIELD_S) -> None:
        self.max_yield_s = max_yield_s
        self._lock = threading.Lock()
        self._under_way = 0
        self._since = 0.0
        self._idle = threading.Event()
        self._idle.set()

    def request_started(self) -> None:
        with self._lock:
            self._under_way += 1
            if self._under_way == 1:
                self._since = time.monotonic()
                if self.max_yield_s > 0:
                    self._idle.clear()

    def request_finished(self) -> None:
        with self._lock:
            self._under_way = max(0, self._under_way - 1)
            if self._under_way == 0:
                self._idle.set()

    def yield_to_control(self) -> None:
        """Wait (briefly) while a control request is being served: the caller is between two batches."""
        if self._idle.is_set():  # the usual case: one flag read
            return
        remaining = self._since + self.max_yield_s - time.monotonic()
        if remaining > 0:
            self._idle.wait(remaining)

    @property
    def under_way(self) -> int:
        return self._under_way


CONTROL_PRIORITY = ControlPriority()
