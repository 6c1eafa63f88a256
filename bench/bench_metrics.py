"""GET /metrics (issue #20): scrape time at 200 connectors x 4 tasks, and what metrics cost a pipeline.

1. Scrape: a real ``connect-standalone`` (embedded log, REST on loopback) gets ``--connectors``
   FileStreamSink connectors of ``--tasks`` tasks each, every one on its own topic of ``--tasks``
   partitions (so each task holds a partition and has a lag to compute). ``GET /metrics`` is timed
   ``--scrapes`` times, ``--scrape-gap`` seconds apart (median, p95, max) beside the baseline from the same worker in the same run:
   ``GET /connectors?expand=status``, which walks the same connectors and tasks.
2. Cost: the FileStreamSource -> FileStreamSink pipeline of bench_file_pipeline.py (``--lines`` lines),
   run ``--rounds`` times each way, alternating: metrics off (``metrics.prometheus.enable=false``, nothing
   scrapes) and on (a scraper reads /metrics every ``--scrape-interval`` seconds, far more often than
   Prometheus' usual 15-60 s). lines/s from the first sink line to the last; medians compared.

Both parts run the shipped files as the headline: configs/connect-standalone.properties for the worker (in a
fresh directory, so its relative paths land there; a free REST port) and configs/connect-file-source/-sink.properties
as the connectors' REST bodies (the scrape's sinks each with their own file, topic and ``tasks.max``). Printed after
it, labelled, ``tuned``: the settings this benchmark used before issue #37 (StringConverter,
``offset.flush.interval.ms=500``, source ``batch.size=5000``, sink ``consumer.override.max.poll.records=5000``).

    python bench/bench_metrics.py
    python bench/bench_metrics.py --connectors 50 --rounds 1 --lines 200000     # quick
    python bench/bench_metrics.py --variants shipped
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._configs import WORKER, Changes, Variant, shipped_props, write_shipped  # noqa: E402
from connect.log import open_log_backend  # noqa: E402
from connect.log.api import NewTopic  # noqa: E402
from tests.support import free_port, rest_ready, wait_until  # noqa: E402

EXE = Path(sys.executable).with_name("connect-standalone")
SOURCE, SINK = "connect-file-source.properties", "connect-file-sink.properties"

VARIANTS = {
    "shipped": Variant("shipped"),
    "tuned": Variant("tuned", "key/value.converter=StringConverter (schemas.enable dropped), "
                              "offset.flush.interval.ms=500, source batch.size=5000, sink "
                              "consumer.override.max.poll.records=5000",
                     worker={"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                             "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                             "key.converter.schemas.enable": None, "value.converter.schemas.enable": None,
                             "offset.flush.interval.ms": "500"},
                     source={"batch.size": "5000"}, sink={"consumer.override.max.poll.records": "5000"}),
}
INTRINSIC = ("the REST port; each worker runs in a fresh directory (the shipped relative paths land there) "
             "holding the input as test.txt; connectors are created over REST from the shipped connector files "
             "(their name goes in the URL); the scrape's sinks each get their own file (out-<i>.txt), topic "
             "(t<i>) and tasks.max=--tasks")


def _connector(name: str, variant: Variant, *changes: Changes) -> dict[str, str]:
    """A shipped connector file as a REST body: the name goes in the URL."""
    props = shipped_props(name, variant.source if name == SOURCE else variant.sink, *changes)
    props.pop("name")
    return props


def write_worker(work: Path, port: int, variant: Variant, extra: Changes | None = None) -> None:
    write_shipped(work / WORKER, WORKER, {"listeners": f"http://127.0.0.1:{port}"}, variant.worker, extra or {})


def _worker(work: Path, port: int, variant: Variant, extra: Changes | None = None) -> subprocess.Popen:
    """``connect-standalone`` on the shipped worker file with ``variant``'s changes, in ``work``."""
    write_worker(work, port, variant, extra)
    with open(work / "worker.log", "ab") as log:
        proc = subprocess.Popen([str(EXE), WORKER], cwd=work, stdout=log, stderr=subprocess.STDOUT)
    wait_until(lambda: rest_ready(port) or proc.poll() is not None, 60, what="worker REST")
    if proc.poll() is not None:
        raise SystemExit(f"worker exited; see {work / 'worker.log'}")
    return proc


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(60)


def _timed(client: httpx.Client, path: str, n: int, gap: float = 0.0) -> list[float]:
    out = []
    for _ in range(n):
        if gap:
            time.sleep(gap)  # a pause between requests (not timed): past the worker's 1 s reuse of log ends
        started = time.perf_counter()
        r = client.get(path)
        out.append((time.perf_counter() - started) * 1000)
        r.raise_for_status()
    return out


