"""How a sink's throughput grows with its tasks: embedded log (2 partitions) -> FileStreamSink, 1 and 2 tasks.

Issue #37 asks that the string sink with 2 tasks use >= 1.8 cores on a 2-core machine and move >= 1.8x its
1-task records/s. Before any worker starts, the benchmark fills the shipped sink's topic (``connect-test``) on the
embedded log with ``--records`` string records of about 100 B, half on each of 2 partitions; each run then gets
a fresh copy of that log, so every run's sink group starts from offset 0. A real ``connect-standalone`` runs
configs/connect-standalone.properties and configs/connect-file-sink.properties in a scratch directory (its
working directory, so their relative paths land there). What changes from the shipped files:

- always: ``listeners`` (a free port instead of 8083), and the sink's ``tasks.max`` (1 or 2: the case);
- the headline: key/value StringConverter (the shipped JsonConverter lines dropped), ``task.processes`` as
  shipped (-1: one task host process per core, so on this machine each of 2 tasks gets a host of its own);
- the baseline: the same plus ``task.processes=0``, every task in the worker process, sharing its one
  interpreter lock (how every worker ran before task hosts).

Timed: from the first line in the sink file to the moment the last record of each partition is in it (every
record then is; the file is checked afterwards for missing records and lines written twice). CPU: the worker's
process tree (the worker, its REST front process, its task hosts) over that same window, read from /proc;
"cores" is CPU seconds over wall seconds. Beside it, "steady": the same from the first line written after the
sink tasks' last partition assignment or revocation in the worker's log (with 2 tasks the first task to start
holds both partitions until the second joins), so the rebalance at start-up shows as the difference between
the two. The four runs (1 and 2 tasks, each mode) are interleaved, ``--rounds`` times, and medians are printed
with each mode's 2-task/1-task ratio.

    python bench/bench_task_scaling.py                       # 1,000,000 records, 3 rounds
    python bench/bench_task_scaling.py --records 100000 --rounds 1 --keep
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._configs import WORKER, Changes, Variant, free_port, write_shipped  # noqa: E402
from bench._proc import TreeUsage, machine_cpu_seconds, tree  # noqa: E402

SINK = "connect-file-sink.properties"
TOPIC = "connect-test"  # the shipped sink's topics=
SINK_FILE = "test.sink.txt"  # the shipped sink's file=
LOG_DIR = "headrace-data"  # the shipped worker's embedded.log.dir=
PARTITIONS = 2
LINE_BYTES = 100  # a record's value and its newline in the sink file
HOST_MODULE = "connect.runtime.task_host_process"

_STRING = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
           "value.converter": "org.apache.kafka.connect.storage.StringConverter",
           "key.converter.schemas.enable": None, "value.converter.schemas.enable": None}

MODES = {
    "hosts": Variant("hosts", "StringConverter; task.processes as shipped (-1: one task host per core)",
                     worker=dict(_STRING)),
    "in-worker": Variant("baseline", "StringConverter, task.processes=0 (every task in the worker)",
                         worker={**_STRING, "task.processes": "0"}),
}
TASKS = (1, 2)

MODEL = """\
What a larger machine gives (the model, not a measurement): each task host is a Python interpreter of its
own, so a connector's throughput grows with its tasks up to min(tasks.max, task.processes, cores, partitions)
times one task's rate: task.processes defaults to one host per core, and a task with no partition of its own
has nothing to do. On 16 cores, a 16-partition topic and tasks.max=16 could approach 16 times one task; less in
practice by what the tasks share: the worker process (herder, offset commits, the embedded log's group
coordination), the disk under the log and the sink file, memory bandwidth. With task.processes=0 every task
shares the worker's one interpreter lock, and the figure stays near one core's whatever the machine."""


@dataclass
class Result:
    wall: float  # first sink line to last
    cpu: float  # CPU seconds of the worker's process tree over the same window
    steady_wall: float  # from the first sink line after the tasks' last rebalance to the last line
    steady_lines: int  # lines written in that window
    steady_cpu: float
    hosts: int  # task host processes seen in the worker's tree
    machine_cpu: float  # CPU seconds of the whole machine (every process and the kernel) over the first window
    duplicates: int  # lines written twice (a rebalance replaying what was not committed)


def write_run_configs(work: Path, tasks: int, mode: Variant, port: int | None = None) -> None:
    """The shipped worker and sink files, with ``mode``'s changes, a free REST port and ``tasks.max``, into
    ``work``."""
    listeners: Changes = {"listeners": f"http://127.0.0.1:{port or free_port()}"}
    write_shipped(work / WORKER, WORKER, mode.worker, listeners)
    write_shipped(work / SINK, SINK, mode.sink, {"tasks.max": str(tasks)})


def prefill(log_dir: Path, records: int) -> None:
    """``records`` values of LINE_BYTES - 1 bytes into TOPIC, alternating its partitions, through the embedded
    log's own producer (no worker runs yet, so nothing else holds the directory)."""
    from connect.log.api import NewTopic
    from connect.log.embedded.backend import EmbeddedBackend

    backend = EmbeddedBackend(str(log_dir))
    try:
        backend.admin().create_topic(NewTopic(TOPIC, PARTITIONS, 1))
        producer = backend.producer()
        pad = "x" * (LINE_BYTES - 1 - 10)
        chunk = 10_000
        for lo in range(0, records, chunk * PARTITIONS):
            for p in range(PARTITIONS):
                values = [f"{i:010d}{pad}".encode() for i in range(lo + p, min(lo + chunk * PARTITIONS, records),
                                                                    PARTITIONS)]
                if values:
                    producer.send_batch(TOPIC, p, values)
        producer.flush(120)
        producer.close()
    finally:
        backend.close()


