"""What exactly-once costs: FileStreamSource -> log records/s with exactly-once off and on, in the same run.

A real ``connect-standalone`` runs FileStreamSource over the same file in three modes on each backend,
first with the shipped files (configs/connect-standalone.properties and connect-file-source.properties: the
headline), then, labelled, ``tuned``: the settings this benchmark used before issue #37 (StringConverter,
``offset.flush.interval.ms=1000``, ``listeners=`` with no REST, ``batch.size`` ``--batch``). Every run changes only
the REST port, the backend (``bootstrap.servers`` for Kafka), fresh topic and connector names, and the settings
of its mode below; it runs in a fresh directory holding the input as ``test.txt``, so the shipped relative
paths land there.

- ``off``: ``exactly.once.source.support=disabled`` (at-least-once);
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._configs import WORKER, Changes, Variant, free_port, write_shipped  # noqa: E402
from connect.api.topic_partition import TopicPartition  # noqa: E402
from connect.log import open_log_backend  # noqa: E402
from connect.log.api import Consumer, LogBackend  # noqa: E402

MODES = ("off", "poll", "interval")
SOURCE = "connect-file-source.properties"

def variants(batch: int) -> dict[str, Variant]:
    """The headline (the shipped files) and the settings this benchmark used before issue #37."""
    return {
        "shipped": Variant("shipped"),
        "tuned": Variant("tuned", "key/value.converter=StringConverter (schemas.enable dropped), "
                                  f"offset.flush.interval.ms=1000, listeners= (no REST), source batch.size={batch}",
                         worker={"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                                 "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                                 "key.converter.schemas.enable": None, "value.converter.schemas.enable": None,
                                 "offset.flush.interval.ms": "1000", "listeners": ""},
                         source={"batch.size": str(batch)}),
    }
INTRINSIC = ("the REST port; the backend (the shipped embedded.log.dir, or bootstrap.servers for Kafka); fresh "
             "offset/config storage topics and connector name and topic per run; exactly.once.source.support, and "
             "on the connector exactly.once.support=required, transaction.boundary=<mode>, "
             "transaction.boundary.interval.ms=1000 (the case); each run in a fresh directory holding the input as "
             "test.txt, so the shipped relative paths land there")


def _mode_worker(backend: dict[str, str], mode: str) -> Changes:
    return {**backend, "listeners": f"http://127.0.0.1:{free_port()}",
            "exactly.once.source.support": "disabled" if mode == "off" else "enabled",
            "offset.storage.topic": f"bench-offsets-{uuid.uuid4().hex[:8]}",
            "config.storage.topic": f"bench-configs-{uuid.uuid4().hex[:8]}"}


def _mode_source(topic: str, mode: str) -> Changes:
    props: Changes = {"name": f"bench-eos-{uuid.uuid4().hex[:6]}", "topic": topic}
    if mode != "off":
        props.update({"exactly.once.support": "required", "transaction.boundary": mode,
                      "transaction.boundary.interval.ms": "1000"})
    return props


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


def write_run_configs(run: Path, backend: dict[str, str], topic: str, mode: str, variant: Variant) -> None:
    """The shipped worker and source files, with the backend's settings (none: the shipped embedded log), the
    mode's and the variant's changes, into ``run``."""
    write_shipped(run / WORKER, WORKER, _mode_worker(backend, mode), variant.worker)
    write_shipped(run / SOURCE, SOURCE, _mode_source(topic, mode), variant.source)


