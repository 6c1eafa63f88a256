"""One partition's log: its segments, appends under a cross-process lock, recovery, and lookups.

Several processes may hold a PartitionLog for the same directory at once.
They agree through two things in the partition's ``.lock`` file:

* ``flock`` on it serialises every change (appends, rolls, retention,
  compaction swaps, recovery). Before appending, a process compares the
  active segment's size with the size it last wrote; if it differs another
  process has appended, and it re-derives the end offset by scanning the new
  batches.
* its first 8 bytes hold a generation number, bumped whenever the set of
  segment files changes (and set to -1 when the topic is deleted), so
  readers notice rolls and deletions with one ``pread`` instead of listing
  the directory.

Reading never takes the lock and never changes a file. A batch becomes
visible to readers only once it is complete in the file, so a half-written
or torn tail simply looks like "no more data yet". Only a writer recovers:
when a process that appends first takes a partition (at open for a writing
backend, else at its first append), and whenever an appender finds a tail
it cannot account for. Recovery checks the indexes and re-validates the
whole active segment with CRCs. A torn tail (an incomplete last batch) is
cut off with a warning; damage elsewhere is moved aside without touching
the intact batches after it, and the offsets it held become a gap: an
ERROR line, an entry in ``gaps.json`` (see gaps.py, damage.py). ``repair``
does the same for every segment, closed ones included.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import logging
import os
import struct
import threading
import time
from collections.abc import Callable

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogError, LogGap, UnknownTopicError
from connect.log.embedded.codec import EncodedBatch, check_crc
from connect.log.embedded.config import LONG_MAX, TopicConfig
from connect.log.embedded.damage import REWRITE_SUFFIX, Damage, damage_of, is_torn, set_aside, walk
from connect.log.embedded.fsutil import FileLock, atomic_write, fsync_dir
from connect.log.embedded.gaps import gap_floor, read_gaps, record_gaps
from connect.log.embedded.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIMEINDEX_SUFFIX,
    LogSegment,
    parse_segment_name,
    segment_name,
)

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
CLEANER_LOCK_FILE = ".cleaner.lock"
SWAP_MARKER = ".swap.json"
CLEANED = ".cleaned"
_GEN = struct.Struct("<q")
_DELETED = -1
_INT32_MAX = (1 << 31) - 1
_UINT32_MAX = (1 << 32) - 1


class OffsetOutOfRange(LogError):
    def __init__(self, tp: TopicPartition, offset: int, start: int, end: int) -> None:
        super().__init__(f"offset {offset} is outside [{start}, {end}] for {tp}")
        self.offset = offset
        self.start = start
        self.end = end


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def mark_partition_deleted(directory: str) -> None:
    """Tell every process that has this partition open that its topic is gone (before the files go)."""
    lock = FileLock(os.path.join(directory, LOCK_FILE))
    try:
        with lock.hold():
            os.pwrite(lock.fd, _GEN.pack(_DELETED), 0)
    finally:
        lock.close()


class PartitionLog:
    def __init__(
        self,
        directory: str,
        tp: TopicPartition,
        config: TopicConfig,
        on_append: Callable[[], None] | None = None,
        recover: bool = True,
    ) -> None:
        self.directory = directory
        self.tp = tp
        self.config = config
        self._on_append = on_append
        self._lock = FileLock(os.path.join(directory, LOCK_FILE))
        self._cleaner_lock: FileLock | None = None
        self._refresh_mutex = threading.Lock()
        # (segments oldest first, their base offsets): replaced whole, so readers never see a mix
        self._view: tuple[tuple[LogSegment, ...], list[int]] = ((), [])
        self._generation: int | None = None
        self.deleted = False
        self._recovered = False  # set once this process, as a writer, has recovered the partition
        self._gaps: tuple[LogGap, ...] = ()
        self._gap_floor = 0
        # Appender state. Valid only under the lock, and only while the active
        # segment is still ``_append_seg`` with exactly ``_known_size`` bytes.
        self._append_seg: LogSegment | None = None
        self._known_size = -1
        self._next_offset = 0
        self._max_ts = -1
        self._max_ts_offset = -1
        self._unflushed = 0
        self._unsynced: list[LogSegment] = []  # rolled without an fsync since the last sync()
        # Reader-side scan position at the end of the active segment.
        self._tail_mutex = threading.Lock()
        self._tail: tuple[LogSegment | None, int, int] = (None, 0, 0)
        if recover:
            self.recover()

    def recover(self) -> None:
        """Recover the partition now, as its writer (a no-op once done in this process)."""
        with self._lock.hold():
            self._sync_locked()

    def __repr__(self) -> str:
        return f"PartitionLog({self.tp})"

    # -- generation and segment set -------------------------------------------

    def _read_generation(self) -> int:
        data = os.pread(self._lock.fd, _GEN.size, 0)
        return _GEN.unpack(data)[0] if len(data) == _GEN.size else 0

    def _bump_generation_locked(self) -> None:
        gen = self._read_generation() + 1
        os.pwrite(self._lock.fd, _GEN.pack(gen), 0)
        self._rescan(gen)

    def _rescan(self, gen: int) -> None:
        with self._refresh_mutex:
            known = {s.base_offset: s for s in self._segments}
            found: list[LogSegment] = []
            for name in os.listdir(self.directory):
                base = parse_segment_name(name)
                if base is None:
                    continue
                seg = known.get(base)
                try:
                    if seg is None or os.stat(seg.log_path).st_ino != seg.inode:
                        seg = LogSegment(self.directory, base)
                except FileNotFoundError:
                    continue  # deleted while we looked
                found.append(seg)
            found.sort(key=lambda s: s.base_offset)
            # every change to gaps.json comes with a generation bump, so this is the one place to read it
            self._gaps = read_gaps(self.directory, self.tp)
            self._gap_floor = gap_floor(self._gaps)
            self._view = (tuple(found), [s.base_offset for s in found])
            self._generation = gen

    @property
    def _segments(self) -> tuple[LogSegment, ...]:
        return self._view[0]

    def _refreshed_view(self) -> tuple[tuple[LogSegment, ...], list[int]]:
        gen = self._read_generation()
        if gen == _DELETED:
            self.deleted = True
            raise UnknownTopicError(f"topic {self.tp.topic} was deleted")
        if gen != self._generation:
            self._rescan(gen)
        view = self._view
        if not view[0]:
            raise LogError(f"partition {self.tp} has no segments")
        return view

    def refresh(self) -> tuple[LogSegment, ...]:
        """The current segments, oldest first (one pread when nothing changed)."""
        return self._refreshed_view()[0]

    def gaps(self) -> tuple[LogGap, ...]:
        """Offsets of this partition lost to damage, oldest first, as recorded by recovery and repair."""
        self._refreshed_view()
        return self._gaps

    def replaced(self, seg: LogSegment) -> bool:
        """Whether ``seg`` is no longer the file at its base offset (rewritten or deleted since it was opened)."""
        segs, bases = self._refreshed_view()
        i = bisect.bisect_left(bases, seg.base_offset)
        return i >= len(segs) or segs[i] is not seg

    # -- recovery and catching up (lock held) ----------------------------------

    def _sync_locked(self) -> LogSegment:
        """Bring the appender state up to date with the files; returns the active segment."""
        gen = self._read_generation()
        if gen == _DELETED:
            self.deleted = True
            raise UnknownTopicError(f"topic {self.tp.topic} was deleted")
        if not self._recovered:
            return self._recover_locked(gen)
        if gen != self._generation:
            self._rescan(gen)
        active = self._segments[-1]
        size = active.size()
        if active is not self._append_seg or size < self._known_size:
            self._load_active_locked(active)
        elif size != self._known_size:
            active.index.refresh()
            active.time_index.refresh()
            if self._scan_tail_locked(active, self._known_size, size):
                self._load_active_locked(self._segments[-1])
        return self._segments[-1]

    def _recover_locked(self, gen: int) -> LogSegment:
        """A writer's first look: finish what a crash interrupted, check indexes, validate the active segment."""
        self._finish_interrupted_swap_locked()
        for name in os.listdir(self.directory):
            if name.endswith(REWRITE_SUFFIX):  # a repair or recovery that died before its swap
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.directory, name))
        self._rescan(gen)
        if not self._segments:
            LogSegment(self.directory, 0, create=True)
            self._bump_generation_locked()
        self._check_indexes_locked()
        self._recovered = True
        self._load_active_locked(self._segments[-1], full=True)
        return self._segments[-1]

    def _check_indexes_locked(self) -> None:
        """On first open: rebuild any segment's indexes that do not fit its log."""
        for seg in self._segments:
            if not seg.indexes_consistent():
                log.warning("Rebuilding the indexes of %s segment %s: they do not match the log",
                            self.tp, segment_name(seg.base_offset))
                seg.rebuild_indexes(self.config.index_interval_bytes)

    def _load_active_locked(self, seg: LogSegment, full: bool = False) -> None:
        """Take up appending to ``seg``: from its last good index entry, or (``full``) validating all of it."""
        seg.index_checked = False
        seg.check_index()
        index = seg.index
        if index.file_entries() != len(index):
            index.truncate(len(index))  # what the check cut must go from the file too
        # An indexed batch that fails its CRC cannot be a starting point.
        while len(index) and not full:
            pos = index.last_position
            hdr = seg.header_at(pos)
            if hdr is not None and check_crc(seg.read(pos, hdr.total_size), 0, hdr):
                break
            index.truncate(len(index) - 1)
        self._append_seg = seg
        self._next_offset = seg.base_offset
        self._known_size = 0 if full else index.last_position
        tindex = seg.time_index
        tindex.refresh()
        last = tindex.last_entry()
        self._max_ts, self._max_ts_offset = last if last is not None else (-1, -1)
        if self._scan_tail_locked(seg, self._known_size, seg.size()):
            # damage was moved out: the segment is a new file now
            self._load_active_locked(self._segments[-1])
            return
        # lost offsets are never handed out again, so a consumer never mistakes new records for them
        self._next_offset = max(self._next_offset, self._gap_floor)
        if tindex.keep_valid(self._next_offset - 1):
            last = tindex.last_entry()
            self._max_ts, self._max_ts_offset = last if last is not None else (-1, -1)
            for _, hdr in seg.headers(index.last_position):
                if hdr.max_timestamp > self._max_ts:
                    self._max_ts, self._max_ts_offset = hdr.max_timestamp, hdr.base_offset

    def _scan_tail_locked(self, seg: LogSegment, pos: int, size: int) -> bool:
        """Account for the intact batches in [pos, size): cut off a torn tail, move damage aside.

        Returns True when damage was moved out, which replaces the segment's
        file (the caller must take up the new one).
        """
        damage: list[Damage] = []
        torn_at = None
        for start, end, hdr, expected in walk(seg, pos, size, self._next_offset):
            if hdr is not None:
                self._next_offset = hdr.last_offset + 1
                if hdr.max_timestamp > self._max_ts:
                    self._max_ts = hdr.max_timestamp
                    self._max_ts_offset = hdr.base_offset
                pos = end
                continue
            if end == size and is_torn(seg, start, size, expected):
                torn_at = start
                break
            damage.append(damage_of(seg, start, end, size, expected, None))
            pos = end
        if torn_at is not None:
            log.warning(
                "Recovering %s: truncating segment %s at byte position %d, dropping %d bytes of a torn tail "
                "(an incomplete last batch, never acknowledged)",
                self.tp, segment_name(seg.base_offset), torn_at, size - torn_at,
            )
        if damage:
            self._excise_locked(seg, damage, size if torn_at is None else torn_at)
            return True
        if torn_at is not None:
            pos = torn_at
            seg.truncate(pos)
            keep = seg.index.first_at_or_after(pos)
            if keep < len(seg.index):
                seg.index.truncate(keep)
            seg.time_index.keep_valid(self._next_offset - 1)
            with self._tail_mutex:
                self._tail = (None, 0, 0)
        self._known_size = pos
        return False

    def _excise_locked(self, seg: LogSegment, damage: list[Damage], keep_until: int) -> None:
        """Move damaged runs out of ``seg`` into files beside it and record the offsets they held as gaps."""
        new_file, moved = set_aside(seg, damage, keep_until)
        detected = now_ms()
        seg_file = os.path.basename(seg.log_path)
        gaps = [
            LogGap(self.tp.topic, self.tp.partition, d.first_offset, d.last_offset, seg_file, d.start, d.length,
                   os.path.basename(path), detected)
            for d, path in zip(damage, moved, strict=True)
            if d.last_offset is None or d.last_offset >= d.first_offset
        ]
        # recorded before the bytes leave the segment: a crash in between finds the damage again
        record_gaps(self.directory, self.tp, gaps)
        os.replace(new_file, seg.log_path)
        fsync_dir(self.directory)
        for d, path in zip(damage, moved, strict=True):
            if d.last_offset is not None and d.last_offset < d.first_offset:
                log.error("Damaged bytes in %s: %d bytes at byte position %d of %s held no offsets; moved to %s",
                          self.tp, d.length, d.start, seg.log_path, path)
            else:
                log.error("Gap in %s: offsets %s lost to damage in segment %s (%d bytes at byte position %d, "
                          "moved to %s); the intact batches around them are kept",
                          self.tp, d.offsets_text(), seg.log_path, d.length, d.start, path)
        rebuilt = LogSegment(self.directory, seg.base_offset)
        try:
            rebuilt.rebuild_indexes(self.config.index_interval_bytes)
        finally:
            rebuilt.close()
        self._append_seg = None
        self._bump_generation_locked()
        with self._tail_mutex:
            self._tail = (None, 0, 0)

    def repair(self) -> list[LogGap]:
        """Move the damage of every segment aside (closed ones too); returns the gaps this found.

        The caller makes sure no other writer runs (``headrace log repair`` holds the directory lock).
        """
        with self._lock.hold():
            before = {(g.segment, g.first_offset) for g in read_gaps(self.directory, self.tp)}
            self._sync_locked()
            segs = self._segments
            for i, seg in enumerate(segs[:-1]):
                size = seg.size()
                damage = [damage_of(seg, start, end, size, expected, segs[i + 1].base_offset)
                          for start, end, hdr, expected in walk(seg, 0, size, seg.base_offset) if hdr is None]
                if damage:
                    self._excise_locked(seg, damage, size)
            self._load_active_locked(self._segments[-1], full=True)
            self._rescan(self._read_generation())
            return [g for g in self._gaps if (g.segment, g.first_offset) not in before]

    def _finish_interrupted_swap_locked(self) -> None:
        """Complete a compaction swap that a crash cut short (its marker is still there)."""
        marker = os.path.join(self.directory, SWAP_MARKER)
        try:
            with open(marker, encoding="utf-8") as f:
                groups = json.load(f)["groups"]
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError):
            log.warning("Ignoring an unreadable compaction marker in %s", self.directory)
            os.unlink(marker)
            return
        log.info("Completing an interrupted compaction swap in %s", self.tp)
        self._apply_swap(groups)
        os.unlink(marker)

    def _apply_swap(self, groups: list[dict[str, object]]) -> None:
        for group in groups:
            bases = [int(b) for b in group["bases"]]  # type: ignore[attr-defined]
            first = os.path.join(self.directory, segment_name(bases[0]))
            # the log goes first: a reader pairing the new log with an old index
            # finds the index entries do not match and falls back to scanning
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX):
                with contextlib.suppress(FileNotFoundError):
                    os.replace(first + suffix + CLEANED, first + suffix)
            doomed = bases if group.get("empty") else bases[1:]
            for base in doomed:
                stem = os.path.join(self.directory, segment_name(base))
                for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(stem + suffix)

    # -- appending -------------------------------------------------------------

    def append(self, batch: EncodedBatch) -> int:
        """Append one batch; returns its base offset once the bytes are in the file."""
        with self._lock.hold():
            active = self._sync_locked()
            if self._should_roll(active, batch):
                active = self._roll_locked(active)
            base = self._next_offset
            pos = self._known_size
            try:
                active.append([batch.frame(base), *batch.parts])
            except BaseException:
                # leave no partial batch for others to trip over
                with contextlib.suppress(OSError):
                    active.truncate(pos)
                raise
            self._known_size = pos + batch.size
            self._next_offset = base + batch.last_offset_delta + 1
            if batch.max_timestamp > self._max_ts:
                self._max_ts = batch.max_timestamp
                self._max_ts_offset = base
            if pos - active.index.last_position >= self.config.index_interval_bytes:
                active.index.append(base, pos)
                if self._max_ts > active.time_index.last_timestamp:
                    active.time_index.append(self._max_ts, self._max_ts_offset)
            self._unflushed += batch.count
            if self._unflushed >= self.config.flush_messages:
                active.sync()
                self._unflushed = 0
        if self._on_append is not None:
            self._on_append()
        return base

    @property
    def syncs_writes(self) -> bool:
        """Whether this partition's appends are meant to survive a power cut (``flush.messages`` is set, as
        ``embedded.log.fsync=true`` sets it), not only the writing process being killed."""
        return self.config.flush_messages < LONG_MAX

    def sync(self) -> None:
        """Make every batch appended so far durable (fsync), whatever ``flush.messages`` says."""
        with self._lock.hold():
            for seg in self._unsynced:
                with contextlib.suppress(OSError):  # compaction or retention may have removed it since
                    seg.sync()
            self._unsynced.clear()
            self._sync_locked().sync()
            self._unflushed = 0

    def _should_roll(self, active: LogSegment, batch: EncodedBatch) -> bool:
        size = self._known_size
        if size == 0:
            return False
        if size + batch.size > min(self.config.segment_bytes, _UINT32_MAX):
            return True
        if self._next_offset + batch.last_offset_delta - active.base_offset > _INT32_MAX:
            return True
        first = active.first_batch_timestamp()
        return first is not None and batch.max_timestamp - first > self.config.segment_ms

    def _roll_locked(self, old: LogSegment) -> LogSegment:
        if self._max_ts > old.time_index.last_timestamp:
            # Kafka's closing entry: retention then knows the segment's newest timestamp
            old.time_index.append(self._max_ts, self._max_ts_offset)
        if self.syncs_writes:
            old.sync()
        else:
            self._unsynced.append(old)  # for the next sync(): a transaction's commit needs it on disk
        old_size = self._known_size
        new = LogSegment(self.directory, self._next_offset, create=True)
        new.index_checked = True
        if self.syncs_writes:
            fsync_dir(self.directory)
        with self._refresh_mutex:
            # listed here first so that the rescan below keeps this object
            segs, bases = self._view
            self._view = ((*segs, new), [*bases, new.base_offset])
        self._bump_generation_locked()
        active = self._segments[-1]
        self._append_seg = active
        self._known_size = 0
        self._max_ts = -1
        self._max_ts_offset = -1
        log.info("Rolled a new segment for %s at offset %d (previous segment %s: %d bytes)",
                 self.tp, self._next_offset, segment_name(old.base_offset), old_size)
        return active

    # -- reading ---------------------------------------------------------------

    def start_offset(self) -> int:
        return self.refresh()[0].base_offset

    def end_offset(self) -> int:
        """Offset after the last complete batch visible in the files."""
        active = self.refresh()[-1]
        with self._tail_mutex:
            seg, pos, nxt = self._tail
            if seg is not active or active.size() < pos:
                active.check_index()
                key, pos = active.index.lookup(1 << 62)
                hdr = active.header_at(pos) if pos else None
                if hdr is None or hdr.base_offset != key:
                    pos = 0
                nxt = active.base_offset
            for p, hdr in active.headers(pos):
                nxt = hdr.last_offset + 1
                pos = p + hdr.total_size
            self._tail = (active, pos, nxt)
        return max(nxt, self._gap_floor)

    def segment_after(self, seg: LogSegment) -> LogSegment | None:
        segs, bases = self._refreshed_view()
        i = bisect.bisect_right(bases, seg.base_offset)
        return segs[i] if i < len(segs) else None

    def locate(self, offset: int) -> tuple[LogSegment, int]:
        """Segment and byte position to read ``offset`` from; raises OffsetOutOfRange."""
        segs, bases = self._refreshed_view()
        if offset < segs[0].base_offset:
            raise OffsetOutOfRange(self.tp, offset, segs[0].base_offset, self.end_offset())
        i = bisect.bisect_right(bases, offset) - 1
        for seg in segs[i:]:
            pos, hdr = seg.locate(offset)
            if hdr is not None:
                return seg, pos
            if seg is not segs[-1]:
                continue
            end = self.end_offset()
            if offset > end:
                raise OffsetOutOfRange(self.tp, offset, segs[0].base_offset, end)
            return seg, pos
        raise AssertionError("unreachable")

    # -- retention, compaction, deletion -----------------------------------------

    def cleaner_lock(self) -> FileLock:
        if self._cleaner_lock is None:
            self._cleaner_lock = FileLock(os.path.join(self.directory, CLEANER_LOCK_FILE))
        return self._cleaner_lock

    def delete_segments(self, bases: list[int]) -> int:
        """Delete the given oldest closed segments; returns how many went."""
        with self._lock.hold():
            segs = self._sync_locked_segments()
            closed = segs[:-1]
            victims = [s for s in closed[: len(bases)] if s.base_offset in set(bases)]
            if [s.base_offset for s in victims] != sorted(bases):
                return 0  # the log changed under us; the next pass will decide again
            for seg in victims:
                seg.delete_files()
            self._bump_generation_locked()
        return len(victims)

    def _sync_locked_segments(self) -> tuple[LogSegment, ...]:
        gen = self._read_generation()
        if gen == _DELETED:
            self.deleted = True
            raise UnknownTopicError(f"topic {self.tp.topic} was deleted")
        if gen != self._generation:
            self._rescan(gen)
        return self._segments

    def swap_cleaned(self, groups: list[dict[str, object]]) -> None:
        """Put compacted segments in place of the originals, atomically for readers and crash-safely."""
        with self._lock.hold():
            present = {s.base_offset for s in self._sync_locked_segments()[:-1]}
            if any(int(b) not in present for g in groups for b in g["bases"]):  # type: ignore[attr-defined]
                raise LogError(f"segments of {self.tp} changed during compaction")
            marker = os.path.join(self.directory, SWAP_MARKER)
            atomic_write(marker, json.dumps({"groups": groups}).encode(), durable=True)
            self._apply_swap(groups)
            os.unlink(marker)
            self._bump_generation_locked()

    def remove_stale_cleaned_files(self) -> None:
        """Drop leftovers of a compaction that died before its swap (caller holds the cleaner lock)."""
        for name in os.listdir(self.directory):
            if name.endswith(CLEANED):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.directory, name))

    def close(self) -> None:
        if self._unflushed and self._append_seg is not None:
            # like Kafka on a clean shutdown: what this process wrote reaches the disk
            with contextlib.suppress(OSError):
                self._append_seg.sync()
        self._lock.close()
        if self._cleaner_lock is not None:
            self._cleaner_lock.close()
        for seg in self._segments:
            seg.close()
        self._view = ((), [])
