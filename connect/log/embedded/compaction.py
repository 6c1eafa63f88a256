"""Log compaction for ``cleanup.policy=compact``: keep only the latest record of each key.

One pass over a partition:

1. map every key to its latest offset, over all segments including the
   active one (up to its size when the pass starts);
2. for each closed segment, drop records that a later record of the same
   key supersedes; a surviving tombstone (null value) is stamped with a
   delete horizon of now + ``delete.retention.ms`` the first time it is
   cleaned, and dropped by the first pass after that horizon (Kafka's
   KIP-534 scheme), so consumers have that long to see it;
3. write the survivors of consecutive closed segments, merged while they fit
   in ``segment.bytes``, to ``.cleaned`` files named after the first
   segment's base offset, then let PartitionLog swap them in (crash-safe and
   safe for concurrent readers).

Offsets never change: a cleaned batch keeps its base offset and the range
it used to cover and lists the offsets of its survivors. Records without a
key are kept, and so are the batches of transactions (data and markers). The active segment is never rewritten. Unlike Kafka there is
no dirty-ratio bookkeeping: a pass reads the whole partition but rewrites
nothing when nothing would change. The caller holds the cleaner lock.
"""

from __future__ import annotations

import logging
import os

import attrs

from connect.log.embedded.codec import (
    BatchHeader,
    CorruptBatchError,
    DecodedBatch,
    EncodedBatch,
    encode,
    parse_header,
)
from connect.log.embedded.fsutil import fsync_dir, write_all
from connect.log.embedded.index import OffsetIndex, TimeIndex, build_entries
from connect.log.embedded.partition import CLEANED, PartitionLog
from connect.log.embedded.segment import INDEX_SUFFIX, LOG_SUFFIX, TIMEINDEX_SUFFIX, LogSegment, segment_name

log = logging.getLogger(__name__)

_INT32_MAX = (1 << 31) - 1


@attrs.define
class CompactionResult:
    segments_before: int = 0
    segments_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    records_removed: int = 0
    tombstones_removed: int = 0


@attrs.define
class _CleanSegment:
    seg: LogSegment
    batches: list[bytes]  # framed batches to write (base offsets are already in them)
    changed: bool
    size: int
    last_offset: int


def _latest_offsets(segments: tuple[LogSegment, ...], active_end: int) -> dict[bytes, int]:
    latest: dict[bytes, int] = {}
    for i, seg in enumerate(segments):
        active = i == len(segments) - 1
        try:
            for _, batch, _ in seg.batches(0, active_end if active else None):
                if batch.txn:
                    continue  # transactional records neither shadow others nor are removed (below)
                # zip in C: later offsets overwrite earlier ones
                latest.update(zip(batch.keys, batch.offsets, strict=True))  # type: ignore[arg-type]
        except CorruptBatchError:
            if not active:
                raise
            # a torn tail of the active segment: recovery's business, not ours
    latest.pop(None, None)  # type: ignore[call-overload]
    return latest


def _clean_batch(
    batch: DecodedBatch, latest: dict[bytes, int], now: int, delete_retention_ms: int, result: CompactionResult
) -> EncodedBatch | None | bool:
    """The batch's survivors re-encoded, None if none survive, True if the batch is unchanged."""
    if batch.txn:
        # Kept whole: an aborted record must not shadow a committed one, and a cleaner that dropped records
        # of a transaction could make part of it visible. Transactional topics are compacted only where they
        # hold records written outside transactions.
        return True
    keys, offsets, values = batch.keys, batch.offsets, batch.values
    keep = [i for i, (k, o) in enumerate(zip(keys, offsets, strict=True)) if k is None or latest[k] == o]
    horizon = batch.delete_horizon
    tombstones = [i for i in keep if values[i] is None]
    if tombstones:
        if horizon >= 0 and now >= horizon:
            dropped = set(tombstones)
            keep = [i for i in keep if i not in dropped]
            result.tombstones_removed += len(tombstones)
            horizon = -1
        elif horizon < 0:
            horizon = now + delete_retention_ms
    result.records_removed += len(offsets) - len(keep)
    if len(keep) == len(offsets) and horizon == batch.delete_horizon:
        return True
    if not keep:
        return None
    base = batch.base_offset
    return encode(
        [values[i] for i in keep],
        [keys[i] for i in keep],
        [batch.timestamps[i] for i in keep],
        [batch.headers[i] for i in keep] if batch.headers is not None else None,
        offset_deltas=[offsets[i] - base for i in keep],
        last_offset_delta=batch.last_offset - base,
        delete_horizon=horizon,
        log_append_time=batch.timestamp_type == 1,
        default_timestamp=batch.timestamps[keep[0]],
    )


