"""ControlPriority: task threads step aside between batches while a REST request is served, never for long."""

from __future__ import annotations

import threading
import time

import httpx

from connect.runtime.control_priority import ControlPriority
from rest import RestServer, create_app
from tests.rest.rest_fake_herder import FakeHerder

LOOPBACK = {"listeners": "http://127.0.0.1:0"}


def test_no_request_under_way_means_no_wait() -> None:
    priority = ControlPriority(max_yield_s=10)
    began = time.monotonic()
    for _ in range(1000):
        priority.yield_to_control()
    assert time.monotonic() - began < 5  # would be 10 s at the first call if it waited


def test_a_task_waits_until_the_request_is_answered() -> None:
    priority = ControlPriority(max_yield_s=30)
    priority.request_started()
    returned = threading.Event()
    waiter = threading.Thread(target=lambda: (priority.yield_to_control(), returned.set()))
    waiter.start()
    assert not returned.wait(0.2)  # still waiting while the request is under way
    priority.request_finished()
    assert returned.wait(10)
    waiter.join()


def test_a_request_that_hangs_holds_tasks_back_no_longer_than_the_bound() -> None:
    priority = ControlPriority(max_yield_s=0.05)
    priority.request_started()  # never finished
    began = time.monotonic()
    priority.yield_to_control()
    priority.yield_to_control()  # past the bound: no second wait
    assert time.monotonic() - began < 10
    assert priority.under_way == 1


def test_a_bound_of_zero_turns_it_off() -> None:
    priority = ControlPriority(max_yield_s=0)
    priority.request_started()
    returned = threading.Event()
    threading.Thread(target=lambda: (priority.yield_to_control(), returned.set())).start()
    assert returned.wait(10)


def test_a_finish_without_a_start_does_not_go_negative() -> None:
    priority = ControlPriority(max_yield_s=30)
    priority.request_finished()
    priority.request_started()
    assert priority.under_way == 1
    priority.request_finished()
    assert priority.under_way == 0


class CountingObserver:
    def __init__(self) -> None:
        self.started = 0
        self.finished = 0
        self.lock = threading.Lock()

    def request_started(self) -> None:
        with self.lock:
            self.started += 1

    def request_finished(self) -> None:
        with self.lock:
            self.finished += 1


def test_the_rest_server_reports_each_request_started_and_finished() -> None:
    observer = CountingObserver()
    with RestServer(create_app(FakeHerder(), LOOPBACK), LOOPBACK, request_observer=observer) as server:
        with httpx.Client(base_url=server.advertised_url()) as keep_alive:
            for _ in range(20):
                assert keep_alive.get("/connectors").status_code == 200
        for _ in range(5):  # a new connection each
            assert httpx.get(server.advertised_url() + "connectors").status_code == 200
        assert httpx.get(server.advertised_url() + "no/such/path").status_code == 404
    # every request was reported once, both ways (connections closing may add pairs, never one side only)
    assert observer.started >= 26
    assert observer.started == observer.finished
