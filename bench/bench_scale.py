"""The control path at scale: 10, 100 and 1,000 idle connectors on one standalone worker (issue #13).

For each count N, a fresh real ``connect-standalone`` (embedded log, REST on loopback) gets N
FileStreamSink connectors of one task each (each on its own topic, so all of them are idle), created
over REST from 8 client threads. Then, on that worker:

- create latency p50/p99 (from the 8 clients);
- worker CPU % of one core over ``--idle-seconds`` while every connector is idle (from /proc; the worker's
  REST front process, which it has by default, is counted with it, in CPU and RSS alike;
  ``--worker-setting rest.separate.process=false`` measures REST served in the worker);
- RSS per connector: the worker's RSS with the N connectors minus its RSS before, over N;
- status latency: ``GET /connectors/{name}/status`` and ``GET /connectors?expand=status`` at
  ``--rate`` requests/s (open loop from a second process, latency counted from the scheduled send)
  on the idle worker (with the worker's CPU time per request, from /proc), then again while one FileStreamSource -> FileStreamSink pipeline moves
  ``--pipeline-lines`` lines at full speed in the same worker; beside the pipeline, also the p99 of the
  serving process's own time per request (its access log) and of how late the client woke for its sends;
- restore: the worker stopped (SIGTERM) and started again, time until every connector's task
  reports RUNNING;
- delete latency p50/p99 (8 clients).

Every figure is printed beside the same measure at 10 connectors from the same run (the baseline).

    python bench/bench_scale.py                      # 10, 100 and 1,000 connectors
    python bench/bench_scale.py --counts 10 300
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import gc
import multiprocessing as mp
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support import free_port, rest_ready, wait_until

CLIENTS = 8
# an access log line of a GET: its path and its duration in the process that served it
ACCESS_LINE = re.compile(r'"GET (\S+) HTTP/1\.[01]" \d{3} \d+ "[^"]*" (\d+)ms')
LINE_BYTES = 87  # the pipeline's input lines, newline included


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))] * 1000


def _open_loop(urls: list[str], rate: float, seconds: float, out: mp.Queue) -> None:
    latencies: list[float] = []
    # how late this client woke for a send it slept until: on a busy machine the client waits for a core
    # too, and that wait is in its latencies, whatever the server does
    wake_lags: list[float] = []
    errors = 0
    interval = 1.0 / rate
    with httpx.Client(timeout=10.0) as client:
        # this client's own collector pauses are not the server's latency: a full collection over httpx's
        # modules took 18-24 ms three and a half seconds into each load, and ten requests queued behind it
        gc.collect()
        gc.freeze()
        start = time.perf_counter()
        for i in range(int(rate * seconds)):
            target = start + i * interval
            now = time.perf_counter()
            if target > now:
                time.sleep(target - now)
                wake_lags.append(time.perf_counter() - target)
            r = client.get(urls[i % len(urls)])
            latencies.append(time.perf_counter() - target)  # from the scheduled send: stalls are not hidden
            errors += r.status_code != 200
    out.put((latencies, errors, wake_lags))


def _load(urls: list[str], rate: float, seconds: float) -> tuple[list[float], int, list[float]]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_open_loop, args=(urls, rate, seconds, q))
    p.start()
    result = q.get()
    p.join()
    return result


class Worker:
    def __init__(self, work: Path, shared: Path, extra: list[str]) -> None:
        self.work = work
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (work / "worker.properties").write_text(
            "".join(line + "\n" for line in extra) +
            f"embedded.log.dir={work / 'data'}\n"
            "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
            "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
            f"offset.storage.file.filename={work / 'offsets'}\n"
            f"listeners=http://127.0.0.1:{self.port}\n"
            f"connector.allowed.paths={work},{shared}\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        exe = Path(sys.executable).with_name("connect-standalone")
        started = time.perf_counter()
        with open(self.work / "worker.log", "ab") as log:
            self.proc = subprocess.Popen([str(exe), str(self.work / "worker.properties")], stdout=log, stderr=log)
        wait_until(lambda: rest_ready(self.port), 120, interval=0.02, what="REST")
        return started

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)

    def log_size(self) -> int:
        return (self.work / "worker.log").stat().st_size

    def served_ms(self, since: int, path_part: str) -> list[float]:
        """The durations (s) the access log gives for GET requests whose path holds ``path_part``, logged after
        byte ``since`` of the worker's log."""
        with open(self.work / "worker.log", "rb") as fh:
            fh.seek(since)
            text = fh.read().decode("utf-8", "replace")
        lines = [line for line in text.splitlines() if ACCESS_LINE.search(line)]
        # with a REST front process, the requests it answered are the ones it logged (tagged rest-front:)
        front = [line for line in lines if "rest-front: " in line]
        return [int(m.group(2)) / 1000 for line in (front or lines)
                if (m := ACCESS_LINE.search(line)) is not None and path_part in m.group(1)]

    def pids(self) -> list[int]:
        """The worker and its children (the REST front process, with rest.separate.process=true)."""
        assert self.proc is not None
        pid = self.proc.pid
        return [pid, *map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]

    @staticmethod
    def _cpu(pid: int) -> float:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def cpu_seconds(self) -> float:
        """The CPU time of the worker and its REST front process together."""
        return sum(self._cpu(pid) for pid in self.pids())

    def rss_kb(self) -> int:
        total = 0
        for pid in self.pids():
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        return total

    def threads(self) -> int:
        assert self.proc is not None
        return len(os.listdir(f"/proc/{self.proc.pid}/task"))

    def all_running(self, n: int) -> bool:
        try:
            body = httpx.get(self.url + "/connectors?expand=status", timeout=30).json()
        except httpx.HTTPError:
            return False
        return len(body) >= n and all(
            c["status"]["connector"]["state"] == "RUNNING" and c["status"]["tasks"]
            and all(t["state"] == "RUNNING" for t in c["status"]["tasks"]) for c in body.values())


