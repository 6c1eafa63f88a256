"""Records/s of the Redis connectors' tasks beside bare redis-py pipeline loops, in the same run.

Three cases, each against a real redis-server started by ``services/`` (append-only file, everysec):

- sink HASH: ``RedisSinkTask.put`` of batches of ``--batch`` SinkRecords (string key, a map value of four
  fields) beside a bare loop that sends the same batches as one ``pipeline(transaction=False)`` of HSETs;
- sink STREAM: the same with XADD;
- source: ``RedisStreamSourceTask.poll`` until every entry of a pre-filled stream has been read, each polled
  SourceRecordBatch then handed to ``commit_batch`` and acknowledged (XACK) the way the worker drives it once
  the log has the batch, beside the issue's baseline, a bare loop of ``XREADGROUP COUNT batch`` + ``XACK`` of
  what it read (redis-py's reply parsing: a dict of bytes per entry, no records), on a fresh group over the
  same stream. For context it also prints the same bare loop on a client that decodes replies (a dict of str
  per entry), and a bare loop that uses Redis exactly as the task does (replies decoded by the parser and
  read as sent, the XACK of a read in the same round trip as the next read) but makes no records: the task
  over that one is the cost of making the records alone.

What is measured is the task against Redis (the plugin's own cost over the client's), not the worker
around it: no log, no converters. The process takes the worker's garbage-collector settings
(``connect/runtime/gc_policy.py``) unless ``--default-gc``. ``--worker`` adds, per round, a real ``connect-standalone`` (embedded log)
running RedisStreamSource over the same stream: end-to-end records/s into the topic, to every entry
acknowledged. Each case runs ``--rounds`` times, alternating with its baseline; the ratio is taken per round
and the median reported.

    python bench/bench_redis.py --records 200000 --batch 1000 --rounds 3 [--worker] [--only source]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests package, for the task contexts

from bench._configs import WORKER, Variant, free_port, shipped_props, write_shipped
from connect.api import Schema, SinkRecord
from connect.runtime.gc_policy import settle_heap
from plugins.redis import RedisSinkTask, RedisStreamSourceTask
from services.redis import RedisService
from tests.plugins.task_contexts import SinkContext, SourceContext

SINK, SOURCE = "redis-sink.properties", "redis-stream-source.properties"
# Kafka Connect's consumer max.poll.records: at most this many records reach one put() with the shipped files
SHIPPED_PUT_BATCH = 500
STREAM = "bench-stream"


def variants(batch: int) -> dict[str, Variant]:
    """The headline (the shipped files) and the settings this benchmark used before issue #37."""
    return {
        "shipped": Variant("shipped"),
        "tuned": Variant("tuned", f"sink: put() batches of {batch} (consumer.override.max.poll.records={batch}); "
                                  f"source: batch.size={batch}, redis.stream.block=10; worker (--worker): "
                                  "key.converter=StringConverter, value.converter.schemas.enable dropped, "
                                  "offset.flush.interval.ms=1000, listeners= (no REST), and the source's "
                                  "value.converter / value.converter.schemas.enable dropped (so the worker's "
                                  "JsonConverter with schemas)",
                         worker={"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                                 "key.converter.schemas.enable": None, "value.converter.schemas.enable": None,
                                 "offset.flush.interval.ms": "1000", "listeners": ""},
                         source={"batch.size": str(batch), "redis.stream.block": "10", "value.converter": None,
                                 "value.converter.schemas.enable": None},
                         sink={"consumer.override.max.poll.records": str(batch)}),
    }


def _put_batch(variant: Variant) -> int:
    return int(variant.sink.get("consumer.override.max.poll.records") or SHIPPED_PUT_BATCH)


INTRINSIC = ("redis.uri (the server services/ started); sink: redis.type=STREAM for the STREAM case; source: "
             f"redis.stream.name={STREAM}, redis.stream.consumer.group fresh per run, and, with --worker, the REST "
             "port and a fresh directory per run (the shipped relative paths land there)")


