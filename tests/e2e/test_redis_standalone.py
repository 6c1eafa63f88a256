"""The Redis connectors through a real connect-standalone on the embedded log, against a real redis-server.

- every sink type lands its records with the documented layout across a kill -9 of the worker, and a full
  replay (the same topics read again from the start) leaves the idempotent types exactly as they were;
- the stream source delivers every entry to the topic (counted by id with ``headrace console-consumer``)
  across two kill -9s while entries keep coming, with at most the entries pending at the kills duplicated and
  the group's pending list empty at the end;
- bad input: an unreachable ``redis.uri`` or a wrong password is refused at start with one line naming the
  key; a HASH fed strings goes to the dead-letter topic under ``errors.tolerance=all``; a ZSET score that is
  not a number fails the task with a trace naming the record.

The crash tests run the must-show sizes of issue 19 (50,000 records per sink type, 100,000 stream entries) in
under 20 s each and are ``slow``, so the fast suite keeps only the quick bad-input tests of this file (the
task-level tests in tests/plugins/test_redis_*.py cover the rest against the same redis-server).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import redis

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_backend
from connect.log.api import NewTopic
from services.base import free_port
from tests.support import (
    STRING_CONVERTERS,
    RestWorker,
    connect_standalone,
    drain,
    run_cli,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(300)

SINK_TYPES = {  # connector name -> (redis.type, topic it reads)
    "s-string": ("STRING", "numbers"),
    "s-hash": ("HASH", "maps"),
    "s-stream": ("STREAM", "maps"),
    "s-list": ("LIST", "numbers"),
    "s-set": ("SET", "numbers"),
    "s-zset": ("ZSET", "numbers"),
}
IDEMPOTENT = ("s-string", "s-hash", "s-set", "s-zset")


def _log(tmp: Path, read_only: bool = False):
    return open_log_backend({"embedded.log.dir": str(tmp / "data")}, read_only=read_only)


def _produce(tmp: Path, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    backend = _log(tmp)
    try:
        backend.admin().create_topic(NewTopic(topic, 1), exist_ok=True)
        producer = backend.producer({"acks": "all"})
        for start in range(0, len(records), 5000):
            chunk = records[start:start + 5000]
            producer.send_batch(topic, 0, [v for _, v in chunk], [k for k, _ in chunk])
        assert producer.flush(60) == 0
        producer.close()
    finally:
        backend.close()


def _committed(tmp: Path, group: str, topic: str) -> int:
    backend = _log(tmp, read_only=True)
    try:
        admin = backend.admin()
        try:
            return admin.list_group_offsets(group).get(TopicPartition(topic, 0), 0)
        finally:
            admin.close()
    finally:
        backend.close()


def _sink_props(tmp: Path, name: str, uri: str, suffix: str = "") -> Path:
    kind, topic = SINK_TYPES[name]
    props = {"name": name + suffix, "connector.class": "com.redis.kafka.connect.RedisSinkConnector", "tasks.max": 1,
             "topics": topic, "redis.uri": uri, "redis.type": kind, "redis.keyspace": name}
    if topic == "maps":
        props |= {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                  "value.converter.schemas.enable": "false"}
    return write_properties(tmp / f"{name}{suffix}.properties", props)


def _sink_input(n: int) -> tuple[list[tuple[bytes, bytes | None]], list[tuple[bytes, bytes | None]]]:
    """``n`` records per topic over n/2 keys (each key written twice, the last value wins); the last 1% of the
    numbers are tombstones of keys written earlier."""
    keys = n // 2
    maps = [(f"k{i % keys}".encode(), json.dumps({"n": i, "name": f"item-{i}"}).encode()) for i in range(n)]
    numbers: list[tuple[bytes, bytes | None]] = [(f"k{i % keys}".encode(), f"{i}.5".encode()) for i in range(n)]
    for i in range(n - n // 100, n):
        numbers[i] = (f"k{i - n // 2 - 7}".encode(), None)
    return maps, numbers


def _expected(numbers: list[tuple[bytes, bytes | None]], maps: list[tuple[bytes, bytes | None]]):
    """The final state of the idempotent types, by replaying the input in a dict."""
    strings: dict[str, str] = {}
    for k, v in numbers:
        if v is None:
            strings.pop(k.decode(), None)
        else:
            strings[k.decode()] = v.decode()
    hashes = {k.decode(): {"n": str(json.loads(v)["n"]), "name": json.loads(v)["name"]} for k, v in maps if v}
    list_members: list[str] = []
    for k, v in numbers:  # RPUSH, and LREM of every copy on a tombstone
        list_members = [m for m in list_members if m != k.decode()] if v is None else [*list_members, k.decode()]
    return strings, hashes, list_members


def _state(db: redis.Redis, n: int) -> dict[str, object]:
    """Everything the idempotent sinks wrote, as DUMP bytes per key (the exact encoding, TTL aside)."""
    keys = sorted(k for name in IDEMPOTENT for k in db.scan_iter(f"{name}*", count=5000))
    pipe = db.pipeline(transaction=False)
    for key in keys:
        pipe.dump(key)
    return dict(zip(keys, pipe.execute(), strict=True))


def _all_committed(tmp: Path, names: list[str], n: int, suffix: str = "") -> bool:
    return all(_committed(tmp, f"connect-{name}{suffix}", SINK_TYPES[name][1]) >= n for name in names)


def _check_sink_layout(db: redis.Redis, n: int, maps, numbers) -> None:
    strings, hashes, list_members = _expected(numbers, maps)
    keys = db.keys("s-string:*")
    got = {k.split(":", 1)[1]: v for k, v in zip(keys, db.mget(keys) if keys else [], strict=True)}
    assert got == strings
    pipe = db.pipeline(transaction=False)
    hash_keys = sorted(hashes)
    for k in hash_keys:
        pipe.hgetall(f"s-hash:{k}")
    assert dict(zip(hash_keys, pipe.execute(), strict=True)) == hashes
    assert len(db.keys("s-hash:*")) == len(hashes)
    assert db.smembers("s-set") == set(strings)
    assert dict(db.zrange("s-zset", 0, -1, withscores=True)) == {k: float(v) for k, v in strings.items()}
    # LIST and STREAM may hold duplicates after the crash; everything is there, in the order first written
    in_list = db.lrange("s-list", 0, -1)
    assert set(in_list) == set(list_members) and len(in_list) >= len(list_members)
    stream_ns = [int(fields["n"]) for _, fields in db.xrange("s-stream")]
    assert set(stream_ns) == set(range(n)) and len(stream_ns) >= n
    first_seen = list(dict.fromkeys(stream_ns))
    assert first_seen == list(range(n))


def _sink_kill9_and_replay(tmp: Path, uri: str, n: int) -> None:
    db = redis.Redis.from_url(uri, decode_responses=True)
    db.flushall()
    maps, numbers = _sink_input(n)
    _produce(tmp, "maps", maps)
    _produce(tmp, "numbers", numbers)
    names = list(SINK_TYPES)
    # the topics hold raw values this test produces or reads itself (STRING_CONVERTERS); connectors that
    # need JSON set it on their own config
    worker_cfg = worker_properties(tmp, **STRING_CONVERTERS)
    connectors = [_sink_props(tmp, name, uri) for name in names]
    worker = connect_standalone(tmp, worker_cfg, *connectors)
    try:
        wait_until(lambda: db.xlen("s-stream") >= n // 3 or not worker.alive(), 120, what="a third of the stream")
        assert worker.alive(), worker.log()
    finally:
        worker.kill9()
    worker = connect_standalone(tmp, worker_cfg, *connectors)
    try:
        wait_until(lambda: _all_committed(tmp, names, n) or not worker.alive(), 180, interval=0.5,
                   what="every sink to commit the whole topic")
        assert worker.alive(), worker.log()
    finally:
        assert worker.terminate() == 0, worker.log()
    _check_sink_layout(db, n, maps, numbers)
    log = worker.log()
    assert "RedisSinkTask of connector s-hash writing redis.type=HASH" in log
    before = _state(db, n)
    # a full replay: the same connectors under new names read both topics again from the start
    replay = [_sink_props(tmp, name, uri, suffix="-replay") for name in IDEMPOTENT]
    worker = connect_standalone(tmp, worker_cfg, *replay)
    try:
        wait_until(lambda: _all_committed(tmp, list(IDEMPOTENT), n, "-replay") or not worker.alive(), 180,
                   interval=0.5, what="the replay to commit the whole topic")
    finally:
        assert worker.terminate() == 0, worker.log()
    assert _state(db, n) == before
    db.close()


@pytest.mark.slow
def test_every_sink_type_50000_records_across_kill9_and_a_full_replay(tmp_path, redis_service):
    _sink_kill9_and_replay(tmp_path, redis_service.uri, 50_000)


# --- the stream source ------------------------------------------------------------------------------------------
def _topic_keys(tmp: Path, topic: str) -> list[str]:
    res = run_cli(["headrace", "console-consumer", "--log-dir", str(tmp / "data"), "--topic", topic,
                   "--from-beginning", "--timeout-ms", "1500", "--property", "print.key=true"], timeout=300)
    assert res.returncode == 0, res.stderr.decode()
    return [line.split(b"\t", 1)[0].decode() for line in res.stdout.splitlines() if line]


def _stream_kill9_twice(tmp: Path, uri: str, total: int, seconds: float) -> None:
    """``total`` entries added over about ``seconds`` while the worker is killed -9 twice."""
    db = redis.Redis.from_url(uri, decode_responses=True)
    db.delete("orders")
    connector = write_properties(tmp / "stream-source.properties", {
        "name": "stream-source", "connector.class": "com.redis.kafka.connect.RedisStreamSourceConnector",
        "tasks.max": 1, "redis.uri": uri, "redis.stream.name": "orders", "topic": "orders-topic", "batch.size": 1000,
    })
    # the topics hold raw values this test produces or reads itself (STRING_CONVERTERS); connectors that
    # need JSON set it on their own config
    worker_cfg = worker_properties(tmp, **STRING_CONVERTERS)
    added: list[str] = []
    done = threading.Event()

    def writer() -> None:
        client = redis.Redis.from_url(uri, decode_responses=True)
        while len(added) < total:
            pipe = client.pipeline(transaction=False)
            for i in range(len(added), min(len(added) + 500, total)):
                pipe.xadd("orders", {"n": str(i), "body": f"order {i}"})
            added.extend(pipe.execute())
            done.wait(seconds * 500 / total)
        client.close()

    thread = threading.Thread(target=writer)
    thread.start()
    pending_at_kills = 0
    added_at_kills: list[int] = []
    try:
        for kill in (1, 2):
            worker = connect_standalone(tmp, worker_cfg, connector)
            target = total * kill // 3
            try:
                wait_until(lambda t=target, w=worker: _group_delivered(db, added) >= t or not w.alive(), 120,
                           what=f"{target} entries delivered before kill {kill}")
            except AssertionError as exc:  # say where the group and the worker were, to tell a stall from a slow run
                raise AssertionError(f"{exc}; group {db.xinfo_groups('orders')}; worker log ends:\n"
                                     f"{worker.log()[-4000:]}") from None
            assert worker.alive(), worker.log()
            worker.kill9()
            added_at_kills.append(len(added))
            pending_at_kills += int(db.xpending("orders", "kafka-consumer-group")["pending"])
    finally:
        thread.join()
    assert len(added) == total and added_at_kills[0] < total, added_at_kills  # entries kept coming across the kills
    worker = connect_standalone(tmp, worker_cfg, connector)
    try:
        wait_until(lambda: _group_delivered(db, added) >= total
                   and int(db.xpending("orders", "kafka-consumer-group")["pending"]) == 0 or not worker.alive(),
                   180, interval=0.5, what="every entry read and acknowledged")
        assert worker.alive(), worker.log()
    finally:
        assert worker.terminate() == 0, worker.log()
    keys = _topic_keys(tmp, "orders-topic")
    counts = Counter(keys)
    assert set(counts) == set(added), f"{len(set(added) - set(counts))} entries missing"
    duplicates = len(keys) - len(counts)
    assert duplicates <= pending_at_kills, (duplicates, pending_at_kills)
    assert int(db.xpending("orders", "kafka-consumer-group")["pending"]) == 0
    first = _first_record(tmp, "orders-topic")  # what the runtime's bulk path wrote: key, headers, value
    assert first.key == added[0].encode() and first.timestamp == int(added[0].split("-")[0])
    assert first.headers == (("redis.stream", b"orders"), ("redis.stream.id", added[0].encode()))
    assert first.value == b"Struct{n=0,body=order 0}"
    log = worker.log()
    assert "drained its pending entries of stream orders" in log and "stream-source" in log
    db.close()


def _first_record(tmp: Path, topic: str):
    backend = _log(tmp, read_only=True)
    try:
        consumer = backend.consumer(None, {"auto.offset.reset": "earliest", "enable.auto.commit": "false"})
        consumer.assign([TopicPartition(topic, 0)])
        batch = drain(consumer, 1)[0]
        consumer.close()
        return next(iter(batch.records()))
    finally:
        backend.close()


def _group_delivered(db: redis.Redis, added: list[str]) -> int:
    """How many of the entries added so far the group has handed out (acknowledged or not): the position of its
    last-delivered id. Not the group's ``entries-read``, which Redis may leave unknown (nil)."""
    try:
        groups = db.xinfo_groups("orders")
    except redis.ResponseError:
        return 0
    group = next((g for g in groups if g["name"] == "kafka-consumer-group"), None)
    if group is None:
        return 0
    last = group.get("last-delivered-id")
    ids = list(added)  # the writer thread appends to it
    try:
        return ids.index(last) + 1
    except ValueError:
        return 0  # nothing delivered yet ("0-0")


