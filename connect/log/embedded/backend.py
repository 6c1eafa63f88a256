"""EmbeddedBackend: the durable on-disk log under one directory, wired together.

Three ways to open it:

* ``owner=True`` (a worker, ``headrace log repair``): takes the directory's
  owner lock first (see dirlock.py), so a second worker on the same
  directory is refused, then recovers every partition;
* the default, a writer (tests, the console producer): recovers every
  partition it opens, takes no owner lock, so it may run beside a worker;
* ``read_only=True`` (``headrace topics``, console consumer, ``log check``):
  changes, creates and recovers nothing; it cannot produce;
* ``beside_owner=True`` (a worker's task host processes): a writer that
  works beside the owner, which has recovered the directory and runs its
  cleaner: it opens partitions only as its clients use them, and cleans
  nothing.

Recovery cuts off a torn tail and moves damage aside, keeping the intact
batches after it and recording the lost offsets as a gap (partition.py).
Writers start the ``embedded-log-cleaner`` thread, which applies retention
and compaction every ``log.retention.check.interval.ms`` (default 300000).

Worker settings read here, besides the broker-style topic defaults listed
in config.py: ``num.partitions`` (1) and ``auto.create.topics.enable``
(true) for topics a producer creates by writing to them, and
``embedded.log.fsync`` (false): when true every append is fsynced, like
``flush.messages=1``; otherwise an acknowledged append is in the OS page
cache, which survives the process being killed but not a power cut.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from connect.log.api import Admin, Consumer, LogBackend, LogError, LogReader, Producer, read_committed_of
from connect.log.embedded.admin import EmbeddedAdmin
from connect.log.embedded.cleaner import CleaningStats, LogCleaner
from connect.log.embedded.config import client_bool, client_int
from connect.log.embedded.consumer import EmbeddedConsumer
from connect.log.embedded.dirlock import DirectoryLock
from connect.log.embedded.groups import GroupOffsetStore
from connect.log.embedded.producer import EmbeddedProducer
from connect.log.embedded.range_reader import EmbeddedLogReader
from connect.log.embedded.signals import DirSignals, signals_for
from connect.log.embedded.topics import TopicStore
from connect.log.embedded.transactional_producer import TransactionalEmbeddedProducer
from connect.log.embedded.transactions import TransactionCoordinator

log = logging.getLogger(__name__)


def _announced(signal: Callable[..., None], signals: DirSignals) -> Callable[..., None]:
    """``signal`` in this process, and the directory's marker touched for a process that owns it."""
    def both(*args: Any) -> None:
        signal(*args)
        signals.announce_append()
    return both


def _announced_when_shared(signal: Callable[..., None], signals: DirSignals) -> Callable[..., None]:
    """The owner's appends and topic changes: heard in this process, and announced through the marker once
    writers beside it wait for it (``share_with_processes``)."""
    def heard(*args: Any) -> None:
        signal(*args)
        if signals.announce_own_appends:
            signals.announce_append()
    return heard


class EmbeddedBackend(LogBackend):
    name = "embedded"

    def __init__(self, log_dir: str, worker_config: Mapping[str, Any] | None = None, *, owner: bool = False,
                 read_only: bool = False, beside_owner: bool = False) -> None:
        if owner and (read_only or beside_owner):
            raise ValueError("an owner writes and cleans; it cannot be read-only or beside another owner")
        self.log_dir = os.path.abspath(log_dir)
        self.read_only = read_only
        self._worker_config = dict(worker_config or {})
        self._owner_lock = DirectoryLock(self.log_dir) if owner else None
        try:
            signals = signals_for(self.log_dir)
            self._signals = signals
            if owner:
                on_topics = _announced_when_shared(signals.topics_changed, signals)
                on_append = _announced_when_shared(signals.data_appended, signals)
            else:
                # the owner, if one runs in another process, hears of these through the directory's marker
                on_topics, on_append = _announced(signals.topics_changed, signals), _announced(signals.data_appended,
                                                                                             signals)
            self._store = TopicStore(self.log_dir, self._worker_config, on_topics, on_append, read_only=read_only)
            durable = client_bool(self._worker_config, "embedded.log.fsync", False)
            self._offsets = GroupOffsetStore(self.log_dir, durable=durable, read_only=read_only)
            self._transactions = TransactionCoordinator(self.log_dir, self._store.partition_log,
                                                        durable_commits=durable)
            if not read_only and not beside_owner:
                opened = self._store.open_logs()
                log.info("Opened the embedded log at %s (%d partition(s))", self.log_dir, len(opened))
            if beside_owner:
                signals.owner_announces = True
            if owner:
                # the previous owner is gone: what its producers left open is finished before anyone reads
                finished = self._transactions.recover_all()
                if finished:
                    log.info("Finished %d transaction(s) left open by the previous owner of %s", finished,
                             self.log_dir)
        except BaseException:
            if self._owner_lock is not None:
                self._owner_lock.release()
            raise
        self._cleaner: LogCleaner | None = None
        if not read_only and not beside_owner:
            interval = client_int(self._worker_config, "log.retention.check.interval.ms", 300000)
            self._cleaner = LogCleaner(self._store, interval)
            self._cleaner.start()
        self._clients: weakref.WeakSet[Producer | Consumer] = weakref.WeakSet()
        self._closed = False
        if owner:
            signals.owner_opened()

    def share_with_processes(self) -> None:
        """Writers in other processes (task hosts) read beside this owner from now on: it announces its
        appends to them, as they announce theirs."""
        self._signals.announce_own_appends = True

    def producer(self, config: Mapping[str, Any] | None = None) -> Producer:
        if self.read_only:
            raise LogError(f"The embedded log at {self.log_dir} is open read-only; it cannot produce")
        config = config or {}
        p: EmbeddedProducer
        if config.get("transactional.id"):
            p = TransactionalEmbeddedProducer(self._store, config, self._worker_config, self._transactions)
        else:
            p = EmbeddedProducer(self._store, config, self._worker_config)
        self._clients.add(p)
        return p

    def consumer(self, group_id: str | None = None, config: Mapping[str, Any] | None = None) -> Consumer:
        c = EmbeddedConsumer(self._store, self._offsets, self._signals, group_id, config or {})
        self._clients.add(c)
        return c

    def admin(self, config: Mapping[str, Any] | None = None) -> Admin:
        return EmbeddedAdmin(self._store, self._offsets, self._transactions)

    def reader(self, isolation_level: str = "read_uncommitted") -> LogReader:
        return EmbeddedLogReader(self._store, read_committed=read_committed_of(isolation_level))

    def run_cleaner_once(self, now_ms: int | None = None) -> CleaningStats:
        """Apply retention and compaction to every partition now (``now_ms`` overrides the clock)."""
        if self._cleaner is None:
            raise LogError(f"The embedded log at {self.log_dir} is open read-only")
        return self._cleaner.run_once(now_ms)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._cleaner is not None:
            self._cleaner.stop()
        for client in list(self._clients):
            try:
                client.close()
            except Exception:
                log.exception("Closing %r failed", client)
        self._store.close()
        self._offsets.close()
        if self._owner_lock is not None:
            self._signals.owner_closed()
            self._owner_lock.release()