def _batches(n: int, batch: int) -> list[list[SinkRecord]]:
    records = [SinkRecord("bench", 0, Schema.STRING_SCHEMA, f"key-{i}", None,
                          {"id": i, "name": f"item-{i}", "price": "12.50", "status": "new"}, i) for i in range(n)]
    return [records[i:i + batch] for i in range(0, n, batch)]


# the client CPU time per record of the last _timed run (this process: the loop, redis-py and the task, not
# redis-server); less moved than the wall figure by other work on the machine
_last_cpu_us = [0.0]


def _timed(fn: Callable[[], int]) -> float:
    start, cpu = time.perf_counter(), time.process_time()
    count = fn()
    _last_cpu_us[0] = (time.process_time() - cpu) / count * 1e6
    return count / (time.perf_counter() - start)


def sink_task(uri: str, kind: str, batches: list[list[SinkRecord]], variant: Variant) -> float:
    props = shipped_props(SINK, {"redis.uri": uri, "redis.type": kind}, variant.sink)
    task = RedisSinkTask()
    task.initialize(SinkContext(props))
    task.start(props)

    def run() -> int:
        for batch in batches:
            task.put(batch)
        return sum(map(len, batches))

    try:
        return _timed(run)
    finally:
        task.stop()


def sink_bare(uri: str, kind: str, batches: list[list[SinkRecord]]) -> float:
    client = redis.Redis.from_url(uri)

    def run() -> int:
        for batch in batches:
            pipe = client.pipeline(transaction=False)
            if kind == "HASH":
                for r in batch:
                    pipe.hset(f"bare-HASH:{r.key}", mapping={k: str(v) for k, v in r.value.items()})
            else:
                for r in batch:
                    pipe.xadd("bare-STREAM", {k: str(v) for k, v in r.value.items()})
            pipe.execute()
        return sum(map(len, batches))

    try:
        return _timed(run)
    finally:
        client.close()


def _fill(client: redis.Redis, stream: str, n: int) -> None:
    client.delete(stream)
    for start in range(0, n, 5000):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(start + 5000, n)):
            pipe.xadd(stream, {"id": str(i), "name": f"item-{i}", "price": "12.50", "status": "new"})
        pipe.execute()


def source_task(uri: str, stream: str, n: int, group: str, variant: Variant) -> float:
    props = shipped_props(SOURCE, {"redis.uri": uri, "redis.stream.name": stream,
                                   "redis.stream.consumer.group": group}, variant.source)
    task = RedisStreamSourceTask()
    task.initialize(SourceContext(props))
    task.start(props)

    def run() -> int:
        got = 0
        while got < n:
            batch = task.poll()
            if batch:
                task.commit_batch(batch)  # what the worker does once the log has the whole batch
                got += len(batch)
        task.commit()
        return got

    try:
        return _timed(run)
    finally:
        task.stop()


def source_bare(uri: str, stream: str, n: int, batch: int, group: str, block: int,
                decode: bool = False) -> float:
    """The issue's baseline: XREADGROUP COUNT batch + XACK of the ids read, with redis-py's own reply parsing
    (entry fields as a dict of bytes per entry). ``decode``: a context baseline, the same loop on a client
    that decodes replies (a dict of str per entry), still making no records."""
    client = redis.Redis.from_url(uri, decode_responses=decode)
    client.xgroup_create(stream, group, id="0-0", mkstream=True)

    def run() -> int:
        got = 0
        while got < n:
            reply = client.xreadgroup(group, "bare", {stream: ">"}, count=batch, block=block)
            for _, entries in (reply.items() if isinstance(reply, dict) else reply or []):
                ids = [entry_id for entry_id, _ in entries]
                client.xack(stream, group, *ids)
                got += len(ids)
        return got

    try:
        return _timed(run)
    finally:
        client.close()


