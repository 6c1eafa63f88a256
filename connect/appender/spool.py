"""The appender's file buffer: encoded events on local disk until the target acknowledged them.

Segments ``seg-<n>.ndjson`` hold one encoded event per line, appended by the shipper thread; ``cursor``
holds ``<segment number> <byte position>`` of the first event not yet acknowledged, replaced atomically
after each acknowledged batch. A handler made again on the same directory (after a restart of the app)
resumes from the cursor, so events a dead target never acknowledged are sent again: at least once.

Bounded by ``max_bytes``: when the segments would grow beyond it, the oldest segment is deleted and its
unsent events are counted as dropped (as Fluent Bit's ``storage.total_limit_size`` drops the oldest chunk).
Writes are not fsynced: the buffer survives the app's and the target's crashes, not a power loss.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import BinaryIO

_SEGMENT = re.compile(r"^seg-(\d{12})\.ndjson$")


class Spool:
    def __init__(self, directory: str, segment_bytes: int = 8 << 20, max_bytes: int = 256 << 20) -> None:
        self.dir = os.path.abspath(directory)
        os.makedirs(self.dir, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.max_bytes = max_bytes
        self._cursor_path = os.path.join(self.dir, "cursor")
        self._segments: list[int] = sorted(int(m.group(1)) for name in os.listdir(self.dir)
                                           if (m := _SEGMENT.match(name)))
        self._read_seg, self._read_pos = self._load_cursor()
        # segments before the cursor's are fully acknowledged
        for n in [s for s in self._segments if s < self._read_seg]:
            self._delete(n)
        if not self._segments:
            self._segments = [max(self._read_seg, 1)]
            self._read_seg, self._read_pos = self._segments[0], 0
        elif self._read_seg not in self._segments:
            self._read_seg, self._read_pos = self._segments[0], 0
        self._write = open(self._path(self._segments[-1]), "ab")
        self._sizes = {n: os.path.getsize(self._path(n)) for n in self._segments}
        self._reader: BinaryIO | None = None
        self._reader_seg = -1
        self.dropped = 0

    def _path(self, n: int) -> str:
        return os.path.join(self.dir, f"seg-{n:012d}.ndjson")

    def _load_cursor(self) -> tuple[int, int]:
        try:
            with open(self._cursor_path, encoding="ascii") as fh:
                seg, pos = fh.read().split()
            return int(seg), int(pos)
        except (OSError, ValueError):
            return 0, 0

    def _delete(self, n: int) -> None:
        try:
            os.remove(self._path(n))
        except FileNotFoundError:
            pass
        if n in self._segments:
            self._segments.remove(n)

    # --- writing -----------------------------------------------------------------------------------------------

    def append(self, lines: Sequence[bytes]) -> None:
        """Add encoded events (no newline inside) at the end."""
        if not lines:
            return
        data = b"\n".join(lines) + b"\n"
        last = self._segments[-1]
        if self._sizes[last] > 0 and self._sizes[last] + len(data) > self.segment_bytes:
            self._write.close()
            last += 1
            self._segments.append(last)
            self._sizes[last] = 0
            self._write = open(self._path(last), "ab")
        self._write.write(data)
        self._write.flush()  # into the OS: survives the app's own crash
        self._sizes[last] += len(data)
        self._enforce_limit()

    def _enforce_limit(self) -> None:
        while sum(self._sizes.values()) > self.max_bytes and len(self._segments) > 1:
            oldest = self._segments[0]
            start = self._read_pos if oldest == self._read_seg else 0
            with open(self._path(oldest), "rb") as fh:
                fh.seek(start)
                self.dropped += fh.read().count(b"\n")
            self._delete(oldest)
            self._sizes.pop(oldest, None)
            if self._read_seg == oldest:
                self._read_seg, self._read_pos = self._segments[0], 0
                self._close_reader()

    # --- reading -----------------------------------------------------------------------------------------------

    def peek(self, max_events: int) -> tuple[list[bytes], tuple[int, int]]:
        """Up to ``max_events`` unacknowledged events from the cursor on, and the cursor after them."""
        seg, pos = self._read_seg, self._read_pos
        while True:
            if self._reader_seg != seg:
                self._close_reader()
                self._reader = open(self._path(seg), "rb")
                self._reader_seg = seg
            assert self._reader is not None
            self._reader.seek(pos)
            lines: list[bytes] = []
            for raw in self._reader:
                if not raw.endswith(b"\n"):
                    break  # a line still being written (never here: one thread writes and reads)
                lines.append(raw[:-1])
                pos += len(raw)
                if len(lines) >= max_events:
                    break
            if lines:
                return lines, (seg, pos)
            later = [s for s in self._segments if s > seg]
            if not later:
                return [], (seg, pos)
            # this segment is done: move on (it is deleted once the cursor passes it)
            seg, pos = later[0], 0

    def commit(self, cursor: tuple[int, int]) -> None:
        """The events up to ``cursor`` were acknowledged."""
        seg, pos = cursor
        tmp = self._cursor_path + ".tmp"
        with open(tmp, "w", encoding="ascii") as fh:
            fh.write(f"{seg} {pos}\n")
        os.replace(tmp, self._cursor_path)
        for n in [s for s in self._segments if s < seg]:
            self._delete(n)
            self._sizes.pop(n, None)
        self._read_seg, self._read_pos = seg, pos

    def unsent_bytes(self) -> int:
        return sum(size for n, size in self._sizes.items() if n >= self._read_seg) - self._read_pos

    def _close_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self._reader = None
        self._reader_seg = -1

    def close(self) -> None:
        self._close_reader()
        self._write.close()
