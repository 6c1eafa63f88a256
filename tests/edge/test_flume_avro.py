"""FlumeAvroSource under hostile clients, in a real worker started from the shipped config (issue #35, item 5).

A deflate bomb — one Netty frame of zeros claiming 73 MB, 73 KB on the wire — sent by 8 connections at once to
a source with the shipped defaults: the worker's memory grows by less than max.buffered.bytes (256 MiB) plus
64 MiB of slack, each bomb's connection is closed, the task stays RUNNING, and beside the attack a normal
appendBatch is answered within 2 s, from this project's Avro client and from Flume 1.11's own RpcClient
(``FlumeSend``, services/flume.py) sending all along. A frame that stops half-way is cut off after
frame.timeout.ms.
"""

from __future__ import annotations

import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from services.flume import flume_sender
from tests.edge.harness import EdgeWorker, answered_within, process_tree
from tests.flume_support import AvroClient, call, deflate_bomb, frame, handshake
from tests.support import free_port, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

MiB = 1 << 20
BUDGET = 256 * MiB  # max.buffered.bytes, the shipped default
EVENTS = [{"headers": {"seq": str(i), "app": "shop"}, "body": f"event {i}".encode()} for i in range(100)]


def _source(port: int, **props: str) -> dict[str, str]:
    return {"name": "flume-in", "connector.class": "FlumeAvroSource", "topic": "flume",
            "listeners": f"tcp://127.0.0.1:{port}", **props}


class _PeakRss:
    """The highest resident set of a process tree from now on: the kernel's high-water mark (VmHWM, reset through
    clear_refs) where it may be reset, else sampled every 5 ms."""

    def __init__(self, pid: int) -> None:
        self.pids = process_tree(pid)
        self._samples: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            for p in self.pids:
                Path(f"/proc/{p}/clear_refs").write_text("5")
            self.exact = True
        except OSError:
            self.exact = False
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()

    def _field(self, name: str) -> int:
        total = 0
        for p in self.pids:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith(name):
                    total += int(line.split()[1]) * 1024
        return total

    def _sample(self) -> None:
        while not self._stop.is_set():
            self._samples.append(self._field("VmRSS:"))
            time.sleep(0.005)

    def peak(self) -> int:
        if self.exact:
            return self._field("VmHWM:")
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        return max(self._samples + [self._field("VmRSS:")])


def _refused(sock: socket.socket, timeout: float) -> bool:
    """Whether the source closes ``sock`` within ``timeout`` (it never answers a bomb: any read ends in the close)."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1 << 16) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


class _Acks:
    """The times at which FlumeSend reported each acknowledged call, read as it prints them."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.times: list[float] = []
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith("acked"):
                self.times.append(time.monotonic())

    def longest_wait(self, start: float, end: float) -> float:
        """The longest time the client waited for an answer between ``start`` and ``end``."""
        marks = [start] + [t for t in self.times if start < t < end] + [end]
        return max(b - a for a, b in zip(marks, marks[1:], strict=False))


def test_a_deflate_bomb_over_8_connections_is_refused_within_the_buffer_budget(tmp_path):
    cp = flume_sender(tmp_path / "java")
    port = free_port()
    worker = EdgeWorker(tmp_path).start()
    attackers: list[socket.socket] = []
    sender: subprocess.Popen[str] | None = None
    try:
        worker.create(_source(port, **{"compression.type": "deflate"}))
        client = AvroClient(port, deflate=True, timeout=30)
        assert client.append_batch(EVENTS, first=True) == (False, "OK")  # the topic exists, the path is warm
        # Flume's own client, sending batches of 100 all through the attack
        sender = subprocess.Popen(["java", "-cp", cp, "FlumeSend", "127.0.0.1", str(port), "0", "100000000",
                                   "100", "deflate", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        acks = _Acks(sender)
        wait_until(lambda: len(acks.times) >= 5 or sender.poll() is not None, 120, what="FlumeSend sending")
        assert sender.poll() is None, sender.stderr.read() if sender.stderr else ""

        bomb = deflate_bomb(73_000_000)
        assert len(bomb) < 80_000
        before = worker.rss_bytes()
        peak = _PeakRss(worker.proc.proc.pid)  # type: ignore[union-attr]
        attack_started = time.monotonic()
        for _ in range(8):
            attacker = socket.create_connection(("127.0.0.1", port), timeout=10)
            attacker.sendall(bomb)
            attackers.append(attacker)
        # beside the attack, a normal call of this project's client
        result = answered_within(2.0, lambda: client.append_batch(EVENTS))
        assert result == (False, "OK")
        assert all(_refused(attacker, 120) for attacker in attackers), "a bomb's connection stayed open"
        attack_ended = time.monotonic()
        growth = peak.peak() - before
        time.sleep(1.0)  # a call of Flume's client after the attack, to close the window measured
        assert sender.poll() is None, sender.stderr.read() if sender.stderr else ""
        waited = acks.longest_wait(attack_started, attack_ended)

        assert growth < BUDGET + 64 * MiB, f"the worker grew by {growth / MiB:.0f} MiB under the attack"
        assert waited <= 2.0, f"Flume's RpcClient waited {waited:.2f} s for an answer beside the attack"
        worker.assert_running("flume-in")
        assert client.append_batch(EVENTS) == (False, "OK")
        client.close()
    finally:
        if sender is not None:
            sender.kill()
            sender.wait()
        for attacker in attackers:
            attacker.close()
        log = worker.stop()
    counters = re.search(r"FlumeAvroSource\[flume-in\|task-0\] stopped; (.*)", log)
    assert counters, log[-3000:]
    refused = {k: int(v) for k, v in re.findall(r"(refused_connections_\w+)=(\d+)", counters.group(1))}
    assert sum(refused.values()) == 8, counters.group(1)
    assert re.search(r"closed the connection from 127\.0\.0\.1:\d+: frame 1 (would take the bytes held by the "
                     r"source's connections past max\.buffered\.bytes=268435456|has a buffer of \d+ bytes, more than "
                     r"max\.frame\.bytes=67108864)", log), log[-3000:]
    print(f"deflate bomb: {len(bomb)} bytes on the wire x 8 connections; worker RSS +{growth / MiB:.0f} MiB "
          f"(measured {'by VmHWM' if peak.exact else 'by sampling'}); FlumeSend's longest wait {waited:.2f} s; "
          f"{counters.group(1)}")


def test_a_frame_that_stops_half_way_is_cut_off_after_the_frame_timeout(tmp_path):
    port = free_port()
    worker = EdgeWorker(tmp_path).start()
    try:
        worker.create(_source(port, **{"frame.timeout.ms": "2000"}))
        data = frame(1, handshake() + call("appendBatch", EVENTS))
        stalled = AvroClient(port, timeout=30)
        host, local_port = stalled.sock.getsockname()[:2]
        peer = f"{host}:{local_port}"
        started = time.monotonic()
        stalled.write(data[:len(data) // 2])
        normal = AvroClient(port)
        assert answered_within(2.0, lambda: normal.append_batch(EVENTS, first=True)) == (False, "OK")
        assert stalled.closed()  # blocks until the source closes it
        took = time.monotonic() - started
        assert 1.9 <= took < 20, took
        wait_until(lambda: f"closed the connection from {peer}: its request did not complete within "
                           "frame.timeout.ms=2000" in worker.log(), 10, what="the timeout logged")
        worker.assert_running("flume-in")
        assert normal.append_batch(EVENTS) == (False, "OK")
        normal.close()
        stalled.close()
    finally:
        worker.stop()

