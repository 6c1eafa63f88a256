"""RedisStreamSourceTask against a real redis-server: records, acknowledgement only after the log has them,
pending entries first after a restart, claiming a dead consumer's entries, the dead-letter topic."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from connect.api import ConnectException, RetriableException, Schema, SourceRecord, SourceRecordBatch, Struct
from connect.log.api import LogError
from plugins.redis import RedisStreamSourceConnector, RedisStreamSourceTask
from tests.plugins.task_contexts import SourceContext, config_errors
from tests.runtime.fakes import FakeClock, source_task
from tests.support import wait_until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def db(redis_service) -> redis.Redis:
    client = redis.Redis.from_url(redis_service.uri, decode_responses=True)
    client.flushall()
    yield client
    client.close()


def _task(uri: str, task: int = 0, **extra: str) -> RedisStreamSourceTask:
    props = {"name": "redis-source", "redis.uri": uri, "redis.stream.name": "events", "redis.stream.task": str(task),
             "topic": "t-${stream}", "batch.size": "100", **extra}
    source = RedisStreamSourceTask()
    source.initialize(SourceContext(props))
    source.start(props)
    return source


def _poll_batches(task: RedisStreamSourceTask, count: int) -> list[SourceRecordBatch]:
    """Poll until ``count`` records came; every poll returns one SourceRecordBatch (or None)."""
    got: list[SourceRecordBatch] = []

    def enough() -> bool:
        batch = task.poll()
        if batch is not None:
            assert isinstance(batch, SourceRecordBatch) and len(batch) > 0
            got.append(batch)
        return sum(map(len, got)) >= count

    wait_until(enough, 20, interval=0, what=f"{count} records")
    return got


def _poll_all(task: RedisStreamSourceTask, count: int) -> list[SourceRecord]:
    return [record for batch in _poll_batches(task, count) for record in batch]


def _logged(task: RedisStreamSourceTask, batches: list[SourceRecordBatch]) -> None:
    """What the worker does once the log has acknowledged the batches' records and committed offsets."""
    for batch in batches:
        task.commit_batch(batch)
    task.commit()


def _pending(db: redis.Redis, group: str = "kafka-consumer-group", stream: str = "events") -> int:
    return int(db.xpending(stream, group)["pending"])


def test_entries_become_records_and_are_acknowledged_only_once_logged(redis_service, db):
    ids = [db.xadd("events", {"user": f"u{i}", "n": str(i)}) for i in range(250)]
    task = _task(redis_service.uri)
    batches = _poll_batches(task, 250)
    assert [len(b) for b in batches] == [100, 100, 50]  # one batch per read of batch.size entries
    records = [r for b in batches for r in b]
    assert [r.key for r in records] == ids
    first = records[0]
    assert first.topic == "t-events" and first.source_partition == {"stream": "events"}
    assert first.source_offset == {"id": ids[0]} and batches[0].last_offset == {"id": ids[99]}
    assert isinstance(first.value, Struct) and first.value.get("user") == "u0" and first.value.get("n") == "0"
    assert [f.name for f in first.value_schema.fields()] == ["user", "n"]
    assert first.key_schema == Schema.STRING_SCHEMA
    assert {h.key: h.value for h in first.headers} == {"redis.stream": "events", "redis.stream.id": ids[0]}
    assert first.timestamp == int(ids[0].split("-")[0])
    assert _pending(db) == 250  # read, not yet in the log: nothing acknowledged
    _logged(task, batches[:1])
    assert _pending(db) == 150
    _logged(task, batches[1:])
    assert _pending(db) == 0 and task.entries_acked == 250
    task.stop()


def test_only_the_batches_the_log_took_are_acknowledged(redis_service, db):
    ids = [db.xadd("events", {"n": str(i)}) for i in range(300)]
    task = _task(redis_service.uri)
    batches = _poll_batches(task, 300)
    _logged(task, [batches[1]])  # the first and last batch never reached the log (the worker failed them)
    pending = [p["message_id"] for p in db.xpending_range("events", "kafka-consumer-group", "-", "+", 1000)]
    assert pending == ids[:100] + ids[200:]
    task.commit()  # an offset commit without new batches acknowledges nothing more
    assert _pending(db) == 200
    assert task.poll() is None  # nothing new: the unacknowledged entries are not read again by this run
    assert _pending(db) == 200
    task.stop()


