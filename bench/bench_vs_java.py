"""Headrace beside Apache Kafka Connect (the Java original, ``services/kafka_connect.py``) on one broker, one run.

Three cases, each run ``--rounds`` times, Java then Headrace, interleaved (J, H, J, H, ...), every run a fresh
standalone worker process (``connect-standalone`` for Headrace, ``ConnectStandalone`` for Java) with a fresh
offsets file, consumer group and output file:

1. source: FileStreamSource (file -> fresh 1-partition topic), StringConverter, one task;
2. sink: a 1-partition topic -> FileStreamSink, StringConverter, one task;
3. realistic sink: JSON records (``{"id":..,"user":..,"amount":..,"country":..,"ts":..,"ok":..}``) on a
   2-partition topic -> JsonConverter (``schemas.enable=false``) -> InsertField$Value (a static field) ->
   MaskField$Value -> ReplaceField$Value (renames) -> FileStreamSink, ``tasks.max=2``.

Both sides run their shipped defaults. Headrace: ``configs/connect-standalone.properties`` with
``bootstrap.servers`` added (README, "Running on Kafka"), a free REST port instead of 8083, and a config topic of
its own per run (without it the next run would restart the last one's connectors). Java: the worker settings of
Kafka's ``config/connect-standalone.properties`` (JsonConverter, ``offset.flush.interval.ms=10000``, plugin
discovery left at its default) and the JVM options ``bin/connect-standalone.sh`` gives (G1, ``-Xms256M -Xmx2G``),
not the start-up-tuned flags the test service uses. Converters and transforms are set per connector, alike on
both sides.

Measured from outside, the same way for both:

- records/s and MB/s: first record seen to last (start-up left out); the source is watched through the topic's
  end offsets, a sink through the lines in its output file (both FileStreamSinks write each put through, so the
  file shows what was put). MB are the record values' bytes in the topic.
- CPU-s: user + system time of the worker's process tree (``/proc``), in the first-to-last window ("window")
  and from spawn to the last record ("total", start-up included).
- peak RSS: the sum over the process tree of each process's VmHWM (``/proc/<pid>/status``).
- ratio: Headrace / Java per round (each Headrace run against the Java run just before it), median.

After each sink case the two sides' output files are compared byte for byte after sorting their lines (with two
partitions the order of lines differs between runs, on both sides); the result is printed.

    python bench/bench_vs_java.py                      # 1,000,000 records, 2 rounds
    python bench/bench_vs_java.py --records 200000     # a quicker run
    python bench/bench_vs_java.py --cases realistic --bootstrap-servers 127.0.0.1:9092
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from services.base import free_port
from services.kafka import java_executable
from services.kafka_connect import STANDALONE_MAIN, JavaConnectService

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench._proc import TreeUsage  # noqa: E402

SHIPPED_CONFIG = REPO / "configs" / "connect-standalone.properties"
STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
POLL_S = 0.025
STALL_S = 180.0  # no progress for this long: the run failed

# bin/connect-standalone.sh (KAFKA_HEAP_OPTS) and bin/kafka-run-class.sh (KAFKA_JVM_PERFORMANCE_OPTS) defaults
JAVA_SHIPPED_JVM = ["-Xms256M", "-Xmx2G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                    "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                    "-Djava.awt.headless=true"]
# config/connect-standalone.properties as Kafka ships it, beside what the service must set (broker, files, port)
JAVA_SHIPPED_WORKER = {
    "key.converter": JSON,
    "value.converter": JSON,
    "key.converter.schemas.enable": "true",
    "value.converter.schemas.enable": "true",
    "offset.flush.interval.ms": "10000",
    "plugin.discovery": "hybrid_warn",
}


def _quiet(_err: object) -> None:
    pass


# --- topics ------------------------------------------------------------------------------------------------------
def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "error_cb": _quiet, "log_level": 3})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=10).topics.get(topic)
        if meta is not None and meta.error is None and len(meta.partitions) == partitions:
            return
        time.sleep(0.05)
    raise SystemExit(f"topic {topic} did not show up")


def fill_topic(bootstrap: str, topic: str, src: Path, partitions: int) -> None:
    """Produce each line of ``src`` (without its newline) as a value with no key, round robin over the partitions
    (the sticky partitioner would put a small run's records all in one partition, leaving a task idle)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "error_cb": _quiet, "log_level": 3})
    with open(src, "rb") as fh:
        for n, line in enumerate(fh):
            while True:
                try:
                    producer.produce(topic, line[:-1], partition=n % partitions)
                    break
                except BufferError:
                    producer.poll(0.05)
    if producer.flush(120):
        raise SystemExit(f"filling {topic}: records not acknowledged")


class EndOffsets:
    """The sum of a topic's log end offsets: how many records a source has written so far."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-probe-{uuid.uuid4().hex}",
                                  "error_cb": _quiet, "log_level": 3})
        self.partitions = [TopicPartition(topic, p) for p in range(partitions)]

    def __call__(self) -> int:
        return sum(self.consumer.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in self.partitions)

    def close(self) -> None:
        self.consumer.close()


class LineCount:
    """The complete lines in a file that another process appends to, read incrementally."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh: object = None
        self.lines = 0

    def __call__(self) -> int:
        if self.fh is None:
            if not self.path.exists():
                return 0
            self.fh = open(self.path, "rb")  # noqa: SIM115 - closed in close()
        while chunk := self.fh.read(1 << 20):  # type: ignore[attr-defined]
            self.lines += chunk.count(b"\n")
        return self.lines

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()  # type: ignore[attr-defined]


@dataclass
class Run:
    seconds: float  # first record to last
    cpu_window: float
    cpu_total: float
    rss_mb: float


def watch(proc: subprocess.Popen[bytes], progress: Callable[[], int], done: int, log: Path) -> Run:
    """Poll ``progress`` until it reaches ``done``; time and CPU from its first move, CPU and RSS of the tree."""
    usage = TreeUsage(proc.pid)
    first: float | None = None
    cpu_first = 0.0
    last_n, last_move = 0, time.monotonic()
    while True:
        n = progress()
        now = time.perf_counter()
        cpu = usage.sample()
        if first is None and n > 0:
            first, cpu_first = now, cpu
        if n >= done:
            assert first is not None
            # a run too short to see between two polls counts as one poll interval
            return Run(max(now - first, POLL_S), cpu - cpu_first, cpu, usage.peak_rss_mb)
        if n != last_n:
            last_n, last_move = n, time.monotonic()
        elif time.monotonic() - last_move > STALL_S:
            raise SystemExit(f"no progress for {STALL_S:.0f} s at {n:,} of {done:,}; see {log}")
        if proc.poll() is not None:
            raise SystemExit(f"worker exited early ({proc.returncode}); see {log}")
        time.sleep(POLL_S)


def stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


# --- the two workers ---------------------------------------------------------------------------------------------
class JavaShipped(JavaConnectService):
    """ConnectStandalone with the JVM options of Kafka's own start script (the service's are tuned for start-up)."""

    def command(self) -> list[str]:
        return [java_executable(), *JAVA_SHIPPED_JVM, f"-Dlog4j2.configurationFile={self._log4j_path}",
                "-cp", f"{self.lib_dir()}/*", STANDALONE_MAIN, str(self.config_path),
                *(str(p) for p in self.connector_files)]


def _properties(props: Mapping[str, object]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def spawn_java(run_dir: Path, bootstrap: str, connector: Mapping[str, object]) -> subprocess.Popen[bytes]:
    run_dir.mkdir(parents=True)
    conn_file = run_dir / "connector.properties"
    conn_file.write_text(_properties(connector))
    svc = JavaShipped(bootstrap, mode="standalone", worker_properties=JAVA_SHIPPED_WORKER,
                      connector_files=[conn_file], work_dir=run_dir)
    svc.fetch()
    svc.prepare()
    # spawned here rather than by svc.start(), which returns only once REST answers: the watch must already be
    # polling when the first record moves
    with open(run_dir / "worker.log", "wb") as log:
        return subprocess.Popen(svc.command(), cwd=run_dir, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)


def headrace_worker_properties(bootstrap: str) -> str:
    """The shipped worker config, run on Kafka: bootstrap.servers added, a free REST port, a config topic per run."""
    text = SHIPPED_CONFIG.read_text()
    text, n = re.subn(r"(?m)^listeners=.*$", f"listeners=http://127.0.0.1:{free_port()}", text)
    if n != 1:
        raise SystemExit(f"{SHIPPED_CONFIG}: expected one listeners= line")
    return (text + f"\nbootstrap.servers={bootstrap}\n"
            f"config.storage.topic=bench-vs-java-configs-{uuid.uuid4().hex[:8]}\n")


def spawn_headrace(work: Path, run_dir: Path, bootstrap: str,
                   connector: Mapping[str, object]) -> subprocess.Popen[bytes]:
    run_dir.mkdir(parents=True)
    # connector.allowed.paths=. and the relative offsets file of the shipped config resolve against the working
    # directory: the shared work folder (which holds the input and output files), its offsets reset per run
    shutil.rmtree(work / "headrace-data", ignore_errors=True)
    (run_dir / "worker.properties").write_text(headrace_worker_properties(bootstrap))
    (run_dir / "connector.properties").write_text(_properties(connector))
    exe = Path(sys.executable).with_name("connect-standalone")
    with open(run_dir / "worker.log", "wb") as log:
        return subprocess.Popen([str(exe), str(run_dir / "worker.properties"), str(run_dir / "connector.properties")],
                                cwd=work, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


# --- the cases ---------------------------------------------------------------------------------------------------
@dataclass
class Case:
    key: str
    title: str
    partitions: int
    tasks: int


CASES = {
    "source": Case("source", "FileStreamSource -> Kafka, StringConverter, 1 task", 1, 1),
    "sink": Case("sink", "Kafka -> FileStreamSink, StringConverter, 1 task", 1, 1),
    "realistic": Case("realistic", "JSON (2 partitions) -> JsonConverter + InsertField, MaskField, ReplaceField "
                      "-> FileStreamSink, 2 tasks", 2, 2),
}

REALISTIC_TRANSFORMS = {
    "value.converter.schemas.enable": "false",
    "transforms": "insert,mask,rename",
    "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.insert.static.field": "pipeline",
    "transforms.insert.static.value": "bench",
    "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
    "transforms.mask.fields": "user",
    "transforms.rename.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
    "transforms.rename.renames": "country:cc,ts:timestamp",
}


def write_string_records(path: Path, records: int, width: int) -> None:
    pad = "x" * (width - 10)
    with open(path, "w") as fh:
        for i in range(records):
            fh.write(f"{i:010d}{pad}\n")


def write_json_records(path: Path, records: int) -> None:
    countries = ("DE", "FR", "US", "JP", "BR", "IN", "NG")
    base_ts = 1_764_300_000_000
    with open(path, "w") as fh:
        for i in range(records):
            # amounts between 1.00 and 1000.99: Java prints such doubles without an exponent
            amount = 1 + (i * 7919 % 100000) / 100
            fh.write(f'{{"id":{i},"user":"user-{i % 50000:05d}","amount":{amount},'
                     f'"country":"{countries[i % 7]}","ts":{base_ts + i},"ok":{"true" if i % 3 else "false"}}}\n')


def compare_sorted(java_out: Path, headrace_out: Path) -> str:
    java_lines = sorted(java_out.read_bytes().splitlines())
    ours = sorted(headrace_out.read_bytes().splitlines())
    if java_lines == ours:
        return f"identical ({len(ours):,} lines, sorted)"
    for j, h in zip(java_lines, ours, strict=False):
        if j != h:
            return f"DIFFERENT: Java {j[:120]!r} vs Headrace {h[:120]!r} (first difference after sorting)"
    return f"DIFFERENT: Java {len(java_lines):,} lines vs Headrace {len(ours):,}"


def one_run(side: str, case: Case, work: Path, bootstrap: str, records: int, inputs: Mapping[str, Path],
            topics: Mapping[str, str], tag: str) -> tuple[Run, Path | None]:
    name = f"bench-{case.key}-{side}-{tag}"
    run_dir = work / "runs" / name
    out: Path | None = None
    if case.key == "source":
        topic = f"{name}-{uuid.uuid4().hex[:6]}"
        create_topic(bootstrap, topic, 1)
        connector: dict[str, object] = {
            "name": name, "connector.class": "FileStreamSource", "tasks.max": 1,
            "file": inputs["string"], "topic": topic, "key.converter": STRING, "value.converter": STRING}
        progress: Callable[[], int] = EndOffsets(bootstrap, topic, 1)
    else:
        out = work / f"{name}.out"
        connector = {"name": name, "connector.class": "FileStreamSink", "tasks.max": case.tasks, "file": out,
                     "topics": topics[case.key], "key.converter": STRING}
        if case.key == "sink":
            connector["value.converter"] = STRING
        else:
            connector["value.converter"] = JSON
            connector.update(REALISTIC_TRANSFORMS)
        progress = LineCount(out)
    spawn = spawn_java if side == "java" else (lambda d, b, c: spawn_headrace(work, d, b, c))
    proc = spawn(run_dir, bootstrap, connector)
    try:
        run = watch(proc, progress, records, run_dir / "worker.log")
    finally:
        stop(proc)
        progress.close()  # type: ignore[attr-defined]
    return run, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--width", type=int, default=100, help="bytes per string record value")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--bootstrap-servers", help="use this broker instead of starting one")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, outputs)")
    args = parser.parse_args()

    kafka = None
    if args.bootstrap_servers:
        bootstrap = args.bootstrap_servers
    else:
        from services.kafka import KafkaService

        kafka = KafkaService(heap="1g")
        kafka.start()
        bootstrap = kafka.bootstrap_servers
    work = Path(tempfile.mkdtemp(prefix="headrace-bench-vs-java-"))
    results: dict[str, dict[str, list[Run]]] = {}
    comparisons: dict[str, list[str]] = {}
    value_mb: dict[str, float] = {}
    try:
        inputs = {"string": work / "string.txt", "json": work / "json.txt"}
        write_string_records(inputs["string"], args.records, args.width)
        write_json_records(inputs["json"], args.records)
        value_mb["source"] = value_mb["sink"] = args.records * args.width / 1e6
        value_mb["realistic"] = (inputs["json"].stat().st_size - args.records) / 1e6
        topics: dict[str, str] = {}
        if "sink" in args.cases:
            topics["sink"] = f"bench-vs-java-string-{uuid.uuid4().hex[:8]}"
            create_topic(bootstrap, topics["sink"], 1)
            fill_topic(bootstrap, topics["sink"], inputs["string"], 1)
        if "realistic" in args.cases:
            topics["realistic"] = f"bench-vs-java-json-{uuid.uuid4().hex[:8]}"
            create_topic(bootstrap, topics["realistic"], 2)
            fill_topic(bootstrap, topics["realistic"], inputs["json"], 2)
        for key in args.cases:
            case = CASES[key]
            results[key] = {"java": [], "headrace": []}
            comparisons[key] = []
            for r in range(args.rounds):
                outs: dict[str, Path | None] = {}
                for side in ("java", "headrace"):
                    run, outs[side] = one_run(side, case, work, bootstrap, args.records, inputs, topics, str(r))
                    results[key][side].append(run)
                    print(f"  {key} round {r + 1} {side}: {args.records / run.seconds:,.0f} records/s, "
                          f"CPU {run.cpu_window:.1f} s, RSS {run.rss_mb:.0f} MB", file=sys.stderr, flush=True)
                java_out, ours = outs["java"], outs["headrace"]
                if java_out is not None and ours is not None:
                    comparisons[key].append(compare_sorted(java_out, ours))
                    if not args.keep:
                        java_out.unlink()
                        ours.unlink()
    finally:
        if kafka is not None:
            kafka.cleanup()
        if args.keep:
            print(f"work folder kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    print(f"Kafka at {bootstrap}; {args.records:,} records per case; {args.rounds} round(s) of Java then Headrace; "
          f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at the end")
    print("Headrace: configs/connect-standalone.properties + bootstrap.servers (REST on a free port, a config "
          "topic per run); Java 4.1: config/connect-standalone.properties settings, connect-standalone.sh JVM options")
    head = (f"{'':<10}{'side':<10}{'records/s':>11}{'MB/s':>7}{'CPU-s':>7}{'cores':>7}{'CPU-s total':>12}"
            f"{'peak RSS MB':>12}   records/s per round")
    for key in results:
        case = CASES[key]
        print(f"\n{case.title}")
        print(head)
        for side in ("java", "headrace"):
            runs = results[key][side]
            secs = statistics.median(r.seconds for r in runs)
            cpu = statistics.median(r.cpu_window for r in runs)
            total = statistics.median(r.cpu_total for r in runs)
            rss = statistics.median(r.rss_mb for r in runs)
            per_round = " ".join(f"{args.records / r.seconds:,.0f}" for r in runs)
            print(f"{'':<10}{side:<10}{args.records / secs:>11,.0f}{value_mb[key] / secs:>7.1f}{cpu:>7.1f}"
                  f"{cpu / secs:>7.2f}{total:>12.1f}{rss:>12.0f}   {per_round}")
        pairs = list(zip(results[key]["java"], results[key]["headrace"], strict=True))

        def ratio(get: Callable[[Run], float], pairs: list[tuple[Run, Run]] = pairs) -> str:
            each = [get(h) / get(j) for j, h in pairs]
            return f"{statistics.median(each):.2f} (" + " ".join(f"{x:.2f}" for x in each) + ")"

        print(f"{'':<10}Headrace / Java, median (per round): records/s {ratio(lambda r: 1 / r.seconds)}; "
              f"CPU-s {ratio(lambda r: r.cpu_window)}; peak RSS {ratio(lambda r: r.rss_mb)}")
        for r, text in enumerate(comparisons[key]):
            print(f"{'':<10}data, round {r + 1}: {text}")


if __name__ == "__main__":
    main()
