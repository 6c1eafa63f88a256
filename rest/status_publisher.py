"""Sends the worker's status listing to its REST front process while the front is reading statuses.

The front says ``want()`` when it serves status reads (at least once a second while they go on). Each want
gets a fresh listing, and for ``follow_s`` after it every change of the states (``status_changes()``, a
few attribute reads, looked at every ``interval_s``) gets one too. A worker whose statuses nobody reads
therefore builds and sends nothing, and its publishing thread sleeps until asked.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

from connect.runtime.herder import Herder
from rest.status_listing import EncodedStatusListing

__all__ = ["PUBLISH_INTERVAL_S", "StatusPublisher"]

log = logging.getLogger(__name__)

# how far the front's states may lag what runs: a task's FAILED is served this much later at most
PUBLISH_INTERVAL_S = 0.025
# how long after a want the changes are followed; the front renews well within it (rest.status_mirror)
FOLLOW_S = 10.0
# at most this share of the worker's time goes into gathering listings while states change all the time
# (a thousand tasks starting): the wait after a listing is at least its cost over this share, and at most
# _MAX_WAIT_S (a first listing can be slow once: plugin versions are looked up then)
_MAX_SHARE = 0.2
_MAX_WAIT_S = 0.25


class StatusPublisher:
    """``send(taken_at, listing)`` gets each new listing; ``want()`` asks for one and for the changes that
    follow it."""

    def __init__(self, herder: Herder, send: Callable[[float, bytes], None],
                 interval_s: float = PUBLISH_INTERVAL_S, follow_s: float = FOLLOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._herder = herder
        self._send = send
        self._interval_s = interval_s
        self._follow_s = follow_s
        self._clock = clock
        self._encoder = EncodedStatusListing()
        self._wanted = threading.Event()
        self._follow_until = float("-inf")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sent: Hashable = object()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="rest-status-publisher", daemon=True)
        self._thread.start()

    def want(self) -> None:
        self._follow_until = self._clock() + self._follow_s
        self._wanted.set()

    def following(self) -> bool:
        return self._clock() < self._follow_until

    def publish_if_changed(self) -> bool:
        """Sends a listing if one was asked for, or the states moved while they are followed; True if it did."""
        # read before the listing: what is sent is at least as new as this moment and this token
        taken_at = self._clock()
        token = self._herder.status_changes()
        if not self._wanted.is_set() and (token == self._sent or taken_at >= self._follow_until):
            return False
        self._wanted.clear()
        # fresh: counters as new as taken_at, which the front compares with the time of the reads it passed on
        bodies = self._herder.connector_status_bodies(fresh=True)
        listing = self._encoder.encode(self._herder.connectors(), bodies)
        self._send(taken_at, listing)
        self._sent = token
        log.debug("Sent the REST front a status listing of %d bytes taken at %.3f, in %.1f ms", len(listing),
                  taken_at, (self._clock() - taken_at) * 1000)
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self.following():
                self._wanted.wait()  # nobody reads statuses: nothing to do until someone does
                if self._stop.is_set():
                    return
            started = self._clock()
            try:
                published = self.publish_if_changed()
            except OSError:
                return  # the front is gone; its supervisor reports that
            except Exception:
                # the front keeps its last listing, and passes reads to the worker once that is stale
                log.exception("Could not gather the status listing for the REST front; trying again")
                published = False
                self._stop.wait(1.0)
            cost = self._clock() - started if published else 0.0
            # a want ends the wait: a read waits for it in the front. Wants come at most twice a second, or
            # once per listing while the front has none it may use, so the share above still bounds the rest
            self._wanted.wait(min(max(self._interval_s, cost / _MAX_SHARE), _MAX_WAIT_S))

    def stop(self) -> None:
        self._stop.set()
        self._wanted.set()
        if self._thread is not None:
            self._thread.join(5)
