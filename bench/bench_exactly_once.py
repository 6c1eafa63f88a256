"""What exactly-once costs: FileStreamSource -> log records/s with exactly-once off and on, in the same run.

A real ``connect-standalone`` runs FileStreamSource over the same file in three modes on each backend:

- ``off``: ``exactly.once.source.support=disabled`` (at-least-once, offsets flushed every second);
- ``poll``: exactly once, a transaction per poll (``transaction.boundary=poll``, batch.size lines);
- ``interval``: exactly once, a transaction per second (``transaction.boundary=interval``,
  ``transaction.boundary.interval.ms=1000``).

The time is what a downstream reader waits: from the first record in the topic (as a read_uncommitted
consumer sees it) until a ``read_committed`` consumer, made with the project's own log API, has seen the
last one; an exactly-once mode is charged for the wait until its last transaction commits (with
``interval``, up to one interval after the file's end, plus the source's own wait for more lines: use
enough records that this tail is small). Beside it, the worker's CPU time over the same span, per record:
what exactly-once costs in work rather than in waiting. Modes alternate within each round and the median of
``--rounds`` is reported, with each mode's cost against ``off`` of the same round.

    python bench/bench_exactly_once.py --records 5000000               # embedded log and a Kafka broker
    python bench/bench_exactly_once.py --backends embedded --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_backend
from connect.log.api import Consumer, LogBackend

MODES = ("off", "poll", "interval")


def _worker_props(work: Path, backend: dict[str, str], mode: str) -> Path:
    lines = [f"{k}={v}" for k, v in backend.items()]
    lines += ["key.converter=org.apache.kafka.connect.storage.StringConverter",
              "value.converter=org.apache.kafka.connect.storage.StringConverter",
              f"offset.storage.file.filename={work / 'connect.offsets'}",
              "offset.flush.interval.ms=1000", "listeners=",
              f"exactly.once.source.support={'disabled' if mode == 'off' else 'enabled'}",
              f"offset.storage.topic=bench-offsets-{uuid.uuid4().hex[:8]}",
              f"config.storage.topic=bench-configs-{uuid.uuid4().hex[:8]}"]
    path = work / "worker.properties"
    path.write_text("\n".join(lines) + "\n")
    return path


def _connector_props(work: Path, src: Path, topic: str, mode: str, batch: int) -> Path:
    props = {"name": f"bench-eos-{uuid.uuid4().hex[:6]}", "connector.class": "FileStreamSource", "file": src,
             "topic": topic, "batch.size": batch}
    if mode != "off":
        props.update({"exactly.once.support": "required", "transaction.boundary": mode,
                      "transaction.boundary.interval.ms": 1000})
    path = work / "source.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def _assign(backend: LogBackend, topic: str, isolation: str) -> Consumer:
    consumer = backend.consumer(None, {"isolation.level": isolation, "auto.offset.reset": "earliest",
                                       "enable.auto.commit": "false"})
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning([TopicPartition(topic, 0)])
    except BaseException:
        consumer.close()
        raise
    return consumer


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_mode(work: Path, backend: dict[str, str], src: Path, records: int, mode: str,
             batch: int) -> tuple[float, float]:
    """(seconds, worker CPU seconds) from the first record in the topic (as read_uncommitted sees it) until
    a read_committed consumer has seen the last one: what a downstream reader waits, commits included,
    and what the worker spent meanwhile."""
    (work / "connect.offsets").unlink(missing_ok=True)
    topic = f"bench-eos-{mode}-{uuid.uuid4().hex[:8]}"
    exe = Path(sys.executable).with_name("connect-standalone")
    log_path = work / f"worker-{mode}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(exe), str(_worker_props(work, backend, mode)),
                                 str(_connector_props(work, src, topic, mode, batch))],
                                stdout=log, stderr=subprocess.STDOUT)
    reader: LogBackend | None = None
    first_seen: Consumer | None = None
    committed: Consumer | None = None
    try:
        deadline = time.monotonic() + 120
        while first_seen is None:  # the worker creates the log and the topic with its first record
            try:
                reader = reader or open_log_backend({**backend}, read_only=True)
                first_seen = _assign(reader, topic, "read_uncommitted")
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"{mode}: the topic never appeared; see {log_path}") from None
                time.sleep(0.005)
        while not first_seen.poll(0.05, 1):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{mode}: no record in the topic; see {log_path}")
        first = time.perf_counter()
        cpu_first = _cpu_seconds(proc.pid)
        committed = _assign(reader, topic, "read_committed")
        seen = 0
        while seen < records:
            seen += sum(len(b) for b in committed.poll(0.2, 100_000))
            if proc.poll() is not None:
                raise SystemExit(f"{mode}: the worker exited early; see {log_path}")
            if time.monotonic() > deadline + 600:
                raise SystemExit(f"{mode}: only {seen} of {records} records after 10 minutes")
        took = time.perf_counter() - first
        cpu = _cpu_seconds(proc.pid) - cpu_first
        if seen != records:
            raise SystemExit(f"{mode}: a read_committed consumer saw {seen} records, not {records}")
        return took, cpu
    finally:
        for c in (first_seen, committed):
            if c is not None:
                c.close()
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        if reader is not None:
            reader.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--width", type=int, default=100, help="bytes per line")
    parser.add_argument("--batch", type=int, default=5000, help="FileStreamSource batch.size")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="embedded,kafka")
    parser.add_argument("--bootstrap-servers", help="an existing broker instead of starting one")
    args = parser.parse_args()
    kafka = None
    with tempfile.TemporaryDirectory(prefix="headrace-bench-eos-") as tmp:
        work = Path(tmp)
        src = work / "input.txt"
        pad = "x" * (args.width - 11)
        with open(src, "w") as fh:
            fh.writelines(f"{i:010d}{pad}\n" for i in range(args.records))
        mb = args.records * args.width / 1e6
        backends: dict[str, dict[str, str]] = {}
        for name in args.backends.split(","):
            if name == "embedded":
                backends[name] = {"embedded.log.dir": str(work / "data")}
            elif name == "kafka":
                bootstrap = args.bootstrap_servers
                if bootstrap is None:
                    from services.kafka import KafkaService

                    kafka = KafkaService(heap="1g")
                    kafka.start()
                    bootstrap = kafka.bootstrap_servers
                backends[name] = {"bootstrap.servers": bootstrap}
        try:
            print(f"{args.records} records of {args.width} B ({mb:.0f} MB), batch.size {args.batch}, "
                  f"{args.rounds} round(s)")
            for name, backend in backends.items():
                times: dict[str, list[float]] = {m: [] for m in MODES}
                cpus: dict[str, list[float]] = {m: [] for m in MODES}
                costs: dict[str, list[float]] = {m: [] for m in MODES[1:]}
                cpu_costs: dict[str, list[float]] = {m: [] for m in MODES[1:]}
                for r in range(args.rounds):
                    measured = {m: run_mode(work, backend, src, args.records, m, args.batch) for m in MODES}
                    for m, (t, cpu) in measured.items():
                        times[m].append(t)
                        cpus[m].append(cpu)
                    for m in MODES[1:]:
                        costs[m].append(measured[m][0] / measured["off"][0] - 1)
                        cpu_costs[m].append(measured[m][1] / measured["off"][1] - 1)
                    print(f"  {name} round {r + 1}: " + ", ".join(
                        f"{m} {args.records / t:,.0f} rec/s ({cpu * 1e6 / args.records:.2f} us CPU/rec)"
                        for m, (t, cpu) in measured.items()), flush=True)
                for m in MODES:
                    t = statistics.median(times[m])
                    cpu_us = statistics.median(cpus[m]) * 1e6 / args.records
                    line = (f"{name:8s} {m:8s} {args.records / t:>12,.0f} records/s {mb / t:8.1f} MB/s"
                            f" {cpu_us:6.2f} us worker CPU/record")
                    if m != "off":
                        line += (f"   cost vs off: wall {statistics.median(costs[m]) * 100:+.1f}%,"
                                 f" CPU {statistics.median(cpu_costs[m]) * 100:+.1f}%")
                    print(line)
        finally:
            if kafka is not None:
                kafka.stop()


if __name__ == "__main__":
    main()
