"""The log end offsets of the topics sink tasks read, for their lag in status and in ``/metrics``.

Status is asked per connector (the status page asks for every connector each refresh) and a scrape asks for
all of them; one shared lookup, reused for a moment, keeps that to one log request per topic per
``max_age_s`` rather than one per connector per call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogReader

__all__ = ["LogEndOffsets"]

log = logging.getLogger(__name__)


class LogEndOffsets:
    """Log end offsets by partition, read through one lazily opened ``LogReader`` and kept ``max_age_s``."""

    def __init__(self, open_reader: Callable[[], LogReader], max_age_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic,
                 all_topics: Callable[[], Iterable[str]] = tuple) -> None:
        self._open_reader = open_reader
        # on a miss, every topic this gives is read too: a status sweep asks connector by connector, and
        # one lookup of all topics (the embedded log lists its topics on every lookup) serves the whole sweep
        self._all_topics = all_topics
        self._max_age_s = max_age_s
        self._clock = clock
        self._reader: LogReader | None = None
        self._lock = threading.Lock()  # one LogReader serves one thread; callers may overlap
        self._topics: dict[str, tuple[float, dict[TopicPartition, int]]] = {}  # topic -> (read at, ends)
        self._refresh_lock = threading.Lock()
        self._refresher: threading.Thread | None = None

    def ends(self, topics: Iterable[str]) -> dict[TopicPartition, int]:
        """The end offset of every partition of ``topics`` that exists (raises when the log is unreachable)."""
        wanted = set(topics)
        with self._lock:
            now = self._clock()
            stale = sorted(t for t in wanted
                           if t not in self._topics or now - self._topics[t][0] >= self._max_age_s)
            if stale:
                stale = sorted({*stale, *(t for t in self._all_topics()
                                          if t not in self._topics or now - self._topics[t][0] >= self._max_age_s)})
                if self._reader is None:
                    self._reader = self._open_reader()
                fresh: dict[str, dict[TopicPartition, int]] = {t: {} for t in stale}
                for tp, (_, end) in self._reader.partition_offsets(stale).items():
                    fresh.setdefault(tp.topic, {})[tp] = end
                for topic, ends in fresh.items():
                    self._topics[topic] = (now, ends)
            # topics no longer asked for are dropped when old, so deleted ones do not pile up
            for topic in [t for t, (at, _) in self._topics.items() if t not in wanted and now - at > 60]:
                del self._topics[topic]
            out: dict[TopicPartition, int] = {}
            for topic in wanted:
                out.update(self._topics[topic][1])
            return out

    def known_ends(self, topics: Iterable[str]) -> dict[TopicPartition, int]:
        """The ends known now of ``topics`` (those read before), without waiting; stale or missing ones are read
        on a short-lived ``log-end-offsets`` thread, one at a time, for the next call."""
        wanted = set(topics)
        now = self._clock()
        out: dict[TopicPartition, int] = {}
        stale = False
        for topic in wanted:
            entry = self._topics.get(topic)  # one dict read: safe beside a refresh under the GIL
            if entry is None or now - entry[0] >= self._max_age_s:
                stale = True
            if entry is not None:
                out.update(entry[1])
        if stale:
            with self._refresh_lock:
                if self._refresher is None or not self._refresher.is_alive():
                    self._refresher = threading.Thread(target=self._refresh, args=(wanted,), name="log-end-offsets",
                                                       daemon=True)
                    self._refresher.start()
        return out

    def _refresh(self, topics: set[str]) -> None:
        try:
            self.ends(topics)
        except Exception as exc:  # the log unreachable: the next call tries again
            log.debug("Could not read the log end offsets of %s: %s", sorted(topics), exc)

    def close(self) -> None:
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
            self._topics.clear()
