"""The cyclic collector is held back while a worker starts, and runs again once its heap is settled or its
start failed (connect.runtime.gc_policy)."""

from __future__ import annotations

import gc

import pytest

from connect.cli.exit import CliError
from connect.cli.worker_process import run_worker
from connect.runtime.gc_policy import settle_heap


@pytest.fixture(autouse=True)
def _collector_back_on():
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()
    gc.enable()


def test_no_automatic_collection_while_the_worker_is_made_and_again_after_a_failed_start() -> None:
    seen: list[bool] = []

    def make():
        seen.append(gc.isenabled())
        raise CliError("worker.properties: bad")

    assert run_worker(make) != 0
    assert seen == [False]
    assert gc.isenabled()


def test_settling_the_heap_lets_the_collector_run_again() -> None:
    gc.disable()
    settle_heap()
    assert gc.isenabled() and gc.get_freeze_count() > 0


def test_a_forked_front_freezes_the_heap_it_shares_with_the_worker_without_walking_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object) -> int:
        raise AssertionError("a collection writes to every shared page")

    monkeypatch.setattr(gc, "collect", refused)
    gc.disable()
    settle_heap(collect=False)
    assert gc.isenabled() and gc.get_freeze_count() > 0