def run_mode(work: Path, backend: dict[str, str], src: Path, records: int, mode: str,
             variant: Variant) -> tuple[float, float]:
    """(seconds, worker CPU seconds) from the first record in the topic (as read_uncommitted sees it) until
    a read_committed consumer has seen the last one: what a downstream reader waits, commits included,
    and what the worker spent meanwhile. The worker runs in a fresh directory under ``work``."""
    run = work / f"{variant.label}-{mode}-{uuid.uuid4().hex[:6]}"
    run.mkdir()
    os.link(src, run / "test.txt")
    embedded = "embedded.log.dir" in backend
    if embedded:  # the shipped relative log directory, as the reader must see it
        backend = {"embedded.log.dir": str(run / "headrace-data")}
    topic = f"bench-eos-{mode}-{uuid.uuid4().hex[:8]}"
    write_run_configs(run, {} if embedded else backend, topic, mode, variant)
    exe = Path(sys.executable).with_name("connect-standalone")
    log_path = run / "worker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(exe), WORKER, SOURCE], cwd=run, stdout=log, stderr=subprocess.STDOUT)
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


def _relative(cost: float, base: float) -> float:
    # a short run can take less than one clock tick of CPU (/proc counts in 10 ms)
    return cost / base - 1 if base > 0 else float("nan")


def measure(work: Path, name: str, backend: dict[str, str], src: Path, args: argparse.Namespace,
            variant: Variant, mb: float) -> None:
    times: dict[str, list[float]] = {m: [] for m in MODES}
    cpus: dict[str, list[float]] = {m: [] for m in MODES}
    costs: dict[str, list[float]] = {m: [] for m in MODES[1:]}
    cpu_costs: dict[str, list[float]] = {m: [] for m in MODES[1:]}
    for r in range(args.rounds):
        measured = {m: run_mode(work, backend, src, args.records, m, variant) for m in MODES}
        for m, (t, cpu) in measured.items():
            times[m].append(t)
            cpus[m].append(cpu)
        for m in MODES[1:]:
            costs[m].append(_relative(measured[m][0], measured["off"][0]))
            cpu_costs[m].append(_relative(measured[m][1], measured["off"][1]))
        print(f"  {name} round {r + 1}: " + ", ".join(
            f"{m} {args.records / t:,.0f} rec/s ({cpu * 1e6 / args.records:.2f} us CPU/rec)"
            for m, (t, cpu) in measured.items()), flush=True)
    for m in MODES:
        t = statistics.median(times[m])
        cpu_us = statistics.median(cpus[m]) * 1e6 / args.records
        line = (f"{name:8s} {variant.label:8s} {m:8s} {args.records / t:>12,.0f} records/s {mb / t:8.1f} MB/s"
                f" {cpu_us:6.2f} us worker CPU/record")
        if m != "off":
            line += (f"   cost vs off: wall {statistics.median(costs[m]) * 100:+.1f}%,"
                     f" CPU {statistics.median(cpu_costs[m]) * 100:+.1f}%")
        print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--width", type=int, default=100, help="bytes per line")
    parser.add_argument("--batch", type=int, default=5000, help="the tuned variant's FileStreamSource batch.size")
    parser.add_argument("--variants", nargs="+", choices=("shipped", "tuned"), default=["shipped", "tuned"],
                        help="which settings, in this order (shipped is the headline)")
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
                backends[name] = {"embedded.log.dir": "headrace-data"}  # the shipped one, in each run's directory
            elif name == "kafka":
                bootstrap = args.bootstrap_servers
                if bootstrap is None:
                    from services.kafka import KafkaService

                    kafka = KafkaService(heap="1g")
                    kafka.start()
                    bootstrap = kafka.bootstrap_servers
                backends[name] = {"bootstrap.servers": bootstrap}
        try:
            print(f"{args.records} records of {args.width} B ({mb:.0f} MB), {args.rounds} round(s)")
            print("headline: configs/connect-standalone.properties and connect-file-source.properties as shipped "
                  f"(batch.size 2000, offset.flush.interval.ms 10000, JsonConverter with schemas, REST on); "
                  f"changed only: {INTRINSIC}")
            for name, backend in backends.items():
                for label in args.variants:
                    variant = variants(args.batch)[label]
                    print(f"== {name}, {variant.title()}", flush=True)
                    measure(work, name, backend, src, args, variant, mb)
        finally:
            if kafka is not None:
                kafka.stop()


if __name__ == "__main__":
    main()