@pytest.mark.slow
def test_stream_source_100000_entries_across_two_kill9s(tmp_path, redis_service):
    _stream_kill9_twice(tmp_path, redis_service.uri, 100_000, seconds=8)


# --- bad input ----------------------------------------------------------------------------------------------
def _one_error_line(res) -> str:
    err = res.stderr.decode() + res.stdout.decode()
    assert res.returncode != 0, err
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, err
    return errors[0]


def test_an_unreachable_redis_uri_is_refused_at_start_naming_it(tmp_path):
    uri = f"redis://127.0.0.1:{free_port()}"
    conn = write_properties(tmp_path / "sink.properties", {
        "name": "unreachable", "connector.class": "RedisSink", "topics": "t", "redis.uri": uri, "redis.type": "HASH"})
    line = _one_error_line(run_cli(["connect-standalone", str(worker_properties(tmp_path)), str(conn)], cwd=tmp_path))
    assert "redis.uri" in line and uri in line, line


def test_a_wrong_password_is_refused_at_start_naming_the_key(tmp_path, redis_factory):
    server = redis_factory(password="s3cret-right")
    conn = write_properties(tmp_path / "source.properties", {
        "name": "badpass", "connector.class": "RedisStreamSource", "redis.stream.name": "s", "redis.uri": server.uri,
        "redis.password": "s3cret-wrong"})
    line = _one_error_line(run_cli(["connect-standalone", str(worker_properties(tmp_path)), str(conn)], cwd=tmp_path))
    assert "redis.password" in line and "refused the credentials" in line and "s3cret" not in line, line


