"""Records/s of Headrace pipelines on a real Kafka broker, beside bare confluent-kafka loops in the same run.

Two pipelines, each run by a real ``connect-standalone`` process:

- FileStreamSource -> Kafka, beside a bare producer loop that reads the same
  file and sends the same lines (no key, a CreateTime per batch of lines) with
  the same client settings (acks=all, idempotence, linger.ms, batch sizes:
  Headrace's producer defaults);
- Kafka -> FileStreamSink (reading the topic its own source run filled), beside
  a bare consumer loop that reads the bare producer's topic and writes each
  value and a newline to a file, with the same client settings (Headrace's
  consumer defaults).

The headline runs the shipped files: configs/connect-standalone.properties plus
``bootstrap.servers`` (as the README's "Running on Kafka" says), and
configs/connect-file-source.properties / connect-file-sink.properties. Each run
changes only the REST port, the connector name and topic (fresh per run), and
works in a fresh directory holding the source file as ``test.txt``, so the
shipped relative paths land there. Printed beside it, labelled with what it
changes, is ``tuned``: the settings this benchmark used to print alone
(StringConverter, batch.size and consumer.max.poll.records ``--batch``,
offset.flush.interval.ms 60000 for the source worker and 500 for the sink
worker, listeners= with no REST).

Rates are first record to last (worker start-up left out): for the source,
from the first record in the topic to the last one acknowledged; for the sink,
from the first byte in the output file to the last (FileStreamSink writes each
put straight through; the bare loop fsyncs once at the end). Each round runs
the bare loops and then every variant; a ratio is taken per round, pipeline
against the same round's baseline, and the median is reported: on a shared
machine a busy spell then weighs on both sides.

    python bench/bench_kafka_pipeline.py --records 1000000
    python bench/bench_kafka_pipeline.py --variants shipped --rounds 3
    python bench/bench_kafka_pipeline.py --bootstrap-servers 127.0.0.1:9092   # an existing broker
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._configs import WORKER, Variant, free_port, write_shipped  # noqa: E402
from connect.log.kafka.config import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS  # noqa: E402

# the tuned sink worker's offset.flush.interval.ms: FileStreamSink fsyncs its file at each offset commit
SINK_FLUSH_MS = 500


def _quiet(_err: object) -> None:
    pass


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "error_cb": _quiet, "log_level": 3})
    admin.create_topics([NewTopic(topic, partitions, -1)])[topic].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        tm = admin.list_topics(topic, timeout=10).topics.get(topic)
        if tm is not None and tm.error is None and len(tm.partitions) == partitions:
            return
        time.sleep(0.05)
    raise SystemExit(f"topic {topic} did not show up")


class _EndOffsets:
    """Sums the log end offsets of a topic (a cheap ListOffsets request per call)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-probe-{uuid.uuid4().hex}",
                           "error_cb": _quiet, "log_level": 3})
        self.tps = [TopicPartition(topic, p) for p in range(partitions)]

    def __call__(self) -> int:
        return sum(self.c.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in self.tps)

    def close(self) -> None:
        self.c.close()


# --- baselines ---------------------------------------------------------------------------------------------------
def bare_producer(bootstrap: str, topic: str, src: Path, batch: int) -> float:
    """Read the file line by line and produce each line; seconds until every record is acknowledged.

    The records are the same as FileStreamSource's: the line as value, no key, and a CreateTime taken
    once per ``batch`` lines read.
    """
    conf = dict(PRODUCER_DEFAULTS)
    conf.update({"bootstrap.servers": bootstrap, "error_cb": _quiet, "log_level": 3})
    p = Producer(conf)
    produce, poll = p.produce, p.poll
    started = time.perf_counter()
    stamp = int(time.time() * 1000)
    with open(src, "rb") as fh:
        for n, line in enumerate(fh):
            value = line[:-1]
            while True:
                try:
                    # timestamp by position: produce(topic, value, key, partition, callback, on_delivery, ts)
                    produce(topic, value, None, -1, None, None, stamp)
                    break
                except BufferError:
                    poll(0.01)
            if n % batch == 0:
                poll(0)
                stamp = int(time.time() * 1000)
    left = p.flush(60)
    took = time.perf_counter() - started
    if left:
        raise SystemExit(f"bare producer: {left} records not acknowledged")
    return took


def bare_consumer(bootstrap: str, topic: str, partitions: int, records: int, dst: Path, batch: int) -> float:
    """Consume every record of the topic and write each value and a newline; first record to last written."""
    conf = dict(CONSUMER_DEFAULTS)  # the fetch settings Headrace's sink consumer uses
    conf.update({"bootstrap.servers": bootstrap, "group.id": f"bench-bare-{uuid.uuid4().hex}",
                 "auto.offset.reset": "earliest", "error_cb": _quiet, "log_level": 3})
    c = Consumer(conf)
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = 0
    first = None
    with open(dst, "wb") as out:
        write = out.write
        while seen < records:
            msgs = c.consume(batch, 1.0)
            if not msgs:
                continue
            if first is None:
                first = time.perf_counter()
            for m in msgs:
                if m.error() is None:
                    write(m.value())
                    write(b"\n")
                    seen += 1
        out.flush()
        os.fsync(out.fileno())
    done = time.perf_counter()
    c.close()
    assert first is not None
    return done - first


