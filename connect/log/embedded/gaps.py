"""The record of a partition's gaps: offsets lost to damage, kept in ``gaps.json`` beside the segments.

Recovery and ``headrace log repair`` add to it (under the partition lock,
before the damaged bytes leave the segment, so a crash cannot lose the
record); readers, ``topics describe`` and metrics read it. A gap found
again after a crash is recognised by its segment and first offset and not
recorded twice.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogGap
from connect.log.embedded.fsutil import atomic_write

log = logging.getLogger(__name__)

GAPS_FILE = "gaps.json"


def read_gaps(directory: str, tp: TopicPartition) -> tuple[LogGap, ...]:
    """The gaps recorded for the partition in ``directory`` (none when the file is missing)."""
    try:
        with open(os.path.join(directory, GAPS_FILE), encoding="utf-8") as f:
            raw = json.load(f)
    except FileNotFoundError:
        return ()
    except (OSError, ValueError) as exc:
        log.error("Cannot read the gap record %s of %s: %s", os.path.join(directory, GAPS_FILE), tp, exc)
        return ()
    out = []
    for g in raw.get("gaps", []):
        try:
            out.append(LogGap(tp.topic, tp.partition, int(g["first"]),
                              None if g.get("last") is None else int(g["last"]),
                              str(g.get("segment", "")), int(g.get("position", 0)), int(g.get("bytes", 0)),
                              str(g.get("moved_to", "")), int(g.get("detected_ms", 0))))
        except (KeyError, TypeError, ValueError):
            log.error("Ignoring a malformed entry in the gap record of %s: %r", tp, g)
    return tuple(sorted(out, key=lambda g: g.first_offset))


def record_gaps(directory: str, tp: TopicPartition, new: Iterable[LogGap]) -> list[LogGap]:
    """Add gaps to the record durably (partition lock held); returns those that were not there yet."""
    current = list(read_gaps(directory, tp))
    known = {(g.segment, g.first_offset) for g in current}
    added = [g for g in new if (g.segment, g.first_offset) not in known]
    if not added:
        return []
    entries = [
        {"first": g.first_offset, "last": g.last_offset, "segment": g.segment, "position": g.position,
         "bytes": g.length, "moved_to": g.moved_to, "detected_ms": g.detected_ms}
        for g in sorted([*current, *added], key=lambda g: g.first_offset)
    ]
    atomic_write(os.path.join(directory, GAPS_FILE), json.dumps({"gaps": entries}, indent=1).encode(),
                 durable=True)
    return added


def gap_floor(gaps: Iterable[LogGap]) -> int:
    """The offset after the last known lost offset: the log end never goes below it, so no offset is reused."""
    return max((g.last_offset + 1 for g in gaps if g.last_offset is not None), default=0)
