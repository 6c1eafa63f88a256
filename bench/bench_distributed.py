"""Rebalance time of a distributed cluster, and the cost of a REST write forwarded by a follower.

Starts a broker (services/) and three real ``connect-distributed`` workers with 30 idle FileStreamSource
connectors (30 connectors + 30 tasks), then measures:
  1. join: a fourth worker starts; time from its REST API answering to every connector and task RUNNING
     with the fourth worker holding its share;
  2. leave: one worker stops (SIGTERM, it leaves the group); time until its work RUNNING elsewhere, minus
     nothing: the configured ``scheduled.rebalance.max.delay.ms`` is printed beside it;
  3. REST writes (PUT of a connector config, which the leader stores durably): p50/p99 latency sent to the
     leader directly (the baseline) and sent to a follower, which forwards it, in the same run.

    python bench/bench_distributed.py --connectors 30 --writes 200
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from services.kafka import KafkaService
from tests.distributed.cluster import DistributedWorker, leader_of, start_cluster
from tests.support import wait_until


class _Names:
    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:8]
        self.group, self.configs = f"bench-{tag}", f"bench-configs-{tag}"
        self.offsets, self.status = f"bench-offsets-{tag}", f"bench-status-{tag}"


def _all_running(worker: DistributedWorker, names: list[str]) -> dict[str, int] | None:
    """Tasks + connectors per worker id when every connector and task is RUNNING."""
    try:
        r = httpx.get(f"{worker.url}/connectors?expand=status", timeout=10)
    except httpx.HTTPError:
        return None
    if r.status_code != 200:
        return None
    body = r.json()
    load: dict[str, int] = {}
    for name in names:
        s = body.get(name, {}).get("status")
        if not s or s["connector"]["state"] != "RUNNING" or not s["tasks"]:
            return None
        if any(t["state"] != "RUNNING" for t in s["tasks"]):
            return None
        for wid in [s["connector"]["worker_id"], *(t["worker_id"] for t in s["tasks"])]:
            load[wid] = load.get(wid, 0) + 1
    return load


def _latencies(url: str, writes: int, root: Path, prefix: str) -> list[float]:
    out = []
    with httpx.Client(base_url=url, timeout=60) as http:
        for i in range(writes):
            body = {"connector.class": "FileStreamSource", "tasks.max": "1", "topic": f"{prefix}-t",
                    "file": str(root / "idle.txt"), "batch.size": str(i + 1)}
            t0 = time.perf_counter()
            r = http.put(f"/connectors/{prefix}/config", json=body)
            out.append(time.perf_counter() - t0)
            if r.status_code not in (200, 201):
                raise SystemExit(f"write failed: {r.status_code} {r.text}")
    return out


def _log_time(text: str, marker: str) -> float:
    """Wall-clock time of the first log line containing ``marker`` (the log's ``[YYYY-mm-dd HH:MM:SS,mmm]``)."""
    for line in text.splitlines():
        if marker in line and line.startswith("["):
            stamp = datetime.datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f")
            return stamp.timestamp()
    raise SystemExit(f"no log line with {marker!r}")


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--connectors", type=int, default=30)
    p.add_argument("--writes", type=int, default=200)
    p.add_argument("--delay-ms", type=int, default=1000, help="scheduled.rebalance.max.delay.ms")
    args = p.parse_args()
    kafka = KafkaService()
    kafka.start()
    root = Path(tempfile.mkdtemp(prefix="bench-distributed-"))
    (root / "idle.txt").write_text("")
    names = _Names()
    extra = {"scheduled.rebalance.max.delay.ms": args.delay_ms}
    workers: list[DistributedWorker] = []
    try:
        workers = start_cluster(root, kafka, names, 3, **extra)  # type: ignore[arg-type]
        leader = leader_of(workers)
        connectors = [f"idle-{i:03d}" for i in range(args.connectors)]
        with leader.http() as http:
            for name in connectors:
                r = http.put(f"/connectors/{name}/config", json={
                    "connector.class": "FileStreamSource", "tasks.max": "1", "topic": f"bench-{name}",
                    "file": str(root / "idle.txt")})
                assert r.status_code == 201, r.text
        wait_until(lambda: _all_running(leader, connectors), 180, 0.2, what="all connectors RUNNING")
        print(f"{args.connectors} connectors + {args.connectors} tasks RUNNING on 3 workers; "
              f"scheduled.rebalance.max.delay.ms={args.delay_ms}")

        spawned = time.monotonic()
        fourth = DistributedWorker(root, kafka, names, 3, **extra).start()  # type: ignore[arg-type]
        workers.append(fourth)
        t0 = time.monotonic()  # its REST answers /health once it completed its first rebalance
        share = 2 * (args.connectors // 4)  # its floor of the connectors and of the tasks
        wait_until(lambda: (load := _all_running(leader, connectors)) and load.get(fourth.worker_id, 0) >= share,
                   180, 0.1, what="the fourth worker's share")
        settled, settled_wall = time.monotonic(), time.time()
        joining = _log_time(fourth.log(), "Distributed herder started")
        print(f"join : {settled_wall - joining:.2f} s from the 4th worker asking to join the group to balanced and "
              f"all RUNNING (target < 2 s + delays); {settled - spawned:.2f} s from its process start, which "
              f"includes Python start-up and reading the internal topics")

        leaver = next(w for w in workers if w is not leader and w is not fourth)
        t0 = time.monotonic()
        leaver.stop()
        others = {w.worker_id for w in workers if w is not leaver}
        wait_until(lambda: (load := _all_running(leader, connectors)) and set(load) <= others, 180, 0.1,
                   what="the leaver's work elsewhere")
        leave = time.monotonic() - t0
        print(f"leave: {leave:.2f} s from SIGTERM to its work RUNNING elsewhere "
              f"(includes the {args.delay_ms} ms scheduled delay)")

        follower = next(w for w in workers if w.alive() and w is not leader)
        direct = _latencies(leader.url, args.writes, root, "lat-direct")
        forwarded = _latencies(follower.url, args.writes, root, "lat-forwarded")
        d50, f50 = statistics.median(direct) * 1000, statistics.median(forwarded) * 1000
        print(f"write to the leader   : p50 {d50:.2f} ms, p99 {_pct(direct, 0.99):.2f} ms ({args.writes} PUTs)")
        print(f"write via a follower  : p50 {f50:.2f} ms, p99 {_pct(forwarded, 0.99):.2f} ms "
              f"-> {f50 / d50:.2f}x the direct write (target < 2x)")
    finally:
        for w in workers:
            w.stop()
        kafka.cleanup()


if __name__ == "__main__":
    main()
