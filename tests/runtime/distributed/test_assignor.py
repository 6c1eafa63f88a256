"""The incremental cooperative assignor (KIP-415) round by round, with each worker reporting back what it
holds as a real worker does, and a fake clock for the scheduled delay."""

from __future__ import annotations

import random
from collections import Counter

from connect.runtime.distributed.assignor import EagerAssignor, IncrementalCooperativeAssignor
from connect.runtime.distributed.protocol import (
    Assignment,
    WorkerMetadata,
    decode_assignment,
    encode_assignment,
)
from connect.runtime.herder import ConnectorTaskId
from tests.runtime.fakes import FakeClock

T = ConnectorTaskId


class Group:
    """Workers that apply their assignments (keep − revoked + new) and report them in the next round."""

    def __init__(self, max_delay_ms: int = 0, *members: str) -> None:
        self.clock = FakeClock()
        self.assignor = IncrementalCooperativeAssignor(self.clock, max_delay_ms)
        self.held: dict[str, tuple[set[str], set[ConnectorTaskId]]] = {m: (set(), set()) for m in members}
        self.last: dict[str, Assignment] = {}

    def join(self, member: str) -> None:
        self.held[member] = (set(), set())

    def leave(self, member: str) -> None:
        del self.held[member]

    def round(self, task_counts: dict[str, int]) -> dict[str, Assignment]:
        members = {}
        for m, (c, t) in self.held.items():
            allocation = Assignment(0, "", "", 0, tuple(sorted(c)), tuple(sorted(t))) if c or t else None
            members[m] = WorkerMetadata(f"http://{m}", 0, allocation, 2)
        out = self.assignor.perform_assignment("w0", "http://w0", 2, members, task_counts, 0)
        for m, a in out.items():
            a = decode_assignment(encode_assignment(a))  # what the member receives
            c, t = self.held[m]
            c -= set(a.revoked_connectors)
            t -= set(a.revoked_tasks)
            c |= set(a.connectors)
            t |= set(a.tasks)
            self.last[m] = a
        return out

    def settle(self, task_counts: dict[str, int], rounds: int = 6) -> int:
        """Rebalance while any worker was told to revoke (it rejoins at once); the rounds it took."""
        for n in range(1, rounds + 1):
            out = self.round(task_counts)
            if not any(a.revoked_connectors or a.revoked_tasks for a in out.values()):
                return n
        raise AssertionError("no stable assignment")

    def tasks_per_worker(self) -> list[int]:
        return sorted(len(t) for _, t in self.held.values())

    def check_no_duplicates(self, task_counts: dict[str, int], complete: bool = True) -> None:
        connectors = Counter(c for cs, _ in self.held.values() for c in cs)
        tasks = Counter(t for _, ts in self.held.values() for t in ts)
        assert all(n == 1 for n in connectors.values()) and all(n == 1 for n in tasks.values())
        if complete:
            assert set(connectors) == set(task_counts)
            assert set(tasks) == {T(c, i) for c, n in task_counts.items() for i in range(n)}


def test_six_tasks_over_three_workers_are_two_each():
    g = Group(0, "w0", "w1", "w2")
    g.settle({"c1": 0})
    g.settle({"c1": 6})
    assert g.tasks_per_worker() == [2, 2, 2]
    g.check_no_duplicates({"c1": 6})


def test_nothing_moves_when_the_group_is_balanced():
    g = Group(0, "w0", "w1", "w2")
    g.settle({"c1": 6, "c2": 3})
    before = {m: (set(c), set(t)) for m, (c, t) in g.held.items()}
    out = g.round({"c1": 6, "c2": 3})
    assert all(not (a.revoked_connectors or a.revoked_tasks or a.connectors or a.tasks) for a in out.values())
    assert g.held == before


def test_a_new_worker_gets_its_share_and_only_the_surplus_moves():
    g = Group(0, "w0", "w1")
    g.settle({"c1": 6})
    before = {m: set(t) for m, (_, t) in g.held.items()}
    g.join("w2")
    first = g.round({"c1": 6})
    revoked = {t for a in first.values() for t in a.revoked_tasks}
    assert len(revoked) == 2, "only the surplus is revoked"
    g.settle({"c1": 6})
    assert g.tasks_per_worker() == [2, 2, 2]
    for m in ("w0", "w1"):
        assert before[m] - g.held[m][1] <= revoked  # nothing else left its worker
    g.check_no_duplicates({"c1": 6})


def test_a_departed_workers_work_waits_for_the_delay_then_moves():
    g = Group(10_000, "w0", "w1", "w2")
    g.settle({"c1": 6})
    lost = set(g.held["w2"][1])
    g.leave("w2")
    out = g.round({"c1": 6})
    assert all(a.delay_ms == 10_000 for a in out.values())
    assert not any(a.tasks for a in out.values()), "held, not reassigned yet"
    g.clock.advance(4)
    out = g.round({"c1": 6})
    assert all(5_000 <= a.delay_ms <= 6_000 for a in out.values())
    g.clock.advance(6.1)
    out = g.round({"c1": 6})
    assert {t for a in out.values() for t in a.tasks} == lost
    assert g.tasks_per_worker() == [3, 3]
    g.check_no_duplicates({"c1": 6})