# --- Headrace pipelines ------------------------------------------------------------------------------------------------
_STRING = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
           "value.converter": "org.apache.kafka.connect.storage.StringConverter",
           "key.converter.schemas.enable": None, "value.converter.schemas.enable": None}


def variants(batch: int) -> dict[str, Variant]:
    """The headline (the shipped files) and the tuned run this benchmark used to print alone (before issue #37)."""
    return {
        "shipped": Variant("shipped"),
        "tuned": Variant("tuned", f"key/value StringConverter (schemas.enable dropped), source batch.size={batch}, "
                                  f"consumer.max.poll.records={batch}, offset.flush.interval.ms=60000 "
                                  f"(source worker) / {SINK_FLUSH_MS} (sink worker), listeners= (no REST)",
                         worker={**_STRING, "consumer.max.poll.records": str(batch), "listeners": ""},
                         source={"batch.size": str(batch)}),
    }


# the tuned run's flush cadence differs between its two workers (see SINK_FLUSH_MS)
_TUNED_FLUSH_MS = {"source": "60000", "sink": str(SINK_FLUSH_MS)}

# what every run changes from the shipped files, and why (printed with the figures)
INTRINSIC = ("bootstrap.servers (the broker; README \"Running on Kafka\"), listeners port (a free one, REST "
             "variants), connector name (unique per run: a fresh sink consumer group), source topic / sink topics "
             "(a fresh topic per run); each worker runs in a fresh directory holding the source file as test.txt, "
             "so the shipped relative paths (test.txt, test.sink.txt, headrace-data/) land there")


def write_run_configs(run: Path, role: str, bootstrap: str, variant: Variant, connector: dict[str, str | None]
                      ) -> str:
    """The shipped worker file and connector file of ``role`` (source or sink), with the variant's changes and
    ``connector``'s, into ``run``; the connector file's name."""
    worker: dict[str, str | None] = {"bootstrap.servers": bootstrap, "listeners": f"http://127.0.0.1:{free_port()}"}
    worker.update(variant.worker)
    if not variant.shipped:
        worker["offset.flush.interval.ms"] = _TUNED_FLUSH_MS[role]
    write_shipped(run / WORKER, WORKER, worker)
    name = f"connect-file-{role}.properties"
    write_shipped(run / name, name, variant.source if role == "source" else variant.sink, connector)
    return name


