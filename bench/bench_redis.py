"""Records/s of the Redis connectors' tasks beside bare redis-py pipeline loops, in the same run.

Three cases, each against a real redis-server started by ``services/`` (append-only file, everysec):

- sink HASH: ``RedisSinkTask.put`` of batches of ``--batch`` SinkRecords (string key, a map value of four
  fields) beside a bare loop that sends the same batches as one ``pipeline(transaction=False)`` of HSETs;
- sink STREAM: the same with XADD;
- source: ``RedisStreamSourceTask.poll`` until every entry of a pre-filled stream has been read, each record
  then handed to ``commit_record`` and acknowledged (XACK) the way the worker drives it, beside a bare loop
  of ``XREADGROUP COUNT batch`` + ``XACK`` of what it read, on a fresh group over the same stream.

What is measured is the task against Redis (the plugin's own cost over the client's), not the worker
around it: no log, no converters. Each case runs ``--rounds`` times, alternating with its baseline; the ratio
is taken per round and the median reported.

    python bench/bench_redis.py --records 200000 --batch 1000 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests package, for the task contexts

from connect.api import Schema, SinkRecord
from plugins.redis import RedisSinkTask, RedisStreamSourceTask
from services.redis import RedisService
from tests.plugins.redis_contexts import SinkContext, SourceContext


def _batches(n: int, batch: int) -> list[list[SinkRecord]]:
    records = [SinkRecord("bench", 0, Schema.STRING_SCHEMA, f"key-{i}", None,
                          {"id": i, "name": f"item-{i}", "price": "12.50", "status": "new"}, i) for i in range(n)]
    return [records[i:i + batch] for i in range(0, n, batch)]


def _timed(fn: Callable[[], int]) -> float:
    start = time.perf_counter()
    count = fn()
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


def source_bare(uri: str, stream: str, n: int, batch: int, group: str) -> float:
    client = redis.Redis.from_url(uri)
    client.xgroup_create(stream, group, id="0-0", mkstream=True)

    def run() -> int:
        got = 0
        while got < n:
            reply = client.xreadgroup(group, "bare", {stream: ">"}, count=batch, block=10)
            for _, entries in reply or []:
                ids = [entry_id for entry_id, _ in entries]
                client.xack(stream, group, *ids)
                got += len(ids)
        return got

    try:
        return _timed(run)
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n, batch = args.records, args.batch
    server = RedisService(appendfsync="everysec").start()
    try:
        client = redis.Redis.from_url(server.uri)
        client.config_set("save", "")
        batches = _batches(n, batch)
        print(f"python bench/bench_redis.py --records {n} --batch {batch} --rounds {args.rounds}   "
              f"(redis-server {client.info()['redis_version']}, redis-py {redis.__version__}, "
              f"hiredis {'on' if redis.utils.HIREDIS_AVAILABLE else 'off'})")
        for kind in ("HASH", "STREAM"):
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
        ratios = []
        client.flushall()
        _fill(client, "bench-stream", n)
        for r in range(args.rounds):
            bare = source_bare(server.uri, "bench-stream", n, batch, f"bare-{r}")
            ours = source_task(server.uri, "bench-stream", n, batch, f"task-{r}")
            ratios.append(ours / bare)
            print(f"  source round {r + 1}: bare XREADGROUP+XACK loop {bare:>10,.0f} records/s   "
                  f"RedisStreamSourceTask {ours:>10,.0f} records/s   ratio {ours / bare:.2f}")
        print(f"source ratio, task / bare: {statistics.median(ratios):.2f} (median of {args.rounds})")
        client.close()
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
