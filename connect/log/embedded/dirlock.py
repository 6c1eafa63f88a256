"""The owner lock of a log directory: one worker per ``embedded.log.dir``.

A worker (and ``headrace log repair``) holds an exclusive ``flock`` on
``<log dir>/.owner.lock`` for as long as it runs, and writes who it is into
the file so that a second one can say who is in the way. The kernel drops
the lock when the process dies, however it dies, so there is no stale lock
to clean up. Processes that only read or append records (``headrace``
topics, console producer and consumer, ``log check``) do not take it.
"""

from __future__ import annotations

import datetime
import fcntl
import os
import socket

from connect.log.api import LogError
from connect.log.embedded.fsutil import make_private_dir, open_private

OWNER_LOCK = ".owner.lock"


class LogDirectoryLockedError(LogError):
    """Another process owns the log directory."""


def _describe_holder(text: str) -> str:
    fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
    if "pid" not in fields:
        return "holder unknown"
    return f"pid {fields['pid']} on host {fields.get('host', '?')}, started {fields.get('started', '?')}"


class DirectoryLock:
    """Held from construction until ``release``; raises LogDirectoryLockedError when another process holds it."""

    def __init__(self, root: str, purpose: str = "worker") -> None:
        make_private_dir(root)
        self.path = os.path.join(root, OWNER_LOCK)
        fd = open_private(self.path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace")
            os.close(fd)
            raise LogDirectoryLockedError(
                f"The embedded log directory {root} is in use by another worker ({_describe_holder(holder)}); "
                f"each worker needs its own embedded.log.dir"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        info = f"pid={os.getpid()} host={socket.gethostname()} started={started} purpose={purpose}\n"
        os.ftruncate(fd, 0)
        os.pwrite(fd, info.encode(), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)  # closing drops the flock
