"""Records/s of the realistic sink-side SMT chain (issue #37 point 1) through the runtime's TransformationChain.

Values are what JsonConverter (schemas.enable=false) makes of ``{"id", "user", "amount", "country", "ts",
"ok"}``: schemaless dicts. The chain is InsertField$Value (a static field) -> MaskField$Value (one field) ->
ReplaceField$Value (two renames), as the issue's Java comparison runs it. Each case is timed in one run, beside:

- ``none``: the same records handed over with no transform at all (the floor of the loop),
- each SMT alone, so a regression in one transform shows by name,
- the three-SMT chain.

Four ways the worker hands records to the chain are measured:

- ``columns``: ``chain.apply_batch`` over a SinkRecordBatch whose values are a ``MapColumns``, as JsonConverter
  makes a batch of objects of one key set (the transforms work on its columns; Structs: as ``batch``),
- ``batch``: ``chain.apply_batch`` over a SinkRecordBatch of ``--batch`` records (what WorkerSinkTask does for
  batches converted by column, ``consumer.max.poll.records`` = 500 by default) whose values are a list,
- ``list``: ``chain.apply_batch`` over a list of SinkRecords (records already made, e.g. by a sink reading them),
- ``record``: ``chain.apply`` per record (WorkerSinkTask's path for records with headers, or a chain with a
  predicate).

``--struct`` runs the same over Struct values (JsonConverter with schemas on). ``--profile MODE:CASE`` prints
a cProfile of one case (e.g. ``batch:chain``) instead. Every case's output is read as FileStreamSink's ``put``
reads it (the columns of maps held so, else the ``values`` column of a SinkRecordBatch, else each record's
value), so the time of making records or maps a transform deferred is counted when a sink would pay it; the
time of working out the columns of a ``MapColumns`` is counted too (the converter leaves it to the first use).

Rates are records per CPU-second of this (single-threaded) process: on a shared machine its CPU time moves far
less with the load than wall time does; on an idle machine the two are the same.

    python bench/bench_smt_chain.py [--records N] [--batch B] [--rounds R] [--struct] [--profile batch:chain]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from connect.api import Schema, SchemaBuilder, SinkRecord, SinkRecordBatch, Struct, TimestampType  # noqa: E402
from connect.api.map_columns import MapColumns  # noqa: E402
from connect.runtime.transformation_chain import TransformationChain, TransformStage  # noqa: E402
from plugins.transforms import InsertField, MaskField, ReplaceField  # noqa: E402

T0 = 1_763_856_000_000
TOPIC = "payments"
COUNTRIES = ("DE", "FR", "US", "JP", "BR")
SCHEMA = (
    SchemaBuilder.struct()
    .field("id", Schema.INT64_SCHEMA)
    .field("user", Schema.STRING_SCHEMA)
    .field("amount", Schema.FLOAT64_SCHEMA)
    .field("country", Schema.STRING_SCHEMA)
    .field("ts", Schema.INT64_SCHEMA)
    .field("ok", Schema.BOOLEAN_SCHEMA)
    .build()
)

SMT_CONFIGS: dict[str, tuple[type, dict[str, str]]] = {
    "insert": (InsertField.Value, {"static.field": "source", "static.value": "headrace"}),
    "mask": (MaskField.Value, {"fields": "user"}),
    "replace": (ReplaceField.Value, {"renames": "id:payment_id,country:country_code"}),
}


def make_chain(aliases: Sequence[str]) -> TransformationChain | None:
    if not aliases:
        return None
    stages = []
    for alias in aliases:
        cls, config = SMT_CONFIGS[alias]
        transform = cls()
        transform.configure(config)
        stages.append(TransformStage(alias, transform))
    return TransformationChain(stages)


def make_values(n: int, struct: bool) -> list[Any]:
    values: list[Any] = []
    for i in range(n):
        fields = {"id": i, "user": f"user-{i % 1000}", "amount": (i % 10_000) / 100, "country": COUNTRIES[i % 5],
                  "ts": T0 + i, "ok": i % 7 != 0}
        if struct:
            value = Struct(SCHEMA)
            for name, field_value in fields.items():
                value.put(name, field_value)
            values.append(value)
        else:
            values.append(fields)
    return values


def make_batches(values: list[Any], size: int, struct: bool) -> list[SinkRecordBatch]:
    schema = SCHEMA if struct else None
    batches = []
    for start in range(0, len(values), size):
        chunk = values[start:start + size]
        n = len(chunk)
        batch = SinkRecordBatch()
        batch.add(TOPIC, start // size % 2, list(range(start, start + n)), [T0 + start + i for i in range(n)],
                  TimestampType.CREATE_TIME, [None] * n, [None] * n, [schema] * n, chunk)
        batches.append(batch)
    return batches


def make_columns(values: list[Any], size: int, struct: bool) -> list[SinkRecordBatch]:
    batches = make_batches(values, size, struct)
    if struct:
        return batches
    columnar = []
    for batch in batches:
        n = len(batch)
        maps = MapColumns.of([dict(value) for value in batch.values])  # fresh maps, as a converter reads them
        made = SinkRecordBatch()
        made.add(TOPIC, batch[0].kafka_partition, [r.kafka_offset for r in batch], batch.timestamps,
                 TimestampType.CREATE_TIME, [None] * n, [None] * n, [None] * n, maps)  # type: ignore[arg-type]
        columnar.append(made)
    return columnar


def make_lists(values: list[Any], size: int, struct: bool) -> list[list[SinkRecord]]:
    schema = SCHEMA if struct else None
    return [[SinkRecord(TOPIC, 0, None, None, schema, value, start + i, T0 + start + i)
             for i, value in enumerate(values[start:start + size])]
            for start in range(0, len(values), size)]


def put_values(records: Sequence[Any]) -> Sequence[Any]:
    """The values as FileStreamSink.put reads them: by column when it can, else map by map."""
    if isinstance(records, SinkRecordBatch):
        maps = records.value_maps()
        if maps is not None and maps.table() is not None:
            return maps  # printed from its columns: no map made
        return records.values
    return [r.value for r in records]


def run_batch(chain: TransformationChain | None, batches: Sequence[Sequence[Any]]) -> int:
    done = 0
    for batch in batches:
        out = chain.apply_batch(batch) if chain is not None else batch
        done += len(put_values(out))
    return done


def run_record(chain: TransformationChain | None, batches: Sequence[Sequence[Any]]) -> int:
    done = 0
    for batch in batches:
        if chain is None:
            out = batch
        else:
            apply = chain.apply
            out = [r for r in map(apply, batch) if r is not None]
        done += len(put_values(out))
    return done


CASES = {"none": (), "insert": ("insert",), "mask": ("mask",), "replace": ("replace",),
         "chain": ("insert", "mask", "replace")}
MODES: dict[str, tuple[Callable[..., Any], Callable[..., int]]] = {
    "columns": (make_columns, run_batch),
    "batch": (make_batches, run_batch),
    "list": (make_lists, run_batch),
    "record": (make_lists, run_record),
}


def timed(mode: str, case: str, values: list[Any], size: int, struct: bool) -> float:
    """Records per CPU-second of one case; its inputs are made before the clock starts."""
    make_input, run = MODES[mode]
    inputs = make_input(values, size, struct)
    chain = make_chain(CASES[case])
    started = time.process_time()
    done = run(chain, inputs)
    elapsed = time.process_time() - started
    assert done == len(values), (mode, case, done)
    return done / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=500, help="records per batch (consumer.max.poll.records)")
    parser.add_argument("--rounds", type=int, default=3, help="best of R rounds per case")
    parser.add_argument("--struct", action="store_true", help="Struct values instead of schemaless maps")
    parser.add_argument("--modes", default="columns,batch,list,record")
    parser.add_argument("--profile", metavar="MODE:CASE", help="cProfile one case, e.g. batch:chain")
    args = parser.parse_args()
    values = make_values(args.records, args.struct)
    kind = "Struct" if args.struct else "schemaless map"
    if args.profile:
        mode, case = args.profile.split(":")
        profiler = cProfile.Profile()
        profiler.enable()
        timed(mode, case, values, args.batch, args.struct)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        return
    load = os.getloadavg()[0]
    print(f"{args.records:,} SinkRecords of {kind} values, batches of {args.batch}, best of {args.rounds}; "
          f"load average {load:.2f} on {os.cpu_count()} cores")
    modes = args.modes.split(",")
    print(f"{'case':<10}" + "".join(f"{mode + ' rec/CPU-s':>18}" for mode in modes))
    for case in CASES:
        rates = [max(timed(mode, case, values, args.batch, args.struct) for _ in range(args.rounds))
                 for mode in modes]
        print(f"{case:<10}" + "".join(f"{rate:>18,.0f}" for rate in rates))


if __name__ == "__main__":
    main()