@pytest.mark.slow  # several seconds of a real worker: kept out of the fast suite
def test_bad_records_go_to_the_dlq_or_fail_the_task_naming_them(tmp_path, redis_service):
    db = redis.Redis.from_url(redis_service.uri, decode_responses=True)
    db.delete("bad-hash:good", "bad-zset")
    _produce(tmp_path, "strings", [(b"good", b'{"a": "1"}'), (b"bad1", b'"just text"'), (b"bad2", b"42")])
    _produce(tmp_path, "scores", [(b"m1", b"1.5"), (b"m2", b"not-a-number")])
    hash_sink = write_properties(tmp_path / "hash.properties", {
        "name": "bad-hash", "connector.class": "RedisSink", "topics": "strings", "redis.uri": redis_service.uri,
        "redis.type": "HASH", "redis.keyspace": "bad-hash",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq-hash",
        "errors.deadletterqueue.topic.replication.factor": 1, "errors.deadletterqueue.context.headers.enable": "true"})
    zset_sink = write_properties(tmp_path / "zset.properties", {
        "name": "bad-zset", "connector.class": "RedisSink", "topics": "scores", "redis.uri": redis_service.uri,
        "redis.type": "ZSET", "redis.keyspace": "bad-zset"})
    # the scores are raw numbers as text (STRING_CONVERTERS); the hash sink sets JSON on its own config
    worker = RestWorker(tmp_path, hash_sink, zset_sink, **STRING_CONVERTERS).start()
    try:
        with worker.http() as http:
            def zset_failed() -> str | None:
                # before the worker has started the connector (a busy machine), its status has no tasks yet
                tasks = http.get("/connectors/bad-zset/status").json().get("tasks") or [{}]
                return tasks[0].get("trace") if tasks[0].get("state") == "FAILED" else None

            trace = wait_until(zset_failed, 60, what="the ZSET task to fail")
            assert "ZSET needs a number" in trace and "topic scores partition 0 offset 1" in trace, trace
            wait_until(lambda: _committed(tmp_path, "connect-bad-hash", "strings") >= 3, 60,
                       what="the HASH sink to get past the bad records")
            assert http.get("/connectors/bad-hash/status").json()["tasks"][0]["state"] == "RUNNING"
    finally:
        worker.stop()
    assert db.hgetall("bad-hash:good") == {"a": "1"} and db.keys("bad-hash:bad*") == []
    assert db.exists("bad-zset") == 0  # the failed batch was not written at all
    assert _topic_keys(tmp_path, "dlq-hash") == ["bad1", "bad2"]
    db.close()