def test_entries_of_different_field_sets_make_one_batch_per_run_of_the_same_schema(redis_service, db):
    shapes = [{"a": "1"}, {"a": "2"}, {"a": "3", "b": "x"}, {"a": "4"}]
    ids = [db.xadd("events", fields) for fields in shapes]
    task = _task(redis_service.uri)
    batches = _poll_batches(task, 4)
    assert [len(b) for b in batches] == [2, 1, 1]
    assert [[f.name for f in b.value_schema.fields()] for b in batches] == [["a"], ["a", "b"], ["a"]]
    assert batches[0].value_schema is batches[2].value_schema
    assert [r.key for b in batches for r in b] == ids
    assert [r.value.get("a") for b in batches for r in b] == ["1", "2", "3", "4"]
    _logged(task, batches)
    assert _pending(db) == 0
    task.stop()


def test_after_a_restart_the_own_pending_entries_come_first_then_new_ones(redis_service, db):
    ids = [db.xadd("events", {"n": str(i)}) for i in range(300)]
    task = _task(redis_service.uri)
    batches = _poll_batches(task, 300)
    _logged(task, batches[:1])  # a crash after the first batch reached the log: 200 stay pending
    task.stop()
    later = [db.xadd("events", {"n": str(i)}) for i in range(300, 350)]
    again = _task(redis_service.uri)  # same task number, so the same consumer name
    replayed = _poll_batches(again, 250)
    records = [r for b in replayed for r in b]
    assert [r.key for r in records] == ids[100:] + later
    assert {h.key: h.value for h in records[0].headers}["redis.delivery.count"] == "2"
    assert "redis.delivery.count" not in {h.key for h in records[-1].headers}
    _logged(again, replayed)
    assert _pending(db) == 0
    again.stop()


def test_entries_left_pending_by_a_dead_consumer_are_claimed(redis_service, db):
    ids = [db.xadd("events", {"n": str(i)}) for i in range(40)]
    dead = _task(redis_service.uri, task=7)
    assert len(_poll_all(dead, 40)) == 40
    dead.stop()  # consumer-7 never comes back
    task = _task(redis_service.uri, task=0, **{"redis.stream.claim.idle.ms": "50",
                                                "redis.stream.claim.interval.ms": "100"})
    claimed = _poll_batches(task, 40)
    assert sorted(r.key for b in claimed for r in b) == sorted(ids)
    owners = {p["consumer"] for p in db.xpending_range("events", "kafka-consumer-group", "-", "+", 100)}
    assert owners == {"consumer-0"}
    _logged(task, claimed)
    assert _pending(db) == 0
    task.stop()


def test_an_entry_delivered_too_often_goes_to_the_dead_letter_topic(redis_service, db):
    entry = db.xadd("events", {"n": "poison"})
    extra = {"redis.stream.max.deliveries": "2", "redis.stream.dlq.topic": "events-dlq"}
    attempts = 3
    for _ in range(attempts):  # the task keeps failing before its record reaches the log
        task = _task(redis_service.uri, **extra)
        (batch,) = _poll_batches(task, 1)
        task.stop()
    (record,) = batch
    assert record.key == entry and record.topic == "events-dlq" and batch.topic == "events-dlq"
    assert {h.key: h.value for h in record.headers}["redis.delivery.count"] == str(attempts)
    _logged(task, [batch])
    assert _pending(db) == 0


def test_at_most_once_reads_with_noack(redis_service, db):
    for i in range(10):
        db.xadd("events", {"n": str(i)})
    task = _task(redis_service.uri, **{"redis.stream.delivery": "at-most-once"})
    assert len(_poll_all(task, 10)) == 10
    assert _pending(db) == 0
    task.stop()


def test_several_streams_a_body_field_and_bytes_that_are_not_utf8(redis_service, db):
    raw = redis.Redis.from_url(redis_service.uri)
    raw.xadd("a", {"body": "hello", "other": "x"})
    raw.xadd("b", {"other": b"\xff\xfe"})
    task = _task(redis_service.uri, **{"redis.stream.name": "a,b", "redis.stream.body.field": "body"})
    records = sorted(_poll_all(task, 2), key=lambda r: r.topic)
    assert [(r.topic, r.value) for r in records] == [("t-a", "hello"), ("t-b", None)]
    task.stop()
    plain = _task(redis_service.uri, **{"redis.stream.name": "b", "redis.stream.consumer.group": "g2"})
    (record,) = _poll_all(plain, 1)
    assert record.value.get("other") == b"\xff\xfe"
    plain.stop()


