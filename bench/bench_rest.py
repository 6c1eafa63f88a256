"""REST latency and throughput of ``GET /connectors?expand=status`` with 50 connectors.

Starts a real ``connect-standalone`` (embedded log) with 50 connectors created
over REST, then loads it from a second process:
  1. open loop at a fixed rate (default 200 requests/s) -> p50/p99/max latency;
  2. closed loop with N concurrent clients -> maximum requests/s.
Baseline in the same run: ``GET /health`` (routing and WSGI only, no herder work).

    python bench/bench_rest.py --connectors 50 --rate 200 --seconds 10
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support import free_port, rest_ready, wait_until


def _open_loop(url: str, rate: float, seconds: float, out: mp.Queue) -> None:
    latencies: list[float] = []
    errors = 0
    interval = 1.0 / rate
    with httpx.Client(timeout=5.0) as client:
        # the client's own collector pauses are not the server's latency (see bench_scale's open loop)
        gc.collect()
        gc.freeze()
        start = time.perf_counter()
        n = int(rate * seconds)
        for i in range(n):
            target = start + i * interval
            now = time.perf_counter()
            if target > now:
                time.sleep(target - now)
            # latency counts from the scheduled send time, so a stall is not hidden (no coordinated omission)
            t0 = target
            r = client.get(url)
            latencies.append(time.perf_counter() - t0)
            if r.status_code != 200:
                errors += 1
    out.put((latencies, errors, time.perf_counter() - start))


def _closed_loop(url: str, seconds: float, clients: int, out: mp.Queue) -> None:
    counts = [0] * clients
    stop = time.perf_counter() + seconds

    def run(i: int) -> None:
        with httpx.Client(timeout=5.0) as c:
            while time.perf_counter() < stop:
                c.get(url)
                counts[i] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(sum(counts) / seconds)


def _in_process(target, *args):  # runs the load generator in a second process
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, q))
    p.start()
    result = q.get()
    p.join()
    return result


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connectors", type=int, default=50)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="headrace-rest-bench-") as tmp:
        work = Path(tmp)
        port = free_port()
        (work / "worker.properties").write_text(
            f"embedded.log.dir={work / 'data'}\n"
            "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
            "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
            f"offset.storage.file.filename={work / 'offsets'}\nlisteners=http://127.0.0.1:{port}\n"
        )
        exe = Path(sys.executable).with_name("connect-standalone")
        with open(work / "worker.log", "wb") as log:
            proc = subprocess.Popen([str(exe), str(work / "worker.properties")], stdout=log, stderr=log)
        try:
            wait_until(lambda: rest_ready(port), 60)
            base = f"http://127.0.0.1:{port}"
            with httpx.Client(base_url=base, timeout=30) as c:
                for i in range(args.connectors):
                    kind = i % 2
                    config = ({"connector.class": "FileStreamSource", "file": str(work / f"in{i}.txt"),
                               "topic": f"t{i}"} if kind == 0 else
                              {"connector.class": "FileStreamSink", "file": str(work / f"out{i}.txt"),
                               "topics": f"t{i - 1}"})
                    r = c.post("/connectors", json={"name": f"c{i:02d}", "config": config})
                    assert r.status_code == 201, r.text
                body = c.get("/connectors?expand=status").json()
                assert len(body) == args.connectors
            print(f"GET /connectors?expand=status with {args.connectors} connectors "
                  f"(response {len(httpx.get(base + '/connectors?expand=status').content):,} bytes)")
            print(f"{'case':<46}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'errors':>8}")
            for label, path in (("baseline: GET /health", "/health"),
                                ("GET /connectors?expand=status", "/connectors?expand=status")):
                lat, errors, elapsed = _in_process(_open_loop, base + path, args.rate, args.seconds)
                print(f"{label + f' @ {args.rate:.0f}/s':<46}{len(lat) / elapsed:>9.0f}{_pct(lat, 50):>9.2f}"
                      f"{_pct(lat, 99):>9.2f}{max(lat) * 1000:>9.2f}{errors:>8}")
            for label, path in (("baseline: GET /health", "/health"),
                                ("GET /connectors?expand=status", "/connectors?expand=status")):
                rps = _in_process(_closed_loop, base + path, args.seconds / 2, args.clients)
                print(f"{label + f' max ({args.clients} clients)':<46}{rps:>9.0f}")
            print(f"mean latency check: {statistics.fmean(lat) * 1000:.2f} ms")
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
