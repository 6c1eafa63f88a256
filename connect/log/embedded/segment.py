"""One segment of a partition: a ``<base offset>.log`` file of batches and its two indexes."""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Iterator

from connect.log.embedded.codec import (
    HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    DecodedBatch,
    decode,
    parse_header,
)
from connect.log.embedded.fsutil import open_private, write_all
from connect.log.embedded.index import OffsetIndex, TimeIndex, build_entries

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIMEINDEX_SUFFIX = ".timeindex"
_SCAN_CHUNK = 1 << 16
_READ_CHUNK = 1 << 22


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


def parse_segment_name(filename: str) -> int | None:
    """Base offset of a ``.log`` file name, or None for any other file."""
    if len(filename) == 24 and filename.endswith(LOG_SUFFIX) and filename[:20].isdigit():
        return int(filename[:20])
    return None


class LogSegment:
    """An open segment. The file stays open for as long as anyone holds this object.

    Readers keep a reference while they read, so a segment that retention or
    compaction removes (or replaces) in the meantime still reads correctly
    from the unlinked file; nothing closes a descriptor that may be in use.
    """

    def __init__(self, directory: str, base_offset: int, create: bool = False) -> None:
        self.directory = directory
        self.base_offset = base_offset
        stem = os.path.join(directory, segment_name(base_offset))
        self.log_path = stem + LOG_SUFFIX
        flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0)
        self.fd = open_private(self.log_path, flags) if create else os.open(self.log_path, flags)
        self.inode = os.fstat(self.fd).st_ino
        self.index = OffsetIndex(stem + INDEX_SUFFIX, base_offset)
        self.time_index = TimeIndex(stem + TIMEINDEX_SUFFIX, base_offset)
        if create:
            # empty index files make the layout complete from the first moment
            for path in (self.index.path, self.time_index.path):
                os.close(open_private(path, os.O_WRONLY | os.O_CREAT))
        self.index_checked = False
        self._first_batch_ts: int | None = None
        self._max_timestamp: tuple[int, int] | None = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)
        self.index.close()
        self.time_index.close()

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path})"

    # -- raw access ----------------------------------------------------------

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def read(self, pos: int, length: int) -> bytes:
        return os.pread(self.fd, length, pos)

    def append(self, parts: list[bytes]) -> None:
        write_all(self.fd, parts)

    def truncate(self, size: int) -> None:
        os.ftruncate(self.fd, size)

    def sync(self) -> None:
        os.fdatasync(self.fd)

    def header_at(self, pos: int) -> BatchHeader | None:
        """The batch header at ``pos`` if one is there (complete batch or not)."""
        try:
            return parse_header(os.pread(self.fd, HEADER_SIZE, pos))
        except CorruptBatchError:
            return None

    def headers(self, pos: int, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each complete batch from ``pos``; stops at the end or at anything invalid."""
        buf = b""
        buf_start = pos
        limit = self.size() if end is None else end
        while pos + HEADER_SIZE <= limit:
            rel = pos - buf_start
            if rel + HEADER_SIZE > len(buf):
                buf = os.pread(self.fd, min(_SCAN_CHUNK, limit - pos), pos)
                buf_start, rel = pos, 0
            try:
                hdr = parse_header(buf, rel)
            except CorruptBatchError:
                return
            if pos + hdr.total_size > limit:
                return
            yield pos, hdr
            pos += hdr.total_size

    def batches(self, start: int = 0, end: int | None = None) -> Iterator[tuple[BatchHeader, DecodedBatch, bytes]]:
        """Every complete batch in [start, end), decoded and CRC-checked, with its raw bytes.

        Raises CorruptBatchError on a damaged batch; stops quietly at an incomplete tail.
        """
        limit = self.size() if end is None else end
        pos = start
        while pos + HEADER_SIZE <= limit:
            data = self.read(pos, min(_READ_CHUNK, limit - pos))
            p = 0
            while p + HEADER_SIZE <= len(data):
                hdr = parse_header(data, p)
                stop = p + hdr.total_size
                if stop > len(data):
                    break
                yield hdr, decode(data, p, hdr), data[p:stop]
                p = stop
            if p == 0:
                # one batch bigger than the read size
                hdr = parse_header(data)
                if pos + hdr.total_size > limit:
                    return
                data = self.read(pos, hdr.total_size)
                yield hdr, decode(data, 0, hdr), data
                p = hdr.total_size
            pos += p

    # -- lookups ---------------------------------------------------------------

    def check_index(self) -> None:
        """Load the offset index and forget entries that cannot be right for this log (no lock needed)."""
        if self.index_checked:
            self.index.refresh()
            return
        self.index.reload()
        good = self.index.valid_prefix(self.size())
        while good:
            off, pos = self.index.entry(good - 1)
            hdr = self.header_at(pos)
            if hdr is not None and hdr.base_offset == off:
                break
            good -= 1
        # only our copy is cut: changing the file is for whoever holds the partition lock
        self.index.cut(good)
        self.index_checked = True

    def indexes_consistent(self) -> bool:
        """A cheap sanity check of both index files against the log: sizes, order, a sample of entries."""
        if self.index.file_entries() < 0:
            return False
        self.index.reload()
        n = len(self.index)
        if self.index.valid_prefix(self.size()) != n:
            return False
        for i in {*range(0, n, max(1, n // 16)), n - 1} if n else ():
            off, pos = self.index.entry(i)
            hdr = self.header_at(pos)
            if hdr is None or hdr.base_offset != off:
                return False
        self.index_checked = True
        return self.time_index.keep_valid(self.last_offset()) == 0

    def rebuild_indexes(self, interval: int) -> None:
        """Regenerate both index files from the log itself (partition lock held)."""
        offsets, times = build_entries(self.headers(0), interval)
        self.index.rewrite(offsets)
        self.time_index.rewrite(times)
        self.index_checked = True

    def locate(self, offset: int) -> tuple[int, BatchHeader | None]:
        """Position of the first batch whose last offset is >= ``offset``.

        Returns (position, header), or (end position, None) when no complete
        batch in this segment reaches ``offset``.
        """
        self.check_index()
        key, start = self.index.lookup(offset)
        if start:
            hdr = self.header_at(start)
            if hdr is None or hdr.base_offset != key:
                start = 0
        pos = start
        for pos, hdr in self.headers(start):
            if hdr.last_offset >= offset:
                return pos, hdr
            pos += hdr.total_size
        return pos, None

    def first_batch_timestamp(self) -> int | None:
        """Max timestamp of the first batch: what segment.ms measures a segment's age from."""
        if self._first_batch_ts is None:
            hdr = self.header_at(0)
            if hdr is not None:
                self._first_batch_ts = hdr.max_timestamp
        return self._first_batch_ts

    def max_timestamp(self) -> int:
        """Largest timestamp in a closed segment (-1 when empty); cached since closed segments do not change."""
        if self._max_timestamp is None:
            self.check_index()
            self.time_index.refresh()
            best = self.time_index.last_timestamp
            last_off = self.base_offset - 1
            for _, hdr in self.headers(self.index.last_position):
                if hdr.max_timestamp > best:
                    best = hdr.max_timestamp
                last_off = hdr.last_offset
            self._max_timestamp = (best, last_off)
        return self._max_timestamp[0]

    def last_offset(self) -> int:
        """Offset of the last record slot of the last complete batch (base - 1 when empty)."""
        self.check_index()
        last = self.base_offset - 1
        for _, hdr in self.headers(self.index.last_position):
            last = hdr.last_offset
        return last

    def delete_files(self) -> None:
        # the log goes first: an index without its log is ignored, a log without an index is rebuilt
        for path in (self.log_path, self.index.path, self.time_index.path,
                     *glob.glob(glob.escape(self.log_path[:-len(LOG_SUFFIX)]) + ".*.damaged")):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
