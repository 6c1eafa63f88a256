"""Finding damage in a segment and taking it out without losing the intact batches around it.

A segment is read as a sequence of runs: intact batches (a plausible header
and a matching CRC) and, between them, runs of bytes that are not one. After
a bad run the scan resynchronises on the next intact batch: it looks for the
magic and version bytes and accepts a candidate only when its header is
plausible, its offsets come after what was read so far and its CRC matches.

A bad run at the very end of the active segment that is an incomplete batch
(a header whose batch reaches past the end of the file, or fewer bytes than
a header) is a torn write: it was never acknowledged and is simply cut off.
Anything else is damage: its bytes are moved aside into
``<segment>.<byte position>.damaged`` beside the segment, the segment is
rewritten without them, and the offsets they held are recorded as a gap.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator

import attrs

from connect.log.embedded.codec import HEADER_SIZE, MAGIC, VERSION, BatchHeader, check_crc
from connect.log.embedded.fsutil import open_private, write_all
from connect.log.embedded.segment import LogSegment

DAMAGED_SUFFIX = ".damaged"
REWRITE_SUFFIX = ".rewrite"
_MARK = struct.pack("<HB", MAGIC, VERSION)
_CHUNK = 1 << 20


@attrs.frozen
class Damage:
    """A run of bytes in a segment that is not an intact batch, and the offsets it held."""

    start: int  # byte position
    end: int  # byte position after it
    first_offset: int
    last_offset: int | None  # None: unknown (the damage reaches the end of the log)

    @property
    def length(self) -> int:
        return self.end - self.start

    def offsets_text(self) -> str:
        return f"{self.first_offset}..{'?' if self.last_offset is None else self.last_offset}"


def intact_batch_at(seg: LogSegment, pos: int, limit: int, min_base: int) -> BatchHeader | None:
    """The header of the batch at ``pos`` if a complete, CRC-valid batch with offsets >= ``min_base`` is there."""
    hdr = seg.header_at(pos)
    if hdr is None or hdr.base_offset < min_base or pos + hdr.total_size > limit:
        return None
    return hdr if check_crc(seg.read(pos, hdr.total_size), 0, hdr) else None


def next_intact_batch(seg: LogSegment, pos: int, limit: int, min_base: int) -> int | None:
    """Position of the first intact batch starting at or after ``pos`` (None when there is none)."""
    while pos + HEADER_SIZE <= limit:
        data = seg.read(pos, min(_CHUNK, limit - pos))
        i = data.find(_MARK)
        while i >= 0:
            if intact_batch_at(seg, pos + i, limit, min_base) is not None:
                return pos + i
            i = data.find(_MARK, i + 1)
        pos += max(1, len(data) - len(_MARK) + 1)
    return None


def walk(seg: LogSegment, pos: int, limit: int, expected: int) -> Iterator[tuple[int, int, BatchHeader | None, int]]:
    """(start, end, header, expected offset) of each intact batch in [pos, limit), and of each bad run (header None).

    ``expected`` is the offset the next batch should hold at least.
    """
    while pos < limit:
        hdr = intact_batch_at(seg, pos, limit, expected)
        if hdr is not None:
            end = pos + hdr.total_size
            yield pos, end, hdr, expected
            expected = hdr.last_offset + 1
            pos = end
            continue
        found = next_intact_batch(seg, pos + 1, limit, expected)
        end = limit if found is None else found
        yield pos, end, None, expected
        pos = end


def is_torn(seg: LogSegment, start: int, limit: int, expected: int) -> bool:
    """Whether the bad run [start, limit) at the end of the log is an incomplete last batch (a torn write)."""
    if limit - start < HEADER_SIZE:
        return True
    hdr = seg.header_at(start)
    return hdr is not None and hdr.base_offset >= expected and start + hdr.total_size > limit


def damage_of(seg: LogSegment, start: int, end: int, limit: int, expected: int, next_base: int | None) -> Damage:
    """The offsets a bad run held: up to the next batch, else the next segment, else what its header claims."""
    if end < limit:
        after = seg.header_at(end)
        assert after is not None  # walk ended the run at an intact batch
        return Damage(start, end, expected, after.base_offset - 1)
    if next_base is not None:
        return Damage(start, end, expected, next_base - 1)
    hdr = seg.header_at(start)
    if hdr is not None and hdr.base_offset == expected and start + hdr.total_size == limit:
        return Damage(start, end, expected, hdr.last_offset)
    return Damage(start, end, expected, None)


def damaged_path(seg: LogSegment, start: int) -> str:
    return f"{seg.log_path[: -len('.log')]}.{start}{DAMAGED_SUFFIX}"


def _copy(seg: LogSegment, fd: int, start: int, end: int) -> None:
    while start < end:
        data = seg.read(start, min(_CHUNK * 4, end - start))
        if not data:
            raise OSError(f"{seg.log_path} ended at byte {start} while copying it")
        write_all(fd, [data])
        start += len(data)


def set_aside(seg: LogSegment, damage: list[Damage], keep_until: int) -> tuple[str, list[str]]:
    """Write each damaged run to its own file and the rest of the segment up to ``keep_until`` to a new file.

    Returns the new segment file (not yet in place) and the damaged files, all fsynced.
    """
    moved = []
    for d in damage:
        path = damaged_path(seg, d.start)
        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            _copy(seg, fd, d.start, d.end)
            os.fsync(fd)
        finally:
            os.close(fd)
        moved.append(path)
    tmp = seg.log_path + REWRITE_SUFFIX
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        pos = 0
        for d in sorted(damage, key=lambda d: d.start):
            _copy(seg, fd, pos, min(d.start, keep_until))
            pos = d.end
        _copy(seg, fd, pos, keep_until)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    return tmp, moved