def test_a_group_starting_at_the_end_skips_the_backlog(redis_service, db):
    db.xadd("events", {"n": "old"})
    task = _task(redis_service.uri, **{"redis.stream.offset": "$"})
    assert task.poll() is None
    new = db.xadd("events", {"n": "new"})
    assert [r.key for r in _poll_all(task, 1)] == [new]
    task.stop()


def test_validation(redis_service, redis_factory):
    ok = {"redis.uri": redis_service.uri, "redis.stream.name": "s"}
    assert config_errors(RedisStreamSourceConnector().validate(ok)) == {}
    errors = config_errors(RedisStreamSourceConnector().validate({**ok, "redis.stream.max.deliveries": "3"}))
    assert list(errors) == ["redis.stream.dlq.topic"]
    errors = config_errors(RedisStreamSourceConnector().validate({"redis.uri": redis_service.uri}))
    assert list(errors) == ["redis.stream.name"]
    secured = redis_factory(password="pw")
    errors = config_errors(RedisStreamSourceConnector().validate({**ok, "redis.uri": secured.uri}))
    assert list(errors) == ["redis.password"] and "refused the credentials" in errors["redis.password"][0]


def test_tasks_share_one_group_under_their_own_consumer_names(redis_service, db):
    connector = RedisStreamSourceConnector()
    connector.start({"redis.uri": redis_service.uri, "redis.stream.name": "events"})
    configs = connector.task_configs(3)
    assert [c["redis.stream.task"] for c in configs] == ["0", "1", "2"]
    tasks = []
    for config in configs:
        task = RedisStreamSourceTask()
        task.initialize(SourceContext(config))
        task.start(config)
        tasks.append(task)
    for i in range(30):
        db.xadd("events", {"n": str(i)})
    seen: list[str] = []
    wait_until(lambda: seen.extend(r.key for t in tasks for r in t.poll() or []) or len(seen) >= 30, 20)
    assert len(seen) == len(set(seen)) == 30
    consumers = {c["name"] for c in db.xinfo_consumers("events", "kafka-consumer-group")}
    assert consumers <= {"consumer-0", "consumer-1", "consumer-2"}
    for task in tasks:
        task.stop()


def test_a_deleted_group_is_created_again_at_the_configured_offset(redis_service, db):
    first = db.xadd("events", {"n": "1"})
    task = _task(redis_service.uri)
    _logged(task, _poll_batches(task, 1))
    db.xgroup_destroy("events", "kafka-consumer-group")
    second = db.xadd("events", {"n": "2"})
    again = _poll_all(task, 2)  # from redis.stream.offset (0-0): replayed rather than lost
    assert [r.key for r in again] == [first, second]
    task.stop()


def _worker_task(uri: str) -> tuple[RedisStreamSourceTask, Any]:
    """The task inside the runtime's WorkerSourceTask (in-memory log): the real bulk path and its callbacks."""
    props = {"name": "redis-source", "redis.uri": uri, "redis.stream.name": "events", "topic": "t-${stream}",
             "batch.size": "100"}
    task = RedisStreamSourceTask()
    wt = source_task(task, FakeClock())
    wt.task_config = props
    wt.initialize_and_start()
    return task, wt


def test_through_the_runtime_entries_are_acknowledged_once_the_log_has_their_batch(redis_service, db):
    ids = [db.xadd("events", {"n": str(i)}) for i in range(150)]
    task, wt = _worker_task(redis_service.uri)
    wt.iteration()
    wt.iteration()
    assert wt.records_sent == 150 and wt.producer.batch_callbacks == 2  # the bulk path, one callback a batch
    assert _pending(db) == 150  # sent, not yet acknowledged by the log
    assert wt.commit_offsets()  # the log acknowledges both batches; task.commit() sends the XACKs
    assert _pending(db) == 0 and task.entries_acked == 150
    assert [k.decode() for k, _v, _t in wt.producer.log.topics["t-events"][0]] == ids
    wt.close()


def test_through_the_runtime_a_batch_the_log_failed_is_never_acknowledged(redis_service, db):
    for i in range(100):
        db.xadd("events", {"n": str(i)})
    task, wt = _worker_task(redis_service.uri)
    wt.iteration()
    wt.producer.fail_flush = LogError("disk full")
    with pytest.raises(ConnectException, match="disk full"):
        wt.commit_offsets()
    task.commit()
    assert _pending(db) == 100 and task.entries_acked == 0
    task.stop()