def source_bare_piggyback(uri: str, stream: str, n: int, batch: int, group: str, block: int) -> float:
    """A context baseline with the task's own use of Redis and nothing else: replies decoded by the parser and
    left as sent (no dict per entry), the XACK of one read sent in the same round trip as the next read."""
    client = redis.Redis.from_url(uri, decode_responses=True, encoding_errors="surrogateescape")
    client.set_response_callback("XREADGROUP", lambda response, **_: response)
    client.xgroup_create(stream, group, id="0-0", mkstream=True)

    def run() -> int:
        got = 0
        ids: list[str] = []
        while got < n:
            pipe = client.pipeline(transaction=False)
            if ids:
                pipe.xack(stream, group, *ids)
            pipe.xreadgroup(group, "bare", {stream: ">"}, count=batch, block=block)
            reply = pipe.execute()[-1]
            ids = []
            for _, entries in (reply.items() if isinstance(reply, dict) else reply or []):
                ids = [entry_id for entry_id, _ in entries]
                got += len(ids)
        if ids:
            client.xack(stream, group, *ids)
        return got

    try:
        return _timed(run)
    finally:
        client.close()


def source_worker(uri: str, stream: str, n: int, group: str, variant: Variant) -> tuple[float, float]:
    """A real ``connect-standalone`` (embedded log) on the shipped worker file and redis-stream-source.properties
    with the variant's changes, running RedisStreamSource over the pre-filled stream: records/s from its start,
    and from its first delivered entry, to every entry acknowledged (XACK comes only once the log has the
    entry's record)."""
    client = redis.Redis.from_url(uri, decode_responses=True)
    last_id = client.xrevrange(stream, count=1)[0][0]
    with tempfile.TemporaryDirectory(prefix="headrace-bench-redis-") as tmp:
        work = Path(tmp)
        write_shipped(work / WORKER, WORKER, {"listeners": f"http://127.0.0.1:{free_port()}"}, variant.worker)
        write_shipped(work / SOURCE, SOURCE, {"redis.uri": uri, "redis.stream.name": stream,
                                              "redis.stream.consumer.group": group}, variant.source)
        exe = Path(sys.executable).with_name("connect-standalone")
        started = time.perf_counter()
        with open(work / "worker.log", "wb") as out:
            proc = subprocess.Popen([str(exe), WORKER, SOURCE], cwd=work, stdout=out, stderr=subprocess.STDOUT)
        first = None
        try:
            while True:
                info = next((g for g in client.xinfo_groups(stream) if g["name"] == group), None)
                if info is not None and info["last-delivered-id"] != "0-0":
                    first = first or time.perf_counter()
                    if info["last-delivered-id"] == last_id and info["pending"] == 0:
                        break
                if proc.poll() is not None:
                    raise SystemExit(f"worker exited early: {(work / 'worker.log').read_text()[-3000:]}")
                time.sleep(0.02)
            done = time.perf_counter()
        finally:
            proc.terminate()
            proc.wait(60)
            client.close()
    return n / (done - started), n / (done - (first or started))


def source_cases(client: redis.Redis, uri: str, n: int, rounds: int, worker: bool, variant: Variant) -> None:
    """The stream source beside its baselines, alternating, ``rounds`` times over one pre-filled stream (each
    case reads it whole through its own new group); the baselines read in the task's batch.size and block."""
    props = shipped_props(SOURCE, variant.source)
    batch = int(props["batch.size"])
    block = int(props.get("redis.stream.block", "100"))  # RedisStreamSource's default
    ratios = []
    client.flushall()
    _fill(client, STREAM, n)
    for r in range(rounds):
        tag = f"{variant.label}-{r}"
        bare = source_bare(uri, STREAM, n, batch, f"bare-{tag}", block)
        bare_cpu = _last_cpu_us[0]
        decoded = source_bare(uri, STREAM, n, batch, f"decoded-{tag}", block, decode=True)
        same = source_bare_piggyback(uri, STREAM, n, batch, f"same-{tag}", block)
        ours = source_task(uri, STREAM, n, f"task-{tag}", variant)
        ours_cpu = _last_cpu_us[0]
        ratios.append(ours / bare)
        line = (f"  source round {r + 1}: bare XREADGROUP+XACK loop {bare:>10,.0f} records/s   "
                f"RedisStreamSourceTask {ours:>10,.0f} records/s   ratio {ours / bare:.2f}   "
                f"(client CPU {bare_cpu:.2f} / {ours_cpu:.2f} us per record)\n"
                f"                  context: bare loop decoding to dicts of str {decoded:>10,.0f} records/s "
                f"(task / it {ours / decoded:.2f}); bare loop using Redis as the task does {same:>10,.0f} "
                f"records/s (task / it {ours / same:.2f})")
        if worker:
            from_start, steady = source_worker(uri, STREAM, n, f"worker-{tag}", variant)
            line += (f"\n                  worker (embedded log) {steady:>10,.0f} records/s "
                     f"from first entry read to all acknowledged ({from_start:,.0f} incl. start-up), "
                     f"{steady / bare:.2f} of bare")
        print(line, flush=True)
    print(f"source ratio, task / bare: {statistics.median(ratios):.2f} (median of {rounds}; batch.size {batch}, "
          f"block {block} ms)")


