"""What a reader of one partition may hand out, given the transaction batches it reads (transactions.py).

Markers are never handed out. With ``read_committed``, a transaction's data is held from its first batch
until its marker is read: released on COMMIT, dropped on ABORT, and everything read after the first held
batch waits behind it, so records still come out in offset order and never past the first open
transaction (Kafka's last stable offset). Data of a producer id is also dropped once a batch of the same
id with a newer epoch is read: that producer was fenced, and its newer instance aborted what it had open.

``resolved`` is the offset up to which everything read has been handed out or dropped: a consumer may
move its position there (past markers and aborted data) once it has delivered what came out, and must
go no further, since what follows is still held.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import Any

from connect.log.embedded.codec import TXN_COMMIT, TXN_DATA, TXN_NONE, DecodedBatch

__all__ = ["TransactionFilter"]

_OPEN, _READY, _DROP = 0, 1, 2


class TransactionFilter:
    __slots__ = ("_held", "_open", "committed_only", "read_to", "resolved")

    def __init__(self, committed_only: bool) -> None:
        self.committed_only = committed_only
        self._held: collections.deque[list[Any]] = collections.deque()  # [batch, status, producer id, epoch]
        self._open: dict[int, list[list[Any]]] = {}  # producer id -> its held entries still open
        self.read_to = -1  # the offset after the last batch fed; -1: nothing fed since the last reset
        self.resolved = -1

    def reset(self) -> None:
        """The reader moved (a seek, a reset): forget what was held; it is read again."""
        self._held.clear()
        self._open.clear()
        self.read_to = -1
        self.resolved = -1

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def settled_below(self, end: int) -> bool:
        """Whether every batch with offsets below ``end`` has been read and handed out or dropped."""
        return self.read_to >= end and (not self._held or self._held[0][0].base_offset >= end)

    def feed(self, batches: Iterable[DecodedBatch]) -> list[DecodedBatch]:
        """The batches that may be handed out now, in offset order, from ``batches`` and what was held."""
        out: list[DecodedBatch] = []
        if not self.committed_only:
            for b in batches:
                if b.txn <= TXN_DATA:
                    out.append(b)
                self.read_to = self.resolved = b.last_offset + 1
            return out
        held = self._held
        for b in batches:
            self.read_to = b.last_offset + 1
            kind = b.txn
            if kind == TXN_NONE:
                if not held:
                    out.append(b)
                    self.resolved = self.read_to
                else:
                    held.append([b, _READY, -1, -1])
                continue
            self._retire_older_epochs(b.producer_id, b.producer_epoch)
            if kind == TXN_DATA:
                entry: list[Any] = [b, _OPEN, b.producer_id, b.producer_epoch]
                held.append(entry)
                self._open.setdefault(b.producer_id, []).append(entry)
            else:
                status = _READY if kind == TXN_COMMIT else _DROP
                still_open: list[list[Any]] = []
                for entry in self._open.pop(b.producer_id, []):
                    if entry[3] <= b.producer_epoch:
                        entry[1] = status
                    else:
                        still_open.append(entry)
                if still_open:
                    self._open[b.producer_id] = still_open
                held.append([b, _DROP, -1, -1])  # the marker itself
            self._release(out)
        return out

    def _retire_older_epochs(self, pid: int, epoch: int) -> None:
        entries = self._open.get(pid)
        if not entries or all(int(e[3]) >= epoch for e in entries):
            return
        keep = []
        for entry in entries:
            if entry[3] < epoch:
                entry[1] = _DROP  # a fenced instance's data: its successor aborted that transaction
            else:
                keep.append(entry)
        if keep:
            self._open[pid] = keep
        else:
            del self._open[pid]

    def _release(self, out: list[DecodedBatch]) -> None:
        held = self._held
        while held and held[0][1] != _OPEN:
            batch, status, _, _ = held.popleft()
            if status == _READY:
                out.append(batch)
            self.resolved = batch.last_offset + 1
        if not held:
            self.resolved = self.read_to
