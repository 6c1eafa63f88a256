"""Status bodies kept per connector, so a status listing copies prepared JSON instead of rebuilding it.

A listing of every connector with its status at a few hundred requests a second used to rebuild each
connector's status objects and per-task counter dicts per request, which took the REST thread's GIL share
away from running tasks (issue #13). Each connector's body is now built once per change: a herder keys it
by what the body is made of (the status store's version of the connector, its config and task count, the
tasks' counters as a tuple, the log's health, restart bookkeeping), and a new key builds a new body.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["StatusViews"]

StatusBody = dict[str, Any]


class StatusViews:
    """The last status body built for each connector, with the key it was built at.

    A body is reused only while the key a caller computes now equals the stored one; since the caller
    reads the key before building, a stored body is never older than its key. Bodies are shared between
    requests: callers only serialise them, never change them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: dict[str, tuple[Hashable, StatusBody]] = {}

    def body(self, name: str, key: Hashable, build: Callable[[], StatusBody]) -> StatusBody:
        stored = self._views.get(name)  # one dict read: atomic under the GIL
        if stored is not None and stored[0] == key:
            return stored[1]
        body = build()
        with self._lock:
            self._views[name] = (key, body)
        return body

    def forget(self, name: str) -> None:
        """Drops ``name``'s body (the connector was deleted), so a deleted connector costs no memory."""
        with self._lock:
            self._views.pop(name, None)

    def __len__(self) -> int:
        return len(self._views)
