"""What one ``GET /connectors?expand=status`` costs the worker at 10 and at N idle connectors.

bench_scale.py measures the listing under an open-loop load of 200 requests/s, which a listing of 1,000
cannot sustain on this machine, so it leaves that column out. This script asks one request after another
(closed loop) for ``--seconds`` and prints requests/s, latency p50/p99 and the worker's CPU per request
(from /proc), for a listing of 10 idle FileStreamSink connectors (the baseline) and of each count given;
one ``GET /connectors/{name}/status`` at the largest count is printed beside them.

    python bench/bench_status_listing.py --counts 1000
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.bench_scale import CLIENTS, Worker, _pct  # noqa: E402
from tests.support import wait_until  # noqa: E402


def closed_loop(worker: Worker, path: str, seconds: float) -> dict[str, float]:
    with httpx.Client(base_url=worker.url, timeout=60) as client:
        client.get(path).raise_for_status()  # warm: the prepared bodies and their encodings exist
        lat: list[float] = []
        c0, t0 = worker.cpu_seconds(), time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            started = time.perf_counter()
            client.get(path).raise_for_status()
            lat.append(time.perf_counter() - started)  # seconds: _pct gives ms
        elapsed = time.perf_counter() - t0
        cpu = worker.cpu_seconds() - c0
    return {"requests/s": len(lat) / elapsed, "p50 ms": _pct(lat, 50), "p99 ms": _pct(lat, 99),
            "worker CPU ms/request": cpu / len(lat) * 1000}


def measure(n: int, seconds: float, with_one: bool) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix=f"headrace-listing-{n}-") as tmp:
        work = Path(tmp)
        worker = Worker(work, work, [])
        worker.start()
        try:
            clients = [httpx.Client(base_url=worker.url, timeout=60) for _ in range(CLIENTS)]

            def create(i: int) -> None:
                r = clients[i % CLIENTS].post("/connectors", json={"name": f"sink-{i}", "config": {
                    "connector.class": "FileStreamSink", "topics": f"feed-{i}",
                    "file": str(work / f"out-{i}.txt"), "tasks.max": "1"}})
                assert r.status_code == 201, r.text

            with cf.ThreadPoolExecutor(CLIENTS) as pool:
                list(pool.map(create, range(n)))
            wait_until(lambda: worker.all_running(n), 300, interval=0.5, what="every connector RUNNING")
            time.sleep(1)
            out = {f"listing of {n:,}": closed_loop(worker, "/connectors?expand=status", seconds)}
            if with_one:
                out[f"one status at {n:,}"] = closed_loop(worker, f"/connectors/sink-{n // 2}/status", seconds)
            return out
        finally:
            worker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", type=int, nargs="+", default=[1000])
    parser.add_argument("--seconds", type=float, default=8)
    args = parser.parse_args()
    counts = sorted(set(args.counts) | {10})
    rows: dict[str, dict[str, float]] = {}
    for n in counts:
        rows.update(measure(n, args.seconds, with_one=n == counts[-1]))
    columns = ["requests/s", "p50 ms", "p99 ms", "worker CPU ms/request"]
    width = max(len(k) for k in rows) + 2
    print(f"\n{'closed loop, one client':<{width}}" + "".join(f"{c:>24}" for c in columns)
          + "   (baseline: the listing of 10)")
    for name, row in rows.items():
        print(f"{name:<{width}}" + "".join(f"{row[c]:>24,.2f}" for c in columns))


if __name__ == "__main__":
    main()
