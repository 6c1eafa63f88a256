"""FileChangeWatcher: wakes FileStreamSource tasks when their file is written, created, moved or deleted.

An idle FileStreamSourceTask would otherwise look at its file many times a second, and a thousand of
them keep a core busy doing nothing. Here one inotify instance and one thread serve every task of the
process: the watcher watches each file's directory (so creation and rotation are seen too) and sets
the Event of every task that named the changed file. Where inotify is not available (another OS, the
watch limit reached) ``subscribe`` returns None and the task falls back to looking on a timer.
"""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger(__name__)

try:
    from inotify_simple import INotify
    from inotify_simple import flags as _flags
except ImportError:  # not Linux: tasks look on a timer
    INotify = None  # type: ignore[assignment,misc]

_READ_TIMEOUT_MS = 500  # how soon the thread notices it has nobody left to serve


class FileChangeWatcher:
    """One per process (``file_change_watcher``); its thread runs while some file is subscribed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inotify: INotify | None = None
        self._thread: threading.Thread | None = None
        self._dirs: dict[str, int] = {}  # directory -> watch descriptor
        self._wd_dirs: dict[int, str] = {}
        self._subs: dict[tuple[int, str], list[threading.Event]] = {}

    def subscribe(self, path: str) -> threading.Event | None:
        """An Event set whenever ``path`` may have changed; None when changes cannot be watched here."""
        if INotify is None:
            return None
        directory, name = os.path.split(os.path.abspath(path))
        event = threading.Event()
        with self._lock:
            try:
                if self._inotify is None:
                    self._inotify = INotify()
                wd = self._dirs.get(directory)
                if wd is None:
                    mask = (_flags.MODIFY | _flags.CLOSE_WRITE | _flags.CREATE | _flags.MOVED_TO | _flags.MOVED_FROM
                            | _flags.DELETE | _flags.ATTRIB)
                    wd = self._inotify.add_watch(directory, mask)
                    self._dirs[directory] = wd
                    self._wd_dirs[wd] = directory
            except OSError as exc:  # no such directory yet, no permission, the watch limit: look on a timer
                log.info("Cannot watch %s for changes (%s); it is looked at on a timer instead", path, exc)
                return None
            self._subs.setdefault((wd, name), []).append(event)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="file-change-watcher", daemon=True)
                self._thread.start()
        return event

    def unsubscribe(self, path: str, event: threading.Event) -> None:
        directory, name = os.path.split(os.path.abspath(path))
        with self._lock:
            wd = self._dirs.get(directory)
            if wd is None:
                return
            events = self._subs.get((wd, name), [])
            if event in events:
                events.remove(event)
            if not events:
                self._subs.pop((wd, name), None)
            if not any(key[0] == wd for key in self._subs):
                self._forget_dir_locked(wd, remove_watch=True)

    def _forget_dir_locked(self, wd: int, remove_watch: bool) -> None:
        directory = self._wd_dirs.pop(wd, None)
        if directory is not None:
            self._dirs.pop(directory, None)
        if remove_watch and self._inotify is not None:
            try:
                self._inotify.rm_watch(wd)
            except OSError:  # the directory is gone, and its watch with it
                pass

    def _run(self) -> None:
        while True:
            with self._lock:
                inotify = self._inotify
                if not self._subs or inotify is None:
                    # nobody left: close, so that a later subscribe starts afresh
                    if inotify is not None:
                        inotify.close()
                    self._inotify = None
                    self._thread = None
                    self._dirs.clear()
                    self._wd_dirs.clear()
                    return
            try:
                changes = inotify.read(timeout=_READ_TIMEOUT_MS)
            except (OSError, ValueError):  # closed under us: the loop above ends the thread
                changes = []
            if changes:
                self._wake(changes)

    def _wake(self, changes: list) -> None:
        woken: list[threading.Event] = []
        with self._lock:
            for change in changes:
                if change.mask & (_flags.Q_OVERFLOW | _flags.IGNORED):
                    # events were lost, or a directory went away: everyone concerned looks again
                    for (wd, _), events in self._subs.items():
                        if change.mask & _flags.Q_OVERFLOW or wd == change.wd:
                            woken += events
                    if change.mask & _flags.IGNORED:
                        self._forget_dir_locked(change.wd, remove_watch=False)
                    continue
                woken += self._subs.get((change.wd, change.name), ())
        for event in woken:
            event.set()


_watcher = FileChangeWatcher()


def file_change_watcher() -> FileChangeWatcher:
    return _watcher