# --- a Redis outage -------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_15_s_redis_outage_keeps_both_connectors_running_and_loses_nothing(tmp_path, redis_factory):
    """The stream source feeds the topic the HASH sink reads, both on one redis-server that is killed and
    brought back (same port, same append-only file) 15 s later."""
    server = redis_factory()
    db = redis.Redis.from_url(server.uri, decode_responses=True)
    json_values = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                   "value.converter.schemas.enable": "true"}
    source = write_properties(tmp_path / "source.properties", {
        "name": "outage-source", "connector.class": "RedisStreamSource", "redis.uri": server.uri,
        "redis.stream.name": "in", "topic": "flow", **json_values})
    sink = write_properties(tmp_path / "sink.properties", {
        "name": "outage-sink", "connector.class": "RedisSink", "topics": "flow", "redis.uri": server.uri,
        "redis.type": "HASH", "redis.keyspace": "out", "redis.timeout": 2, **json_values})
    ids = []
    pipe = db.pipeline(transaction=False)
    for i in range(3000):
        pipe.xadd("in", {"n": str(i)})
    ids += pipe.execute()
    worker = RestWorker(tmp_path, source, sink).start()
    try:
        with worker.http() as http:
            def states() -> set[str]:
                return {http.get(f"/connectors/{c}/status").json()["tasks"][0]["state"]
                        for c in ("outage-source", "outage-sink")}

            wait_until(lambda: db.exists(f"out:{ids[100]}"), 60, what="the first records through both connectors")
            server.kill()  # mid-flow: some entries are read and not yet acknowledged, some records not yet written
            try:
                outage_end = time.monotonic() + 15
                assert worker.proc is not None
                wait_until(lambda: worker.proc.log().count("is unreachable") >= 2, 15,
                           what="both tasks to log the outage")
                checks = 0
                while time.monotonic() < outage_end:  # the outage lasts 15 s; both tasks stay RUNNING through it
                    assert states() == {"RUNNING"}
                    checks += 1
                    threading.Event().wait(0.5)
                assert checks >= 10
            finally:
                server.start()
            pipe = db.pipeline(transaction=False)
            for i in range(3000, 4000):
                pipe.xadd("in", {"n": str(i)})
            ids += pipe.execute()
            wait_until(lambda: db.exists(*[f"out:{i}" for i in ids]) == len(ids), 120, interval=0.5,
                       what="every entry in the sink's hashes")
            wait_until(lambda: int(db.xpending("in", "kafka-consumer-group")["pending"]) == 0, 60,
                       what="every entry acknowledged")
            assert states() == {"RUNNING"}
    finally:
        log = worker.stop()
    assert db.hgetall(f"out:{ids[3999]}") == {"n": "3999"}
    assert "is back after" in log and "outage-source" in log and "outage-sink" in log
    db.close()


def test_the_keys_source_refuses_more_than_one_task_at_start(tmp_path, redis_service):
    conn = write_properties(tmp_path / "keys.properties", {
        "name": "keys", "connector.class": "com.redis.kafka.connect.RedisKeysSourceConnector", "tasks.max": 2,
        "redis.uri": redis_service.uri})
    db = redis.Redis.from_url(redis_service.uri)
    db.config_set("notify-keyspace-events", "KEA")
    try:
        line = _one_error_line(run_cli(["connect-standalone", str(worker_properties(tmp_path)), str(conn)],
                                       cwd=tmp_path))
    finally:
        db.config_set("notify-keyspace-events", "")
        db.close()
    assert "tasks.max" in line and "one task only" in line, line
