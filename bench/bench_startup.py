"""Start-up cost of a standalone worker with the two shipped file connectors.

Spawns ``connect-standalone`` with ``configs/connect-standalone.properties``,
``connect-file-source.properties`` and ``connect-file-sink.properties`` (only the
REST port and the file paths moved into a temp dir) and measures two moments:

* ``GET /health`` answers 200 (the figure issue #37 names: within 1 s of spawn, at most 0.5 CPU-s);
* every task of the two connectors reports RUNNING in ``GET /connectors?expand=status`` (the tasks run in
  task host processes, which are still starting when /health answers: this is what a start really costs).

At each: the wall time from spawn and the CPU-seconds (user + system) of the worker's whole process tree read
from /proc (the worker, its REST front, its task hosts and their fork server, and what reaped children used),
with each part's share. At the second moment also the tree's memory: the sum of every process's peak RSS
(VmHWM, which counts a page two forks share in both) and the sum of their PSS (a shared page split between
its sharers). Prints every run, the median of ``--runs`` (default 5) and the targets.

    python bench/bench_startup.py --runs 5
    python bench/bench_startup.py --runs 5 --against /tmp/old   # interleaved A/B against another checkout
    python bench/bench_startup.py --runs 5 --worker-setting task.processes=0   # a setting changed, both trees

``--against DIR`` runs, alternately with this checkout, the code of a source tree at DIR (e.g. from
``git clone -q /work/main DIR`` or ``git archive <commit> | tar -x -C DIR``), put first on PYTHONPATH of the
worker and its child processes. ``--warmup`` starts (default 1 per tree, not counted) come first: a
worker's first start after plugins are installed or changed scans them all and writes the plugin index
(connect.runtime.plugins); every later start reads it. CPU-seconds grow with the machine's load (shared
caches, frequency), so compare trees within one interleaved run, and mind the load average it prints.
"""

from __future__ import annotations

import argparse
import http.client
import json
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
PARTS = ("worker", "REST front", "task hosts")


def _part(pid: int, root: int) -> str:
    """Which part of the tree ``pid`` is: the worker, a task host (or the hosts' fork server), or the rest (the
    REST front, forked from the worker: the same command line)."""
    if pid == root:
        return "worker"
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "REST front"
    if comm.startswith("task-host") or b"connect.runtime.task_host" in cmdline:
        return "task hosts"
    return "REST front"


def _tree(root: int) -> list[int]:
    tree = _children()
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(tree.get(pid, []))
    return found


def _tree_cpu_seconds(root: int) -> tuple[float, dict[str, float]]:
    """utime+stime of ``root`` and its live descendants, plus what reaped children used (cutime/cstime): the
    whole tree's, and each part's (a reaped child's counts with its parent's part)."""
    parts = dict.fromkeys(PARTS, 0.0)
    for pid in _tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields[0] is state (field 3); utime..cstime are fields 14..17.
        parts[_part(pid, root)] += sum(int(x) for x in fields[11:15]) / CLOCK_TICKS
    return sum(parts.values()), parts


def _tree_memory_mib(root: int) -> tuple[float, float, int]:
    """(sum of VmHWM, sum of PSS, processes) over the tree, in MiB."""
    hwm = pss = 0
    count = 0
    for pid in _tree(root):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        count += 1
        hwm += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
        pss += next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:"))
    return hwm / 1024, pss / 1024, count


