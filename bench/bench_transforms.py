"""Throughput of a typical transform chain, beside the bare loop, in one run.

Chain: InsertField$Value (static field) -> ReplaceField$Value (exclude one
field) -> TimestampRouter, over schemaless dict records and over Struct
records. The baseline loop creates the same records and does nothing else,
so the difference is what the chain costs.

    python bench/bench_transforms.py [--records N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from connect.api import ConnectRecord, Schema, SchemaBuilder, SourceRecord, Struct, Transformation
from plugins.transforms import InsertField, ReplaceField, TimestampRouter

BASE_TS = 1_700_000_000_000
SCHEMA = (
    SchemaBuilder.struct()
    .name("bench.Event")
    .field("id", Schema.INT64_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("score", Schema.FLOAT64_SCHEMA)
    .field("active", Schema.BOOLEAN_SCHEMA)
    .field("secret", Schema.OPTIONAL_STRING_SCHEMA)
    .build()
)
PARTITION = {"file": "events.log"}


def chain() -> list[Transformation]:
    insert = InsertField.Value()
    insert.configure({"static.field": "data_source", "static.value": "bench"})
    replace = ReplaceField.Value()
    replace.configure({"exclude": "secret"})
    router = TimestampRouter()
    router.configure({"topic.format": "${topic}-${timestamp}", "timestamp.format": "yyyyMMdd"})
    return [insert, replace, router]


def dict_record(i: int) -> SourceRecord:
    value = {"id": i, "name": "event", "score": 0.5, "active": True, "secret": "s"}
    return SourceRecord(PARTITION, {"pos": i}, "events", None, None, None, None, value, BASE_TS + i * 1000)


def struct_record(i: int) -> SourceRecord:
    value = Struct(SCHEMA).put("id", i).put("name", "event").put("score", 0.5).put("active", True).put("secret", "s")
    return SourceRecord(PARTITION, {"pos": i}, "events", None, None, None, SCHEMA, value, BASE_TS + i * 1000)


def run(make: Callable[[int], SourceRecord], count: int, transforms: list[Transformation]) -> float:
    """Records per second of creating ``count`` records and passing each through ``transforms``."""
    started = time.perf_counter()
    last: ConnectRecord | None = None
    for i in range(count):
        record: ConnectRecord | None = make(i)
        for transform in transforms:
            record = transform.apply(record)  # type: ignore[arg-type]
        last = record
    elapsed = time.perf_counter() - started
    assert last is not None
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args()

    sample = dict_record(0)
    for transform in chain():
        sample = transform.apply(sample)
    print(f"sample output: topic={sample.topic} value={sample.value}")
    print(f"python {sys.version.split()[0]}, {args.records:,} records per run")
    print(f"{'records':<8} {'baseline rec/s':>15} {'chain rec/s':>13} {'chain cost':>11} {'chain us/rec':>13}")
    for label, make in (("dict", dict_record), ("Struct", struct_record)):
        run(make, min(args.records, 5_000), chain())  # warm caches and the interpreter
        baseline = run(make, args.records, [])
        transformed = run(make, args.records, chain())
        # Cost: extra time per record relative to the bare loop.
        cost = (baseline / transformed - 1.0) * 100.0
        micros = (1.0 / transformed - 1.0 / baseline) * 1e6
        print(f"{label:<8} {baseline:>15,.0f} {transformed:>13,.0f} {cost:>10.0f}% {micros:>13.2f}")


if __name__ == "__main__":
    main()
