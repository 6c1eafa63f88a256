"""RedisKeysSourceTask against a real redis-server: the snapshot, then live changes, one task only."""

from __future__ import annotations

import pytest
import redis

from connect.api import SourceRecord
from plugins.redis import RedisKeysSourceConnector, RedisKeysSourceTask
from tests.plugins.task_contexts import SourceContext, config_errors
from tests.support import wait_until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def db(redis_service) -> redis.Redis:
    client = redis.Redis.from_url(redis_service.uri, decode_responses=True)
    client.flushall()
    client.config_set("notify-keyspace-events", "KEA")
    yield client
    client.config_set("notify-keyspace-events", "")
    client.close()


def _task(uri: str, **extra: str) -> RedisKeysSourceTask:
    props = {"name": "keys", "redis.uri": uri, "redis.keys.pattern": "app:*", **extra}
    task = RedisKeysSourceTask()
    task.initialize(SourceContext(props))
    task.start(props)
    return task


def _collect(task: RedisKeysSourceTask, done) -> dict[str, SourceRecord]:
    """Records by key (the last one wins) until ``done(records)``."""
    seen: dict[str, SourceRecord] = {}

    def check() -> bool:
        for record in task.poll() or []:
            seen[record.key] = record
        return done(seen)

    wait_until(check, 20, interval=0, what="records")
    return seen


def _headers(record: SourceRecord) -> dict[str, str]:
    return {h.key: h.value for h in record.headers}


def test_snapshot_of_every_type_then_live_changes(redis_service, db):
    db.set("app:s", "text")
    db.hset("app:h", mapping={"a": "1", "b": "2"})
    db.rpush("app:l", "x", "y")
    db.sadd("app:set", "q", "p")
    db.zadd("app:z", {"m": 2.5})
    db.xadd("app:st", {"f": "v"})
    db.set("other:key", "not followed")
    task = _task(redis_service.uri)
    snap = _collect(task, lambda seen: len(seen) >= 6)
    assert {k: r.value for k, r in snap.items()} == {
        "app:s": "text", "app:h": {"a": "1", "b": "2"}, "app:l": ["x", "y"], "app:set": ["p", "q"],
        "app:z": {"m": 2.5}, "app:st": 1}
    assert _headers(snap["app:h"]) == {"redis.key.event": "snapshot", "redis.key.type": "hash"}
    assert all(r.topic == "rediskeys" and r.source_partition is None for r in snap.values())
    db.set("app:s", "changed")
    db.hset("app:h", "c", "3")
    db.delete("app:l")
    db.set("app:gone", "soon", px=50)
    db.set("other:key", "still not followed")
    live = _collect(task, lambda seen: {"app:s", "app:h", "app:l"} <= set(seen)
                    and _headers(seen.get("app:gone", snap["app:s"])).get("redis.key.event") == "expired")
    assert live["app:s"].value == "changed" and _headers(live["app:s"])["redis.key.event"] == "set"
    assert live["app:h"].value == {"a": "1", "b": "2", "c": "3"}
    assert live["app:l"].value is None and _headers(live["app:l"]) == {"redis.key.event": "del",
                                                                        "redis.key.type": "none"}
    assert live["app:gone"].value is None
    assert "other:key" not in live
    task.stop()


def test_liveonly_skips_the_existing_keys(redis_service, db):
    db.set("app:old", "1")
    task = _task(redis_service.uri, mode="LIVEONLY")
    assert task.poll() is None
    db.set("app:new", "2")
    assert set(_collect(task, lambda seen: "app:new" in seen)) == {"app:new"}
    task.stop()


def test_validation_refuses_several_tasks_and_a_server_without_notifications(redis_service, db):
    ok = {"redis.uri": redis_service.uri}
    assert config_errors(RedisKeysSourceConnector().validate(ok)) == {}
    errors = config_errors(RedisKeysSourceConnector().validate({**ok, "tasks.max": "2"}))
    assert list(errors) == ["tasks.max"] and "one task only" in errors["tasks.max"][0]
    db.config_set("notify-keyspace-events", "")
    errors = config_errors(RedisKeysSourceConnector().validate(ok))
    assert list(errors) == ["redis.keys.pattern"] and "notify-keyspace-events" in errors["redis.keys.pattern"][0]
    connector = RedisKeysSourceConnector()
    connector.start(ok)
    assert len(connector.task_configs(4)) == 1
