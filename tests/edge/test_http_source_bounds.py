"""Issue #35 item 4: HttpSource bounds the events of one request and the memory of all requests at once.

Against the shipped worker config (JsonConverter with schemas, the embedded log) and the shipped HttpSource
config, each attack below was taken whole before the fix: a 32 KB gzip body of 1,048,576 tiny events took
the worker from 197 MB to 10.1 GB and wrote 3.1 GB; 200,000 tiny events in 6 KB of gzip, +1.6 GB. Now each
is refused with 413 naming ``max.request.events`` once parsing passes it: nothing of it reaches the log,
the worker grows by less than RSS_GROWTH_BOUND, the task stays RUNNING, and a normal request beside the
attack (from another thread) and after it is answered 200 within 2 s.

A watcher samples the worker's RSS while the attacks run and kills the worker as soon as it passes the bound,
so that a regression fails the test without taking the machine's memory.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from connect.log import open_log_reader
from tests.edge.harness import EdgeWorker, answered_within, connector_file
from tests.support import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

# The refused attacks cost a request's body and at most max.request.events (10,000) events at a time; four
# at once stay far below this. Taken whole, the smaller one alone cost +1.6 GB.
RSS_GROWTH_BOUND = 200 << 20
TINY = b'{"message":"x"}\n'
NORMAL = b'{"message": "normal"}\n'
ATTACKERS = 4
ROUNDS = 3


def _records(tmp: Path, topic: str) -> int:
    """How many records ``topic`` holds in the worker's embedded log (``headrace-data`` of its directory)."""
    reader = open_log_reader({"embedded.log.dir": str(tmp / "headrace-data")})
    try:
        return sum(end - start for start, end in reader.partition_offsets([topic]).values())
    finally:
        reader.close()


class _Watcher:
    """Samples the worker's RSS; kills the worker at once if it grows past the bound."""

    def __init__(self, worker: EdgeWorker, base: int) -> None:
        self.worker, self.base, self.peak = worker, base, base
        self.killed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            rss = self.worker.rss_bytes()
            self.peak = max(self.peak, rss)
            if rss - self.base > RSS_GROWTH_BOUND:
                self.killed = True
                assert self.worker.proc is not None
                self.worker.proc.kill9()
                return

    def __enter__(self) -> _Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


@pytest.fixture
def http_logs(tmp_path: Path) -> Iterator[tuple[EdgeWorker, str]]:
    port = free_port()
    path = connector_file(tmp_path, "connect-http-source.properties", name="http-logs",
                          listeners=f"http://127.0.0.1:{port}")
    worker = EdgeWorker(tmp_path).start()
    try:
        worker.create(path)
        yield worker, f"http://127.0.0.1:{port}/"
    finally:
        if worker.proc is not None and worker.proc.alive():
            worker.stop()


ATTACKS = {
    # 1,048,576 tiny events: 16 MiB decoded (just under max.request.bytes) from ~32 KB of gzip
    "gzip bomb of 1,048,576 events": (lambda: gzip.compress(TINY * 1_048_576, 9), {"Content-Encoding": "gzip"}),
    "200,000 events": (lambda: gzip.compress(TINY * 200_000, 9), {"Content-Encoding": "gzip"}),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_request_of_too_many_tiny_events_is_refused_and_costs_little(http_logs, tmp_path: Path, attack: str):
    worker, url = http_logs
    make, headers = ATTACKS[attack]
    body = make()
    assert len(body) < 64 << 10
    with httpx.Client(timeout=30) as client:
        assert client.post(url, content=NORMAL).status_code == 200  # the topic exists, the code paths are warm
    base = worker.rss_bytes()
    refused: list[httpx.Response] = []
    beside: list[tuple[int, float]] = []  # (status, seconds) of the normal requests during the attacks
    errors: list[BaseException] = []
    attacking = threading.Event()
    attacking.set()

    def attacker() -> None:
        try:
            with httpx.Client(timeout=120) as client:
                for _ in range(ROUNDS):
                    refused.append(client.post(url, content=body, headers=headers))
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    def normal_sender() -> None:
        try:
            with httpx.Client(timeout=30) as client:
                while attacking.is_set():
                    started = time.monotonic()
                    answer = client.post(url, content=NORMAL)
                    beside.append((answer.status_code, time.monotonic() - started))
                    time.sleep(0.05)
        except BaseException as exc:
            errors.append(exc)

    with _Watcher(worker, base) as watcher:
        normal = threading.Thread(target=normal_sender)
        normal.start()
        attackers = [threading.Thread(target=attacker) for _ in range(ATTACKERS)]
        for thread in attackers:
            thread.start()
        for thread in attackers:
            thread.join(300)
        attacking.clear()
        normal.join(60)
    assert not watcher.killed, f"the worker grew past {RSS_GROWTH_BOUND >> 20} MB over {base >> 20} MB: killed"
    assert not errors, errors
    assert len(refused) == ATTACKERS * ROUNDS
    for answer in refused:
        assert answer.status_code == 413, answer.text[:300]
        assert "max.request.events=10000" in answer.json()["error"], answer.text[:300]
    assert beside, "no normal request was sent during the attacks"
    assert all(status == 200 for status, _ in beside), beside
    slowest = max(took for _, took in beside)
    assert slowest <= 2.0, f"a normal request took {slowest:.2f} s beside the attacks"
    with httpx.Client(timeout=30) as client:
        after = answered_within(2.0, lambda: client.post(url, content=NORMAL))
    assert after.status_code == 200, after.text
    worker.assert_running("http-logs")
    assert watcher.peak - base < RSS_GROWTH_BOUND
    # only the normal events are in the log: the warm-up, those beside the attacks, and the one after
    assert _records(tmp_path, "app-logs") == 1 + len(beside) + 1