def _timed(fn, items) -> list[float]:
    def one(item):
        t = time.perf_counter()
        fn(item)
        return time.perf_counter() - t
    with cf.ThreadPoolExecutor(CLIENTS) as ex:
        return list(ex.map(one, items))


def measure(n: int, args: argparse.Namespace, source_file: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix=f"headrace-scale-{n}-") as tmp:
        work = Path(tmp)
        w = Worker(work, source_file.parent, args.worker_setting)
        w.start()
        time.sleep(1)
        rss0 = w.rss_kb()
        clients = [httpx.Client(base_url=w.url, timeout=60) for _ in range(CLIENTS)]

        def create(i: int) -> None:
            c = clients[i % CLIENTS]
            r = c.post("/connectors", json={"name": f"sink-{i}", "config": {
                "connector.class": "FileStreamSink", "topics": f"feed-{i}", "file": str(work / f"out-{i}.txt"),
                "tasks.max": "1"}})
            assert r.status_code == 201, r.text

        lat = _timed(create, range(n))
        out["create p50 ms"], out["create p99 ms"] = _pct(lat, 50), _pct(lat, 99)
        wait_until(lambda: w.all_running(n), 300, interval=0.5, what="every connector RUNNING")
        time.sleep(2)
        c0 = w.cpu_seconds()
        time.sleep(args.idle_seconds)
        out["idle CPU % of a core"] = (w.cpu_seconds() - c0) / args.idle_seconds * 100
        out["RSS KB per connector"] = (w.rss_kb() - rss0) / n
        out["threads"] = w.threads()
        one = [f"{w.url}/connectors/sink-{i}/status" for i in range(0, n, max(1, n // 50))]
        listing = [f"{w.url}/connectors?expand=status"]
        c0 = w.cpu_seconds()
        lat, _, _ = _load(one, args.rate, args.seconds)
        out["one status p99 ms, idle"] = _pct(lat, 99)
        # the worker's CPU per request (from /proc): what a request costs, however loaded the machine is
        out["one status worker CPU ms/request"] = (w.cpu_seconds() - c0) / len(lat) * 1000
        if n <= args.list_limit:
            c0, log0 = w.cpu_seconds(), w.log_size()
            lat, _, _ = _load(listing, args.rate, args.seconds)
            out["list status p99 ms, idle"] = _pct(lat, 99)
            served = w.served_ms(log0, "/connectors?expand=status")
            out["list status p99 ms in the server, idle"] = _pct(served, 99) if served else float("nan")
            out["list status worker CPU ms/request"] = (w.cpu_seconds() - c0) / len(lat) * 1000
        # one pipeline at full speed beside the idle connectors
        sink_file = work / "pipeline-out.txt"
        c = clients[0]
        assert c.post("/connectors", json={"name": "pipeline-sink", "config": {
            "connector.class": "FileStreamSink", "topics": "pipeline", "file": str(sink_file)}}).status_code == 201
        assert c.post("/connectors", json={"name": "pipeline-source", "config": {
            "connector.class": "FileStreamSource", "topic": "pipeline", "file": str(source_file)}}).status_code == 201
        wait_until(lambda: sink_file.exists() and sink_file.stat().st_size > 0, 60, what="the pipeline to start")

        def beside_pipeline(urls: list[str], what: str) -> None:
            # what the status load costs the pipeline: its lines/s during the load (fixed-size lines)
            size0, t0 = sink_file.stat().st_size, time.perf_counter()
            log0, cpu0 = w.log_size(), w.cpu_seconds()
            lat, _, lags = _load(urls, args.rate, args.seconds)
            # how much of the machine the worker took meanwhile: the client's latency includes waiting for a core
            out[f"worker CPU % of a core during {what} load"] = ((w.cpu_seconds() - cpu0)
                                                                  / (time.perf_counter() - t0) * 100)
            moved = (sink_file.stat().st_size - size0) / LINE_BYTES
            out[f"{what} status p99 ms, pipeline"] = _pct(lat, 99)
            # the serving process's own time for the same requests (its access log: from the app's call until the
            # body was written): the rest of the client's latency is before the app runs, or outside it
            served = w.served_ms(log0, "/connectors?expand=status" if what == "list" else "/status")
            out[f"{what} status p99 ms in the server, pipeline"] = _pct(served, 99) if served else float("nan")
            out[f"{what} status p99 ms the client woke late, pipeline"] = _pct(lags, 99) if lags else float("nan")
            out[f"pipeline k lines/s beside {what}"] = moved / (time.perf_counter() - t0) / 1000

        beside_pipeline(one, "one")
        if n <= args.list_limit:
            beside_pipeline(listing, "list")
        moved = sum(1 for _ in open(sink_file, "rb"))
        if moved >= args.pipeline_lines:
            print(f"  note: the pipeline finished during the status load at {n} connectors; raise --pipeline-lines")
        for name in ("pipeline-source", "pipeline-sink"):
            assert c.delete(f"/connectors/{name}").status_code == 204
        # restore: the same worker started again
        w.stop()
        started = w.start()
        wait_until(lambda: w.all_running(n), 600, interval=0.1, what="every connector RUNNING again")
        out["restore s"] = time.perf_counter() - started

        def delete(i: int) -> None:
            r = clients[i % CLIENTS].delete(f"/connectors/sink-{i}")
            assert r.status_code == 204, r.text

        lat = _timed(delete, range(n))
        out["delete p50 ms"], out["delete p99 ms"] = _pct(lat, 50), _pct(lat, 99)
        for cl in clients:
            cl.close()
        w.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--idle-seconds", type=float, default=10)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--pipeline-lines", type=int, default=15_000_000,
                        help="enough for the pipeline to outlast both status loads")
    parser.add_argument("--list-limit", type=int, default=100,
                        help="measure the whole GET /connectors?expand=status listing up to this many connectors")
    parser.add_argument("--worker-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="one more worker setting, e.g. python.switch.interval.us=5000 (repeatable)")
    args = parser.parse_args()
    counts = sorted(set(args.counts) | {10})
    results = {}
    with tempfile.TemporaryDirectory(prefix="headrace-scale-input-") as shared:
        source_file = Path(shared) / "pipeline-in.txt"
        line = "x" * (LINE_BYTES - 1) + "\n"
        with open(source_file, "w") as fh:
            for _ in range(args.pipeline_lines // 100_000):
                fh.write(line * 100_000)
        print(f"pipeline input: {args.pipeline_lines:,} lines of {LINE_BYTES} bytes", flush=True)
        for n in counts:
            t = time.perf_counter()
            results[n] = measure(n, args, source_file)
            print(f"{n} connectors measured in {time.perf_counter() - t:.0f} s", flush=True)
    keys = list(dict.fromkeys(k for n in counts for k in results[n]))
    width = max(len(k) for k in keys) + 2
    print(f"\n{'measure':<{width}}" + "".join(f"{n:>12,}" for n in counts) + "   (baseline: the 10 column)")
    for k in keys:
        cells = "".join(f"{results[n][k]:>12,.1f}" if k in results[n] else f"{'-':>12}" for n in counts)
        print(f"{k:<{width}}{cells}")


if __name__ == "__main__":
    main()
