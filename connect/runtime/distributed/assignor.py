"""How the group's leader shares connectors and tasks among the workers.

``IncrementalCooperativeAssignor`` follows KIP-415: work stays where it runs; new work goes to the least
loaded workers; only what must move is revoked (deleted work, work running twice, and a worker's surplus
over its fair share), and revoked work is given out in the follow-up rebalance, so moving a task takes two
rounds. Work of a worker that left is held for ``scheduled.rebalance.max.delay.ms``: if the worker comes
back within that time it gets its work again, otherwise the work goes to the least loaded workers then.
``EagerAssignor`` is the version-0 protocol: every rebalance stops everything and hands it all out again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import attrs

from connect.runtime.clock import Clock
from connect.runtime.distributed.protocol import NO_ERROR, Assignment, WorkerMetadata
from connect.runtime.herder import ConnectorTaskId

__all__ = ["EagerAssignor", "IncrementalCooperativeAssignor"]

log = logging.getLogger(__name__)


@attrs.define
class _Work:
    """Connectors and tasks of one worker (or of a set of workers)."""

    connectors: set[str] = attrs.field(factory=set)
    tasks: set[ConnectorTaskId] = attrs.field(factory=set)

    def copy(self) -> _Work:
        return _Work(set(self.connectors), set(self.tasks))

    def size(self) -> int:
        return len(self.connectors) + len(self.tasks)

    def __bool__(self) -> bool:
        return bool(self.connectors or self.tasks)

    def __sub__(self, other: _Work) -> _Work:
        return _Work(self.connectors - other.connectors, self.tasks - other.tasks)

    def __or__(self, other: _Work) -> _Work:
        return _Work(self.connectors | other.connectors, self.tasks | other.tasks)

    def __and__(self, other: _Work) -> _Work:
        return _Work(self.connectors & other.connectors, self.tasks & other.tasks)


def _union(works: Iterable[_Work]) -> _Work:
    out = _Work()
    for w in works:
        out = out | w
    return out


def _configured(task_counts: Mapping[str, int]) -> _Work:
    return _Work(set(task_counts), {ConnectorTaskId(c, i) for c, n in task_counts.items() for i in range(n)})


def _reported(md: WorkerMetadata) -> _Work:
    a = md.allocation
    return _Work(set(a.connectors), set(a.tasks)) if a is not None else _Work()


def _spread(items: Iterable, loads: dict[str, int], out: dict[str, set]) -> None:
    """Give each item to the least loaded worker (ties by member id), updating ``loads``."""
    for item in sorted(items):
        member = min(loads, key=lambda m: (loads[m], m))
        out[member].add(item)
        loads[member] += 1


def _surplus(sets: dict[str, set], total: int) -> dict[str, set]:
    """What each worker must give up so no worker holds more than its fair share (floor(total/N), and
    ``total % N`` workers may hold one more)."""
    n = len(sets)
    if n == 0:
        return {}
    floor, extra = divmod(total, n)
    out: dict[str, set] = {m: set() for m in sets}
    for member in sorted(sets, key=lambda m: (-len(sets[m]), m)):
        allowed = floor
        if extra and len(sets[member]) > floor:
            allowed, extra = floor + 1, extra - 1
        excess = len(sets[member]) - allowed
        if excess > 0:
            out[member] = set(sorted(sets[member])[-excess:])
    return out


class IncrementalCooperativeAssignor:
    def __init__(self, clock: Clock, max_delay_ms: int) -> None:
        self.clock = clock
        self.max_delay_ms = max_delay_ms
        self._previous: dict[str, _Work] = {}  # what each member held after the last round
        self._held = _Work()  # lost work waiting for its worker to return
        self._deadline: float | None = None  # when held work is given out (monotonic seconds)
        self._candidates: set[str] = set()  # workers that joined empty while work was held
        self._balance_backoff_ms = 0
        self._last_balance: float | None = None

    def perform_assignment(self, leader_id: str, leader_url: str, version: int,
                           members: Mapping[str, WorkerMetadata], task_counts: Mapping[str, int],
                           config_offset: int) -> dict[str, Assignment]:
        now = self.clock.monotonic()
        configured = _configured(task_counts)
        current = {m: _reported(md) for m, md in members.items()}
        if set(self._previous) - set(members) and not (set(self._previous) & set(members)):
            self._previous = {}  # a new leader, or a group that changed completely: start from what runs
        active = _union(current.values())
        previous = _union(self._previous.values()) | self._held if self._previous else active
        # Only the work of members that left is lost and held for the delay. Work a present member was given but
        # does not report (the round that gave it was cut short by the next join, as when workers come back one
        # after another) is given out again at once.
        departed = _union(w for m, w in self._previous.items() if m not in members)
        deleted = (previous | active) - configured
        lost = (departed | self._held) - active - deleted
        created = configured - active - lost

        revoked: dict[str, _Work] = {m: current[m] & deleted for m in members}
        seen = _Work()
        for m in sorted(members):  # work running on two workers stays on the first
            dup = current[m] & seen
            revoked[m] = revoked[m] | dup
            seen = seen | current[m]

        to_assign = created
        delay_ms = self._handle_lost(lost, members, current, now)
        if delay_ms == 0:
            to_assign = to_assign | self._release_held(members, current)

        held_now = {m: current[m] - revoked[m] for m in members}
        if delay_ms == 0 and self._may_balance(now):
            balance = self._balance_revocations(held_now, configured)
            if any(balance.values()):
                for m, w in balance.items():
                    revoked[m] = revoked[m] | w
                    held_now[m] = held_now[m] - w
                self._note_balance(now)

        new: dict[str, _Work] = {m: _Work() for m in members}
        self._give_out(to_assign, held_now, new)
        self._previous = {m: held_now[m] | new[m] for m in members}
        out = {}
        for m in members:
            out[m] = Assignment(NO_ERROR, leader_id, leader_url, config_offset,
                                tuple(sorted(new[m].connectors)), tuple(sorted(new[m].tasks)),
                                tuple(sorted(revoked[m].connectors)), tuple(sorted(revoked[m].tasks)),
                                delay_ms, version)
        log.info("Assignment for %d worker(s): %d connector(s) and %d task(s) configured, %d new, %d revoked, "
                 "%d held for %d ms", len(members), len(configured.connectors), len(configured.tasks),
                 sum(w.size() for w in new.values()), sum(w.size() for w in revoked.values()), self._held.size(),
                 delay_ms)
        return out

    # --- lost work and the scheduled delay --------------------------------------------------------------
    def _handle_lost(self, lost: _Work, members: Mapping[str, WorkerMetadata], current: dict[str, _Work],
                     now: float) -> int:
        """Hold newly lost work for the delay; the remaining delay in ms (0: nothing held)."""
        if lost:
            self._held = self._held | lost
        if not self._held:
            self._deadline = None
            return 0
        if self.max_delay_ms == 0:
            self._deadline = now
            return 0
        if self._deadline is None:
            self._deadline = now + self.max_delay_ms / 1000
            log.info("%d connector(s)/task(s) of departed workers held for %d ms in case they return",
                     self._held.size(), self.max_delay_ms)
        self._candidates |= {m for m in members if not current[m]}
        remaining = int((self._deadline - now) * 1000)
        return max(0, remaining)

    def _release_held(self, members: Mapping[str, WorkerMetadata], current: dict[str, _Work]) -> _Work:
        released, self._held, self._deadline = self._held, _Work(), None
        self._candidates.clear()
        return released

    # --- balance ------------------------------------------------------------------------------------------
    def _may_balance(self, now: float) -> bool:
        if self._last_balance is None:
            return True
        return now >= self._last_balance + self._balance_backoff_ms / 1000

    def _note_balance(self, now: float) -> None:
        # back-to-back revoking rounds back off exponentially, so a flapping group cannot churn work
        if self._last_balance is not None and now - self._last_balance < 1.0:
            self._balance_backoff_ms = min(max(1, self._balance_backoff_ms * 2), max(1, self.max_delay_ms))
        else:
            self._balance_backoff_ms = 0
        self._last_balance = now

    @staticmethod
    def _balance_revocations(held: dict[str, _Work], configured: _Work) -> dict[str, _Work]:
        connectors = _surplus({m: w.connectors for m, w in held.items()}, len(configured.connectors))
        tasks = _surplus({m: w.tasks for m, w in held.items()}, len(configured.tasks))
        return {m: _Work(connectors.get(m, set()), tasks.get(m, set())) for m in held}

    @staticmethod
    def _give_out(work: _Work, held: dict[str, _Work], new: dict[str, _Work]) -> None:
        if not held:
            return
        connector_loads = {m: len(w.connectors) for m, w in held.items()}
        task_loads = {m: len(w.tasks) for m, w in held.items()}
        connectors: dict[str, set] = {m: set() for m in held}
        tasks: dict[str, set] = {m: set() for m in held}
        _spread(work.connectors, connector_loads, connectors)
        _spread(work.tasks, task_loads, tasks)
        for m in held:
            new[m] = _Work(connectors[m], tasks[m])


class EagerAssignor:
    """Version 0: all work, round-robin over the workers sorted by member id."""

    def perform_assignment(self, leader_id: str, leader_url: str, version: int,
                           members: Mapping[str, WorkerMetadata], task_counts: Mapping[str, int],
                           config_offset: int) -> dict[str, Assignment]:
        order = sorted(members)
        connectors: dict[str, list[str]] = {m: [] for m in order}
        tasks: dict[str, list[ConnectorTaskId]] = {m: [] for m in order}
        for i, name in enumerate(sorted(task_counts)):
            connectors[order[i % len(order)]].append(name)
        all_tasks = sorted(ConnectorTaskId(c, i) for c, n in task_counts.items() for i in range(n))
        for i, task in enumerate(all_tasks):
            tasks[order[i % len(order)]].append(task)
        return {m: Assignment(NO_ERROR, leader_id, leader_url, config_offset, tuple(connectors[m]),
                              tuple(tasks[m]), version=0) for m in order}
