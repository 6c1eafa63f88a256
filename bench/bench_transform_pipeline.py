"""Cost per record of a 3-transform chain in the full worker pipeline, beside the same pipeline without it.

Pipeline, through a real ``connect-standalone`` process on the embedded log:
FileStreamSource (JSON lines) -> topic -> FileStreamSink reading the values with JsonConverter
(schemas.enable=false), so the sink's records are maps. The transformed case adds, on the sink,
InsertField$Value (a static field) -> ReplaceField$Value (exclude one field) -> TimestampRouter.

The headline runs the shipped files (configs/connect-standalone.properties, connect-file-source.properties,
connect-file-sink.properties) in a fresh directory per run that holds the input as ``test.txt``, so their
relative paths land there. Changed: the REST port, the sink's name, and what the case needs: the source's
``value.converter=StringConverter`` (the JSON lines go into the topic as they are) and the sink's
``value.converter=JsonConverter`` with ``schemas.enable=false``. Printed beside it, labelled, ``tuned``: the
settings this benchmark used before issue #37 (StringConverter at the worker, source ``batch.size=5000``,
sink ``consumer.override.max.poll.records=5000``).

A record counts as done when the sink task's ``put`` has taken it: the run watches the task's
``records_put`` counter in the REST status (FileStreamSink buffers lines until the offset flush, so the
output file would measure ``offset.flush.interval.ms`` rather than throughput); the output file is
checked for every line after the worker stops.

The primary figure is the worker's CPU time per record while the sink takes records (the process's
user + system time from /proc, from the first ``records_put`` seen to the last record, divided by the
records put in between): CPU time moves much less than wall time when other processes share the
machine. Wall time over the same span, and the whole process's CPU (start-up and idle polls included),
are shown beside it. Each round runs both cases, in alternating order; a cost is taken per round, the
chain against the baseline of the same round, and the median over rounds is reported, so a busy spell
weighs on both sides of one ratio instead of on one case.

    python bench/bench_transform_pipeline.py [--records N] [--rounds R] [--variants shipped tuned]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._configs import WORKER, Variant, describe, free_port, write_shipped  # noqa: E402

CHAIN = {
    "transforms": "InsertSource,DropSecret,Route",
    "transforms.InsertSource.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.InsertSource.static.field": "data_source",
    "transforms.InsertSource.static.value": "bench",
    "transforms.DropSecret.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
    "transforms.DropSecret.exclude": "secret",
    "transforms.Route.type": "org.apache.kafka.connect.transforms.TimestampRouter",
    "transforms.Route.topic.format": "${topic}-${timestamp}",
    "transforms.Route.timestamp.format": "yyyyMMdd",
}


# what the case needs beyond the shipped files: JSON lines go into the topic as they are, and the sink reads
# them as maps (the chain's InsertField and ReplaceField act on maps or Structs, not on strings)
INTRINSIC_SOURCE = {"value.converter": "org.apache.kafka.connect.storage.StringConverter"}
INTRINSIC_SINK = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                  "value.converter.schemas.enable": "false"}

VARIANTS = {
    "shipped": Variant("shipped"),
    "tuned": Variant("tuned", "worker key/value.converter=StringConverter (schemas.enable dropped), source "
                              "batch.size=5000, sink consumer.override.max.poll.records=5000",
                     worker={"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                             "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                             "key.converter.schemas.enable": None, "value.converter.schemas.enable": None},
                     source={"batch.size": "5000"}, sink={"consumer.override.max.poll.records": "5000"}),
}
SOURCE, SINK = "connect-file-source.properties", "connect-file-sink.properties"


def _records_put(port: int) -> int:
    """The sink task's records_put counter from GET /connectors/bench-sink/status (0 until it is up)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/connectors/bench-sink/status", timeout=5) as r:
            tasks = json.load(r).get("tasks") or [{}]
    except (urllib.error.URLError, OSError, ValueError):
        return 0
    return int((tasks[0].get("metrics") or {}).get("records_put", 0))


def _count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process, all its threads (fields 14 and 15 of /proc/pid/stat)."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


class Case(NamedTuple):
    """One run of one case: seconds and CPU seconds over the span the sink took ``steady_records`` in."""

    total_s: float  # worker start to the last record put
    steady_s: float  # first records_put seen to the last record put
    steady_cpu_s: float  # worker CPU over that span
    steady_records: int  # records put over that span
    process_cpu_s: float  # the whole process's CPU, start-up and stop included

    def steady_cpu_us(self) -> float:
        return self.steady_cpu_s / self.steady_records * 1e6

    def steady_us(self) -> float:
        return self.steady_s / self.steady_records * 1e6


def write_case_configs(work: Path, port: int, transforms: bool, variant: Variant) -> None:
    """The shipped worker, source and sink files, with what the case needs and the variant's changes."""
    write_shipped(work / WORKER, WORKER, {"listeners": f"http://127.0.0.1:{port}"}, variant.worker)
    write_shipped(work / SOURCE, SOURCE, INTRINSIC_SOURCE, variant.source)
    write_shipped(work / SINK, SINK, INTRINSIC_SINK, {"name": "bench-sink"}, variant.sink,
                  CHAIN if transforms else {})


