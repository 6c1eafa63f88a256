"""End-to-end records/s of FileStreamSource -> topic -> FileStreamSink through a real worker process.

Baseline, measured in the same run: a plain Python loop that copies the same
lines from one file to another (no log, no connector logic).

    python bench/bench_file_pipeline.py --lines 1000000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def baseline(src: Path, dst: Path) -> float:
    started = time.perf_counter()
    with open(src, encoding="utf-8") as fin, open(dst, "w", encoding="utf-8") as fout:
        for line in fin:
            fout.write(line.rstrip("\n") + "\n")
        fout.flush()
        os.fsync(fout.fileno())
    return time.perf_counter() - started


def pipeline(work: Path, src: Path, lines: int, flush_ms: int, extra: list[str]) -> tuple[float, float]:
    (work / "worker.properties").write_text(
        "".join(line + "\n" for line in extra) +
        f"embedded.log.dir={work / 'data'}\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
        f"offset.storage.file.filename={work / 'connect.offsets'}\n"
        f"offset.flush.interval.ms={flush_ms}\n"
        "listeners=\n"
    )
    (work / "source.properties").write_text(
        f"name=bench-source\nconnector.class=FileStreamSource\nfile={src}\ntopic=bench\nbatch.size=5000\n"
    )
    sink = work / "sink.txt"
    (work / "sink.properties").write_text(
        f"name=bench-sink\nconnector.class=FileStreamSink\nfile={sink}\ntopics=bench\nconsumer.override.max.poll.records=5000\n"
    )
    exe = Path(sys.executable).with_name("connect-standalone")
    started = time.perf_counter()
    with open(work / "worker.log", "wb") as log:
        proc = subprocess.Popen([str(exe), str(work / "worker.properties"), str(work / "source.properties"),
                                 str(work / "sink.properties")], stdout=log, stderr=subprocess.STDOUT)
    try:
        first = None
        while True:
            n = _count_lines(sink)
            if first is None and n > 0:
                first = time.perf_counter()
            if n >= lines:
                break
            if proc.poll() is not None:
                raise SystemExit(f"worker exited early; see {work / 'worker.log'}")
            time.sleep(0.05)
        done = time.perf_counter()
    finally:
        proc.terminate()
        proc.wait(30)
    return done - started, done - (first or started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--width", type=int, default=100, help="bytes per line, newline included")
    parser.add_argument("--flush-ms", type=int, default=500,
                        help="offset.flush.interval.ms; FileStreamSink writes its buffer to the file at each flush")
    parser.add_argument("--worker-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="one more worker setting, e.g. python.switch.interval.us=5000 (repeatable)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="headrace-bench-") as tmp:
        work = Path(tmp)
        src = work / "source.txt"
        pad = "x" * (args.width - 12)
        with open(src, "w") as fh:
            for i in range(args.lines):
                fh.write(f"{i:010d}{pad}\n")
        mb = src.stat().st_size / 1e6
        base = baseline(src, work / "copy.txt")
        total, steady = pipeline(work, src, args.lines, args.flush_ms, args.worker_setting)
        print(f"file -> file, {args.lines:,} lines of {args.width} bytes ({mb:.1f} MB)"
              + (f", worker settings {' '.join(args.worker_setting)}" if args.worker_setting else ""))
        print(f"{'case':<44}{'seconds':>10}{'lines/s':>14}{'MB/s':>10}")
        print(f"{'baseline: plain Python line copy':<44}{base:>10.2f}{args.lines / base:>14,.0f}{mb / base:>10.1f}")
        print(f"{'headrace: worker incl. start-up':<44}{total:>10.2f}{args.lines / total:>14,.0f}{mb / total:>10.1f}")
        print(f"{'headrace: first sink line to last':<44}{steady:>10.2f}{args.lines / steady:>14,.0f}"
              f"{mb / steady:>10.1f}")
        print(f"headrace / baseline (first-to-last): {base / steady:.2f}")


if __name__ == "__main__":
    main()