def _worker(run: Path, role: str, bootstrap: str, variant: Variant, connector: dict[str, str | None]
            ) -> subprocess.Popen:
    """``connect-standalone`` in ``run`` (a fresh directory: fresh offsets, worker id and so config topic)."""
    name = write_run_configs(run, role, bootstrap, variant, connector)
    exe = Path(sys.executable).with_name("connect-standalone")
    log = open(run / "worker.log", "wb")  # lives as long as the process
    return subprocess.Popen([str(exe), WORKER, name], cwd=run, stdout=log, stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def _first_to_last(proc: subprocess.Popen, progress: Callable[[], int], done: int, log: Path) -> float:
    """Seconds from the first sign of ``progress`` (> 0) until it reaches ``done``, polling every 20 ms."""
    first = None
    while True:
        n = progress()
        now = time.perf_counter()
        if first is None and n > 0:
            first = now
        if n >= done:
            assert first is not None
            return now - first
        if proc.poll() is not None:
            raise SystemExit(f"worker exited early; see {log}\n" + log.read_text()[-3000:])
        time.sleep(0.02)


def _fresh_run(work: Path, src: Path) -> Path:
    run = work / f"run-{uuid.uuid4().hex[:8]}"
    run.mkdir()
    os.link(src, run / "test.txt")  # the shipped source config reads test.txt, under connector.allowed.paths=.
    return run


def source_pipeline(work: Path, bootstrap: str, topic: str, partitions: int, src: Path, records: int,
                    variant: Variant) -> float:
    ends = _EndOffsets(bootstrap, topic, partitions)
    run = _fresh_run(work, src)
    proc = _worker(run, "source", bootstrap, variant, {"name": f"bench-source-{run.name}", "topic": topic})
    try:
        return _first_to_last(proc, ends, records, run / "worker.log")
    finally:
        _stop(proc)
        ends.close()


def sink_pipeline(work: Path, bootstrap: str, topic: str, src: Path, variant: Variant) -> tuple[float, Path]:
    """Seconds from the first byte in the sink's file to the last; and the file (FileStreamSink writes each
    ``put`` straight through, so the file's size is what has been put)."""
    run = _fresh_run(work, src)
    dst = run / "test.sink.txt"
    expected = src.stat().st_size
    proc = _worker(run, "sink", bootstrap, variant, {"name": f"bench-sink-{run.name}", "topics": topic})
    try:
        took = _first_to_last(proc, lambda: dst.stat().st_size if dst.exists() else 0, expected, run / "worker.log")
    finally:
        _stop(proc)
    return took, dst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--width", type=int, default=100, help="bytes per record value")
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--batch", type=int, default=5000,
                        help="the tuned variant's batch.size and max.poll.records, and the bare loops' batch")
    parser.add_argument("--variants", nargs="+", choices=("shipped", "tuned"), default=["shipped", "tuned"],
                        help="which Headrace runs, in this order each round (shipped is the headline)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bootstrap-servers", help="use this broker instead of starting one")
    args = parser.parse_args()
    chosen = {k: v for k, v in variants(args.batch).items() if k in args.variants}

    kafka = None
    if args.bootstrap_servers:
        bootstrap = args.bootstrap_servers
    else:
        from services.kafka import KafkaService

        kafka = KafkaService(heap="1g")
        kafka.start()
        bootstrap = kafka.bootstrap_servers
    try:
        with tempfile.TemporaryDirectory(prefix="headrace-bench-kafka-") as tmp:
            work = Path(tmp)
            src = work / "source.txt"
            pad = "x" * (args.width - 10)
            with open(src, "w") as fh:
                for i in range(args.records):
                    fh.write(f"{i:010d}{pad}\n")
            value_bytes = args.records * args.width
            mb = value_bytes / 1e6
            results: dict[str, list[float]] = {"bare-p": [], "bare-c": []}
            for name in chosen:
                results[f"source-{name}"] = []
                results[f"sink-{name}"] = []
            for r in range(args.rounds):
                t_bare = f"bench-bare-{uuid.uuid4().hex[:8]}"
                _create_topic(bootstrap, t_bare, args.partitions)
                results["bare-p"].append(bare_producer(bootstrap, t_bare, src, args.batch))
                results["bare-c"].append(bare_consumer(bootstrap, t_bare, args.partitions, args.records,
                                                       work / f"bare-{r}.txt", args.batch))
                (work / f"bare-{r}.txt").unlink()
                for name, variant in chosen.items():
                    # each variant's sink reads the topic its own source filled: with the shipped JsonConverter
                    # the records are JSON envelopes, which the bare producer's plain lines are not
                    t_src = f"bench-src-{name}-{uuid.uuid4().hex[:8]}"
                    _create_topic(bootstrap, t_src, args.partitions)
                    results[f"source-{name}"].append(source_pipeline(work, bootstrap, t_src, args.partitions, src,
                                                                     args.records, variant))
                    took, sink_out = sink_pipeline(work, bootstrap, t_src, src, variant)
                    results[f"sink-{name}"].append(took)
                    if args.partitions == 1 and sink_out.read_bytes() != src.read_bytes():
                        raise SystemExit(f"{name}: the sink's output differs from the source file")
                    shutil.rmtree(sink_out.parent)
    finally:
        if kafka is not None:
            kafka.cleanup()

    print(f"Kafka at {bootstrap}: {args.records:,} records of {args.width} bytes ({mb:.1f} MB), "
          f"{args.partitions} partition(s), {args.rounds} round(s); {os.cpu_count()} CPUs")
    print("headline: configs/connect-standalone.properties + connect-file-source/-sink.properties as shipped "
          "(JsonConverter with schemas, REST on, Kafka Connect's batch.size and max.poll.records, "
          "offset.flush.interval.ms=10000)")
    print(f"every run changes only: {INTRINSIC}")
    print(f"bare loops: Headrace's client settings, batch {args.batch}; the tuned variant changes:")
    for variant in chosen.values():
        if not variant.shipped:
            print(f"  {variant.title()}")
    print(f"{'case (median of the rounds)':<58}{'seconds':>9}{'records/s':>12}{'MB/s':>8}   records/s per round")

    def row(label: str, key: str) -> None:
        secs = statistics.median(results[key])
        rounds = " ".join(f"{args.records / s:,.0f}" for s in results[key])
        print(f"{label:<58}{secs:>9.2f}{args.records / secs:>12,.0f}{mb / secs:>8.1f}   {rounds}")

    def ratio(label: str, bare: str, ours: str) -> None:
        # each round's pipeline against the baseline measured in the same round, so that a busy spell on a
        # shared machine weighs on both sides of a ratio
        each = [b / o for b, o in zip(results[bare], results[ours], strict=True)]
        print(f"  {label} ratio, headrace / bare: {statistics.median(each):.2f} (median; per round "
              + " ".join(f"{r:.2f}" for r in each) + ")")

    def tag(name: str) -> str:
        return "shipped, headline" if name == "shipped" else name

    row("bare confluent-kafka producer loop", "bare-p")
    for name in chosen:
        row(f"headrace FileStreamSource -> Kafka ({tag(name)})", f"source-{name}")
        ratio(f"source {name}", "bare-p", f"source-{name}")
    row("bare confluent-kafka consumer loop -> file", "bare-c")
    for name in chosen:
        row(f"headrace Kafka -> FileStreamSink ({tag(name)})", f"sink-{name}")
        ratio(f"sink {name}", "bare-c", f"sink-{name}")


if __name__ == "__main__":
    main()
