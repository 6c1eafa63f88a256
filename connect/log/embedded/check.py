"""``headrace log check`` and ``headrace log repair``: verify every batch on disk, move damage aside.

The check only reads (it runs beside a worker); what it finds at the very
end of an active segment that looks like an incomplete batch may be an
append in progress, so it is not counted as damage. Repair holds the
directory's owner lock, so it never runs beside a worker.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogError, LogGap
from connect.log.embedded.damage import Damage, damage_of, is_torn, walk
from connect.log.embedded.dirlock import DirectoryLock
from connect.log.embedded.topics import TopicStore


@attrs.define
class DamageFound:
    tp: TopicPartition
    segment: str  # path of the segment file
    damage: Damage


@attrs.define
class CheckReport:
    partitions: int = 0
    segments: int = 0
    batches: int = 0
    damaged: list[DamageFound] = attrs.field(factory=list)
    gaps: list[LogGap] = attrs.field(factory=list)  # recorded earlier by recovery or repair


def _noop(*_: object) -> None:
    pass


def check_log(root: str, worker_config: Mapping[str, Any],
              on_partition: Callable[[TopicPartition], None] | None = None) -> CheckReport:
    """Read every batch of every segment of every partition under ``root`` and check its CRC."""
    store = TopicStore(root, worker_config, _noop, _noop, read_only=True)
    report = CheckReport()
    try:
        for name in store.list(include_internal=True):
            for p in range(store.meta(name).partitions):
                plog = store.partition_log(name, p)
                report.partitions += 1
                segs = plog.refresh()
                for i, seg in enumerate(segs):
                    report.segments += 1
                    size = seg.size()
                    active = i == len(segs) - 1
                    next_base = None if active else segs[i + 1].base_offset
                    for start, end, hdr, expected in walk(seg, 0, size, seg.base_offset):
                        if hdr is not None:
                            report.batches += 1
                        elif not (active and end == size and is_torn(seg, start, size, expected)):
                            report.damaged.append(DamageFound(
                                plog.tp, seg.log_path, damage_of(seg, start, end, size, expected, next_base)))
                report.gaps.extend(plog.gaps())
                if on_partition is not None:
                    on_partition(plog.tp)
    finally:
        store.close()
    return report


def repair_partition(root: str, worker_config: Mapping[str, Any], topic: str, partition: int) -> list[LogGap]:
    """Move the damage of one partition aside (holding the directory lock); returns the gaps it made."""
    if not os.path.isdir(root):
        raise LogError(f"There is no embedded log at {root}")
    lock = DirectoryLock(root, purpose="repair")
    try:
        store = TopicStore(root, worker_config, _noop, _noop, recover=False)
        try:
            return store.partition_log(topic, partition).repair()
        finally:
            store.close()
    finally:
        lock.release()