def _plan(seg: LogSegment, latest: dict[bytes, int], now: int, delete_retention_ms: int,
          result: CompactionResult) -> _CleanSegment:
    out: list[bytes] = []
    changed = False
    size = 0
    last = seg.base_offset - 1
    for hdr, batch, raw in seg.batches():
        cleaned = _clean_batch(batch, latest, now, delete_retention_ms, result)
        last = hdr.last_offset
        if cleaned is True:
            out.append(raw)
            size += len(raw)
            continue
        changed = True
        if cleaned is None:
            continue
        assert isinstance(cleaned, EncodedBatch)
        framed = b"".join([cleaned.frame(hdr.base_offset), *cleaned.parts])
        out.append(framed)
        size += len(framed)
    return _CleanSegment(seg, out, changed, size, last)


def _write_group(directory: str, base: int, members: list[_CleanSegment], index_interval: int) -> None:
    """Write the survivors of ``members`` as one segment (plus indexes) under ``.cleaned`` names."""
    stem = os.path.join(directory, segment_name(base))
    placed: list[tuple[int, BatchHeader]] = []
    fd = os.open(stem + LOG_SUFFIX + CLEANED, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        pos = 0
        for member in members:
            for raw in member.batches:
                write_all(fd, [raw])
                placed.append((pos, parse_header(raw)))
                pos += len(raw)
        os.fsync(fd)
    finally:
        os.close(fd)
    offsets, times = build_entries(placed, index_interval)
    OffsetIndex(stem + INDEX_SUFFIX + CLEANED, base).rewrite(offsets, durable=True)
    TimeIndex(stem + TIMEINDEX_SUFFIX + CLEANED, base).rewrite(times, durable=True)


def compact(plog: PartitionLog, now: int) -> CompactionResult | None:
    """One compaction pass over ``plog``; None when there was nothing to rewrite."""
    cfg = plog.config
    segments = plog.refresh()
    if len(segments) < 2:
        return None
    active_end = segments[-1].size()
    latest = _latest_offsets(segments, active_end)
    result = CompactionResult()
    plans = [_plan(seg, latest, now, cfg.delete_retention_ms, result) for seg in segments[:-1]]
    if not any(p.changed for p in plans):
        return None

    # merge neighbours while they fit in a segment and in 32-bit relative offsets
    groups: list[list[_CleanSegment]] = []
    for plan in plans:
        if groups:
            group = groups[-1]
            size = sum(p.size for p in group) + plan.size
            span = plan.last_offset - group[0].seg.base_offset
            if size <= cfg.segment_bytes and span <= _INT32_MAX:
                group.append(plan)
                continue
        groups.append([plan])

    swaps: list[dict[str, object]] = []
    first_base = segments[0].base_offset
    for group in groups:
        if len(group) == 1 and not group[0].changed:
            continue
        base = group[0].seg.base_offset
        bases = [p.seg.base_offset for p in group]
        empty = not any(p.batches for p in group)
        if empty and base != first_base:
            swaps.append({"bases": bases, "empty": True})
            continue
        # an emptied first segment stays, as an empty file, to keep the log start offset
        _write_group(plog.directory, base, group, cfg.index_interval_bytes)
        swaps.append({"bases": bases, "empty": False})
    if not swaps:
        return None
    fsync_dir(plog.directory)
    try:
        plog.swap_cleaned(swaps)
    except BaseException:
        plog.remove_stale_cleaned_files()
        raise
    result.segments_before = len(plans)
    result.bytes_before = sum(p.seg.size() for p in plans)
    after = plog.refresh()[:-1]
    result.segments_after = len(after)
    result.bytes_after = sum(s.size() for s in after)
    log.info(
        "Compacted %s: %d closed segment(s) of %d bytes became %d of %d bytes; "
        "removed %d superseded record(s) and %d expired tombstone(s)",
        plog.tp, result.segments_before, result.bytes_before, result.segments_after, result.bytes_after,
        result.records_removed - result.tombstones_removed, result.tombstones_removed,
    )
    return result
