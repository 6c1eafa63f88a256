"""Start-up cost of a standalone worker with the two shipped file connectors.

Spawns ``connect-standalone`` with ``configs/connect-standalone.properties``,
``connect-file-source.properties`` and ``connect-file-sink.properties`` (only the
REST port and the file paths moved into a temp dir), polls ``GET /health`` until
it answers 200, and reports the wall time from spawn to that 200 and the
CPU-seconds (user + system) of the worker's whole process tree at that moment,
read from /proc, with the worker's and the REST front's share. Prints every run,
the median of ``--runs`` (default 5) and the targets (issue #37: 200 within 1 s
of spawn, at most 0.5 CPU-s).

    python bench/bench_startup.py --runs 5
    python bench/bench_startup.py --runs 5 --against /tmp/old   # interleaved A/B against another checkout

``--against DIR`` runs, alternately with this checkout, the code of a source tree at DIR (e.g. from
``git clone -q /work/main DIR`` or ``git archive <commit> | tar -x -C DIR``), put first on PYTHONPATH of the
worker and its REST front process. ``--warmup`` starts (default 1 per tree, not counted) come first: a
worker's first start after plugins are installed or changed scans them all and writes the plugin index
(connect.runtime.plugins); every later start reads it. CPU-seconds grow with the machine's load (shared
caches, frequency), so compare trees within one interleaved run, and mind the load average it prints.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rewrite(src: Path, dst: Path, overrides: dict[str, str]) -> None:
    lines = []
    seen = set()
    for line in src.read_text().splitlines():
        key = line.split("=", 1)[0].strip() if "=" in line and not line.lstrip().startswith("#") else None
        if key in overrides:
            lines.append(f"{key}={overrides[key]}")
            seen.add(key)
        else:
            lines.append(line)
    lines += [f"{k}={v}" for k, v in overrides.items() if k not in seen]
    dst.write_text("\n".join(lines) + "\n")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


TARGET_WALL_S = 1.0
TARGET_CPU_S = 0.5


def _tree_cpu_seconds(root: int) -> tuple[float, float]:
    """utime+stime of ``root`` and its live descendants, plus what reaped children used (cutime/cstime): the
    whole tree's, and the share of ``root`` itself (the worker; the rest is its REST front)."""
    tree = _children()
    total = own = 0
    stack = [root]
    while stack:
        pid = stack.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields[0] is state (field 3); utime..cstime are fields 14..17.
        ticks = sum(int(x) for x in fields[11:15])
        total += ticks
        if pid == root:
            own = sum(int(x) for x in fields[11:13])
        stack.extend(tree.get(pid, []))
    return total / CLOCK_TICKS, own / CLOCK_TICKS


def _health(port: int) -> int | None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()


def one_run(timeout: float, pythonpath: str, cache_dir: str) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = Path(tmp)
        port = _free_port()
        configs = REPO / "configs"
        _rewrite(configs / "connect-standalone.properties", work / "worker.properties", {
            "embedded.log.dir": str(work / "data"),
            "offset.storage.file.filename": str(work / "data" / "connect.offsets"),
            "listeners": f"http://127.0.0.1:{port}",
            "connector.allowed.paths": str(work),
        })
        (work / "test.txt").write_text("")
        _rewrite(configs / "connect-file-source.properties", work / "source.properties", {"file": str(work / "test.txt")})
        _rewrite(configs / "connect-file-sink.properties", work / "sink.properties", {"file": str(work / "test.sink.txt")})
        exe = Path(sys.executable).with_name("connect-standalone")
        with open(work / "worker.log", "wb") as log:
            started = time.perf_counter()
            env = dict(os.environ)
            # as an installed worker starts: from cached bytecode, which the warm-up starts write where missing
            # (compiling every module at each start would cost more than the whole start)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            if pythonpath:  # with --against, every tree alike: none pays alone for one more folder to search
                env["PYTHONPATH"] = pythonpath
            # the plugin index of this run's own, written by the warm-up starts (connect.runtime.plugins)
            env["XDG_CACHE_HOME"] = cache_dir
            proc = subprocess.Popen([str(exe), str(work / "worker.properties"), str(work / "source.properties"),
                                     str(work / "sink.properties")], cwd=work, stdout=log, stderr=subprocess.STDOUT,
                                    env=env)
        try:
            while True:
                if _health(port) == 200:
                    wall = time.perf_counter() - started
                    cpu, worker_cpu = _tree_cpu_seconds(proc.pid)
                    return wall, cpu, worker_cpu
                if proc.poll() is not None:
                    raise SystemExit(f"worker exited {proc.returncode}:\n{(work / 'worker.log').read_text()}")
                if time.perf_counter() - started > timeout:
                    raise SystemExit(f"no 200 from /health within {timeout}s:\n{(work / 'worker.log').read_text()}")
                time.sleep(0.01)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--against", metavar="DIR", help="another source tree, run interleaved with this one")
    parser.add_argument("--warmup", type=int, default=1, help="starts per tree before the counted ones")
    args = parser.parse_args()
    # alone, this checkout runs as installed (no PYTHONPATH), as the targets are meant
    trees: dict[str, str] = {"this checkout": str(REPO) if args.against else ""}
    if args.against:
        trees[args.against] = str(Path(args.against).resolve())
    results: dict[str, tuple[list[float], list[float], list[float]]] = {name: ([], [], []) for name in trees}
    cache = tempfile.TemporaryDirectory(prefix="bench-startup-cache-")
    for i in range(args.warmup):
        for name, path in trees.items():
            wall, cpu, _ = one_run(args.timeout, path, cache.name)
            print(f"warm-up {i + 1} ({name}, not counted): spawn->/health 200 {wall:.3f} s, CPU {cpu:.3f} s",
                  flush=True)
    load = os.getloadavg()[0]
    for i in range(args.runs):
        for name, path in trees.items():
            wall, cpu, worker_cpu = one_run(args.timeout, path, cache.name)
            for values, value in zip(results[name], (wall, cpu, worker_cpu), strict=True):
                values.append(value)
            print(f"run {i + 1} ({name}): spawn->/health 200 {wall:.3f} s, process-tree CPU {cpu:.3f} s "
                  f"(worker {worker_cpu:.3f}, REST front {cpu - worker_cpu:.3f})", flush=True)
    print(f"1-min load average at start {load:.2f}, now {os.getloadavg()[0]:.2f}, on {os.cpu_count()} cores")
    medians = {}
    for name, (walls, cpus, worker_cpus) in results.items():
        medians[name] = (statistics.median(walls), statistics.median(cpus))
        print(f"median of {args.runs} ({name}): wall {medians[name][0]:.3f} s, CPU {medians[name][1]:.3f} s "
              f"(worker {statistics.median(worker_cpus):.3f} s)")
    wall, cpu = medians["this checkout"]
    print(f"targets (issue #37): /health 200 within {TARGET_WALL_S:.1f} s of spawn: "
          f"{'met' if wall <= TARGET_WALL_S else 'NOT met'} ({wall:.3f} s); at most {TARGET_CPU_S:.1f} CPU-s: "
          f"{'met' if cpu <= TARGET_CPU_S else 'NOT met'} ({cpu:.3f} s)")
    if args.against:
        base_wall, base_cpu = medians[args.against]
        print(f"this checkout / {args.against}: wall {wall / base_wall:.2f}x, CPU {cpu / base_cpu:.2f}x")
    cache.cleanup()


if __name__ == "__main__":
    main()
