"""The background cleaner: retention and compaction for every partition, from one named thread."""

from __future__ import annotations

import logging
import threading

import attrs

from connect.log.api import UnknownTopicError
from connect.log.embedded.compaction import compact
from connect.log.embedded.partition import now_ms
from connect.log.embedded.retention import apply_retention
from connect.log.embedded.topics import TopicStore

log = logging.getLogger(__name__)

THREAD_NAME = "embedded-log-cleaner"


@attrs.define
class CleaningStats:
    partitions: int = 0
    segments_deleted: int = 0
    partitions_compacted: int = 0
    records_removed: int = 0


class LogCleaner:
    """Runs a cleaning pass every ``interval_ms`` on its own thread, or once on demand.

    A partition another process is cleaning at the moment (its cleaner lock
    is taken) is skipped until the next pass.
    """

    def __init__(self, store: TopicStore, interval_ms: int) -> None:
        self._store = store
        self._interval = max(interval_ms, 1) / 1000.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pass_lock = threading.Lock()

    def run_once(self, now: int | None = None) -> CleaningStats:
        stats = CleaningStats()
        with self._pass_lock:
            for plog in self._store.open_logs():
                if self._stop.is_set():
                    break
                cfg = plog.config
                try:
                    with plog.cleaner_lock().try_hold() as held:
                        if not held:
                            continue
                        stats.partitions += 1
                        plog.remove_stale_cleaned_files()
                        at = now_ms() if now is None else now
                        if cfg.compact:
                            result = compact(plog, at)
                            if result is not None:
                                stats.partitions_compacted += 1
                                stats.records_removed += result.records_removed
                        if cfg.delete:
                            stats.segments_deleted += apply_retention(plog, at)
                except UnknownTopicError:
                    continue  # deleted while we cleaned
                except Exception:
                    log.exception("Cleaning %s failed; will try again on the next pass", plog.tp)
        return stats

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.run_once()
            except Exception:
                log.exception("Log cleaner pass failed")

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=THREAD_NAME, daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
