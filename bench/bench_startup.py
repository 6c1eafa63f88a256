"""Start-up cost of a standalone worker with the two shipped file connectors.

Spawns ``connect-standalone`` with ``configs/connect-standalone.properties``,
``connect-file-source.properties`` and ``connect-file-sink.properties`` (only the
REST port and the file paths moved into a temp dir), polls ``GET /health`` until
it answers 200, and reports the wall time from spawn to that 200 and the
CPU-seconds (user + system) of the worker's whole process tree at that moment,
read from /proc. Prints every run and the median of ``--runs`` (default 5).

    python bench/bench_startup.py --runs 5
    python bench/bench_startup.py --runs 5 --against /tmp/old   # interleaved A/B against another checkout

``--against DIR`` runs, alternately with this checkout, the code of a source tree at DIR (e.g. from
``git archive <commit> | tar -x -C DIR``), put first on PYTHONPATH of the worker and its REST front process.
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


def _tree_cpu_seconds(root: int) -> float:
    """utime+stime of ``root`` and its live descendants, plus what reaped children used (cutime/cstime)."""
    tree = _children()
    total = 0
    stack = [root]
    while stack:
        pid = stack.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields[0] is state (field 3); utime..cstime are fields 14..17.
        total += sum(int(x) for x in fields[11:15])
        stack.extend(tree.get(pid, []))
    return total / CLOCK_TICKS


def _health(port: int) -> int | None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()


def one_run(timeout: float, pythonpath: str | None = None) -> tuple[float, float]:
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
            if pythonpath is not None:
                env["PYTHONPATH"] = pythonpath
            proc = subprocess.Popen([str(exe), str(work / "worker.properties"), str(work / "source.properties"),
                                     str(work / "sink.properties")], cwd=work, stdout=log, stderr=subprocess.STDOUT,
                                    env=env)
        try:
            while True:
                if _health(port) == 200:
                    wall = time.perf_counter() - started
                    cpu = _tree_cpu_seconds(proc.pid)
                    return wall, cpu
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
    args = parser.parse_args()
    trees: dict[str, str | None] = {"this checkout": None}
    if args.against:
        trees[args.against] = str(Path(args.against).resolve())
    results: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in trees}
    load = os.getloadavg()[0]
    for i in range(args.runs):
        for name, path in trees.items():
            wall, cpu = one_run(args.timeout, path)
            results[name][0].append(wall)
            results[name][1].append(cpu)
            print(f"run {i + 1} ({name}): spawn->/health 200 {wall:.3f} s, process-tree CPU {cpu:.3f} s", flush=True)
    print(f"1-min load average at start {load:.2f}, now {os.getloadavg()[0]:.2f}, on {os.cpu_count()} cores")
    for name, (walls, cpus) in results.items():
        print(f"median of {args.runs} ({name}): wall {statistics.median(walls):.3f} s, "
              f"CPU {statistics.median(cpus):.3f} s")


if __name__ == "__main__":
    main()
