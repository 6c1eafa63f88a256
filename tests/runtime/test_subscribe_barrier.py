"""SubscribeBarrier: the sink tasks of one connector started together subscribe together."""

from __future__ import annotations

import threading
import time

from connect.runtime.herder import ConnectorTaskId
from connect.runtime.subscribe_barrier import SubscribeBarrier

T0, T1, T2 = (ConnectorTaskId("sink", i) for i in range(3))
OTHER = ConnectorTaskId("other", 0)


def _arrive(barrier: SubscribeBarrier, task: ConnectorTaskId, released: list[ConnectorTaskId]) -> None:
    barrier.arrive(task, lambda: released.append(task))


def test_the_first_to_arrive_waits_until_every_sibling_started_with_it_arrives():
    barrier = SubscribeBarrier()
    for task in (T0, T1, T2):
        barrier.expect(task)
    released: list[ConnectorTaskId] = []
    _arrive(barrier, T1, released)
    _arrive(barrier, T0, released)
    assert released == []
    _arrive(barrier, T2, released)
    assert sorted(released) == [T0, T1, T2]


def test_a_sibling_that_ends_before_subscribing_releases_the_others():
    barrier = SubscribeBarrier()
    barrier.expect(T0)
    barrier.expect(T1)
    released: list[ConnectorTaskId] = []
    _arrive(barrier, T0, released)
    barrier.forget(T1)
    assert released == [T0]


def test_a_task_started_alone_and_other_connectors_wait_for_nobody():
    barrier = SubscribeBarrier()
    barrier.expect(T0)
    barrier.expect(OTHER)
    released: list[ConnectorTaskId] = []
    _arrive(barrier, OTHER, released)
    assert released == [OTHER]
    _arrive(barrier, T0, released)
    assert released == [OTHER, T0]
    # a restart later: its siblings are running, not pending
    barrier.expect(T1)
    _arrive(barrier, T1, released)
    assert released[-1] == T1


def test_wait_returns_when_released_when_stopping_and_at_the_timeout():
    barrier = SubscribeBarrier()
    barrier.expect(T0)
    barrier.expect(T1)
    never = threading.Event()
    threading.Timer(0.2, lambda: barrier.arrive(T1, lambda: None)).start()
    start = time.monotonic()
    barrier.wait(T0, never, timeout=30)
    assert time.monotonic() - start < 10

    barrier.expect(T0)
    barrier.expect(T1)
    stopping = threading.Event()
    threading.Timer(0.2, stopping.set).start()
    start = time.monotonic()
    barrier.wait(T0, stopping, timeout=30)
    assert time.monotonic() - start < 10

    barrier.expect(T2)
    start = time.monotonic()
    barrier.wait(T2, never, timeout=0.3)  # T1 never comes
    assert 0.25 < time.monotonic() - start < 10
