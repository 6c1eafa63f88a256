"""The worker's statuses as its REST front process holds them, to answer status reads without the worker.

While the front serves status reads it asks the worker for them (``want``, every half second while they go
on), and for ``FOLLOW_S`` after each ask the worker sends a snapshot of ``GET /connectors?expand=status``
whenever a state, a connector config or the set of connectors changes (rest.status_publisher). A snapshot
is used only if it is known to be current:

- taken while the worker was following the states for this front;
- taken after the last write this front passed to the worker had been answered, and after the last
  request it passed on that showed statuses (a listing with its infos, a task's status, ``/metrics``) had
  been sent: a client reads its own writes (a connector it deleted is gone, one it created is there), and
  sees as much as it was shown before, but for changes in the moments the worker took to answer;
- younger than a second, so counters are at most a second old, as in the worker's own listings.

A read that finds no such snapshot asks for one and waits for it up to ``SNAPSHOT_WAIT_S``; only then does
the worker answer the read itself. States are at most one publishing interval behind what runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson

from rest.json_provider import encode_json

__all__ = ["StatusMirror"]

log = logging.getLogger(__name__)

# as the worker's own listings (connect.runtime.status_views.LISTING_MAX_AGE_S): how old counters may be; a
# front that serves reads asks again at half that age, so that a fresh snapshot comes before this one expires
MAX_COUNTER_AGE_S = 1.0
# how long the worker follows the states after an ask (rest.status_publisher.FOLLOW_S), less a safety margin
# for the ask's way there
FOLLOWED_S = 9.0
# how long a read that found no usable snapshot waits for the one it asked for. The first read after a quiet
# spell always finds none (the worker stopped following), and beside busy tasks the worker's own answer took
# 80 ms (a listing of 1,000): passed through the worker's HTTP server it waits for the GIL at each of several
# hand-offs, where a snapshot waits once. Past this wait the worker answers after all
SNAPSHOT_WAIT_S = 0.2


class _Snapshot:
    """One listing as the worker sent it; each connector's own status body is cut from it when first asked."""

    def __init__(self, taken_at: float, listing: bytes) -> None:
        self.taken_at = taken_at
        self.listing = listing
        self._lock = threading.Lock()
        self._parsed: dict[str, Any] | None = None
        self._bodies: dict[str, bytes] = {}

    def status(self, name: str) -> bytes | None:
        body = self._bodies.get(name)  # one dict read: atomic under the GIL
        if body is not None:
            return body
        with self._lock:
            if self._parsed is None:
                self._parsed = orjson.loads(self.listing)
            entry = self._parsed.get(name)
            if entry is None:
                return None
            body = self._bodies[name] = encode_json(entry["status"])
            return body


class StatusMirror:
    """The last snapshot, and whether it may answer a read. ``want`` asks the worker for a fresh snapshot and
    to follow the changes; it is called from a request thread, at most twice a second unless a read finds no
    usable snapshot, and must not block."""

    def __init__(self, want: Callable[[], None], clock: Callable[[], float] = time.monotonic,
                 max_counter_age_s: float = MAX_COUNTER_AGE_S, followed_s: float = FOLLOWED_S,
                 snapshot_wait_s: float = SNAPSHOT_WAIT_S) -> None:
        """``snapshot_wait_s`` is waited on the real clock, whatever ``clock`` is."""
        self._want = want
        self._clock = clock
        self._max_counter_age_s = max_counter_age_s
        self._followed_s = followed_s
        self._snapshot_wait_s = snapshot_wait_s
        self._lock = threading.Lock()
        self._updated = threading.Condition(self._lock)
        self._snapshot: _Snapshot | None = None
        # snapshots taken before this may miss a change: the worker answered a write or showed statuses then,
        # or was not following the states for this front until asked then
        self._valid_from = float("-inf")
        self._asked_at = float("-inf")
        self._asked_since_update = False

    def update(self, taken_at: float, listing: bytes) -> None:
        """A snapshot from the worker, taken (on the machine's monotonic clock) at ``taken_at``."""
        with self._lock:
            self._snapshot = _Snapshot(taken_at, listing)
            self._asked_since_update = False
            self._updated.notify_all()

    def answered(self, at: float | None = None) -> None:
        """The worker answered a write (now), or showed statuses it gathered after ``at``: snapshots taken
        before may not show that."""
        with self._lock:
            self._valid_from = max(self._valid_from, self._clock() if at is None else at)

    def _usable(self) -> _Snapshot | None:
        """The snapshot a read may answer from; waits up to ``snapshot_wait_s`` for one if there is none."""
        deadline = None
        while True:
            usable, seen = self._check()
            if usable is not None or self._snapshot_wait_s <= 0:
                return usable
            now = time.monotonic()
            if deadline is None:
                deadline = now + self._snapshot_wait_s
            if now >= deadline:
                return None
            with self._updated:
                if self._snapshot is seen:  # none came since the check
                    self._updated.wait(deadline - now)

    def _check(self) -> tuple[_Snapshot | None, _Snapshot | None]:
        """The usable snapshot or None, and the latest one it was chosen from; asks for a snapshot when there is
        none, or when the one there is half way to being too old."""
        with self._lock:
            now = self._clock()
            if now - self._asked_at >= self._followed_s:
                self._valid_from = max(self._valid_from, now)  # the worker may have stopped following
            snapshot = self._snapshot
            usable = snapshot if (snapshot is not None and snapshot.taken_at >= self._valid_from
                                  and now - snapshot.taken_at < self._max_counter_age_s) else None
            renew = self._max_counter_age_s / 2
            ask = ((usable is None and not self._asked_since_update) or now - self._asked_at >= renew
                   or (usable is not None and now - usable.taken_at >= renew and not self._asked_since_update))
            if ask:
                self._asked_at = now
                self._asked_since_update = True
        if ask:
            log.debug("Asking the worker for a status listing (the last one is %s)",
                      "missing" if snapshot is None else f"taken at {snapshot.taken_at:.3f}")
            self._want()
        return usable, snapshot

    def listing(self) -> bytes | None:
        """The body of ``GET /connectors?expand=status``, or None: the worker must answer."""
        snapshot = self._usable()
        return None if snapshot is None else snapshot.listing

    def status(self, name: str) -> bytes | None:
        """The body of ``GET /connectors/{name}/status``, or None: the worker must answer (no usable snapshot,
        or ``name`` is not in it, so whether it exists is the worker's to say)."""
        snapshot = self._usable()
        return None if snapshot is None else snapshot.status(name)
