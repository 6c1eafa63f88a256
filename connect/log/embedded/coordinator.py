"""In-process consumer-group coordination for ``subscribe``.

One GroupCoordinator exists per (log directory, group) in a process; every
consumer of this process that subscribes with that group joins it. It
spreads the subscribed partitions over the live members round-robin (sorted
partitions dealt to members in join order, so the result depends only on
who is in the group and what exists) and re-deals whenever a member joins
or leaves, a subscription changes, or topics/partitions appear or vanish
(pattern subscriptions pick up new topics this way).

The protocol is cooperative, as in Kafka's incremental rebalancing: a
partition that moves is first revoked by its old owner, inside that
member's ``poll`` (where its listener can commit), and only then handed to
the new owner, again inside the new owner's ``poll``. Each listener hears
only the partitions it loses or gains.

Members in other processes are coordinated only when those processes hand
their groups to this one: a worker's task host processes install a provider
(``use_group_provider``) whose stand-ins ask the worker, over their channel,
to play each member's part in the worker's GroupCoordinator. Two processes
that do neither each get every partition; distributed mode uses Kafka, whose
broker-side coordinator does this across processes.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from connect.api.topic_partition import TopicPartition
from connect.log.embedded.signals import DirSignals, Waiter, signals_for
from connect.log.embedded.topics import cached_topic_partition_counts


class GroupMembership(Protocol):
    """What a subscribed consumer asks of its group: a GroupCoordinator, or a stand-in for one elsewhere."""

    def join(self, topics: Iterable[str] | None, pattern: re.Pattern[str] | None,
             waiter: Waiter | None = None) -> int: ...

    def resubscribe(self, member_id: int, topics: Iterable[str] | None,
                    pattern: re.Pattern[str] | None) -> None: ...

    def leave(self, member_id: int) -> None: ...

    def maybe_refresh(self) -> None: ...

    def pending_revocations(self, member_id: int) -> list[TopicPartition]: ...

    def confirm_revoked(self, member_id: int, partitions: Iterable[TopicPartition]) -> None: ...

    def claim_assignments(self, member_id: int) -> list[TopicPartition]: ...


class _Member:
    __slots__ = ("owned", "pattern", "target", "topics", "waiter")

    def __init__(self, topics: frozenset[str], pattern: re.Pattern[str] | None, waiter: Waiter | None) -> None:
        self.topics = topics
        self.pattern = pattern
        self.waiter = waiter
        self.owned: set[TopicPartition] = set()
        self.target: set[TopicPartition] = set()

    def wants(self, topic: str) -> bool:
        if self.pattern is not None:
            return self.pattern.fullmatch(topic) is not None
        return topic in self.topics


class GroupCoordinator:
    def __init__(
        self,
        group: str,
        list_topics: Callable[[], Mapping[str, int]],
        signals: DirSignals,
        metadata_interval: float = 5.0,
    ) -> None:
        self.group = group
        self._list_topics = list_topics
        self._signals = signals
        self._interval = metadata_interval
        self._lock = threading.Lock()
        self._members: dict[int, _Member] = {}
        self._ids = itertools.count(1)
        self._topics: dict[str, int] = {}  # the topics some member wants, with their partition counts
        self._checked_at = float("-inf")
        self._topics_version = -1

    # -- membership -------------------------------------------------------------

    def join(self, topics: Iterable[str] | None, pattern: re.Pattern[str] | None, waiter: Waiter | None = None) -> int:
        """A new member; ``waiter`` is woken when the member has partitions to give up or take."""
        with self._lock:
            member_id = next(self._ids)
            self._members[member_id] = _Member(frozenset(topics or ()), pattern, waiter)
            self._refresh_topics_locked(force=True)
            self._rebalance_locked()
        return member_id

    def resubscribe(self, member_id: int, topics: Iterable[str] | None, pattern: re.Pattern[str] | None) -> None:
        with self._lock:
            m = self._members[member_id]
            m.topics, m.pattern = frozenset(topics or ()), pattern
            self._refresh_topics_locked(force=True)
            self._rebalance_locked()

    def leave(self, member_id: int) -> None:
        with self._lock:
            if self._members.pop(member_id, None) is not None:
                self._rebalance_locked()

    def member_count(self) -> int:
        with self._lock:
            return len(self._members)

    # -- what a member does in poll ------------------------------------------------

    def maybe_refresh(self) -> None:
        """Re-read the topic set when it may have changed; re-deal if it did."""
        if (
            self._signals.topics_version == self._topics_version
            and time.monotonic() - self._checked_at < self._interval
        ):
            return
        with self._lock:
            if self._refresh_topics_locked(force=False):
                self._rebalance_locked()

    def pending_revocations(self, member_id: int) -> list[TopicPartition]:
        with self._lock:
            m = self._members.get(member_id)
            return sorted(m.owned - m.target) if m is not None else []

    def confirm_revoked(self, member_id: int, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            m = self._members.get(member_id)
            if m is not None:
                m.owned.difference_update(partitions)
            waiters = self._waiters_locked()
        self._signals.wake(waiters)  # the new owners may be waiting in poll

    def claim_assignments(self, member_id: int) -> list[TopicPartition]:
        """Partitions now this member's that no other member still holds; they become owned."""
        with self._lock:
            m = self._members.get(member_id)
            if m is None:
                return []
            wanted = m.target - m.owned
            if not wanted:
                return []
            held = set().union(*(o.owned for mid, o in self._members.items() if mid != member_id))
            claim = wanted - held
            m.owned |= claim
            return sorted(claim)

    # -- internals -------------------------------------------------------------------

    def _refresh_topics_locked(self, force: bool) -> bool:
        now = time.monotonic()
        version = self._signals.topics_version
        if not force and version == self._topics_version and now - self._checked_at < self._interval:
            return False
        self._topics_version = version
        self._checked_at = now
        existing = self._list_topics()
        wanted: dict[str, int] = {}
        for m in self._members.values():
            if m.pattern is not None:
                wanted.update((t, n) for t, n in existing.items() if m.pattern.fullmatch(t) is not None)
            else:
                wanted.update((t, existing[t]) for t in m.topics if t in existing)
        if wanted == self._topics:
            return False
        self._topics = wanted
        return True

    def _waiters_locked(self) -> list[Waiter]:
        return [m.waiter for m in self._members.values() if m.waiter is not None]

    def _rebalance_locked(self) -> None:
        members = sorted(self._members)
        targets: dict[int, set[TopicPartition]] = {mid: set() for mid in members}
        # deal each topic's partitions in turn, continuing the rotation across topics
        turn = 0
        for topic in sorted(self._topics):
            eligible = [mid for mid in members if self._members[mid].wants(topic)]
            if not eligible:
                continue
            for p in range(self._topics[topic]):
                targets[eligible[turn % len(eligible)]].add(TopicPartition(topic, p))
                turn += 1
        for mid in members:
            self._members[mid].target = targets[mid]
        self._signals.wake(self._waiters_locked())


