"""Filesystem primitives shared by the embedded log: cross-process locks, atomic file replacement, private modes.

Everything the log creates is owner-only (directories 0700, files 0600)
whatever the umask: records may hold secrets. ``open_private`` and
``make_private_dir`` also tighten what an older version left group- or
world-readable.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import uuid
from collections.abc import Iterator

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def _tighten(fd_or_path: int | str, st_mode: int, wanted: int) -> None:
    if st_mode & 0o777 != wanted:
        try:
            if isinstance(fd_or_path, int):
                os.fchmod(fd_or_path, wanted)
            else:
                os.chmod(fd_or_path, wanted)
        except PermissionError:
            pass  # not ours to change (another user's file): leave it as it is


def open_private(path: str, flags: int) -> int:
    """``os.open`` that creates (or finds) the file with mode 0600 regardless of the umask."""
    fd = os.open(path, flags, PRIVATE_FILE)
    if flags & os.O_CREAT:
        try:
            _tighten(fd, os.fstat(fd).st_mode, PRIVATE_FILE)
        except BaseException:
            os.close(fd)
            raise
    return fd


def make_private_dir(path: str) -> None:
    """Create ``path`` (and missing parents) as 0700; an existing directory is tightened to 0700."""
    os.makedirs(path, PRIVATE_DIR, exist_ok=True)
    _tighten(path, os.stat(path).st_mode, PRIVATE_DIR)


class FileLock:
    """An exclusive lock held against other processes (flock) and other threads of this one.

    flock alone is not enough inside one process: threads share the open file
    description and so would never exclude each other.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = open_private(path, os.O_RDWR | os.O_CREAT)
        self._thread_lock = threading.Lock()

    @property
    def fd(self) -> int:
        return self._fd

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self._thread_lock:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def try_hold(self) -> Iterator[bool]:
        """Yield True with the lock held, or False at once when someone else holds it."""
        if not self._thread_lock.acquire(blocking=False):
            yield False
            return
        try:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def fsync_dir(path: str) -> None:
    """Make a rename or unlink inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never a mix."""
    directory, name = os.path.split(path)
    # not derived from ``name``: a name near the 255-byte limit must still get a temporary file
    tmp = os.path.join(directory, f".tmp-{os.getpid()}-{threading.get_ident()}-{uuid.uuid4().hex[:8]}")
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(directory or ".")


def write_all(fd: int, parts: list[bytes]) -> None:
    """writev every byte of ``parts``; regular files rarely write short, but it is allowed."""
    total = sum(map(len, parts))
    written = os.writev(fd, parts)
    if written == total:
        return
    rest = memoryview(b"".join(parts))[written:]
    while rest:
        rest = rest[os.write(fd, rest) :]
