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
from connect.log.embedded.fsutil import FileLock, atomic_write, make_private_dir

GROUPS_DIR = "__consumer_offsets"


def _file_name(group: str) -> str:
    # quote() leaves '.', so escape it too: no hidden files, no '.' or '..'
    safe = quote(group, safe="-_").replace(".", "%2E")
    if len(safe) > 200:
        safe = safe[:100] + "~" + hashlib.sha256(group.encode()).hexdigest()
    return safe + ".json"


class GroupOffsetStore:
    def __init__(self, root: str, durable: bool = False, read_only: bool = False) -> None:
        self.dir = os.path.join(root, GROUPS_DIR)
        if not read_only:
            make_private_dir(self.dir)
        self._durable = durable
        self._lock_obj: FileLock | None = None

    @property
    def _lock(self) -> FileLock:
        # made on the first commit, so that a read-only open creates nothing
        if self._lock_obj is None:
            make_private_dir(self.dir)
            self._lock_obj = FileLock(os.path.join(self.dir, ".lock"))
        return self._lock_obj

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

    def forget_topic(self, topic: str) -> None:
        """Drop every group's committed offsets of a deleted topic, as Kafka's group coordinator does."""
        if not os.path.isdir(self.dir):
            return
        with self._lock.hold():
            for name in os.listdir(self.dir):
                if not name.endswith(".json"):
                    continue
                path = os.path.join(self.dir, name)
                try:
                    with open(path, encoding="utf-8") as f:
                        raw = json.load(f)
                except (OSError, ValueError):
                    continue
                kept = [e for e in raw.get("offsets", []) if e.get("topic") != topic]
                if len(kept) != len(raw.get("offsets", [])):
                    raw["offsets"] = kept
                    atomic_write(path, json.dumps(raw).encode(), durable=self._durable)

    def delete(self, group: str) -> bool:
        with self._lock.hold(), contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(group))
            return True
        return False

    def close(self) -> None:
        if self._lock_obj is not None:
            self._lock_obj.close()