def scrape_bench(args: argparse.Namespace, variant: Variant) -> None:
    with tempfile.TemporaryDirectory(prefix="headrace-bench-metrics-") as tmp:
        work = Path(tmp)
        # the shipped embedded.log.dir, relative to the worker's directory
        backend = open_log_backend({"embedded.log.dir": str(work / "headrace-data")})
        admin = backend.admin()
        for i in range(args.connectors):
            admin.create_topic(NewTopic(f"t{i}", args.tasks, 1))
        admin.close()
        backend.close()
        port = free_port()
        proc = _worker(work, port, variant)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                for i in range(args.connectors):
                    client.put(f"/connectors/sink-{i}/config", json=_connector(SINK, variant, {
                        "file": f"out-{i}.txt", "topics": f"t{i}", "tasks.max": str(args.tasks)})).raise_for_status()
                want = args.connectors * args.tasks

                def running() -> bool:
                    body = client.get("/connectors?expand=status").json()
                    return sum(t["state"] == "RUNNING" for c in body.values() for t in c["status"]["tasks"]) == want
                wait_until(running, 600, interval=1.0, what=f"{want} tasks RUNNING")
                text = client.get("/metrics").text
                series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
                cpu0 = _cpu_seconds(proc.pid)
                status = _timed(client, "/connectors?expand=status", args.scrapes, args.scrape_gap)
                cpu1 = _cpu_seconds(proc.pid)
                metrics = _timed(client, "/metrics", args.scrapes, args.scrape_gap)
                cpu2 = _cpu_seconds(proc.pid)
        finally:
            _stop(proc)
    print(f"\n== {variant.title()}")
    print(f"GET /metrics with {args.connectors} connectors x {args.tasks} tasks ({series:,} series, "
          f"{len(text) / 1e6:.2f} MB), {args.scrapes} sequential requests, {args.scrape_gap} s apart")
    print(f"{'case':<44}{'median ms':>11}{'p95 ms':>9}{'max ms':>9}{'worker CPU ms/req':>19}")
    for name, xs, cpu in (("baseline: GET /connectors?expand=status", status, cpu1 - cpu0),
                          ("GET /metrics", metrics, cpu2 - cpu1)):
        xs = sorted(xs)
        print(f"{name:<44}{statistics.median(xs):>11.1f}{xs[int(0.95 * (len(xs) - 1))]:>9.1f}{xs[-1]:>9.1f}"
              f"{cpu / len(xs) * 1000:>19.1f}")