def test_a_worker_back_within_the_delay_gets_the_held_work():
    g = Group(10_000, "w0", "w1", "w2")
    g.settle({"c1": 6})
    lost = set(g.held["w2"][1])
    g.leave("w2")
    g.round({"c1": 6})
    g.join("w3")  # the same process back, with a new member id and nothing running
    g.clock.advance(3)
    out = g.round({"c1": 6})
    assert not any(a.tasks for a in out.values()) and out["w3"].delay_ms > 0
    g.clock.advance(7.1)
    g.round({"c1": 6})
    assert g.held["w3"][1] == lost
    assert g.tasks_per_worker() == [2, 2, 2]


def test_a_deleted_connector_and_its_tasks_are_revoked():
    g = Group(0, "w0", "w1")
    g.settle({"a": 2, "b": 2})
    out = g.round({"b": 2})
    revoked = {c for a in out.values() for c in a.revoked_connectors} | {
        t for a in out.values() for t in a.revoked_tasks}
    assert revoked == {"a", T("a", 0), T("a", 1)}
    g.check_no_duplicates({"b": 2})


def test_work_running_twice_is_revoked_from_one_worker():
    g = Group(0, "w0", "w1")
    g.settle({"a": 2})
    g.held["w1"][1].add(T("a", 0) if T("a", 0) not in g.held["w1"][1] else T("a", 1))
    g.settle({"a": 2})
    g.check_no_duplicates({"a": 2})


def test_a_new_connector_goes_to_the_least_loaded_worker():
    g = Group(0, "w0", "w1", "w2")
    g.settle({"a": 1, "b": 1})
    empty = next(m for m, (c, t) in g.held.items() if not c and not t)
    out = g.round({"a": 1, "b": 1, "new": 0})
    assert out[empty].connectors == ("new",)


def test_fifty_connectors_at_once_are_assigned_in_one_round_without_revocations():
    g = Group(0, "w0", "w1", "w2")
    counts = {f"c{i:02d}": 1 for i in range(50)}
    out = g.round({c: 0 for c in counts})
    assert not any(a.revoked_connectors for a in out.values())
    out = g.round(counts)
    assert not any(a.revoked_tasks or a.revoked_connectors for a in out.values())
    assert sorted(len(c) for c, _ in g.held.values()) == [16, 17, 17]
    assert g.tasks_per_worker() == [16, 17, 17]
    g.check_no_duplicates(counts)


def test_any_sequence_of_joins_leaves_and_config_changes_ends_complete_and_unique():
    rng = random.Random(7)
    g = Group(2_000, "w0", "w1", "w2")
    counts: dict[str, int] = {}
    next_member = 3
    for _ in range(200):
        action = rng.random()
        if action < 0.3:
            counts[f"c{rng.randrange(12)}"] = rng.randrange(0, 5)
        elif action < 0.4 and counts:
            counts.pop(rng.choice(sorted(counts)))
        elif action < 0.5 and len(g.held) > 1:
            g.leave(rng.choice(sorted(g.held)))
        elif action < 0.6:
            g.join(f"w{next_member}")
            next_member += 1
        g.clock.advance(rng.random())
        g.round(counts)
        g.check_no_duplicates(counts, complete=False)
    g.clock.advance(3)
    g.settle(counts)
    g.check_no_duplicates(counts, complete=True)


def test_eager_assigns_everything_round_robin():
    members = {m: WorkerMetadata(f"http://{m}", 0, None, 0) for m in ("b", "a")}
    out = EagerAssignor().perform_assignment("a", "http://a", 0, members, {"x": 3, "y": 1}, 4)
    assert out["a"].connectors == ("x",) and out["b"].connectors == ("y",)
    assert sorted(len(a.tasks) for a in out.values()) == [2, 2]
    assert all(a.version == 0 and a.config_offset == 4 for a in out.values())


def test_work_given_in_a_round_cut_short_by_the_next_join_is_given_out_again_at_once():
    # After an outage every worker comes back as a new member, one after another: the first forms the group
    # alone and is given everything, but the next join starts a new round before it starts any of it, so it
    # reports nothing. That work was never lost by a departed worker: it must not wait the scheduled delay.
    g = Group(300_000, "a")
    g.round({"c1": 6})
    assert len(g.held["a"][1]) == 6
    g.held["a"] = (set(), set())  # the round was cut short: "a" started none of it
    g.join("b")
    out = g.round({"c1": 6})
    assert all(a.delay_ms == 0 for a in out.values()), out
    assert sum(len(a.tasks) for a in out.values()) == 6
    g.settle({"c1": 6})
    g.check_no_duplicates({"c1": 6})
