"""Idle and slow clients beside a normal sender, on HttpSource and TcpJsonSource (issue #35, item 6).

One ``connect-standalone`` runs both sources. For each source, in the same run:

- memory, first, while the worker's heap is still the one it started with (once records have flowed, freed
  memory is reused and new connections show no growth at all): the worker's resident set (``/proc``, the
  worker and its children) before and after opening ``--idle`` idle connections (default 1,000), and before
  and after ``--slow`` slow clients (default 100), each sending one byte every 2 s (HttpSource: half of them
  in their headers, half in a body; TcpJsonSource: a line that never ends), per connection.
- throughput of a normal sender: quiet, beside the idle connections, beside the slow clients (reconnected when
  the source cuts them off), and quiet again; the baseline is the mean of the two quiet runs. HttpSource: NDJSON
  POSTs of ``--batch`` events on one kept-alive connection, each answered once the log has it. TcpJsonSource:
  lines on one connection, timed until the log holds the last.

Targets: an idle connection under 10 KB of resident memory; the normal sender at 0.8 or more of its quiet
throughput beside either. Loopback only; every loop is bounded.

    python bench/bench_edge_listeners.py --events 100000
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from connect.log import open_log_reader

IDLE_TARGET_BYTES = 10 * 1024
THROUGHPUT_TARGET = 0.8
TRICKLE_INTERVAL_S = 2.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise SystemExit(f"timed out waiting for {what}")


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _rss_bytes(pid: int) -> int:
    """VmRSS of ``pid`` and its descendants (the worker and its REST front, if any), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rindex(b")") + 2:].split()[1]), []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, ()))
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def _lines(start: int, count: int) -> bytes:
    return b"".join(json.dumps({"@timestamp": "2026-11-27T12:00:00.000Z", "message": f"request {i} served",
                                "log": {"level": "INFO", "logger": "bench.app"}}).encode() + b"\n"
                    for i in range(start, start + count))


