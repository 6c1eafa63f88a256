"""Committed consumer-group offsets, one JSON file per group under ``<log dir>/__consumer_offsets/``.

A commit reads the group's file, merges, and atomically replaces it, all
under one flock for the directory, so commits from several processes never
lose each other's partitions. Readers need no lock: a file is only ever
replaced whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from urllib.parse import quote

from connect.api.topic_partition import TopicPartition
from connect.log.embedded.fsutil import FileLock, atomic_write

GROUPS_DIR = "__consumer_offsets"


def _file_name(group: str) -> str:
    # quote() leaves '.', so escape it too: no hidden files, no '.' or '..'
    safe = quote(group, safe="-_").replace(".", "%2E")
    if len(safe) > 200:
        safe = safe[:100] + "~" + hashlib.sha256(group.encode()).hexdigest()
    return safe + ".json"


class GroupOffsetStore:
    def __init__(self, root: str, durable: bool = False) -> None:
        self.dir = os.path.join(root, GROUPS_DIR)
        os.makedirs(self.dir, exist_ok=True)
        self._durable = durable
        self._lock = FileLock(os.path.join(self.dir, ".lock"))

    def _path(self, group: str) -> str:
        return os.path.join(self.dir, _file_name(group))

    def _load(self, group: str) -> dict[TopicPartition, int]:
        try:
            with open(self._path(group), encoding="utf-8") as f:
                raw = json.load(f)
        except FileNotFoundError:
            return {}
        return {TopicPartition(e["topic"], int(e["partition"])): int(e["offset"]) for e in raw["offsets"]}

    def read(self, group: str) -> dict[TopicPartition, int]:
        return self._load(group)

    def commit(self, group: str, offsets: Mapping[TopicPartition, int | None]) -> None:
        """Merge ``offsets`` into the group's committed offsets; None removes a partition's entry."""
        if not offsets:
            return
        with self._lock.hold():
            current = self._load(group)
            for tp, off in offsets.items():
                if off is None:
                    current.pop(TopicPartition(*tp), None)
                else:
                    current[TopicPartition(*tp)] = int(off)
            entries = [
                {"topic": tp.topic, "partition": tp.partition, "offset": off}
                for tp, off in sorted(current.items())
            ]
            data = json.dumps({"group": group, "offsets": entries}).encode()
            atomic_write(self._path(group), data, durable=self._durable)

    def delete(self, group: str) -> bool:
        with self._lock.hold(), contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(group))
            return True
        return False

    def close(self) -> None:
        self._lock.close()