def _cpu_seconds(pid: int) -> float:
    """user + system CPU of a process so far (idle tasks included, which cost next to nothing)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def pipeline_once(src: Path, lines: int, metrics_on: bool, interval: float, variant: Variant,
                  scrape_path: str = "/metrics") -> tuple[float, int, float, float]:
    """lines/s from the first sink line to the last; how many scrapes were made meanwhile; the worker's CPU
    microseconds per line over the same span (scrapes included: the part other processes on the machine do not
    blur); and, metrics on, the worker's CPU ms per scrape of its two connectors (100 scrapes once the pipeline
    is done)."""
    with tempfile.TemporaryDirectory(prefix="headrace-bench-metrics-") as tmp:
        work = Path(tmp)
        port = free_port()
        os.link(src, work / "test.txt")  # the shipped source config's file, under connector.allowed.paths=.
        proc = _worker(work, port, variant, {} if metrics_on else {"metrics.prometheus.enable": "false"})
        scrapes = 0
        stop = threading.Event()

        def scraper() -> None:
            nonlocal scrapes
            with httpx.Client(timeout=30) as c:
                while not stop.wait(interval):
                    c.get(f"http://127.0.0.1:{port}{scrape_path}").raise_for_status()
                    scrapes += 1
        thread = threading.Thread(target=scraper, daemon=True)
        sink = work / "test.sink.txt"  # the shipped sink config's file
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                client.put("/connectors/bench-sink/config", json=_connector(SINK, variant)).raise_for_status()
                if metrics_on:
                    thread.start()
                client.put("/connectors/bench-source/config", json=_connector(SOURCE, variant)).raise_for_status()
            first = None
            first_cpu, first_lines = 0.0, 0
            while True:
                n = _count_lines(sink)
                if first is None and n > 0:
                    first = time.perf_counter()
                    first_cpu, first_lines = _cpu_seconds(proc.pid), n
                if n >= lines:
                    break
                if proc.poll() is not None:
                    raise SystemExit(f"worker exited; see {work / 'worker.log'}")
                time.sleep(0.02)
            done = time.perf_counter()
            cpu_us_per_line = (_cpu_seconds(proc.pid) - first_cpu) / max(1, n - first_lines) * 1e6
            stop.set()
            if thread.is_alive():
                thread.join(30)
            cpu_ms = 0.0
            if metrics_on:
                with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                    cpu0 = _cpu_seconds(proc.pid)
                    _timed(client, "/metrics", 100)
                    cpu_ms = (_cpu_seconds(proc.pid) - cpu0) * 10
        finally:
            stop.set()
            if thread.is_alive():
                thread.join(30)
            _stop(proc)
        return lines / (done - (first or done - 1)), scrapes, cpu_us_per_line, cpu_ms


def cost_bench(args: argparse.Namespace, variant: Variant) -> None:
    with tempfile.TemporaryDirectory(prefix="headrace-bench-metrics-src-") as tmp:
        src = Path(tmp) / "source.txt"
        with open(src, "w") as fh:
            for i in range(args.lines):
                fh.write(f"{i:010d}{'x' * 88}\n")
        off: list[float] = []
        on: list[float] = []
        off_cpu: list[float] = []
        on_cpu: list[float] = []
        scrapes = 0
        cpu: list[float] = []
        shares: list[float] = []
        for _ in range(args.rounds):
            rate, _, line_us, _ = pipeline_once(src, args.lines, False, args.scrape_interval, variant)
            off.append(rate)
            off_cpu.append(line_us)
            rate, n, line_us, cpu_ms = pipeline_once(src, args.lines, True, args.scrape_interval, variant,
                                                     args.scrape_path)
            on.append(rate)
            on_cpu.append(line_us)
            scrapes += n
            cpu.append(cpu_ms)
            # the scrapes' own share of the worker's CPU in this round: scrapes made x CPU per scrape (measured
            # on the same worker right after), over the worker's CPU for the run's lines
            shares.append(n * cpu_ms / (line_us * args.lines / 1000) * 100)
    m_off, m_on = statistics.median(off), statistics.median(on)
    print(f"\n== {variant.title()}")
    print(f"file -> file pipeline, {args.lines:,} lines of 100 bytes, {args.rounds} alternating rounds; "
          f"metrics on: a scrape every {args.scrape_interval} s ({scrapes} scrapes in all)")
    print(f"{'case':<44}{'median lines/s':>16}   rounds")
    print(f"{'baseline: metrics off, no scrapes':<44}{m_off:>16,.0f}   " + ", ".join(f"{x:,.0f}" for x in off))
    print(f"{'metrics on, scraped':<44}{m_on:>16,.0f}   " + ", ".join(f"{x:,.0f}" for x in on))
    print(f"cost of metrics: {(m_off - m_on) / m_off * 100:+.1f}% of throughput (median against median)")
    # wall-clock rates on a shared 2-core machine swing by 10% between identical rounds; the worker's own CPU
    # per line does not see the neighbours, so it is the figure that can resolve a cost of a few per cent
    c_off, c_on = statistics.median(off_cpu), statistics.median(on_cpu)
    print(f"{'case':<44}{'worker CPU us/line':>19}   rounds")
    print(f"{'baseline: metrics off, no scrapes':<44}{c_off:>19.3f}   " + ", ".join(f"{x:.3f}" for x in off_cpu))
    print(f"{'metrics on, scraped':<44}{c_on:>19.3f}   " + ", ".join(f"{x:.3f}" for x in on_cpu))
    paired = sorted(b / a - 1 for a, b in zip(off_cpu, on_cpu, strict=True))
    print(f"cost of metrics in worker CPU per line: {(c_on - c_off) / c_off * 100:+.1f}% (median against median); "
          f"round by round {', '.join(f'{x * 100:+.1f}%' for x in paired)}")
    print("the scrapes' own CPU, as a share of the worker's CPU for the run (hot-path counters are kept either "
          f"way: status needs them): median {statistics.median(shares):.2f}%; rounds "
          + ", ".join(f"{x:.2f}%" for x in shares))
    per_scrape = statistics.median(cpu)
    print(f"worker CPU per scrape of this worker: {per_scrape:.2f} ms, i.e. {per_scrape / args.scrape_interval / 10:.2f}% "
          f"of a core at a scrape every {args.scrape_interval} s ({per_scrape / 15 / 10:.3f}% at Prometheus' 15 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connectors", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--scrapes", type=int, default=30)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scrape-interval", type=float, default=1.0)
    # another path to request instead (e.g. "/"): tells the cost of serving requests from the cost of /metrics
    parser.add_argument("--scrape-path", default="/metrics")
    # 1.1 s: every scrape reads the log end offsets afresh, as Prometheus' 15-60 s scrapes do (0: back to back)
    parser.add_argument("--scrape-gap", type=float, default=1.1)
    parser.add_argument("--skip-scrape", action="store_true")
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                        help="which settings, in this order (shipped is the headline)")
    args = parser.parse_args()
    print("headline: configs/connect-standalone.properties, connect-file-source/-sink.properties as shipped; "
          f"changed only: {INTRINSIC}")
    if not args.skip_scrape:
        for name in args.variants:
            scrape_bench(args, VARIANTS[name])
    if not args.skip_cost:
        for name in args.variants:
            cost_bench(args, VARIANTS[name])


if __name__ == "__main__":
    main()
