"""Sequential reading of one partition: a cursor that turns file bytes into decoded batches."""

from __future__ import annotations

import bisect
import logging

from connect.log.api import LogError
from connect.log.embedded.codec import (
    HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    DecodedBatch,
    decode,
    parse_header,
)
from connect.log.embedded.damage import next_intact_batch
from connect.log.embedded.partition import PartitionLog
from connect.log.embedded.segment import LogSegment

log = logging.getLogger(__name__)


def trim(batch: DecodedBatch, offset: int) -> DecodedBatch | None:
    """The part of ``batch`` at or after ``offset`` (None when nothing is left)."""
    if batch.offsets[0] >= offset:
        return batch
    offsets = batch.offsets
    k = offset - offsets[0] if isinstance(offsets, range) else bisect.bisect_left(offsets, offset)
    if k >= len(offsets):
        return None
    return batch._replace(
        offsets=offsets[k:],
        timestamps=batch.timestamps[k:],
        keys=batch.keys[k:],
        values=batch.values[k:],
        headers=batch.headers[k:] if batch.headers is not None else None,
    )


class PartitionReader:
    """Reads forward from an offset, remembering where the previous read stopped.

    ``next_offset`` is the offset after everything the cursor has passed,
    including stretches that compaction emptied, so a consumer that has
    handed out all returned records can move its position there.
    """

    def __init__(self, plog: PartitionLog) -> None:
        self.log = plog
        self._seg: LogSegment | None = None
        self._pos = 0
        self.next_offset = -1
        self.bytes_read = 0  # bytes of batches the last read() went past
        self._gaps_told: set[int] = set()  # first offsets of the gaps this reader has logged

    def reset(self) -> None:
        self._seg = None

    def read(self, offset: int, max_bytes: int) -> list[DecodedBatch]:
        """Batches with records at ``offset`` or later (at least one batch even if larger than max_bytes).

        Returns [] when nothing is visible yet. Raises OffsetOutOfRange when
        ``offset`` is below the log start or beyond its end.
        """
        if self._seg is None or offset != self.next_offset:
            self._seg, self._pos = self.log.locate(offset)
            self.next_offset = offset
        seg, pos = self._seg, self._pos
        out: list[DecodedBatch] = []
        seen_closed = False
        relocated = False
        self.bytes_read = 0
        while True:
            data = seg.read(pos, max_bytes)
            used, pending = self._parse(data, seg, pos, out)
            if used == 0 and pending is not None and len(data) == max_bytes:
                # a single batch larger than max_bytes still has to come through
                data = seg.read(pos, pending.total_size)
                used, pending = self._parse(data, seg, pos, out)
            pos += used
            self.bytes_read += used
            if out:
                break
            if used:
                continue  # only skipped batches so far
            nxt = self.log.segment_after(seg)
            if nxt is None:
                if not relocated and self.log.replaced(seg):
                    # a writer moved damage out of this segment: its file is new, read on in that
                    relocated = True
                    seg, pos = self.log.locate(self.next_offset)
                    continue
                break  # the end of the log, for now
            if not seen_closed:
                # ``seg`` was rolled: read it once more, since it may have
                # grown between our last read and the roll
                seen_closed = True
                continue
            size = seg.size()
            if pos < size:
                log.warning("Skipping %d unreadable bytes at the end of %s", size - pos, seg.log_path)
            # By offset, not by file order: compaction may have merged what came
            # after this segment into one that now starts before it.
            seg, pos = self.log.locate(self.next_offset)
            seen_closed = False
        self._seg, self._pos = seg, pos
        return out

    def _parse(
        self, data: bytes, seg: LogSegment, file_pos: int, out: list[DecodedBatch]
    ) -> tuple[int, BatchHeader | None]:
        """Decode the complete batches in ``data`` into ``out``; returns bytes used and any incomplete header."""
        p = 0
        n = len(data)
        offset = self.next_offset
        while p + HEADER_SIZE <= n:
            try:
                hdr = parse_header(data, p)
            except CorruptBatchError:
                self._check_tail(seg, file_pos + p, None, out)
                return p, None
            end = p + hdr.total_size
            if end > n:
                return p, hdr
            if hdr.last_offset >= offset:
                if hdr.base_offset > offset:
                    self._crossed(offset, hdr.base_offset)
                try:
                    batch = trim(decode(data, p, hdr), offset)
                except CorruptBatchError:
                    self._check_tail(seg, file_pos + p, hdr, out)
                    return p, None
                if batch is not None:
                    out.append(batch)
                offset = hdr.last_offset + 1
                self.next_offset = offset
            p = end
        return p, None

    def _crossed(self, offset: int, next_base: int) -> None:
        """Offsets [offset, next_base) are not in the log: compaction's doing, or a recorded gap (logged once)."""
        for gap in self.log.gaps():
            last = gap.last_offset if gap.last_offset is not None else next_base - 1
            if gap.first_offset < next_base and last >= offset and gap.first_offset not in self._gaps_told:
                self._gaps_told.add(gap.first_offset)
                log.error("Skipping offsets %s of %s: lost to damage in segment %s (moved to %s)",
                          gap.offsets_text(), self.log.tp, gap.segment, gap.moved_to)

    def _check_tail(self, seg: LogSegment, pos: int, hdr: BatchHeader | None, out: list[DecodedBatch]) -> None:
        """Bad bytes at the very end of the active segment are a torn write awaiting recovery; elsewhere, damage.

        Damage is raised only once the batches before it have been handed out.
        """
        if out:
            return
        if self.log.segment_after(seg) is None:
            size = seg.size()
            if hdr is not None and pos + hdr.total_size >= size:
                return
            # an unreadable header: a torn tail only if no intact batch follows it
            if hdr is None and next_intact_batch(seg, pos + 1, size, self.next_offset) is None:
                return
        tp = self.log.tp
        raise LogError(
            f"Corrupt record batch in {seg.log_path} at byte position {pos} ({tp}, after offset "
            f"{self.next_offset - 1}); see 'headrace log check', and move the damage aside with "
            f"'headrace log repair --topic {tp.topic} --partition {tp.partition}' while no worker runs"
        )