@pytest.mark.parametrize("deleted", ["some", "all"])
def test_pending_entries_deleted_before_a_restart_are_acknowledged_not_delivered(redis_service, db, deleted):
    ids = [db.xadd("events", {"n": str(i)}) for i in range(10)]
    task = _task(redis_service.uri)
    _poll_batches(task, 10)
    task.stop()  # a crash: nothing acknowledged
    gone = ids[::2] if deleted == "some" else ids
    db.xdel("events", *gone)
    again = _task(redis_service.uri)
    later = db.xadd("events", {"n": "later"})
    batches = _poll_batches(again, 1 if deleted == "all" else 6)
    assert [r.key for b in batches for r in b] == [i for i in ids if i not in gone] + [later]
    _logged(again, batches)
    assert _pending(db) == 0
    again.stop()


def test_replies_in_resp2_read_as_in_resp3(redis_service, db):
    ids = [db.xadd("events", {"user": f"u{i}"}) for i in range(5)]
    task = _task(redis_service.uri + "?protocol=2")
    assert task._client.connection_pool.connection_kwargs.get("protocol") in (2, "2")
    records = _poll_all(task, 5)
    assert [(r.key, r.value.get("user")) for r in records] == [(i, f"u{n}") for n, i in enumerate(ids)]
    task.stop()


def test_text_beyond_ascii_stays_text_and_bytes_that_are_not_utf8_stay_bytes_in_one_read(redis_service, db):
    raw = redis.Redis.from_url(redis_service.uri)
    ids = [raw.xadd("events", {"a": "héllo 😀"}).decode(), raw.xadd("events", {"a": b"\xff\xfe"}).decode(),
           raw.xadd("events", {"a": "plain"}).decode()]
    task = _task(redis_service.uri)
    batches = _poll_batches(task, 3)
    assert [[f.schema.type.name for f in b.value_schema.fields()] for b in batches] == [["STRING"], ["BYTES"],
                                                                                        ["STRING"]]
    assert [(r.key, r.value.get("a")) for b in batches for r in b] == list(zip(ids, ["héllo 😀", b"\xff\xfe",
                                                                                     "plain"], strict=True))
    task.stop()
    body = _task(redis_service.uri, **{"redis.stream.body.field": "a", "redis.stream.consumer.group": "g2"})
    assert [r.value for r in _poll_all(body, 3)] == ["héllo 😀", "\ufffd\ufffd", "plain"]
    body.stop()
    raw.close()


@pytest.mark.slow  # a few seconds of a stopped and restarted redis-server
def test_an_xack_that_fails_while_redis_is_away_is_sent_once_it_is_back(redis_factory):
    server = redis_factory()
    db = redis.Redis.from_url(server.uri, decode_responses=True)
    for i in range(50):
        db.xadd("events", {"n": str(i)})
    task = _task(server.uri, **{"redis.timeout": "2"})
    batches = _poll_batches(task, 50)
    server.stop()
    task.commit_batch(batches[0])
    task.commit()  # Redis is away: the XACK fails, the batch waits for the next try
    with pytest.raises(RetriableException):
        task.poll()
    assert task.entries_acked == 0
    server.start()
    wait_until(lambda: task.poll() is None and task.entries_acked == 50, 20, what="the XACK once Redis is back")
    assert _pending(db) == 0
    task.stop()
    db.close()


def test_of_one_read_only_the_entries_delivered_too_often_go_to_the_dead_letter_topic(redis_service, db):
    extra = {"redis.stream.max.deliveries": "2", "redis.stream.dlq.topic": "events-dlq"}
    poison = db.xadd("events", {"n": "poison"})
    first = _task(redis_service.uri, **extra)
    _poll_batches(first, 1)  # delivered once, never logged
    first.stop()
    fine = db.xadd("events", {"n": "fine"})
    second = _task(redis_service.uri, **extra)
    assert [r.key for b in _poll_batches(second, 2) for r in b] == [poison, fine]  # twice and once
    second.stop()
    third = _task(redis_service.uri, **extra)  # reads both again from its pending list, in one read
    batches = _poll_batches(third, 2)
    assert [(b.topic, [r.key for r in b]) for b in batches] == [("t-events", [fine]), ("events-dlq", [poison])]
    assert [{h.key: h.value for h in b[0].headers}["redis.delivery.count"] for b in batches] == ["2", "3"]
    assert third.entries_dead == 1
    _logged(third, batches)
    assert _pending(db) == 0
    third.stop()