_registry: dict[tuple[str, str], GroupCoordinator] = {}
_registry_lock = threading.Lock()
# (log directory, group, metadata interval) -> this process's stand-in for a group coordinated elsewhere
GroupProvider = Callable[[str, str, float], GroupMembership]
_provider: GroupProvider | None = None


def use_group_provider(provider: GroupProvider | None) -> None:
    """From now on this process's subscribing consumers take their groups from ``provider`` (None: from this
    process's own coordinators again)."""
    global _provider
    _provider = provider


def membership_for(root: str, group: str, metadata_interval: float = 5.0) -> GroupMembership:
    """The group a consumer of this process joins: the provider's stand-in when one is installed, else this
    process's coordinator for the directory and group."""
    if _provider is not None:
        return _provider(os.path.realpath(root), group, metadata_interval)
    return local_coordinator(root, group, metadata_interval)


def local_coordinator(root: str, group: str, metadata_interval: float = 5.0) -> GroupCoordinator:
    """This process's coordinator of ``group`` in the log directory ``root``."""
    signals = signals_for(root)
    real = os.path.realpath(root)
    return coordinator_for(real, group, lambda: cached_topic_partition_counts(real, signals.topics_version),
                           signals, metadata_interval)


def coordinator_for(
    root: str, group: str, list_topics: Callable[[], Mapping[str, int]], signals: DirSignals,
    metadata_interval: float = 5.0,
) -> GroupCoordinator:
    key = (os.path.realpath(root), group)
    with _registry_lock:
        coord = _registry.get(key)
        if coord is None:
            coord = _registry[key] = GroupCoordinator(group, list_topics, signals, metadata_interval)
        return coord


def group_has_members(root: str, group: str) -> bool:
    with _registry_lock:
        coord = _registry.get((os.path.realpath(root), group))
    return coord is not None and coord.member_count() > 0