def sink_cases(client: redis.Redis, uri: str, n: int, rounds: int, variant: Variant) -> None:
    """Each sink type beside its bare pipeline loop, both handed the batches put() gets with ``variant``."""
    batch = _put_batch(variant)
    batches = _batches(n, batch)
    for kind in ("HASH", "STREAM"):
        ratios = []
        for r in range(rounds):
            client.flushall()
            bare = sink_bare(uri, kind, batches)
            client.flushall()
            ours = sink_task(uri, kind, batches, variant)
            ratios.append(ours / bare)
            print(f"  sink {kind:<6} round {r + 1}: bare pipeline loop {bare:>10,.0f} records/s   "
                  f"RedisSinkTask {ours:>10,.0f} records/s   ratio {ours / bare:.2f}", flush=True)
        print(f"sink {kind} ratio, task / bare: {statistics.median(ratios):.2f} (median of {rounds}; put() "
              f"batches of {batch})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1000, help="the tuned variant's put() batch and batch.size")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", nargs="+", choices=("shipped", "tuned"), default=["shipped", "tuned"],
                        help="which settings, in this order (shipped is the headline)")
    parser.add_argument("--worker", action="store_true",
                        help="also run the stream source in a real connect-standalone worker each round")
    parser.add_argument("--only", choices=("sink", "source"), help="run only the sink or the source cases")
    parser.add_argument("--default-gc", action="store_true",
                        help="keep CPython's default garbage-collector settings instead of the worker's")
    args = parser.parse_args()
    n = args.records
    if not args.default_gc:
        # the tasks run in a worker process, which freezes its start-up heap and collects the young generation
        # every 50,000 new objects (connect/runtime/gc_policy.py); the bench process does the same, for the
        # task and its baselines alike. Without it, a task that keeps its polled records alive until the log
        # has them (as the stream source must) pays full collections over the whole heap that a bare loop,
        # which keeps nothing, does not.
        settle_heap()
    server = RedisService(appendfsync="everysec").start()
    try:
        client = redis.Redis.from_url(server.uri)
        client.config_set("save", "")
        flags = ((" --worker" if args.worker else "") + (f" --only {args.only}" if args.only else "")
                 + (" --default-gc" if args.default_gc else ""))
        print(f"python bench/bench_redis.py --records {n} --batch {args.batch} --rounds {args.rounds}{flags}   "
              f"(redis-server {client.info()['redis_version']}, redis-py {redis.__version__}, "
              f"hiredis {'on' if redis.utils.HIREDIS_AVAILABLE else 'off'}, "
              f"{'default GC' if args.default_gc else 'the worker GC policy'})")
        print(f"headline: configs/{SINK} and configs/{SOURCE} as shipped (put() batches of {SHIPPED_PUT_BATCH}, "
              "Kafka Connect's max.poll.records; the source's batch.size 500 and redis.stream.block 100 ms), "
              f"with configs/{WORKER} for --worker; changed only: {INTRINSIC}")
        for label in args.variants:
            variant = variants(args.batch)[label]
            print(f"== {variant.title()}", flush=True)
            if args.only != "source":
                sink_cases(client, server.uri, n, args.rounds, variant)
            if args.only != "sink":
                source_cases(client, server.uri, n, args.rounds, args.worker, variant)
        client.close()
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
