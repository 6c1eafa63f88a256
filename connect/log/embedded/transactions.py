"""Transactions on the embedded log: producer identities with epochs, commit points and markers.

Kafka's three pieces, on files:

* **Identity and fencing.** Each ``transactional.id`` has a state file in ``<log dir>/__transactions/``
  (JSON, replaced atomically and fsynced, changed only under its own file lock, so another process is
  fenced as surely as another thread): a producer id, an epoch, whether a commit is under way, and every
  partition the id has ever written in a transaction (added, durably, before its first batch there). ``init_transactions`` bumps the epoch: an older
  instance's next append or commit finds a newer epoch and raises ProducerFencedError.
* **The commit point.** A transaction's data batches go straight into their partitions, marked with the
  producer id and epoch. To commit, the producer records PREPARE_COMMIT in the state file: from then on
  the transaction is committed, whatever happens. Then it appends a COMMIT marker to each partition it
  wrote and records COMPLETE. An abort appends ABORT markers. The data and the commit point are as
  durable as the log's other appends: in the page cache, which survives the process being killed, or,
  with ``embedded.log.fsync=true`` (or a topic's ``flush.messages``), fsynced first, data then commit
  point, so that a power cut cannot commit records it lost.
* **Recovery.** A transaction left in PREPARE_COMMIT by a dead process is completed; anything else it may
  have left open is aborted, by an ABORT marker in every partition the id ever wrote (a marker for a
  producer with nothing open in that partition is harmless to readers). The owner of the log does this for every id when it opens the log,
  so readers are never held up by a crashed producer; ``init_transactions`` does it for its own id.

Readers (txn_filter.py) hand out a transaction's data only once its COMMIT marker is read, never the
data of an aborted one, and never markers. Only the owner process recovers; a transactional producer in
another process still fences and is fenced through the state files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import random
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogError, ProducerFencedError
from connect.log.embedded.codec import TXN_ABORT, TXN_COMMIT, encode
from connect.log.embedded.fsutil import FileLock, atomic_write, make_private_dir
from connect.log.embedded.partition import now_ms

__all__ = ["TransactionCoordinator", "TransactionState"]

log = logging.getLogger(__name__)

TRANSACTIONS_DIR = "__transactions"
EMPTY, PREPARE_COMMIT, COMPLETE = "Empty", "PrepareCommit", "Complete"


@attrs.define
class TransactionState:
    transactional_id: str
    producer_id: int
    epoch: int
    state: str = EMPTY
    partitions: list[tuple[str, int]] = attrs.Factory(list)  # every partition ever written, in order

    def to_json(self) -> bytes:
        return json.dumps({"transactional.id": self.transactional_id, "producer.id": self.producer_id,
                           "epoch": self.epoch, "state": self.state,
                           "partitions": [list(tp) for tp in self.partitions]}).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> TransactionState:
        doc = json.loads(raw)
        return cls(str(doc["transactional.id"]), int(doc["producer.id"]), int(doc["epoch"]), str(doc["state"]),
                   [(str(t), int(p)) for t, p in doc.get("partitions", [])])


def _marker(pid: int, epoch: int, kind: int) -> Any:
    return encode([None], [b"COMMIT" if kind == TXN_COMMIT else b"ABORT"], default_timestamp=now_ms(),
                  transaction=(pid, epoch, kind))


class TransactionCoordinator:
    """The state files of one log directory. ``append_marker(tp, batch)`` appends to a partition."""

    def __init__(self, log_dir: str, partition_log: Any, durable_commits: bool = True) -> None:
        self.directory = os.path.join(log_dir, TRANSACTIONS_DIR)
        # whether the commit point is fsynced: only worth it where the data before it is (embedded.log.fsync);
        # a commit point on disk for data still in the page cache would make a power cut commit lost records
        self._durable_commits = durable_commits
        self._partition_log = partition_log  # (topic, partition) -> PartitionLog
        self._locks: dict[str, FileLock] = {}
        self._locks_mutex = threading.Lock()

    def _path(self, transactional_id: str) -> str:
        # a hash: any transactional id makes a safe file name
        digest = hashlib.sha256(transactional_id.encode("utf-8")).hexdigest()[:40]
        return os.path.join(self.directory, digest + ".json")

    @contextlib.contextmanager
    def locked(self, transactional_id: str) -> Iterator[TransactionState | None]:
        """The id's state, read under its lock (None: the id never initialised)."""
        make_private_dir(self.directory)
        path = self._path(transactional_id)
        with self._locks_mutex:
            lock = self._locks.get(path)
            if lock is None:
                lock = self._locks[path] = FileLock(path + ".lock")
        with lock.hold():
            try:
                with open(path, "rb") as fh:
                    state: TransactionState | None = TransactionState.from_json(fh.read())
            except FileNotFoundError:
                state = None
            yield state

    def save(self, state: TransactionState, durable: bool = True) -> None:
        """Called with the id's lock held."""
        atomic_write(self._path(state.transactional_id), state.to_json(), durable=durable)

    # -- the producer's calls --------------------------------------------------------------------------------

    def init(self, transactional_id: str) -> TransactionState:
        """Fence older instances of the id and finish what they left open; the new instance's state."""
        with self.locked(transactional_id) as state:
            if state is None:
                state = TransactionState(transactional_id, random.getrandbits(62), -1)
            else:
                self._finish(state, "a new producer of the id initialised")
            state.epoch += 1
            state.state = EMPTY
            self.save(state)
            return state

    def check(self, state: TransactionState, current: TransactionState | None) -> None:
        if current is None or current.producer_id != state.producer_id or current.epoch != state.epoch:
            raise ProducerFencedError(
                f"transactional.id '{state.transactional_id}' (epoch {state.epoch}) was fenced: a newer producer "
                f"of this id has started (epoch {current.epoch if current else '?'})")

    def begin_writes(self, state: TransactionState, partitions: Sequence[TopicPartition]) -> None:
        """Before a transaction's first append to each of ``partitions``: check the producer is not fenced,
        and record a partition the id never wrote before (durably), so recovery knows where to abort."""
        with self.locked(state.transactional_id) as current:
            self.check(state, current)
            assert current is not None
            known = set(current.partitions)
            new = [(tp.topic, tp.partition) for tp in partitions if (tp.topic, tp.partition) not in known]
            if new:
                current.partitions += new
                self.save(current)
            state.partitions = current.partitions

    def commit(self, state: TransactionState, written: Sequence[TopicPartition]) -> None:
        """The data of ``written`` is durable: make the transaction committed, then write its markers."""
        with self.locked(state.transactional_id) as current:
            self.check(state, current)
            assert current is not None
            current.state = PREPARE_COMMIT
            self.save(current, durable=self._durable_commits)  # the commit point
            for tp in written:
                self._partition_log(tp.topic, tp.partition).append(_marker(state.producer_id, state.epoch, TXN_COMMIT))
            current.state = COMPLETE
            self.save(current, durable=False)  # lost in a power cut: recovery writes the markers again
            state.state = COMPLETE

    def abort(self, state: TransactionState, written: Sequence[TopicPartition]) -> None:
        with self.locked(state.transactional_id) as current:
            self.check(state, current)
            assert current is not None
            for tp in written:
                self._partition_log(tp.topic, tp.partition).append(_marker(state.producer_id, state.epoch, TXN_ABORT))
            current.state = COMPLETE
            self.save(current, durable=False)
            state.state = COMPLETE

    def fence(self, transactional_ids: Sequence[str]) -> None:
        """Admin.fence_producers: bump each id's epoch, aborting what it had open."""
        for tid in transactional_ids:
            with self.locked(tid) as state:
                if state is None:
                    continue  # nothing ever ran with this id, so nothing to fence
                self._finish(state, "the id was fenced")
                state.epoch += 1
                state.state = EMPTY
                self.save(state)

    # -- recovery ----------------------------------------------------------------------------------------------

    def recover_all(self) -> int:
        """The owner's start: finish every transaction a dead process left open; how many there were."""
        if not os.path.isdir(self.directory):
            return 0
        finished = 0
        for name in sorted(os.listdir(self.directory)):
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(self.directory, name), "rb") as fh:
                    tid = TransactionState.from_json(fh.read()).transactional_id
            except (OSError, ValueError, KeyError) as exc:
                raise LogError(f"Unreadable transaction state {name} in {self.directory}: {exc}") from None
            with self.locked(tid) as state:
                if state is not None and state.partitions:
                    self._finish(state, "its producer is gone (recovery of the log)")
                    state.state = COMPLETE
                    state.epoch += 1  # whatever of the old epoch still shows up is a fenced producer's
                    self.save(state)
                    finished += 1
        return finished

    def _finish(self, state: TransactionState, why: str) -> None:
        """Complete a committed-but-unmarked transaction, else abort whatever may be open (the id's lock
        held). The state file does not say whether a transaction is open (that would cost an fsync per
        transaction), so an ABORT marker goes to every partition the id ever wrote: where nothing of the
        producer is open, readers pass over it."""
        if not state.partitions:
            return
        kind = TXN_COMMIT if state.state == PREPARE_COMMIT else TXN_ABORT
        for topic, partition in state.partitions:
            try:
                plog = self._partition_log(topic, partition)
            except LogError:
                continue  # the topic was deleted: nothing left to mark
            plog.append(_marker(state.producer_id, state.epoch, kind))
        log.info("Transaction of transactional.id '%s' (epoch %d) %s: %s", state.transactional_id, state.epoch,
                 "committed" if kind == TXN_COMMIT else "aborted", why)
