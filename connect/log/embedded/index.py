"""Sparse per-segment indexes: offset -> file position, and timestamp -> offset.

Each index is an append-only file of fixed-size little-endian entries.
Entries are written after the batch they point at, so a crash can only lose
entries, never leave one that points past the data; an index read from disk
is nonetheless checked before it is trusted, since the file may come from
anywhere. Several processes append to the same index (each under the
partition lock), so a process re-reads the file tail (``refresh``) before
relying on its copy.

The offset index is kept in memory as two compact ``array`` columns
(relative offset, position) for bisection: a 1 GiB segment indexed every
4 KiB costs 2 MiB, not the ~19 MiB that lists of ints would. The time index
is only ever needed at its end (retention asks for a segment's newest
timestamp), so it stays on disk and only its last entry is cached.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
import sys
from array import array
from collections.abc import Iterable

from connect.log.embedded.codec import BatchHeader
from connect.log.embedded.fsutil import atomic_write, open_private

_OFFSET_ENTRY = struct.Struct("<iI")  # offset relative to the segment base, byte position
_TIME_ENTRY = struct.Struct("<qi")  # max timestamp so far, offset relative to the segment base


class _IndexFile:
    """An append-only file of fixed-size entries, opened lazily (and never created by readers)."""

    entry_size: int

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd = -1

    def _open(self, create: bool) -> bool:
        if self._fd >= 0:
            return True
        flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0)
        try:
            self._fd = open_private(self.path, flags) if create else os.open(self.path, flags)
        except FileNotFoundError:
            return False
        return True

    def _read_from(self, start: int) -> bytes:
        """Whole entries from byte ``start`` to the end of the file."""
        if not self._open(create=False):
            return b""
        chunks = []
        pos = start
        while True:
            chunk = os.pread(self._fd, 1 << 20, pos)
            if not chunk:
                break
            chunks.append(chunk)
            pos += len(chunk)
        data = b"".join(chunks)
        return data[: len(data) - len(data) % self.entry_size]

    def _file_size(self) -> int:
        return os.fstat(self._fd).st_size if self._open(create=False) else 0

    def _write_entry(self, entry: bytes, expected_size: int) -> None:
        """Append under the partition lock, first dropping a torn entry a dead writer may have left."""
        self._open(create=True)
        if self._file_size() != expected_size:
            os.ftruncate(self._fd, expected_size)
        os.write(self._fd, entry)

    def _truncate_file(self, size: int) -> None:
        if self._open(create=True):
            os.ftruncate(self._fd, size)

    def _replace(self, data: bytes, durable: bool) -> None:
        atomic_write(self.path, data, durable=durable)
        self.close()

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


class OffsetIndex(_IndexFile):
    """Entries (batch base offset, byte position of that batch), in memory as relative columns."""

    entry_size = _OFFSET_ENTRY.size

    def __init__(self, path: str, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self._rel = array("I")
        self._pos = array("I")

    def __len__(self) -> int:
        return len(self._rel)

    def entry(self, i: int) -> tuple[int, int]:
        return self.base_offset + self._rel[i], self._pos[i]

    @property
    def last_position(self) -> int:
        return self._pos[-1] if self._pos else 0

    def _absorb(self, data: bytes) -> None:
        flat = array("I", data)
        if sys.byteorder != "little":
            flat.byteswap()
        self._rel.extend(flat[0::2])
        self._pos.extend(flat[1::2])

    def refresh(self) -> None:
        """Load entries appended to the file (by any process) since the last look."""
        loaded = len(self._rel) * self.entry_size
        if loaded and self._file_size() < loaded:
            # cut back by a recovery elsewhere: our copy may no longer match the file
            self._rel = array("I")
            self._pos = array("I")
            loaded = 0
        data = self._read_from(loaded)
        if data:
            self._absorb(data)

    def reload(self) -> None:
        self._rel = array("I")
        self._pos = array("I")
        self.refresh()

    def file_entries(self) -> int:
        """How many whole entries the file holds; -1 if its size is not a whole number of entries."""
        size = self._file_size()
        return size // self.entry_size if size % self.entry_size == 0 else -1

    def append(self, offset: int, position: int) -> None:
        self.refresh()
        self._write_entry(_OFFSET_ENTRY.pack(offset - self.base_offset, position), len(self) * self.entry_size)
        self._rel.append(offset - self.base_offset)
        self._pos.append(position)

    def truncate(self, entries: int) -> None:
        """Keep only the first ``entries`` entries, in memory and on disk (partition lock held)."""
        self.cut(entries)
        self._truncate_file(entries * self.entry_size)

    def cut(self, entries: int) -> None:
        """Forget entries past the first ``entries`` in memory only (for readers, who hold no lock)."""
        del self._rel[entries:]
        del self._pos[entries:]

    def first_at_or_after(self, position: int) -> int:
        return bisect.bisect_left(self._pos, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(base offset, position) of the last indexed batch starting at or before ``offset``."""
        i = bisect.bisect_right(self._rel, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._rel[i], self._pos[i]

    def valid_prefix(self, log_size: int) -> int:
        """How many leading entries are strictly increasing and point inside a log of ``log_size`` bytes."""
        prev_rel = -1
        prev_pos = -1
        for i, (rel, pos) in enumerate(zip(self._rel, self._pos, strict=True)):
            if rel <= prev_rel or pos <= prev_pos or pos >= log_size:
                return i
            prev_rel, prev_pos = rel, pos
        return len(self._rel)

    def rewrite(self, entries: list[tuple[int, int]], durable: bool = False) -> None:
        """Replace the whole index at once (after a rebuild or compaction)."""
        base = self.base_offset
        self._replace(b"".join(_OFFSET_ENTRY.pack(off - base, pos) for off, pos in entries), durable)
        self._rel = array("I", (off - base for off, _ in entries))
        self._pos = array("I", (pos for _, pos in entries))


class TimeIndex(_IndexFile):
    """Entries (max timestamp so far, offset of the batch that reached it); read from disk when needed."""

    entry_size = _TIME_ENTRY.size

    def __init__(self, path: str, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self._size = -1  # bytes of whole entries as last seen; -1 = not looked yet
        self._last: tuple[int, int] | None = None

    def entries(self) -> list[tuple[int, int]]:
        base = self.base_offset
        return [(ts, base + rel) for ts, rel in _TIME_ENTRY.iter_unpack(self._read_from(0))]

    def refresh(self) -> None:
        """Re-read the last entry, which another process may have added."""
        size = self._file_size()
        size -= size % self.entry_size
        if size == self._size:
            return
        self._size = size
        self._last = None
        if size and self._open(create=False):
            ts, rel = _TIME_ENTRY.unpack(os.pread(self._fd, self.entry_size, size - self.entry_size))
            self._last = (ts, self.base_offset + rel)

    def last_entry(self) -> tuple[int, int] | None:
        if self._size < 0:
            self.refresh()
        return self._last

    @property
    def last_timestamp(self) -> int:
        last = self.last_entry()
        return last[0] if last is not None else -1

    def append(self, timestamp: int, offset: int) -> None:
        self.refresh()
        self._write_entry(_TIME_ENTRY.pack(timestamp, offset - self.base_offset), self._size)
        self._size += self.entry_size
        self._last = (timestamp, offset)

    def keep_valid(self, last_offset: int) -> int:
        """Cut the file back to its entries with increasing timestamps and offsets <= ``last_offset``."""
        entries = self.entries()
        good = 0
        prev_ts = None
        prev_off = self.base_offset - 1
        for ts, off in entries:
            if (prev_ts is not None and ts <= prev_ts) or off < prev_off or off > last_offset:
                break
            prev_ts, prev_off = ts, off
            good += 1
        size = self._file_size()
        if good < len(entries) or size % self.entry_size:
            self._truncate_file(good * self.entry_size)
        self._size = -1
        return len(entries) - good

    def rewrite(self, entries: list[tuple[int, int]], durable: bool = False) -> None:
        base = self.base_offset
        self._replace(b"".join(_TIME_ENTRY.pack(ts, off - base) for ts, off in entries), durable)
        self._size = -1


def build_entries(
    batches: Iterable[tuple[int, BatchHeader]], interval: int
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Offset- and time-index entries for a segment made of ``batches`` (position, header).

    The rule is the one appends follow: a batch is indexed when it starts at
    least ``interval`` bytes after the last indexed one (or after byte 0),
    and the time index gets an entry at the same moments when the newest
    timestamp has grown, plus a closing one for the segment's maximum.
    """
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    last_pos = 0
    max_ts, max_off = -1, -1
    for pos, hdr in batches:
        if hdr.max_timestamp > max_ts:
            max_ts, max_off = hdr.max_timestamp, hdr.base_offset
        if pos - last_pos >= interval:
            offsets.append((hdr.base_offset, pos))
            last_pos = pos
            if not times or max_ts > times[-1][0]:
                times.append((max_ts, max_off))
    if max_ts >= 0 and (not times or max_ts > times[-1][0]):
        times.append((max_ts, max_off))
    return offsets, times