class SinkWatch:
    """The sink file as it grows, looked at without reading it while it cannot be complete (the benchmark shares
    the machine's cores with the worker, and reading every byte the tasks write cost a tenth of a core at these
    rates): every line is ``LINE_BYTES`` long, so its size gives its lines. Once it holds as many lines as there
    are records, it is read for the last record of every partition (a rebalance may have written some twice,
    so the count alone does not prove every record is in): a task writes its partitions' records in order, so
    that is the moment every record is in the file."""

    def __init__(self, path: Path, records: int) -> None:
        self.path = path
        self.records = records
        self.lines = 0
        last = {records - 1 - k for k in range(PARTITIONS)}  # prefill() alternates partitions
        self._waiting = {b"\n" + f"{i:010d}".encode() for i in last}
        self._tail = b"\n"  # the file's start is a line's start
        self._fh: BinaryIO | None = None

    def look(self) -> bool:
        """True once the last record of every partition is in the file."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return False
        self.lines = size // LINE_BYTES
        if self.lines < self.records:
            return False
        if self._fh is None:
            self._fh = open(self.path, "rb")  # noqa: SIM115 - kept open across looks, closed by close()
        while self._waiting and (chunk := self._fh.read(1 << 20)):
            text = self._tail + chunk
            self._waiting = {m for m in self._waiting if m not in text}
            self._tail = text[-LINE_BYTES:]
        return not self._waiting

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


class RebalanceWatch:
    """The worker's log as it grows: how many partition assignments and revocations its sink tasks have logged
    (the task hosts' lines come through the worker's), so that the steady window can start after the last."""

    EVENTS = (b" Partitions assigned: ", b" Partitions revoked: ", b" Partitions lost: ")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events = 0
        self._tail = b""
        self._fh: BinaryIO | None = None

    def look(self) -> int:
        if self._fh is None:
            if not self.path.exists():
                return 0
            self._fh = open(self.path, "rb")  # noqa: SIM115 - kept open across looks, closed by close()
        while chunk := self._fh.read(1 << 16):
            # only whole lines are counted; a partial last line waits for the next look
            text, _, self._tail = (self._tail + chunk).rpartition(b"\n")
            self.events += sum(text.count(e) for e in self.EVENTS)
        return self.events

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


def check_sink(path: Path, records: int) -> tuple[int, int]:
    """(duplicate lines, missing records) of the finished sink file, by the id that starts each line."""
    seen = bytearray(records)
    duplicates = 0
    with open(path, "rb") as fh:
        for line in fh:
            i = int(line[:10])
            duplicates += seen[i]
            seen[i] = 1
    return duplicates, records - sum(seen)


def _hosts_in(pid: int) -> int:
    """Task hosts in the worker's tree: forked by its fork server (named ``task-host-N``) or, without one,
    started as ``python -m connect.runtime.task_host_process``."""
    n = 0
    for p in tree(pid):
        try:
            comm = Path(f"/proc/{p}/comm").read_text().strip()
            if (comm.startswith("task-host-") and comm != "task-host-fork"
                    or HOST_MODULE.encode() in Path(f"/proc/{p}/cmdline").read_bytes()):
                n += 1
        except OSError:
            pass
    return n


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (a clean stop) to the worker, SIGKILL after 60 s; then SIGKILL to whatever of its process group
    (its own session, started by this benchmark) outlived it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(work: Path, template: Path, records: int, tasks: int, mode: Variant, stall_s: float) -> Result:
    """One worker on a fresh copy of the filled log; the sink file timed from its first line to its last."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    shutil.copytree(template, work / LOG_DIR)
    write_run_configs(work, tasks, mode)
    exe = Path(sys.executable).with_name("connect-standalone")
    watch = SinkWatch(work / SINK_FILE, records)
    with open(work / "worker.log", "wb") as log:
        # a session of its own: whatever of the worker's tree outlives it is killed by its process group
        proc = subprocess.Popen([str(exe), WORKER, SINK], cwd=work, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    rebalances = RebalanceWatch(work / "worker.log")
    try:
        usage = TreeUsage(proc.pid)
        first = cpu_first = None
        machine_first = 0.0
        steady: tuple[float, int, float] | None = None  # time, lines, CPU seconds
        hosts = events = 0
        seen, moved = 0, time.perf_counter()
        while True:
            finished = watch.look()
            now = time.perf_counter()
            if rebalances.look() != events:
                events = rebalances.events
                steady = None  # the window starts again with the next line written
            if watch.lines > 0 and (first is None or steady is None):
                cpu = usage.sample()  # only at the first line and after a rebalance: a sample costs ~2 ms of CPU
                if first is None:
                    first, cpu_first, machine_first = now, cpu, machine_cpu_seconds()
                    hosts = _hosts_in(proc.pid)
                steady = (now, watch.lines, cpu)
            if finished:
                break
            if watch.lines != seen:
                seen, moved = watch.lines, now
            elif now - moved > stall_s:
                raise SystemExit(f"the sink file has not grown for {stall_s:.0f} s, at {watch.lines:,} of "
                                 f"{records:,} lines (tasks.max={tasks}, {mode.label}):\n"
                                 + (work / "worker.log").read_text()[-3000:])
            if proc.poll() is not None:
                raise SystemExit(f"the worker exited early (code {proc.returncode}):\n"
                                 + (work / "worker.log").read_text()[-3000:])
            time.sleep(0.02)
        done, cpu_done, machine_done = time.perf_counter(), usage.sample(), machine_cpu_seconds()
        hosts = max(hosts, _hosts_in(proc.pid))
    finally:
        watch.close()
        rebalances.close()
        _stop(proc)
    assert first is not None and cpu_first is not None and steady is not None
    duplicates, missing = check_sink(work / SINK_FILE, records)
    if missing:
        raise SystemExit(f"{missing:,} record(s) missing from the sink file (tasks.max={tasks}, {mode.label})")
    steady_at, steady_from, steady_cpu = steady
    return Result(done - first, cpu_done - cpu_first, done - steady_at, watch.lines - steady_from,
                  cpu_done - steady_cpu, hosts, machine_done - machine_first, duplicates)


def _steady_rate(r: Result) -> float:
    return r.steady_lines / r.steady_wall if r.steady_wall > 0 and r.steady_lines > 0 else float("nan")


def _steady_cores(r: Result) -> float:
    return r.steady_cpu / r.steady_wall if r.steady_wall > 0 and r.steady_lines > 0 else float("nan")


def _median(values: list[float]) -> float:
    kept = [v for v in values if v == v]  # a window too short to measure is NaN: left out
    return statistics.median(kept) if kept else float("nan")


def report(records: int, rounds: int, runs: dict[tuple[int, str], list[Result]]) -> None:
    mb = records * LINE_BYTES / 1e6
    print(f"embedded log ({PARTITIONS} partitions) -> FileStreamSink, {records:,} records of {LINE_BYTES} B "
          f"({mb:.1f} MB), {rounds} interleaved round(s), medians; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    print("every run: configs/connect-standalone.properties + connect-file-sink.properties, listeners on a free "
          "port, tasks.max as below")
    for name, mode in MODES.items():
        print(f"  {name} ({'headline' if name == 'hosts' else 'baseline'}): {mode.changes}")
    print("records/s, MB/s, cores: first sink line to last; steady: from the first line after the tasks' last "
          "partition assignment to the last")
    print("machine: the cores the whole machine kept busy over the same window (the tree, the kernel's writeback, "
          "this benchmark, anything else running)")
    print(f"{'tasks':>5}  {'task.processes':<16}{'hosts':>6}{'records/s':>11}{'MB/s':>7}{'cores':>7}{'machine':>8}"
          f"{'vs 1 task':>10}{'steady/s':>11}{'cores':>7}{'vs 1 task':>10}   records/s per round")
    rates = {key: statistics.median(records / r.wall for r in rs) for key, rs in runs.items()}
    steady = {key: _median([_steady_rate(r) for r in rs]) for key, rs in runs.items()}
    for name, mode in MODES.items():
        shown = "-1 (shipped)" if "task.processes" not in mode.worker else f"{mode.worker['task.processes']} (baseline)"
        for tasks in TASKS:
            rs = runs[(tasks, name)]
            rate, steady_rate = rates[(tasks, name)], steady[(tasks, name)]
            cores = statistics.median(r.cpu / r.wall for r in rs)
            machine = statistics.median(r.machine_cpu / r.wall for r in rs)
            steady_cores = _median([_steady_cores(r) for r in rs])
            print(f"{tasks:>5}  {shown:<16}{max(r.hosts for r in rs):>6}{rate:>11,.0f}{rate * LINE_BYTES / 1e6:>7.1f}"
                  f"{cores:>7.2f}{machine:>8.2f}{rate / rates[(1, name)]:>9.2f}x{steady_rate:>11,.0f}{steady_cores:>7.2f}"
                  f"{steady_rate / steady[(1, name)]:>9.2f}x   " + " ".join(f"{records / r.wall:,.0f}" for r in rs))
    for name in MODES:
        per_round = [b.wall / a.wall for a, b in zip(runs[(2, name)], runs[(1, name)], strict=True)]
        print(f"2 tasks / 1 task, {name}: {rates[(2, name)] / rates[(1, name)]:.2f}x records/s (per round: "
              + " ".join(f"{x:.2f}" for x in per_round) + f"), steady {steady[(2, name)] / steady[(1, name)]:.2f}x")
    print(f"2 tasks, hosts / in-worker: {rates[(2, 'hosts')] / rates[(2, 'in-worker')]:.2f}x records/s")
    twice = sum(r.duplicates for rs in runs.values() for r in rs)
    print("every record in the sink file, none twice" if not twice else
          f"every record in the sink file; {twice:,} line(s) written twice in all (a rebalance replaying what was "
          "not yet committed; records/s counts each record once)")
    print()
    print(MODEL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the four runs; medians printed")
    parser.add_argument("--stall", type=float, default=120.0, metavar="S",
                        help="give up when the sink file has not grown for this many seconds")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (its path is printed)")
    args = parser.parse_args()
    if args.records < PARTITIONS:
        parser.error(f"--records must be at least {PARTITIONS}")
    # a SIGTERM to the benchmark unwinds through the finally blocks, which stop the workers it started
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    scratch = Path(tempfile.mkdtemp(prefix="headrace-task-scaling-"))
    try:
        template = scratch / "filled-log"
        started = time.perf_counter()
        prefill(template, args.records)
        print(f"filled {TOPIC} ({PARTITIONS} partitions) with {args.records:,} records in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
        runs: dict[tuple[int, str], list[Result]] = {(t, m): [] for m in MODES for t in TASKS}
        for i in range(args.rounds):
            for tasks in TASKS:
                for name, mode in MODES.items():
                    r = run(scratch / "run", template, args.records, tasks, mode, args.stall)
                    runs[(tasks, name)].append(r)
                    print(f"round {i + 1}: tasks.max={tasks} {name}: {args.records / r.wall:,.0f} records/s, "
                          f"{r.cpu / r.wall:.2f} cores (steady {_steady_rate(r):,.0f}/s over {r.steady_wall:.2f} s, "
                          f"{_steady_cores(r):.2f} cores), {r.hosts} host(s), {r.duplicates:,} line(s) written twice",
                          file=sys.stderr)
        report(args.records, args.rounds, runs)
    finally:
        if args.keep:
            print(f"kept {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