def run_case(work: Path, src: Path, records: int, transforms: bool, variant: Variant) -> Case:
    """One fresh worker in ``work`` (its working directory, holding the source file as the shipped test.txt)
    copying ``records`` lines, with or without the chain on the sink."""
    work.mkdir()
    os.link(src, work / "test.txt")
    port = free_port()
    write_case_configs(work, port, transforms, variant)
    sink_file = work / "test.sink.txt"
    exe = Path(sys.executable).with_name("connect-standalone")
    started = time.perf_counter()
    with open(work / "worker.log", "wb") as log:
        proc = subprocess.Popen([str(exe), WORKER, SOURCE, SINK], cwd=work, stdout=log, stderr=subprocess.STDOUT)
    try:
        first: tuple[float, float, int] | None = None  # (time, worker CPU, records put) when first seen
        while True:
            n = _records_put(port)
            if first is None and n > 0:
                first = (time.perf_counter(), _cpu_seconds(proc.pid), n)
            if n >= records:
                done = time.perf_counter()
                done_cpu = _cpu_seconds(proc.pid)
                break
            if proc.poll() is not None:
                raise SystemExit(f"worker exited early; see {work / 'worker.log'}")
            time.sleep(0.05)
    finally:
        proc.terminate()
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
    assert first is not None
    if n - first[2] < records // 2:
        raise SystemExit(f"the first records_put seen was {first[2]} of {records}: too few records for a "
                         "steady span; raise --records")
    lines = _count_lines(sink_file)
    assert lines == records, f"{lines} lines in {sink_file}, expected {records}"
    if transforms:  # the chain really ran: the sink saw the changed values
        with open(sink_file, encoding="utf-8") as fh:
            line = fh.readline()
        # the map as Java prints it ({data_source=bench, ...}) or, before that, as Python does
        assert ("data_source=bench" in line or "'data_source': 'bench'" in line) and "secret" not in line, line
    return Case(done - started, done - first[0], done_cpu - first[1], n - first[2],
                usage.ru_utime + usage.ru_stime)


def _cost(chain: float, plain: float) -> float:
    """The chain's extra per record, in percent of the baseline's."""
    return (chain / plain - 1) * 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of both cases, in alternating order")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                        help="which settings, each round (shipped is the headline)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="headrace-bench-") as tmp:
        root = Path(tmp)
        src = root / "events.jsonl"
        with open(src, "w") as fh:
            for i in range(args.records):
                fh.write(json.dumps({"id": i, "name": f"event-{i}", "score": 0.5, "active": True,
                                     "secret": "s3cr3t"}) + "\n")
        rounds: dict[str, list[dict[bool, Case]]] = {name: [] for name in args.variants}
        for r in range(args.rounds):
            for name in args.variants:
                # alternate which case goes first: neither always runs on a machine warmed (or loaded) by the other
                order = (False, True) if r % 2 == 0 else (True, False)
                rounds[name].append({t: run_case(root / f"r{r}-{name}-{'chain' if t else 'plain'}", src,
                                                 args.records, t, VARIANTS[name]) for t in order})
    print(f"file -> log -> file (JsonConverter schemaless on the sink), {args.records:,} records, "
          f"{args.rounds} round(s), python {sys.version.split()[0]}")
    print("headline: configs/connect-standalone.properties, connect-file-source/-sink.properties as shipped; every "
          "run changes only the REST port, the sink's name (bench-sink), and runs in a fresh directory holding the "
          "input as test.txt (the shipped relative paths land there); what the case needs: source "
          f"{describe(INTRINSIC_SOURCE)}, sink {describe(INTRINSIC_SINK)} (the sink's records are maps)")
    for name in args.variants:
        print(f"\n== {VARIANTS[name].title()}")
        report(rounds[name])


def report(rounds: list[dict[bool, Case]]) -> None:
    print(f"{'round':<7}{'case':<14}{'worker CPU us/rec':>18}{'wall us/rec':>13}{'process CPU s':>15}"
          f"{'incl. start-up s':>18}")
    for r, cases in enumerate(rounds):
        for transforms in (False, True):
            c = cases[transforms]
            print(f"{r + 1:<7}{'chain' if transforms else 'no transforms':<14}{c.steady_cpu_us():>18.2f}"
                  f"{c.steady_us():>13.2f}{c.process_cpu_s:>15.2f}{c.total_s:>18.2f}")

    def median(figure: Callable[[Case], float]) -> tuple[float, float, float]:
        """Median of the baseline, of the chain, and of the per-round cost."""
        return (statistics.median(figure(c[False]) for c in rounds),
                statistics.median(figure(c[True]) for c in rounds),
                statistics.median(_cost(figure(c[True]), figure(c[False])) for c in rounds))

    print("medians over rounds (the cost is the median of the per-round costs):")
    print(f"{'figure':<42}{'no transforms':>15}{'chain':>10}{'chain cost':>12}")
    for label, figure in (("worker CPU us/record while sinking", Case.steady_cpu_us),
                          ("wall us/record, first to last put", Case.steady_us),
                          ("whole-process CPU s (start-up included)", lambda c: c.process_cpu_s)):
        plain, chained, cost = median(figure)
        print(f"{label:<42}{plain:>15.2f}{chained:>10.2f}{cost:>+11.1f}%")
    plain, chained, cost = median(Case.steady_cpu_us)
    print(f"chain cost (worker CPU per record): {cost:+.1f}% ({chained - plain:.2f} us/record), median of "
          f"{len(rounds)} rounds")


if __name__ == "__main__":
    main()
