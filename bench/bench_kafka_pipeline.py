"""Records/s of Headrace pipelines on a real Kafka broker, beside bare confluent-kafka loops in the same run.

Two pipelines, each run by a real ``connect-standalone`` process:

- FileStreamSource -> Kafka, beside a bare producer loop that reads the same
  file and sends the same records (each line, no key, a CreateTime per batch
  of lines) with the same client settings (acks=all, idempotence, linger.ms,
  batch sizes: Headrace's producer defaults);
- Kafka -> FileStreamSink, beside a bare consumer loop that reads the same
  topic and writes each value and a newline to a file, with the same client
  settings (Headrace's consumer defaults).

Rates are first record to last (worker start-up left out): for the source,
from the first record in the topic to the last one acknowledged; for the sink,
from the first byte in the output file to the last (the sink worker commits,
and so flushes and fsyncs its file, every 500 ms; the bare loop fsyncs once at
the end). Each case runs ``--rounds`` times, alternating with its baseline. The ratio is taken per
round, pipeline against the baseline run just before it, and the median is
reported: on a shared machine a busy spell then weighs on both sides.

    python bench/bench_kafka_pipeline.py --records 1000000
    python bench/bench_kafka_pipeline.py --bootstrap-servers 127.0.0.1:9092   # an existing broker
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
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connect.log.kafka.config import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS

# FileStreamSink makes its output durable (flush + fsync) at each offset commit, and only then is all of
# it in the file; a short interval lets the last records show up soon after they are put.
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
def _worker(work: Path, name: str, bootstrap: str, connector: dict[str, object], max_poll: int,
            flush_ms: int = 60000) -> subprocess.Popen:
    # a fresh offsets file and config topic each time: every round starts from the beginning
    (work / f"{name}.offsets").unlink(missing_ok=True)
    (work / f"{name}-worker.properties").write_text(
        f"bootstrap.servers={bootstrap}\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
        f"offset.storage.file.filename={work / (name + '.offsets')}\n"
        f"config.storage.topic=bench-configs-{uuid.uuid4().hex[:8]}\n"
        f"consumer.max.poll.records={max_poll}\n"
        f"offset.flush.interval.ms={flush_ms}\n"
        "listeners=\n"
    )
    (work / f"{name}.properties").write_text("".join(f"{k}={v}\n" for k, v in connector.items()))
    exe = Path(sys.executable).with_name("connect-standalone")
    log = open(work / f"{name}-worker.log", "wb")  # lives as long as the process
    return subprocess.Popen([str(exe), str(work / f"{name}-worker.properties"), str(work / f"{name}.properties")],
                            stdout=log, stderr=subprocess.STDOUT)


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
            raise SystemExit(f"worker exited early; see {log}")
        time.sleep(0.02)


def source_pipeline(work: Path, bootstrap: str, topic: str, partitions: int, src: Path, records: int,
                    batch: int) -> float:
    ends = _EndOffsets(bootstrap, topic, partitions)
    proc = _worker(work, "source", bootstrap, {"name": "bench-source", "connector.class": "FileStreamSource",
                                               "file": src, "topic": topic, "batch.size": batch}, batch)
    try:
        return _first_to_last(proc, ends, records, work / "source-worker.log")
    finally:
        _stop(proc)
        ends.close()


def sink_pipeline(work: Path, bootstrap: str, topic: str, dst: Path, expected_bytes: int, batch: int) -> float:
    proc = _worker(work, "sink", bootstrap, {"name": f"bench-sink-{uuid.uuid4().hex[:8]}",
                                             "connector.class": "FileStreamSink", "file": dst, "topics": topic},
                   batch, SINK_FLUSH_MS)
    try:
        return _first_to_last(proc, lambda: dst.stat().st_size if dst.exists() else 0, expected_bytes,
                              work / "sink-worker.log")
    finally:
        _stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--width", type=int, default=100, help="bytes per record value")
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--batch", type=int, default=5000,
                        help="FileStreamSource batch.size, sink max.poll.records and the bare consumer's batch")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bootstrap-servers", help="use this broker instead of starting one")
    args = parser.parse_args()

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
            file_bytes = src.stat().st_size
            mb = value_bytes / 1e6
            results: dict[str, list[float]] = {k: [] for k in ("bare-p", "source", "bare-c", "sink")}
            for r in range(args.rounds):
                t_bare = f"bench-bare-{uuid.uuid4().hex[:8]}"
                t_src = f"bench-src-{uuid.uuid4().hex[:8]}"
                _create_topic(bootstrap, t_bare, args.partitions)
                _create_topic(bootstrap, t_src, args.partitions)
                results["bare-p"].append(bare_producer(bootstrap, t_bare, src, args.batch))
                results["source"].append(source_pipeline(work, bootstrap, t_src, args.partitions, src,
                                                         args.records, args.batch))
                # both sinks read the topic the bare producer filled
                results["bare-c"].append(bare_consumer(bootstrap, t_bare, args.partitions, args.records,
                                                       work / f"bare-{r}.txt", args.batch))
                sink_out = work / f"sink-{r}.txt"
                results["sink"].append(sink_pipeline(work, bootstrap, t_bare, sink_out, file_bytes, args.batch))
                if sink_out.read_bytes() != src.read_bytes() and args.partitions == 1:
                    raise SystemExit("the sink's output differs from the source file")
                for f in (sink_out, work / f"bare-{r}.txt"):
                    f.unlink()
    finally:
        if kafka is not None:
            kafka.cleanup()

    print(f"Kafka at {bootstrap}: {args.records:,} records of {args.width} bytes ({mb:.1f} MB), "
          f"{args.partitions} partition(s), batch {args.batch}, {args.rounds} round(s); {os.cpu_count()} CPUs")
    # not the shipped configs: say which settings differ, so the figures are not read as the defaults'
    print(f"headrace settings changed from configs/: StringConverter, source batch.size={args.batch}, "
          f"consumer.max.poll.records={args.batch}, offset.flush.interval.ms=60000, listeners= (no REST)")
    print(f"{'case (median of the rounds)':<46}{'seconds':>9}{'records/s':>12}{'MB/s':>8}   records/s per round")

    def row(label: str, key: str) -> None:
        secs = statistics.median(results[key])
        rounds = " ".join(f"{args.records / s:,.0f}" for s in results[key])
        print(f"{label:<46}{secs:>9.2f}{args.records / secs:>12,.0f}{mb / secs:>8.1f}   {rounds}")

    def ratio(label: str, bare: str, ours: str) -> None:
        # each round's pipeline against the baseline measured just before it, so that a busy spell on a
        # shared machine weighs on both sides of a ratio
        each = [b / o for b, o in zip(results[bare], results[ours], strict=True)]
        print(f"  {label} ratio, headrace / bare: {statistics.median(each):.2f} (median; per round "
              + " ".join(f"{r:.2f}" for r in each) + ")")

    row("bare confluent-kafka producer loop", "bare-p")
    row("headrace FileStreamSource -> Kafka", "source")
    ratio("source", "bare-p", "source")
    row("bare confluent-kafka consumer loop -> file", "bare-c")
    row("headrace Kafka -> FileStreamSink", "sink")
    ratio("sink", "bare-c", "sink")


if __name__ == "__main__":
    main()
