"""Wake-ups of waiting consumers: "data was appended to topic T", "the topic set changed", "stop waiting".

Every EmbeddedBackend in this process that opens the same directory shares one DirSignals. Each consumer
holds a ``Waiter`` registered for the topics it reads; an append, or a topic's creation, wakes only the
waiters of that topic (and pattern subscribers), a rebalance only its group's members, so a thousand idle
consumers cost nothing while one pipeline runs, and none of them wakes on a timer.

Appends by other processes (the console producer, ``headrace topics``) are not seen in this process's
memory. Processes that do not own the directory announce theirs by appending a byte to ``.appended`` in
it; while this process has waiters, one thread per directory looks at that file a few times a second and
wakes every waiter when it grew. (Its size, not its modification time: two touches within one tick of the
kernel's file-time clock leave the same time, and the second append would go unnoticed.) The owner's own appends are not announced (no per-append
system call on the hot path), so consumers in processes that do not own the directory keep a short
timer of their own (``needs_polling``). A worker whose tasks run in task host processes (writers beside it)
announces its appends too (``announce_own_appends``): it appends rarely then, and its hosts' consumers wait
for the marker, not on timers (a host sets ``owner_announces``).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable

APPEND_MARKER = ".appended"
WATCH_INTERVAL_S = 0.1  # how often the marker of other processes' appends is looked at
MARKER_MAX_BYTES = 64 * 1024  # the owner empties the marker beyond this


class Waiter:
    """One consumer's wake-up: set by appends to its topics, their creation or deletion (any topic's, for a
    pattern subscription), its group's rebalances and ``wakeup``."""

    __slots__ = ("event", "topics", "any_topic")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.topics: frozenset[str] = frozenset()
        self.any_topic = False


class DirSignals:
    def __init__(self, root: str) -> None:
        self._marker = os.path.join(root, APPEND_MARKER)
        self._lock = threading.Lock()
        # copy-on-write tuples: an append reads them without taking the lock
        self._by_topic: dict[str, tuple[Waiter, ...]] = {}
        self._waiters: tuple[Waiter, ...] = ()
        self._any_topic: tuple[Waiter, ...] = ()
        self._owners = 0
        self._watcher: threading.Thread | None = None
        self.topics_version = 0
        # this process owns the directory and has writers beside it that wait for the marker
        self.announce_own_appends = False
        # this process works beside an owner that announces its appends: the marker tells of every append
        self.owner_announces = False

    # -- who owns the directory in this process ----------------------------------------------------

    def owner_opened(self) -> None:
        with self._lock:
            self._owners += 1

    def owner_closed(self) -> None:
        with self._lock:
            self._owners = max(0, self._owners - 1)

    @property
    def needs_polling(self) -> bool:
        """True when appends may come unannounced from another process (this one does not own the directory)."""
        return self._owners == 0 and not self.owner_announces

    # -- waiters ----------------------------------------------------------------------------------------

    def waiter(self) -> Waiter:
        w = Waiter()
        with self._lock:
            self._waiters += (w,)
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch_marker, daemon=True,
                                                 name=f"embedded-log-appends-{os.path.basename(os.path.dirname(self._marker))}")
                self._watcher.start()
        return w

    def watch(self, waiter: Waiter, topics: Iterable[str], any_topic: bool = False) -> None:
        """Wake ``waiter`` on appends to ``topics`` and on their creation and deletion (instead of what it
        watched before); with ``any_topic``, on the creation and deletion of every topic."""
        wanted = frozenset(topics)
        with self._lock:
            if any_topic != waiter.any_topic:
                waiter.any_topic = any_topic
                self._any_topic = tuple(w for w in self._waiters if w.any_topic)
            if wanted == waiter.topics:
                return
            for t in waiter.topics - wanted:
                rest = tuple(w for w in self._by_topic.get(t, ()) if w is not waiter)
                if rest:
                    self._by_topic[t] = rest
                else:
                    self._by_topic.pop(t, None)
            for t in wanted - waiter.topics:
                self._by_topic[t] = (*self._by_topic.get(t, ()), waiter)
            waiter.topics = wanted

    def release(self, waiter: Waiter) -> None:
        self.watch(waiter, ())
        with self._lock:
            self._waiters = tuple(w for w in self._waiters if w is not waiter)
            self._any_topic = tuple(w for w in self._any_topic if w is not waiter)

    # -- what happened ----------------------------------------------------------------------------------

    def data_appended(self, topic: str) -> None:
        for w in self._by_topic.get(topic, ()):
            w.event.set()

    def topics_changed(self, topic: str | None = None) -> None:
        """``topic`` was created or deleted (None: some topics may have been, elsewhere)."""
        with self._lock:
            self.topics_version += 1
        if topic is None:
            self.wake_all()
            return
        for w in self._by_topic.get(topic, ()):
            w.event.set()
        for w in self._any_topic:
            w.event.set()

    def wake_all(self) -> None:
        """Wake every waiter without claiming new data."""
        for w in self._waiters:
            w.event.set()

    @staticmethod
    def wake(waiters: Iterable[Waiter]) -> None:
        for w in waiters:
            w.event.set()

    def announce_append(self) -> None:
        """Tell the directory's owner, in another process, that this process appended or changed topics."""
        with contextlib.suppress(OSError):  # a vanished directory: there is nobody to tell
            fd = os.open(self._marker, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, b".")  # O_APPEND: every announcement grows the file, whoever else writes
            finally:
                os.close(fd)

    # -- the marker of other processes' appends ------------------------------------------------------------

    def _marker_state(self) -> tuple[int, int, int]:
        try:
            st = os.stat(self._marker)
        except OSError:
            return (0, 0, 0)
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _watch_marker(self) -> None:
        """Runs while there are waiters; ends by itself when the last one is released."""
        seen = self._marker_state()
        pause = threading.Event()
        while True:
            pause.wait(WATCH_INTERVAL_S)
            with self._lock:
                if not self._waiters:
                    self._watcher = None
                    return
            state = self._marker_state()
            if state != seen:
                if state[1] > MARKER_MAX_BYTES:
                    # emptied before the wake-up below: an announcement cut away here came after its data,
                    # which the woken consumers then find
                    with contextlib.suppress(OSError):
                        os.truncate(self._marker, 0)
                    state = self._marker_state()
                seen = state
                # another process appended or changed topics: which ones is not known, so everyone looks
                self.topics_changed()


_registry: dict[str, DirSignals] = {}
_registry_lock = threading.Lock()


def signals_for(directory: str) -> DirSignals:
    key = os.path.realpath(directory)
    with _registry_lock:
        sig = _registry.get(key)
        if sig is None:
            sig = _registry[key] = DirSignals(key)
        return sig
