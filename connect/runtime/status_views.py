"""Status bodies kept per connector, so a status listing copies prepared JSON instead of rebuilding it.

A listing of every connector with its status at a few hundred requests a second used to rebuild each
connector's status objects and per-task counter dicts per request, which took the REST thread's GIL share
away from running tasks (issue #13). Each connector's body is now built once per change: a herder keys it
by what the body is made of (the status store's version of the connector, its config and task count, the
tasks' counters as a tuple, the log's health, restart bookkeeping), and a new key builds a new body.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["LISTING_MAX_AGE_S", "StatusViews"]

StatusBody = dict[str, Any]

# How old the counters and lags of a status listing may be. Gathering the listing walks every connector and
# task (about 10 ms of CPU at 1,000 connectors), too much to do for each of hundreds of requests a second; a
# state change, a connector created or deleted, rebuilds it at once. One second, as the log ends behind the
# lags are kept a second already.
LISTING_MAX_AGE_S = 1.0


class StatusViews:
    """The last status body built for each connector, with the key it was built at.

    A body is reused only while the key a caller computes now equals the stored one; since the caller
    reads the key before building, a stored body is never older than its key. Bodies are shared between
    requests: callers only serialise them, never change them."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, listing_max_age_s: float = LISTING_MAX_AGE_S) -> None:
        self._lock = threading.Lock()
        self._views: dict[str, tuple[Hashable, StatusBody]] = {}
        self._clock = clock
        self._listing_max_age_s = listing_max_age_s
        self._listing: tuple[Hashable, float, dict[str, StatusBody]] | None = None
        # one listing is built at a time: at hundreds of requests a second, each request that found the listing
        # out of date used to build its own, and the builds (10 ms of CPU each at 1,000 connectors) crowded
        # each other out beside running tasks
        self._listing_lock = threading.Lock()

    def body(self, name: str, key: Hashable, build: Callable[[], StatusBody]) -> StatusBody:
        stored = self._views.get(name)  # one dict read: atomic under the GIL
        if stored is not None and stored[0] == key:
            return stored[1]
        body = build()
        with self._lock:
            self._views[name] = (key, body)
        return body

    def listing(self, token: Hashable, build: Callable[[], dict[str, StatusBody]],
                fresh: bool = False) -> dict[str, StatusBody]:
        """Every connector's body, for a status listing: the last one built while ``token`` (what the caller
        reads of the states and the set of connectors) is unchanged and it is younger than the listing's max
        age, else ``build()``. The token is read before building, so a listing is never older than its token.
        One listing is built at a time: a caller whose token is new waits for a build under way and uses it if
        it was made for the same token; one whose listing only aged gets the aged one while another builds.
        ``fresh``: build one now (the REST front's listings, whose counters must be as new as their time)."""
        held = self._listing  # one read: atomic under the GIL
        now = self._clock()
        if held is not None and held[0] == token and not fresh:
            if now - held[1] < self._listing_max_age_s:
                return held[2]
            if self._listing_lock.locked():
                # only its counters aged, and another request is gathering them: this one gets the listing
                # that is being replaced (its states are current: the token is the same)
                return held[2]
        with self._listing_lock:
            held = self._listing
            now = self._clock()
            if held is not None and held[0] == token and now - held[1] < self._listing_max_age_s and not fresh:
                return held[2]  # built by the request this one waited for
            bodies = build()
            self._listing = (token, now, bodies)
            return bodies

    def forget(self, name: str) -> None:
        """Drops ``name``'s body (the connector was deleted), so a deleted connector costs no memory."""
        with self._lock:
            self._views.pop(name, None)
            self._listing = None

    def __len__(self) -> int:
        return len(self._views)
