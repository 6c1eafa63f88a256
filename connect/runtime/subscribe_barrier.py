"""SubscribeBarrier: the sink tasks of one connector that a worker starts together subscribe together.

A sink task's consumer joins its connector's group when it subscribes. On Kafka, a member that joins a
group which has just settled without it waits for the others' next heartbeat (``heartbeat.interval.ms``,
3 s, twice under the cooperative protocol) to be let in: a connector whose second task subscribed a few
hundred ms after the first (its task host was still starting) ran on one task for seconds. Java's
tasks start in one thread pool within a millisecond of each other; here each task waits, before it
subscribes, for the other sink tasks of its connector that this worker started and that have not
subscribed yet, for at most ``SUBSCRIBE_TOGETHER_WAIT`` seconds, so that they join in one generation.

A task started while its siblings already run waits for nobody; a task that fails or stops before it
subscribes is forgotten, so nobody waits for it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from connect.runtime.herder import ConnectorTaskId

__all__ = ["SUBSCRIBE_TOGETHER_WAIT", "SiblingGate", "SubscribeBarrier", "wait_released"]

# About one heartbeat: a sibling later than that costs no more by joining on its own
SUBSCRIBE_TOGETHER_WAIT = 3.0


class SiblingGate(Protocol):
    """What a sink task asks before it subscribes (SubscribeBarrier in the worker; a task host forwards to its
    worker's)."""

    def expect(self, task_id: ConnectorTaskId) -> None: ...

    def forget(self, task_id: ConnectorTaskId) -> None: ...

    def wait(self, task_id: ConnectorTaskId, stopping: threading.Event, timeout: float) -> None: ...


class SubscribeBarrier:
    """The sink tasks of each connector started on this worker that have not subscribed yet."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, set[ConnectorTaskId]] = {}
        self._waiting: dict[str, list[Callable[[], None]]] = {}

    def expect(self, task_id: ConnectorTaskId) -> None:
        """``task_id`` was started: its siblings wait for it until it subscribes, ends, or their wait runs out."""
        with self._lock:
            self._pending.setdefault(task_id.connector, set()).add(task_id)

    def arrive(self, task_id: ConnectorTaskId, go: Callable[[], None]) -> None:
        """``task_id`` is about to subscribe: ``go`` is called (perhaps at once) when no sibling is pending."""
        self._settle(task_id, go)

    def forget(self, task_id: ConnectorTaskId) -> None:
        """``task_id`` ended or stopped before subscribing (or its host went away): nobody waits for it."""
        self._settle(task_id, None)

    def _settle(self, task_id: ConnectorTaskId, go: Callable[[], None] | None) -> None:
        connector = task_id.connector
        with self._lock:
            pending = self._pending.get(connector)
            if pending is not None:
                pending.discard(task_id)
            waiting = self._waiting.setdefault(connector, [])
            if go is not None:
                waiting.append(go)
            if pending:
                return
            self._pending.pop(connector, None)
            released = self._waiting.pop(connector, [])
        for release in released:
            release()

    def wait(self, task_id: ConnectorTaskId, stopping: threading.Event, timeout: float) -> None:
        """Arrive, then wait until the siblings have too, ``stopping`` is set, or ``timeout`` seconds passed."""
        released = threading.Event()
        self.arrive(task_id, released.set)
        wait_released(released, stopping, timeout)


def wait_released(released: threading.Event, stopping: threading.Event, timeout: float) -> None:
    """Wait until ``released`` or ``stopping`` is set, for at most ``timeout`` seconds: in slices, so that a
    stop does not wait out the barrier."""
    deadline = time.monotonic() + timeout
    while not released.is_set() and not stopping.is_set() and (left := deadline - time.monotonic()) > 0:
        released.wait(min(0.05, left))
