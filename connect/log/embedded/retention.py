"""Time- and size-based retention: deleting a partition's oldest closed segments, as Kafka does.

Only whole segments go, oldest first, and never the active one; the log
start offset is the base offset of the oldest remaining segment, so it
advances with every deletion. The caller holds the partition's cleaner lock.
"""

from __future__ import annotations

import logging

from connect.log.embedded.partition import PartitionLog

log = logging.getLogger(__name__)


def apply_retention(plog: PartitionLog, now: int) -> int:
    """Delete the segments that ``retention.ms``/``retention.bytes`` no longer keep; returns how many."""
    cfg = plog.config
    segments = plog.refresh()
    closed = segments[:-1]
    doomed = []
    if cfg.retention_ms >= 0:
        for seg in closed:
            # a segment's age is that of its newest record (Kafka's largest timestamp)
            if now - seg.max_timestamp() > cfg.retention_ms:
                doomed.append(seg)
            else:
                break
    if cfg.retention_bytes >= 0:
        excess = sum(s.size() for s in segments) - sum(s.size() for s in doomed) - cfg.retention_bytes
        for seg in closed[len(doomed):]:
            size = seg.size()
            if excess - size < 0:
                break
            doomed.append(seg)
            excess -= size
    if not doomed:
        return 0
    deleted = plog.delete_segments([s.base_offset for s in doomed])
    if deleted:
        log.info(
            "Retention deleted %d segment(s) of %s (%d bytes); log start offset is now %d",
            deleted, plog.tp, sum(s.size() for s in doomed), plog.start_offset(),
        )
    return deleted
