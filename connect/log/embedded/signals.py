"""In-process signals per log directory: "data was appended" and "the topic set changed".

Every EmbeddedBackend in this process that opens the same directory shares
one DirSignals, so a consumer waiting in ``poll`` wakes as soon as any
producer of this process appends, instead of sleeping out its poll interval.
Appends by other processes are not signalled; waiters also wake on a short
timer to look for those.
"""

from __future__ import annotations

import os
import threading


class DirSignals:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.data_seq = 0
        self.topics_version = 0

    def data_appended(self) -> None:
        with self._cond:
            self.data_seq += 1
            self._cond.notify_all()

    def topics_changed(self) -> None:
        with self._cond:
            self.topics_version += 1
            self.data_seq += 1
            self._cond.notify_all()

    def wake_all(self) -> None:
        """Wake every waiter (e.g. after a group rebalance) without claiming new data."""
        with self._cond:
            self.data_seq += 1
            self._cond.notify_all()

    def wait(self, seen_seq: int, timeout: float) -> None:
        """Sleep up to ``timeout`` s unless ``data_seq`` has moved on from ``seen_seq``."""
        with self._cond:
            if self.data_seq == seen_seq:
                self._cond.wait(timeout)


_registry: dict[str, DirSignals] = {}
_registry_lock = threading.Lock()


def signals_for(directory: str) -> DirSignals:
    key = os.path.realpath(directory)
    with _registry_lock:
        sig = _registry.get(key)
        if sig is None:
            sig = _registry[key] = DirSignals()
        return sig
