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

from connect.api import Schema, SinkRecord
from connect.runtime.gc_policy import settle_heap
from plugins.redis import RedisSinkTask, RedisStreamSourceTask
from services.redis import RedisService
from tests.plugins.task_contexts import SinkContext, SourceContext


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


def sink_task(uri: str, kind: str, batches: list[list[SinkRecord]]) -> float:
    props = {"name": "bench", "redis.uri": uri, "redis.type": kind, "redis.keyspace": f"task-{kind}"}
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


def source_task(uri: str, stream: str, n: int, batch: int, group: str) -> float:
    props = {"name": "bench", "redis.uri": uri, "redis.stream.name": stream, "redis.stream.consumer.group": group,
             "batch.size": str(batch), "redis.stream.block": "10"}
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


def source_bare(uri: str, stream: str, n: int, batch: int, group: str, decode: bool = False) -> float:
    """The issue's baseline: XREADGROUP COUNT batch + XACK of the ids read, with redis-py's own reply parsing
    (entry fields as a dict of bytes per entry). ``decode``: a context baseline, the same loop on a client
    that decodes replies (a dict of str per entry), still making no records."""
    client = redis.Redis.from_url(uri, decode_responses=decode)
    client.xgroup_create(stream, group, id="0-0", mkstream=True)

    def run() -> int:
        got = 0
        while got < n:
            reply = client.xreadgroup(group, "bare", {stream: ">"}, count=batch, block=10)
            for _, entries in (reply.items() if isinstance(reply, dict) else reply or []):
                ids = [entry_id for entry_id, _ in entries]
                client.xack(stream, group, *ids)
                got += len(ids)
        return got

    try:
        return _timed(run)
    finally:
        client.close()


def source_bare_piggyback(uri: str, stream: str, n: int, batch: int, group: str) -> float:
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
            pipe.xreadgroup(group, "bare", {stream: ">"}, count=batch, block=10)
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


def source_worker(uri: str, stream: str, n: int, batch: int, group: str) -> tuple[float, float]:
    """A real ``connect-standalone`` (embedded log, StringConverter keys, JsonConverter values with schemas)
    running RedisStreamSource over the pre-filled stream: records/s from its start, and from its first
    delivered entry, to every entry acknowledged (XACK comes only once the log has the entry's record)."""
    client = redis.Redis.from_url(uri, decode_responses=True)
    last_id = client.xrevrange(stream, count=1)[0][0]
    with tempfile.TemporaryDirectory(prefix="headrace-bench-redis-") as tmp:
        work = Path(tmp)
        (work / "worker.properties").write_text(
            f"embedded.log.dir={work / 'data'}\n"
            "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
            "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
            f"offset.storage.file.filename={work / 'connect.offsets'}\n"
            "offset.flush.interval.ms=1000\nlisteners=\n")
        (work / "source.properties").write_text(
            f"name=bench-redis-source\nconnector.class=RedisStreamSource\nredis.uri={uri}\n"
            f"redis.stream.name={stream}\nredis.stream.consumer.group={group}\nbatch.size={batch}\n"
            "redis.stream.block=10\ntopic=bench-redis\n")
        exe = Path(sys.executable).with_name("connect-standalone")
        started = time.perf_counter()
        with open(work / "worker.log", "wb") as out:
            proc = subprocess.Popen([str(exe), str(work / "worker.properties"), str(work / "source.properties")],
                                    stdout=out, stderr=subprocess.STDOUT)
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


def source_cases(client: redis.Redis, uri: str, n: int, batch: int, rounds: int, worker: bool) -> None:
    """The stream source beside its baselines, alternating, ``rounds`` times over one pre-filled stream (each
    case reads it whole through its own new group)."""
    ratios = []
    client.flushall()
    _fill(client, "bench-stream", n)
    for r in range(rounds):
        bare = source_bare(uri, "bench-stream", n, batch, f"bare-{r}")
        bare_cpu = _last_cpu_us[0]
        decoded = source_bare(uri, "bench-stream", n, batch, f"decoded-{r}", decode=True)
        same = source_bare_piggyback(uri, "bench-stream", n, batch, f"same-{r}")
        ours = source_task(uri, "bench-stream", n, batch, f"task-{r}")
        ours_cpu = _last_cpu_us[0]
        ratios.append(ours / bare)
        line = (f"  source round {r + 1}: bare XREADGROUP+XACK loop {bare:>10,.0f} records/s   "
                f"RedisStreamSourceTask {ours:>10,.0f} records/s   ratio {ours / bare:.2f}   "
                f"(client CPU {bare_cpu:.2f} / {ours_cpu:.2f} us per record)\n"
                f"                  context: bare loop decoding to dicts of str {decoded:>10,.0f} records/s "
                f"(task / it {ours / decoded:.2f}); bare loop using Redis as the task does {same:>10,.0f} "
                f"records/s (task / it {ours / same:.2f})")
        if worker:
            from_start, steady = source_worker(uri, "bench-stream", n, batch, f"worker-{r}")
            line += (f"\n                  worker (embedded log, JsonConverter) {steady:>10,.0f} records/s "
                     f"from first entry read to all acknowledged ({from_start:,.0f} incl. start-up), "
                     f"{steady / bare:.2f} of bare")
        print(line, flush=True)
    print(f"source ratio, task / bare: {statistics.median(ratios):.2f} (median of {rounds})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", action="store_true",
                        help="also run the stream source in a real connect-standalone worker each round")
    parser.add_argument("--only", choices=("sink", "source"), help="run only the sink or the source cases")
    parser.add_argument("--default-gc", action="store_true",
                        help="keep CPython's default garbage-collector settings instead of the worker's")
    args = parser.parse_args()
    n, batch = args.records, args.batch
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
        batches = _batches(n, batch)
        flags = ((" --worker" if args.worker else "") + (f" --only {args.only}" if args.only else "")
                 + (" --default-gc" if args.default_gc else ""))
        print(f"python bench/bench_redis.py --records {n} --batch {batch} --rounds {args.rounds}{flags}   "
              f"(redis-server {client.info()['redis_version']}, redis-py {redis.__version__}, "
              f"hiredis {'on' if redis.utils.HIREDIS_AVAILABLE else 'off'}, "
              f"{'default GC' if args.default_gc else 'the worker GC policy'})")
        for kind in ("HASH", "STREAM") if args.only != "source" else ():
            ratios = []
            for r in range(args.rounds):
                client.flushall()
                bare = sink_bare(server.uri, kind, batches)
                client.flushall()
                ours = sink_task(server.uri, kind, batches)
                ratios.append(ours / bare)
                print(f"  sink {kind:<6} round {r + 1}: bare pipeline loop {bare:>10,.0f} records/s   "
                      f"RedisSinkTask {ours:>10,.0f} records/s   ratio {ours / bare:.2f}")
            print(f"sink {kind} ratio, task / bare: {statistics.median(ratios):.2f} (median of {args.rounds})")
        if args.only != "sink":
            source_cases(client, server.uri, n, batch, args.rounds, args.worker)
        client.close()
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
