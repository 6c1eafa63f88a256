"""End-to-end lines/s of FileStreamSource -> embedded log -> FileStreamSink through a real worker process.

The headline runs the shipped configs verbatim (configs/connect-standalone.properties,
connect-file-source.properties, connect-file-sink.properties) in a scratch directory as the
worker's working directory, so their relative paths land there; only the REST port changes (a
free one instead of 8083). Each tuned variant is printed beside it, labelled with exactly the
settings it changes from the shipped files:

- ``string``: key/value StringConverter instead of JsonConverter with schemas;
- ``batches``: source ``batch.size=5000`` and sink ``consumer.override.max.poll.records=5000``
  (Kafka Connect's 2000 and 500 shipped);
- ``string-batches``: both of the above;
- ``tuned``: all of the above plus ``listeners=`` (no REST) and ``offset.flush.interval.ms=500``:
  the settings this benchmark's headline used before issue #37.

Baseline, measured in the same run: a plain Python loop that copies the same lines from one file to
another (no log, no connector logic).

    python bench/bench_file_pipeline.py --lines 1000000
    python bench/bench_file_pipeline.py --lines 1000000 --variants shipped tuned --rounds 3

``--against-commit REV`` (or ``--against DIR``, a source tree) runs an interleaved A/B instead: the shipped
configs of each tree, this tree's run then the other's, ``--rounds`` times. The other tree is installed into a
temporary virtual environment (on top of this interpreter's packages, so only what it needs beyond them is
fetched) and its worker runs from there. It prints throughput, spawn to last
line, worker CPU seconds for the whole job and peak RSS (the sum of VmHWM over the worker's process tree), with
the ratios this/other (issue #37 compares against fe66324):

    python bench/bench_file_pipeline.py --against-commit fe66324 --rounds 4
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._configs import CONFIGS, WORKER, Variant, with_changes  # noqa: E402
from bench._proc import TreeUsage  # noqa: E402

SOURCE, SINK = "connect-file-source.properties", "connect-file-sink.properties"


_STRING = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
           "value.converter": "org.apache.kafka.connect.storage.StringConverter",
           "key.converter.schemas.enable": None, "value.converter.schemas.enable": None}
_BATCH_SOURCE = {"batch.size": "5000"}
_BATCH_SINK = {"consumer.override.max.poll.records": "5000"}

VARIANTS = {
    "shipped": Variant("shipped", "shipped configs/ (only the REST port changed)"),
    "string": Variant("string", "key.converter, value.converter=StringConverter (schemas.enable lines dropped)",
                      worker=dict(_STRING)),
    "batches": Variant("batches", "source batch.size=5000, sink consumer.override.max.poll.records=5000",
                       source=dict(_BATCH_SOURCE), sink=dict(_BATCH_SINK)),
    "string-batches": Variant("string-batches", "string + batches", worker=dict(_STRING),
                              source=dict(_BATCH_SOURCE), sink=dict(_BATCH_SINK)),
    "tuned": Variant("tuned", "string + batches + listeners= (no REST), offset.flush.interval.ms=500",
                     worker={**_STRING, "listeners": "", "offset.flush.interval.ms": "500"},
                     source=dict(_BATCH_SOURCE), sink=dict(_BATCH_SINK)),
}


# cProfile sees one thread; the tasks run in threads of their own, so each thread gets a profiler and
# all of them are merged into one stats file when the worker exits (SIGTERM stops it cleanly).
_PROFILED_LAUNCH = """
import atexit, cProfile, pstats, sys, threading
sys.path = [p for p in sys.path if p not in ("", ".")]  # -c put the working directory there
out = sys.argv[1]
profilers = [cProfile.Profile()]
run = threading.Thread.run
def profiled_run(self):
    p = cProfile.Profile()
    profilers.append(p)
    p.enable()
    try:
        run(self)
    finally:
        p.disable()
threading.Thread.run = profiled_run
def dump():
    stats = None
    for p in profilers:
        p.disable()
        try:
            stats = pstats.Stats(p) if stats is None else stats.add(p)
        except TypeError:  # a thread that never ran Python code
            pass
    if stats is not None:
        stats.dump_stats(out)
