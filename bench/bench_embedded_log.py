"""Append and read throughput of the embedded log, beside a plain-file baseline measured in the same run.

    python bench/bench_embedded_log.py                      # 2,000,000 records of 100 bytes
    python bench/bench_embedded_log.py --records 500000 --value-size 100 --vary

The log path appends with ``send_batch`` + ``flush`` (batches of --batch
records) and reads with a consumer's ``poll``. The baseline writes the same
value bytes to a file, one ``write`` per batch, and reads them back in 1 MiB
chunks, cut into the same value objects, with no log logic at all. MB/s
counts value bytes only.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from itertools import accumulate, pairwise

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from connect.api.topic_partition import TopicPartition
from connect.log.api import NewTopic
from connect.log.embedded.backend import EmbeddedBackend


def make_batches(count: int, batch: int, size: int, vary: bool) -> list[list[bytes]]:
    """A few distinct batches, reused round-robin, so generating input costs nothing in the timings."""
    rng = random.Random(42)
    out = []
    for _ in range(min(8, count)):
        if vary:
            out.append([rng.randbytes(rng.randint(size // 2, size * 3 // 2)) for _ in range(batch)])
        else:
            out.append([rng.randbytes(size) for _ in range(batch)])
    return out


def bench_log(directory: str, batches: list[list[bytes]], n_batches: int, poll_max: int) -> dict[str, float]:
    backend = EmbeddedBackend(directory, {"log.retention.check.interval.ms": 3_600_000})
    try:
        backend.admin().create_topic(NewTopic("bench", 1))
        producer = backend.producer()
        records = 0
        t0 = time.perf_counter()
        c0 = time.process_time()
        for i in range(n_batches):
            values = batches[i % len(batches)]
            producer.send_batch("bench", 0, values)
            records += len(values)
        producer.flush()
        append_s = time.perf_counter() - t0
        append_cpu = time.process_time() - c0
        producer.close()

        consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
        tp = TopicPartition("bench", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning([tp])
        seen = 0
        nbytes = 0
        t0 = time.perf_counter()
        c0 = time.process_time()
        while seen < records:
            for fb in consumer.poll(1.0, poll_max):
                seen += len(fb)
                nbytes += sum(map(len, fb.values))
        read_s = time.perf_counter() - t0
        read_cpu = time.process_time() - c0
        consumer.close()
        disk = sum(
            os.path.getsize(os.path.join(directory, "bench-0", f))
            for f in os.listdir(os.path.join(directory, "bench-0"))
        )
        return {"records": records, "bytes": nbytes, "append_s": append_s, "append_cpu": append_cpu,
                "read_s": read_s, "read_cpu": read_cpu, "disk": disk}
    finally:
        backend.close()


def bench_baseline(path: str, batches: list[list[bytes]], n_batches: int) -> dict[str, float]:
    records = 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    for i in range(n_batches):
        values = batches[i % len(batches)]
        os.write(fd, b"".join(values))
        records += len(values)
    os.close(fd)
    append_s = time.perf_counter() - t0
    append_cpu = time.process_time() - c0

    # cut the bytes back into the same values using the known lengths: the least a reader must do
    lengths = [list(map(len, b)) for b in batches]
    seen = 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    fd = os.open(path, os.O_RDONLY)
    pos = 0
    i = 0
    pending = b""
    while seen < records:
        chunk = pending + os.pread(fd, 1 << 20, pos)
        pos += len(chunk) - len(pending)
        start = 0
        while i < n_batches:
            lens = lengths[i % len(batches)]
            bounds = list(accumulate(lens, initial=start))
            if bounds[-1] > len(chunk):
                break
            values = [chunk[a:b] for a, b in pairwise(bounds)]
            seen += len(values)
            start = bounds[-1]
            i += 1
        pending = chunk[start:]
    os.close(fd)
    read_s = time.perf_counter() - t0
    read_cpu = time.process_time() - c0
    return {"records": records, "append_s": append_s, "append_cpu": append_cpu,
            "read_s": read_s, "read_cpu": read_cpu, "disk": os.path.getsize(path)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--vary", action="store_true", help="value sizes uniform in [size/2, 1.5*size]")
    ap.add_argument("--poll-max", type=int, default=100_000, help="max_records per consumer poll")
    ap.add_argument("--dir", default=None, help="where to write (default: a fresh temporary directory)")
    args = ap.parse_args()

    n_batches = max(1, args.records // args.batch)
    batches = make_batches(n_batches, args.batch, args.value_size, args.vary)
    root = tempfile.mkdtemp(prefix="bench-embedded-", dir=args.dir)
    try:
        logged = bench_log(os.path.join(root, "log"), batches, n_batches, args.poll_max)
        base = bench_baseline(os.path.join(root, "plain.bin"), batches, n_batches)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    records = logged["records"]
    mb = logged["bytes"] / 1e6
    print(f"records={records:,} batch={args.batch} value_size={args.value_size}"
          f"{' (varied)' if args.vary else ''} value_bytes={mb:.1f} MB "
          f"disk: log={logged['disk'] / 1e6:.1f} MB plain={base['disk'] / 1e6:.1f} MB")
    print(f"{'path':<28}{'records/s':>14}{'MB/s':>10}{'wall s':>9}{'cpu s':>8}")
    rows = [
        ("log append (send_batch)", logged["append_s"], logged["append_cpu"]),
        ("log read (poll)", logged["read_s"], logged["read_cpu"]),
        ("baseline write", base["append_s"], base["append_cpu"]),
        ("baseline read+split", base["read_s"], base["read_cpu"]),
    ]
    for name, secs, cpu in rows:
        print(f"{name:<28}{records / secs:>14,.0f}{mb / secs:>10.1f}{secs:>9.2f}{cpu:>8.2f}")


if __name__ == "__main__":
    main()