def _get(port: int, path: str) -> tuple[int | None, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    except OSError:
        return None, b""
    finally:
        conn.close()


def _all_running(port: int, tasks: int) -> bool:
    status, body = _get(port, "/connectors?expand=status")
    if status != 200:
        return False
    states = [task["state"] for connector in json.loads(body).values() for task in connector["status"]["tasks"]]
    return len(states) == tasks and all(state == "RUNNING" for state in states)


class Run:
    """One start's figures: at /health 200 and at every task RUNNING."""

    def __init__(self) -> None:
        self.health_wall = self.health_cpu = self.running_wall = self.running_cpu = 0.0
        self.health_parts: dict[str, float] = {}
        self.running_parts: dict[str, float] = {}
        self.hwm_mib = self.pss_mib = 0.0
        self.processes = 0

    def line(self) -> str:
        def parts(shares: dict[str, float]) -> str:
            return ", ".join(f"{name} {shares[name]:.3f}" for name in PARTS if shares.get(name))

        return (f"/health 200 {self.health_wall:.3f} s, CPU {self.health_cpu:.3f} s ({parts(self.health_parts)}); "
                f"all tasks RUNNING {self.running_wall:.3f} s, CPU {self.running_cpu:.3f} s "
                f"({parts(self.running_parts)}); {self.processes} processes, sum of VmHWM {self.hwm_mib:.1f} MiB, "
                f"sum of PSS {self.pss_mib:.1f} MiB")


def one_run(timeout: float, pythonpath: str, cache_dir: str, settings: dict[str, str]) -> Run:
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = Path(tmp)
        port = _free_port()
        configs = REPO / "configs"
        _rewrite(configs / "connect-standalone.properties", work / "worker.properties", {
            "embedded.log.dir": str(work / "data"),
            "offset.storage.file.filename": str(work / "data" / "connect.offsets"),
            "listeners": f"http://127.0.0.1:{port}",
            "connector.allowed.paths": str(work),
            **settings,
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
        run = Run()
        try:
            while True:
                now = time.perf_counter()
                if not run.health_wall and _health(port) == 200:
                    run.health_wall = now - started
                    run.health_cpu, run.health_parts = _tree_cpu_seconds(proc.pid)
                if run.health_wall and _all_running(port, 2):
                    run.running_wall = time.perf_counter() - started
                    run.running_cpu, run.running_parts = _tree_cpu_seconds(proc.pid)
                    run.hwm_mib, run.pss_mib, run.processes = _tree_memory_mib(proc.pid)
                    return run
                if proc.poll() is not None:
                    raise SystemExit(f"worker exited {proc.returncode}:\n{(work / 'worker.log').read_text()}")
                if now - started > timeout:
                    raise SystemExit(f"not every task RUNNING within {timeout}s:\n{(work / 'worker.log').read_text()}")
                time.sleep(0.01)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _health(port: int) -> int | None:
    return _get(port, "/health")[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--against", metavar="DIR", help="another source tree, run interleaved with this one")
    parser.add_argument("--warmup", type=int, default=1, help="starts per tree before the counted ones")
    parser.add_argument("--worker-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a worker setting changed from configs/connect-standalone.properties (repeatable)")
    args = parser.parse_args()
    settings = dict(item.split("=", 1) for item in args.worker_setting)
    # alone, this checkout runs as installed (no PYTHONPATH), as the targets are meant
    trees: dict[str, str] = {"this checkout": str(REPO) if args.against else ""}
    if args.against:
        trees[args.against] = str(Path(args.against).resolve())
    results: dict[str, list[Run]] = {name: [] for name in trees}
    cache = tempfile.TemporaryDirectory(prefix="bench-startup-cache-")
    if settings:
        print(f"worker settings changed from the shipped file: {settings}")
    for i in range(args.warmup):
        for name, path in trees.items():
            run = one_run(args.timeout, path, cache.name, settings)
            print(f"warm-up {i + 1} ({name}, not counted): {run.line()}", flush=True)
    load = os.getloadavg()[0]
    for i in range(args.runs):
        for name, path in trees.items():
            run = one_run(args.timeout, path, cache.name, settings)
            results[name].append(run)
            print(f"run {i + 1} ({name}): {run.line()}", flush=True)
    print(f"1-min load average at start {load:.2f}, now {os.getloadavg()[0]:.2f}, on {os.cpu_count()} cores")
    medians: dict[str, dict[str, float]] = {}
    for name, runs in results.items():
        med = {key: statistics.median(getattr(r, key) for r in runs)
               for key in ("health_wall", "health_cpu", "running_wall", "running_cpu", "hwm_mib", "pss_mib")}
        medians[name] = med

        def shares(attr: str, runs: list[Run] = runs) -> str:
            return ", ".join(f"{part} {statistics.median(getattr(r, attr).get(part, 0.0) for r in runs):.3f}"
                             for part in PARTS)

        print(f"median of {args.runs} ({name}): /health 200 {med['health_wall']:.3f} s, CPU {med['health_cpu']:.3f} s "
              f"({shares('health_parts')}); all tasks RUNNING {med['running_wall']:.3f} s, CPU "
              f"{med['running_cpu']:.3f} s ({shares('running_parts')}); sum of VmHWM {med['hwm_mib']:.1f} MiB, "
              f"sum of PSS {med['pss_mib']:.1f} MiB")
    med = medians["this checkout"]
    wall, cpu = med["health_wall"], med["health_cpu"]
    print(f"targets (issue #37): /health 200 within {TARGET_WALL_S:.1f} s of spawn: "
          f"{'met' if wall <= TARGET_WALL_S else 'NOT met'} ({wall:.3f} s); at most {TARGET_CPU_S:.1f} CPU-s: "
          f"{'met' if cpu <= TARGET_CPU_S else 'NOT met'} ({cpu:.3f} s); until every task RUNNING: "
          f"{med['running_wall']:.3f} s, {med['running_cpu']:.3f} CPU-s")
    if args.against:
        base = medians[args.against]
        print(f"this checkout / {args.against}: at /health wall {wall / base['health_wall']:.2f}x, CPU "
              f"{cpu / base['health_cpu']:.2f}x; at every task RUNNING wall "
              f"{med['running_wall'] / base['running_wall']:.2f}x, CPU {med['running_cpu'] / base['running_cpu']:.2f}x; "
              f"sum of VmHWM {med['hwm_mib'] / base['hwm_mib']:.2f}x, sum of PSS {med['pss_mib'] / base['pss_mib']:.2f}x")
    cache.cleanup()


if __name__ == "__main__":
    main()
