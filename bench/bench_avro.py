"""AvroConverter records/s, both directions, beside confluent-kafka's AvroSerializer/AvroDeserializer on the
same records in the same run.

Both talk to Headrace's schema registry (a SchemaStore on an embedded log in a temp directory, served over
HTTP on a free port) and use the same registered 10-field schema, so both write the same bytes (checked).
Each side is given its natural input: Connect Structs for the converter (``from_connect_batch`` in batches
of ``--batch``, as the runtime calls it), dicts for Confluent's serializer (one call a record, as a
producer calls it); reading, the converter's ``to_connect_batch`` gives Structs, Confluent's deserializer
dicts. Records are made in chunks outside the timed calls; the timings add up the calls only.

    python bench/bench_avro.py --records 1000000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from connect.api import Schema, SchemaBuilder, Struct  # noqa: E402
from connect.log import open_log_backend  # noqa: E402
from connect.schema_registry.store import SchemaStore  # noqa: E402
from plugins.converters.avro import AvroConverter  # noqa: E402
from rest import RestServer  # noqa: E402
from rest.registry_app import create_registry_app  # noqa: E402

SCHEMA = (SchemaBuilder.struct().name("bench.Order")
          .field("id", Schema.INT64_SCHEMA).field("customer", Schema.STRING_SCHEMA)
          .field("email", Schema.STRING_SCHEMA).field("quantity", Schema.INT32_SCHEMA)
          .field("price", Schema.FLOAT64_SCHEMA).field("paid", Schema.BOOLEAN_SCHEMA)
          .field("weight", Schema.FLOAT32_SCHEMA).field("created", Schema.INT64_SCHEMA)
          .field("note", Schema.OPTIONAL_STRING_SCHEMA).field("code", Schema.BYTES_SCHEMA).build())
NAMES = [f.name for f in SCHEMA.fields()]


def row(i: int) -> list:
    return [i, f"customer-{i % 5000}", f"user{i}@example.com", i % 100, i * 0.25, i % 2 == 0, 1.5,
            1_764_000_000_000 + i, None if i % 3 else f"note {i}", i.to_bytes(4, "big")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=20_000)
    args = parser.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="bench-avro-")
    backend = open_log_backend({"embedded.log.dir": str(Path(tmp.name) / "log")})
    store = SchemaStore(backend)
    store.start()
    settings = {"listeners": "http://127.0.0.1:0"}
    server = RestServer(create_registry_app(store, settings), settings)
    server.start()
    try:
        ours = AvroConverter()
        ours.configure({"schema.registry.url": server.url}, False)
        first = ours.from_connect_data("orders", SCHEMA, Struct.from_valid_values(SCHEMA, row(0)))
        assert first is not None
        registered = store.schema_by_id(int.from_bytes(first[1:5], "big")).schema
        client = SchemaRegistryClient({"url": server.url})
        serializer = AvroSerializer(client, registered)
        deserializer = AvroDeserializer(client)
        ctx = SerializationContext("orders", MessageField.VALUE)
        assert serializer(dict(zip(NAMES, row(0), strict=True)), ctx) == first

        t_ours_w = t_theirs_w = t_ours_r = t_theirs_r = 0.0
        clock = time.perf_counter
        for start in range(0, args.records, args.chunk):
            rows = [row(i) for i in range(start, min(start + args.chunk, args.records))]
            structs = [Struct(SCHEMA) for _ in rows]
            for struct, values in zip(structs, rows, strict=True):
                for name, value in zip(NAMES, values, strict=True):
                    struct.put(name, value)
            dicts = [dict(zip(NAMES, values, strict=True)) for values in rows]

            t0 = clock()
            written: list = []
            for b in range(0, len(structs), args.batch):
                written += ours.from_connect_batch("orders", SCHEMA, structs[b:b + args.batch])
            t1 = clock()
            theirs = [serializer(d, ctx) for d in dicts]
            t2 = clock()
            read: list = []
            for b in range(0, len(written), args.batch):
                read += ours.to_connect_batch("orders", written[b:b + args.batch])[1]
            t3 = clock()
            decoded = [deserializer(data, ctx) for data in theirs]
            t4 = clock()
            t_ours_w += t1 - t0
            t_theirs_w += t2 - t1
            t_ours_r += t3 - t2
            t_theirs_r += t4 - t3
            if written != theirs or read != structs or decoded != dicts:
                raise SystemExit(f"outputs differ in the chunk from record {start}")

        n = args.records
        print(f"records: {n:,} of a 10-field schema, converter batches of {args.batch}; the same bytes both sides")
        print(f"{'direction':<28}{'AvroConverter':>16}{'confluent-kafka':>18}{'ratio':>8}")
        for label, mine, base in (("Connect -> bytes (write)", t_ours_w, t_theirs_w),
                                  ("bytes -> Connect (read)", t_ours_r, t_theirs_r)):
            print(f"{label:<28}{n / mine:>12,.0f} r/s{n / base:>14,.0f} r/s{base / mine:>7.2f}x")
    finally:
        server.stop()
        store.close()
        backend.close()
        tmp.cleanup()


if __name__ == "__main__":
    main()
