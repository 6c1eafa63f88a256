"""The realistic JSON sink path, stage by stage, beside a StringConverter baseline in the same run.

Issue #37's realistic pipeline reads JSON records such as
``{"id":7,"user":"user-7","amount":12.5,"country":"DE","ts":1700000000007,"ok":true}`` with
JsonConverter (``schemas.enable=false``) and writes them with FileStreamSink, which prints each map as
Java prints a ``java.util.HashMap``. This bench times that path's two plugin stages on their own, in the
batches the runtime hands them (``--batch``, ``max.poll.records``' default), in records per CPU-second
of the benchmark's thread so that figures from a loaded machine compare:

- convert: ``JsonConverter.to_connect_batch`` on the raw bytes;
- sink:    ``FileStreamSinkTask.put`` of a SinkRecordBatch of the converted values (line formatting,
           encoding and the write to a file in a temp directory; no flush).

JsonConverter gives a batch of objects of one key set as a ``MapColumns`` (connect/api/map_columns.py): the
maps orjson read, whose columns are worked out when first asked for (by the first transform, or by the sink
without transforms), so that work counts in that stage; the transforms and the sink then work a column at a
time. The baseline runs the same bytes through ``StringConverter`` and puts the strings, so the JSON stages'
cost can be read against it on a loaded machine. ``--transforms`` also times the issue's chain
(InsertField$Value static field, MaskField$Value, ReplaceField$Value renames) between the two stages and
formats its output; ``--profile`` prints a cProfile of the JSON stages instead of timing them.

    python bench/bench_json_sink_path.py [--records 200000] [--rounds 3] [--transforms] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from connect.api import Converter, SinkRecordBatch, TimestampType, Transformation  # noqa: E402
from plugins.converters.json import JsonConverter  # noqa: E402
from plugins.converters.string import StringConverter  # noqa: E402
from plugins.file.sink import FileStreamSinkTask  # noqa: E402

TOPIC = "orders"
COUNTRIES = ("DE", "FR", "US", "JP", "BR", "IN", "GB", "ES")


def payloads(count: int) -> list[bytes]:
    """``count`` JSON records as a producer would write them (compact, keys in one order)."""
    out = []
    for i in range(count):
        record = {
            "id": i,
            "user": f"user-{i % 10_000}",
            "amount": round((i * 37) % 100_000 / 100, 2),
            "country": COUNTRIES[i % len(COUNTRIES)],
            "ts": 1_700_000_000_000 + i,
            "ok": i % 3 != 0,
        }
        out.append(json.dumps(record, separators=(",", ":")).encode())
    return out


def converter(kind: str) -> Converter:
    conv: Converter = JsonConverter() if kind == "json" else StringConverter()
    conv.configure({"schemas.enable": "false"} if kind == "json" else {}, False)
    return conv


def chain() -> list[Transformation]:
    from plugins.transforms import InsertField, MaskField, ReplaceField

    insert = InsertField.Value()
    insert.configure({"static.field": "source", "static.value": "bench"})
    mask = MaskField.Value()
    mask.configure({"fields": "user"})
    rename = ReplaceField.Value()
    rename.configure({"renames": "amount:value,ts:event_time"})
    return [insert, mask, rename]


def batch_of(values: Sequence[Any], first_offset: int) -> SinkRecordBatch:
    n = len(values)
    batch = SinkRecordBatch()
    batch.add(TOPIC, 0, range(first_offset, first_offset + n), [None] * n, TimestampType.NO_TIMESTAMP_TYPE,
              [None] * n, [None] * n, [None] * n, values)
    return batch


class Stages:
    """CPU seconds spent in each stage over one pass of all records."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {"convert": 0.0, "transforms": 0.0, "sink": 0.0}

    def timed(self, stage: str, call: Callable[[], Any]) -> Any:
        # CPU time of this thread: on a machine shared with other work, wall time mostly measures the others
        started = time.thread_time()
        result = call()
        self.seconds[stage] += time.thread_time() - started
        return result


def one_pass(kind: str, raw: list[bytes], batch_size: int, transforms: list[Transformation], out: Path) -> Stages:
    conv = converter(kind)
    task = FileStreamSinkTask()
    task.start({"file": str(out)})
    stages = Stages()
    try:
        for start in range(0, len(raw), batch_size):
            chunk = raw[start:start + batch_size]
            _, values = stages.timed("convert", lambda c=chunk: conv.to_connect_batch(TOPIC, c))
            batch = batch_of(values, start)
            for transform in transforms:
                batch = stages.timed("transforms", lambda t=transform, b=batch: t.apply_batch(b))
            stages.timed("sink", lambda b=batch: task.put(b))
    finally:
        task.stop()
        out.unlink(missing_ok=True)
    return stages


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:>12,.0f}" if seconds > 0 else f"{'-':>12}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=500, help="records per to_connect_batch/put call")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best of each is shown")
    parser.add_argument("--transforms", action="store_true", help="run the SMT chain between the stages")
    parser.add_argument("--profile", action="store_true", help="cProfile the JSON path instead of timing it")
    args = parser.parse_args()

    raw = payloads(args.records)
    transforms = chain() if args.transforms else []
    tmp = tempfile.TemporaryDirectory(prefix="bench-json-sink-")
    out = Path(tmp.name) / "sink.txt"

    one_pass("json", raw[:5_000], args.batch, transforms, out)  # warm caches and imports
    task = FileStreamSinkTask()
    task.start({"file": str(out)})
    _, sample = converter("json").to_connect_batch(TOPIC, raw[:1])
    sample_batch = batch_of(sample, 0)
    for transform in transforms:
        sample_batch = transform.apply_batch(sample_batch)
    task.put(sample_batch)
    task.stop()
    print(f"input:  {raw[0].decode()}")
    print(f"output: {out.read_text().rstrip()}")
    out.unlink()

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        one_pass("json", raw, args.batch, transforms, out)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
        return

    best: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for kind in ("string", "json"):  # interleaved, so load changes hit both alike
            seconds = one_pass(kind, raw, args.batch, transforms if kind == "json" else [], out).seconds
            mine = best.setdefault(kind, dict(seconds))
            for stage, value in seconds.items():
                mine[stage] = min(mine[stage], value)

    n = args.records
    print(f"python {sys.version.split()[0]}, {n:,} records, batches of {args.batch}, best of {args.rounds} rounds")
    print("records per CPU-second of this thread (wall time varies with the machine's load):")
    print(f"{'path':<8} {'convert rec/s':>13} {'smt rec/s':>12} {'sink rec/s':>12} {'total rec/s':>12} "
          f"{'us/record':>10}")
    for kind in ("string", "json"):
        s = best[kind]
        total = sum(s.values())
        print(f"{kind:<8} {rate(n, s['convert']):>13} {rate(n, s['transforms'])} {rate(n, s['sink'])} {rate(n, total)} "
              f"{total / n * 1e6:>10.2f}")
    ratio = sum(best["json"].values()) / sum(best["string"].values())
    print(f"json path costs {ratio:.1f}x the string baseline")


if __name__ == "__main__":
    main()