class Worker:
    """connect-standalone with HttpSource and TcpJsonSource, each on its own topic of one embedded log."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.http_port, self.tcp_port = _free_port(), _free_port()
        (work / "worker.properties").write_text(
            f"embedded.log.dir={work / 'data'}\nkey.converter=org.apache.kafka.connect.storage.StringConverter\n"
            "value.converter=org.apache.kafka.connect.json.JsonConverter\nvalue.converter.schemas.enable=false\n"
            f"offset.storage.file.filename={work / 'offsets'}\nlisteners=\n")
        (work / "http.properties").write_text(
            f"name=bench-http\nconnector.class=HttpSource\ntopic=http-logs\n"
            f"listeners=http://127.0.0.1:{self.http_port}\nproducer.override.linger.ms=1\n")
        (work / "tcp.properties").write_text(
            f"name=bench-tcp\nconnector.class=TcpJsonSource\ntopic=tcp-logs\n"
            f"listeners=tcp://127.0.0.1:{self.tcp_port}\n")
        exe = Path(sys.executable).with_name("connect-standalone")
        with open(work / "worker.log", "wb") as log:
            self.proc = subprocess.Popen([str(exe), str(work / "worker.properties"), str(work / "http.properties"),
                                          str(work / "tcp.properties")], stdout=log, stderr=subprocess.STDOUT)
        for port in (self.http_port, self.tcp_port):
            _wait(lambda p=port: _listening(p), 60, f"port {port}")
        self._reader: Any = None

    def rss(self) -> int:
        return _rss_bytes(self.proc.pid)

    def topic_end(self, topic: str) -> int:
        if self._reader is None:
            self._reader = open_log_reader({"embedded.log.dir": str(self.work / "data")})
        try:
            return sum(end for _, end in self._reader.partition_offsets([topic]).values())
        except Exception:  # the topic does not exist yet
            return 0

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self.proc.terminate()
        self.proc.wait(60)


class Sender:
    """The normal sender of one source; ``run`` returns (seconds, bytes) for ``events`` events."""

    def __init__(self, worker: Worker, source: str, batch: int) -> None:
        self.worker, self.source, self.batch = worker, source, batch
        self.sent = 0

    def run(self, events: int) -> tuple[float, int]:
        bodies = [_lines(self.sent + i, min(self.batch, events - i)) for i in range(0, events, self.batch)]
        size = sum(len(b) for b in bodies)
        started = time.perf_counter()
        if self.source == "HttpSource":
            with httpx.Client(timeout=120) as http:
                for body in bodies:
                    answer = http.post(f"http://127.0.0.1:{self.worker.http_port}/", content=body)
                    if answer.status_code != 200:
                        raise SystemExit(f"a POST failed: {answer.status_code} {answer.text[:200]}")
        else:
            target = self.worker.topic_end("tcp-logs") + events
            with socket.create_connection(("127.0.0.1", self.worker.tcp_port)) as sock:
                for body in bodies:
                    sock.sendall(body)
            _wait(lambda: self.worker.topic_end("tcp-logs") >= target, 300, "the TCP events in the log", 0.005)
        elapsed = time.perf_counter() - started
        self.sent += events
        return elapsed, size


class SlowClients:
    """``count`` clients sending a byte every 2 s; one the server closes is opened again (bounded by ``stop``)."""

    def __init__(self, port: int, heads: list[bytes]) -> None:
        self.port, self.heads = port, heads
        self.cut_off = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow-clients", daemon=True)
        self._selector = selectors.DefaultSelector()
        self._socks: dict[int, tuple[socket.socket, bytes]] = {}

    def _open(self, head: bytes) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port))
        sock.sendall(head)
        sock.setblocking(False)
        self._socks[sock.fileno()] = (sock, head)
        self._selector.register(sock, selectors.EVENT_READ)

    def start(self) -> SlowClients:
        for head in self.heads:
            self._open(head)
        self._thread.start()
        return self

    def _run(self) -> None:
        next_byte = time.monotonic() + TRICKLE_INTERVAL_S
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.2):
                sock, head = self._socks[key.fd]
                try:
                    data = sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:  # cut off (408, or closed): another slow client takes its place
                    self._selector.unregister(sock)
                    del self._socks[key.fd]
                    sock.close()
                    self.cut_off += 1
                    self._open(head)
            if time.monotonic() >= next_byte:
                next_byte += TRICKLE_INTERVAL_S
                for sock, _ in list(self._socks.values()):
                    try:
                        sock.send(b" ")
                    except OSError:
                        pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for sock, _ in self._socks.values():
            sock.close()
        self._selector.close()


def _slow_heads(source: str, count: int) -> list[bytes]:
    if source == "TcpJsonSource":
        return [b'{"message": "a line that never ends'] * count
    headers = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
    body = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{"
    return [headers] * (count // 2) + [body] * (count - count // 2)


def _rate(events: int, result: tuple[float, int]) -> str:
    elapsed, size = result
    return f"{events / elapsed:>9,.0f} events/s {size / elapsed / 1e6:6.1f} MB/s ({elapsed:.2f} s)"



def _memory(worker: Worker, source: str, port: int, args: argparse.Namespace) -> None:
    time.sleep(1)
    before = worker.rss()
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(args.idle)]
    try:
        time.sleep(3)  # all accepted
        grown = worker.rss() - before
    finally:
        for sock in idle:
            sock.close()
    per = grown / args.idle
    print(f"{source:13s} {args.idle:,} idle connections: RSS +{grown / 1e6:.2f} MB, {per / 1024:.2f} KiB each "
          f"(target {IDLE_TARGET_BYTES / 1024:.0f}) {'ok' if per < IDLE_TARGET_BYTES else 'OVER'}")
    time.sleep(1)
    before = worker.rss()
    slow = SlowClients(port, _slow_heads(source, args.slow)).start()
    try:
        time.sleep(2 * TRICKLE_INTERVAL_S)
        grown = worker.rss() - before
    finally:
        slow.stop()
    print(f"{source:13s} {args.slow} slow clients: RSS +{grown / 1e6:.2f} MB, {grown / args.slow / 1024:.2f} KiB each")


def _throughput(worker: Worker, source: str, port: int, args: argparse.Namespace) -> None:
    sender = Sender(worker, source, args.batch)
    sender.run(min(args.events, 10 * args.batch))  # warm-up: the topic, the imports, the connection
    quiet = sender.run(args.events)
    print(f"{source:13s} quiet                  {_rate(args.events, quiet)}")
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(args.idle)]
    try:
        time.sleep(3)
        beside_idle = sender.run(args.events)
    finally:
        for sock in idle:
            sock.close()
    print(f"{source:13s} beside {args.idle:,} idle      {_rate(args.events, beside_idle)}")
    slow = SlowClients(port, _slow_heads(source, args.slow)).start()
    try:
        time.sleep(2 * TRICKLE_INTERVAL_S)
        beside_slow = sender.run(args.events)
    finally:
        slow.stop()
    print(f"{source:13s} beside {args.slow} slow        {_rate(args.events, beside_slow)}  "
          f"({slow.cut_off} cut off at their deadline and reopened)")
    again = sender.run(args.events)
    print(f"{source:13s} quiet again            {_rate(args.events, again)}")
    baseline = (quiet[0] + again[0]) / 2  # seconds for the same events
    for name, result in (("idle", beside_idle), ("slow", beside_slow)):
        ratio = baseline / result[0]
        print(f"{source:13s} beside {name}: x{ratio:.2f} of quiet (target {THROUGHPUT_TARGET}) "
              f"{'ok' if ratio >= THROUGHPUT_TARGET else 'UNDER'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events per measure")
    parser.add_argument("--batch", type=int, default=1000, help="events per POST (and per TCP write)")
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--slow", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-edge-") as tmp:
        worker = Worker(Path(tmp))
        try:
            print(f"{args.events:,} events per measure, batches of {args.batch:,}, {os.cpu_count()} cores; "
                  f"worker RSS {worker.rss() / 1e6:.1f} MB at start")
            for source, port in (("HttpSource", worker.http_port), ("TcpJsonSource", worker.tcp_port)):
                _memory(worker, source, port, args)
            for source, port in (("HttpSource", worker.http_port), ("TcpJsonSource", worker.tcp_port)):
                _throughput(worker, source, port, args)
        finally:
            worker.close()


if __name__ == "__main__":
    main()