atexit.register(dump)
sys.argv = ["connect-standalone"] + sys.argv[2:]
from connect.cli import standalone_main
profilers[0].enable()
sys.exit(standalone_main())
"""


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_configs(work: Path, variant: Variant, extra: list[str], configs: Path = CONFIGS) -> None:
    """The three shipped files (of ``configs``), with ``variant``'s changes and ``extra`` worker settings, into
    ``work``."""
    worker = dict(variant.worker)
    worker.setdefault("listeners", f"http://127.0.0.1:{_free_port()}")
    for setting in extra:
        key, _, value = setting.partition("=")
        worker[key.strip()] = value.strip()
    (work / WORKER).write_text(with_changes((configs / WORKER).read_text(), worker))
    (work / SOURCE).write_text(with_changes((configs / SOURCE).read_text(), variant.source))
    (work / SINK).write_text(with_changes((configs / SINK).read_text(), variant.sink))


def baseline(src: Path, dst: Path) -> float:
    started = time.perf_counter()
    with open(src, encoding="utf-8") as fin, open(dst, "w", encoding="utf-8") as fout:
        for line in fin:
            fout.write(line.rstrip("\n") + "\n")
        fout.flush()
        os.fsync(fout.fileno())
    return time.perf_counter() - started


@dataclass
class Result:
    total: float  # spawn to last sink line
    steady: float  # first sink line to last
    cpu: float  # worker (and REST front) CPU seconds, spawn to last line
    rss_mib: float = 0.0  # peak RSS of the worker's process tree
    pss_mib: float = 0.0  # peak of the tree's summed PSS, sampled every 0.25 s




def pipeline(work: Path, src: Path, lines: int, variant: Variant, extra: list[str],
             profile: Path | None = None, tree: Path | None = None) -> Result:
    """One worker run in ``work`` (its working directory) on the shipped configs with ``variant``'s changes;
    ``tree``: run that source tree's worker on its own shipped configs instead of this one's."""
    for stale in ("headrace-data", "test.sink.txt", "worker.log"):
        target = work / stale
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    if src.name != "test.txt":
        raise ValueError("the shipped source config reads test.txt")
    write_configs(work, variant, extra, CONFIGS if tree is None else tree / "configs")
    sink = work / "test.sink.txt"
    exe = Path(sys.executable).with_name("connect-standalone")
    cmd = [str(exe), WORKER, SOURCE, SINK]
    env = None
    if profile is not None:
        cmd = [sys.executable, "-c", _PROFILED_LAUNCH, str(profile), WORKER, SOURCE, SINK]
    if tree is not None:
        cmd = [str(tree / ".venv" / "bin" / "connect-standalone"), WORKER, SOURCE, SINK]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    started = time.perf_counter()
    with open(work / "worker.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        first = None
        usage = TreeUsage(proc.pid)
        pss, pss_at = 0.0, 0.0
        while True:
            if time.perf_counter() - pss_at >= 0.25:
                pss, pss_at = max(pss, usage.pss_mb()), time.perf_counter()
            n = _count_lines(sink)
            if first is None and n > 0:
                first = time.perf_counter()
            if n >= lines:
                break
            if proc.poll() is not None:
                raise SystemExit("worker exited early:\n" + (work / "worker.log").read_text()[-3000:])
            time.sleep(0.05)
        done = time.perf_counter()
        cpu = usage.sample()
        rss = usage.peak_rss_mb
        pss = max(pss, usage.pss_mb())
    finally:
        proc.terminate()  # SIGTERM: a clean stop, so cProfile writes its file
        proc.wait(60)
    return Result(done - started, done - (first or started), cpu, rss, pss)


def checkout(rev: str, into: Path) -> Path:
    """This repository's commit ``rev`` as a source tree under ``into`` (a clone, so the working tree is
    untouched)."""
    repo = CONFIGS.parent
    target = into / f"tree-{rev}"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(repo), str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "checkout", "-q", rev], check=True)
    install(target)
    return target


def install(tree: Path) -> None:
    """``tree`` installed (not editable) into ``tree/.venv``, a venv that sees this interpreter's packages:
    its console scripts, modules and plugin entry points are then that tree's, not this one's."""
    venv = tree / ".venv"
    if not (venv / "bin" / "connect-standalone").exists():
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", str(tree)], check=True)


def ab(work: Path, src: Path, lines: int, mb: float, other: Path, label: str, rounds: int, extra: list[str]) -> None:
    """This tree against ``other``, interleaved, both on their own shipped configs."""
    mine: list[Result] = []
    theirs: list[Result] = []
    for _ in range(rounds):
        mine.append(pipeline(work, src, lines, VARIANTS["shipped"], extra))
        theirs.append(pipeline(work, src, lines, VARIANTS["shipped"], extra, tree=other))
    print(f"A/B, file -> embedded log -> file, {lines:,} lines ({mb:.1f} MB), each tree's shipped configs, "
          f"{rounds} interleaved round(s), medians")
    print("peak RSS: the sum of VmHWM over the worker's process tree (a page shared by forked processes counts in "
          "each); peak PSS: the peak of the tree's summed proportional set size (each shared page once)")
    print(f"{'tree':<22}{'first-to-last/s':>16}{'spawn-to-last s':>17}{'CPU s':>8}{'peak RSS MiB':>14}"
          f"{'peak PSS MiB':>14}")
    rows = {"this tree": mine, label: theirs}
    med = {name: (statistics.median(lines / r.steady for r in rs), statistics.median(r.total for r in rs),
                  statistics.median(r.cpu for r in rs), statistics.median(r.rss_mib for r in rs),
                  statistics.median(r.pss_mib for r in rs))
           for name, rs in rows.items()}
    for name, (rate, total, cpu, rss, pss) in med.items():
        print(f"{name:<22}{rate:>16,.0f}{total:>17.2f}{cpu:>8.2f}{rss:>14.1f}{pss:>14.1f}")
    a, b = med["this tree"], med[label]
    print(f"{'ratio this/other':<22}{a[0] / b[0]:>16.2f}{a[1] / b[1]:>17.2f}{a[2] / b[2]:>8.2f}{a[3] / b[3]:>14.2f}"
          f"{a[4] / b[4]:>14.2f}   (throughput: higher is better; the others: lower is better)")
    for name, rs in rows.items():
        print(f"  {name} per round: " + " ".join(f"{lines / r.steady:,.0f}/s {r.total:.2f}s {r.cpu:.2f}cpu "
                                                 f"{r.rss_mib:.0f}/{r.pss_mib:.0f}MiB" for r in rs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--width", type=int, default=100, help="bytes per line, newline included")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                        help="which runs, in this order each round (shipped is the headline)")
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds; medians printed")
    parser.add_argument("--worker-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="one more worker setting for every variant, e.g. python.switch.interval.us=5000")
    parser.add_argument("--against", metavar="DIR", help="A/B: another source tree, run interleaved with this one")
    parser.add_argument("--against-commit", metavar="REV", help="A/B: this repository at REV (cloned to a temp dir)")
    parser.add_argument("--profile", metavar="DIR",
                        help="run each variant once under cProfile, writing DIR/<variant>.prof (slower; no figures)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="headrace-bench-") as tmp:
        work = Path(tmp)
        src = work / "test.txt"
        pad = "x" * (args.width - 12)
        with open(src, "w") as fh:
            for i in range(args.lines):
                fh.write(f"{i:010d}{pad}\n")
        mb = src.stat().st_size / 1e6
        if args.against or args.against_commit:
            if args.against:
                other = Path(args.against).resolve()
                install(other)
            else:
                other = checkout(args.against_commit, work)
            ab(work, src, args.lines, mb, other, args.against_commit or other.name, args.rounds, args.worker_setting)
            return
        if args.profile:
            out = Path(args.profile)
            out.mkdir(parents=True, exist_ok=True)
            for name in args.variants:
                r = pipeline(work, src, args.lines, VARIANTS[name], args.worker_setting, out / f"{name}.prof")
                print(f"{name}: profiled, first-to-last {args.lines / r.steady:,.0f} lines/s -> {out / name}.prof")
            return
        bases: list[float] = []
        runs: dict[str, list[Result]] = {name: [] for name in args.variants}
        for _ in range(args.rounds):
            bases.append(baseline(src, work / "copy.txt"))
            for name in args.variants:
                runs[name].append(pipeline(work, src, args.lines, VARIANTS[name], args.worker_setting))
        base = statistics.median(bases)
        print(f"file -> embedded log -> file, {args.lines:,} lines of {args.width} bytes ({mb:.1f} MB), "
              f"{args.rounds} round(s), medians"
              + (f"; every run also {' '.join(args.worker_setting)}" if args.worker_setting else ""))
        print(f"{'case':<34}{'start-up incl.':>16}{'first-to-last':>16}{'MB/s':>8}{'CPU s':>8}  settings changed")
        print(f"{'baseline: plain Python line copy':<34}{'':>16}{args.lines / base:>16,.0f}{mb / base:>8.1f}")
        for name, results in runs.items():
            total = statistics.median(r.total for r in results)
            steady = statistics.median(r.steady for r in results)
            cpu = statistics.median(r.cpu for r in results)
            label = "headrace " + name + (" (headline)" if name == "shipped" else "")
            print(f"{label:<34}{args.lines / total:>16,.0f}{args.lines / steady:>16,.0f}{mb / steady:>8.1f}"
                  f"{cpu:>8.2f}  {VARIANTS[name].changes}")
            if args.rounds > 1:
                print(f"{'':<34}per round first-to-last: "
                      + " ".join(f"{args.lines / r.steady:,.0f}" for r in results))


if __name__ == "__main__":
    main()
