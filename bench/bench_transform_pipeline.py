"""Records/s of the full worker pipeline with a 3-transform chain beside the same pipeline without it.

Pipeline, through a real ``connect-standalone`` process on the embedded log:
FileStreamSource (JSON lines, StringConverter) -> topic -> FileStreamSink reading the values with
JsonConverter (schemas.enable=false), so the sink's records are maps. The transformed case adds, on the
sink, InsertField$Value (a static field) -> ReplaceField$Value (exclude one field) -> TimestampRouter.
Both cases run in the same invocation, one after the other (alternating when ``--rounds`` > 1); each
case's best round counts.

A record counts as done when the sink task's ``put`` has taken it: the run watches the task's
``records_put`` counter in the REST status (FileStreamSink buffers lines until the offset flush, so the
output file would measure ``offset.flush.interval.ms`` rather than throughput); the output file is
checked for every line after the worker stops. Worker CPU time is the whole process's, start-up and
idle polls included.

    python bench/bench_transform_pipeline.py [--records N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def _properties(path: Path, props: dict[str, object]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def run_case(work: Path, src: Path, records: int, transforms: bool, flush_ms: int) -> tuple[float, float, float]:
    """(seconds incl. start-up, seconds from the first sink line to the last, worker CPU seconds) for one
    fresh worker."""
    work.mkdir()
    port = _free_port()
    worker = _properties(work / "worker.properties", {
        "embedded.log.dir": work / "data",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": work / "connect.offsets",
        "offset.flush.interval.ms": flush_ms,
        "listeners": f"http://127.0.0.1:{port}",
    })
    source = _properties(work / "source.properties", {
        "name": "bench-source", "connector.class": "FileStreamSource", "file": src, "topic": "events",
        "batch.size": 5000,
    })
    sink_file = work / "sink.txt"
    sink_props: dict[str, object] = {
        "name": "bench-sink", "connector.class": "FileStreamSink", "file": sink_file, "topics": "events",
        "consumer.override.max.poll.records": 5000,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    if transforms:
        sink_props.update(CHAIN)
    sink = _properties(work / "sink.properties", sink_props)
    exe = Path(sys.executable).with_name("connect-standalone")
    started = time.perf_counter()
    with open(work / "worker.log", "wb") as log:
        proc = subprocess.Popen([str(exe), str(worker), str(source), str(sink)], stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        first = None
        while True:
            n = _records_put(port)
            if first is None and n > 0:
                first = time.perf_counter()
            if n >= records:
                break
            if proc.poll() is not None:
                raise SystemExit(f"worker exited early; see {work / 'worker.log'}")
            time.sleep(0.05)
        done = time.perf_counter()
    finally:
        proc.terminate()
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
    cpu = usage.ru_utime + usage.ru_stime
    lines = _count_lines(sink_file)
    assert lines == records, f"{lines} lines in {sink_file}, expected {records}"
    if transforms:  # the chain really ran: the sink saw the changed values
        with open(sink_file, encoding="utf-8") as fh:
            line = fh.readline()
        assert "'data_source': 'bench'" in line and "secret" not in line, line
    return done - started, done - (first or started), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each case, alternating")
    parser.add_argument("--flush-ms", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="headrace-bench-") as tmp:
        root = Path(tmp)
        src = root / "events.jsonl"
        with open(src, "w") as fh:
            for i in range(args.records):
                fh.write(json.dumps({"id": i, "name": f"event-{i}", "score": 0.5, "active": True,
                                     "secret": "s3cr3t"}) + "\n")
        results: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
        for r in range(args.rounds):
            for transforms in (False, True):
                results[transforms].append(run_case(root / f"r{r}-{'chain' if transforms else 'plain'}", src,
                                                    args.records, transforms, args.flush_ms))
        print(f"file -> log -> file (JsonConverter schemaless on the sink), {args.records:,} records, "
              f"best of {args.rounds} round(s), python {sys.version.split()[0]}")
        print(f"{'case':<42}{'incl. start-up rec/s':>21}{'first-to-last rec/s':>21}{'worker CPU us/rec':>19}")
        rates = {}
        for transforms, label in ((False, "no transforms"),
                                  (True, "InsertField+ReplaceField+TimestampRouter")):
            total = min(t for t, _, _ in results[transforms])
            steady = min(s for _, s, _ in results[transforms])
            cpu = min(c for _, _, c in results[transforms]) / args.records * 1e6
            rates[transforms] = (args.records / total, args.records / steady, cpu)
            print(f"{label:<42}{args.records / total:>21,.0f}{args.records / steady:>21,.0f}{cpu:>19.1f}")
            for i, (t, s, c) in enumerate(results[transforms]):
                print(f"  round {i + 1}: {t:.2f} s incl. start-up, {s:.2f} s first-to-last, {c:.2f} s worker CPU")
        for i, what in ((0, "records/s incl. start-up"), (1, "records/s first-to-last")):
            cost = (rates[False][i] / rates[True][i] - 1) * 100
            print(f"chain cost ({what}): {cost:+.1f}% time per record")
        cpu_cost = (rates[True][2] / rates[False][2] - 1) * 100
        print(f"chain cost (worker CPU per record): {cpu_cost:+.1f}%")


if __name__ == "__main__":
    main()
