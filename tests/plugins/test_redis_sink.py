"""RedisSinkTask against a real redis-server: the layout of every type, tombstones, replays, bad records."""

from __future__ import annotations

import pytest
import redis

from connect.api import (
    ConnectException,
    DataException,
    RetriableException,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
)
from plugins.redis import RedisSinkConnector, RedisSinkTask
from tests.plugins.task_contexts import Reporter, SinkContext, config_errors

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def db(redis_service) -> redis.Redis:
    client = redis.Redis.from_url(redis_service.uri, decode_responses=True)
    client.flushall()
    yield client
    client.close()


def _task(uri: str, kind: str, reporter: Reporter | None = None, **extra: str) -> RedisSinkTask:
    props = {"name": "redis-sink", "redis.uri": uri, "redis.type": kind, **extra}
    task = RedisSinkTask()
    task.initialize(SinkContext(props, reporter))
    task.start(props)
    return task


def _rec(key, value, offset: int, topic: str = "orders", value_schema=None) -> SinkRecord:
    return SinkRecord(topic, 0, Schema.OPTIONAL_STRING_SCHEMA, key, value_schema, value, offset)


N = 2000
KEYS = N // 2  # every key is written twice: the last value must win


def _records(kind: str) -> list[SinkRecord]:
    out = []
    for i in range(N):
        k = f"k{i % KEYS}"
        if kind in ("HASH", "STREAM"):
            value = {"n": i, "name": f"item-{i}", "skip": None}
        elif kind == "ZSET":
            value = str(i * 1.5)
        else:
            value = f"v{i}"
        out.append(_rec(k, value, i))
    return out


@pytest.mark.parametrize("kind", ["STRING", "HASH", "STREAM", "LIST", "SET", "ZSET"])
def test_each_type_lands_every_record_with_the_documented_layout(redis_service, db, kind):
    task = _task(redis_service.uri, kind)
    records = _records(kind)
    for start in range(0, N, 500):
        task.put(records[start:start + 500])
    task.stop()
    last = {f"k{i % KEYS}": i for i in range(N)}  # key -> index of its last record
    if kind == "STRING":
        assert len(db.keys("orders:*")) == KEYS
        assert all(db.get(f"orders:{k}") == f"v{i}" for k, i in last.items())
    elif kind == "HASH":
        assert len(db.keys("orders:*")) == KEYS
        for k, i in last.items():
            assert db.hgetall(f"orders:{k}") == {"n": str(i), "name": f"item-{i}"}  # null fields left out
    elif kind == "STREAM":
        entries = db.xrange("orders")
        assert [e[1] for e in entries] == [{"n": str(i), "name": f"item-{i}"} for i in range(N)]
    elif kind == "LIST":
        assert db.lrange("orders", 0, -1) == [f"k{i % KEYS}" for i in range(N)]
    elif kind == "SET":
        assert db.smembers("orders") == set(last)
    else:
        assert dict(db.zrange("orders", 0, -1, withscores=True)) == {k: i * 1.5 for k, i in last.items()}


@pytest.mark.parametrize("kind", ["STRING", "HASH", "LIST", "SET", "ZSET"])
def test_a_tombstone_deletes_the_key_or_member(redis_service, db, kind):
    task = _task(redis_service.uri, kind)
    value = {"a": "1"} if kind == "HASH" else ("2.5" if kind == "ZSET" else "x")
    task.put([_rec("gone", value, 0), _rec("kept", value, 1)])
    task.put([_rec("gone", None, 2)])
    task.stop()
    if kind in ("STRING", "HASH"):
        assert db.exists("orders:gone") == 0 and db.exists("orders:kept") == 1
    elif kind == "LIST":
        assert db.lrange("orders", 0, -1) == ["kept"]
    elif kind == "SET":
        assert db.smembers("orders") == {"kept"}
    else:
        assert db.zrange("orders", 0, -1) == ["kept"]


def test_a_tombstone_writes_nothing_to_a_stream(redis_service, db):
    task = _task(redis_service.uri, "STREAM")
    task.put([_rec("a", {"f": "1"}, 0), _rec("a", None, 1)])
    task.stop()
    assert db.xlen("orders") == 1


def _snapshot(db: redis.Redis) -> dict[str, object]:
    return {key: db.dump(key) for key in sorted(db.keys("*"))}


@pytest.mark.parametrize("kind", ["STRING", "HASH", "SET", "ZSET"])
def test_a_replay_leaves_the_idempotent_types_exactly_as_they_were(redis_service, db, kind):
    records = _records(kind)
    records[7] = _rec(records[7].key, None, 7)  # a tombstone in the middle, undone by the key's later record
    task = _task(redis_service.uri, kind)
    task.put(records)
    before = _snapshot(db)
    task.put(records[N // 3:])  # what a crash between write and offset commit makes the worker send again
    task.put(records)
    task.stop()
    assert _snapshot(db) == before


@pytest.mark.parametrize("kind", ["LIST", "STREAM"])
def test_a_replay_duplicates_list_and_stream_writes_as_documented(redis_service, db, kind):
    task = _task(redis_service.uri, kind)
    records = _records("HASH" if kind == "STREAM" else kind)[:10]
    task.put(records)
    task.put(records)
    task.stop()
    assert (db.llen("orders") if kind == "LIST" else db.xlen("orders")) == 20


def test_keyspace_separator_and_topic_placeholder(redis_service, db):
    task = _task(redis_service.uri, "STRING", **{"redis.keyspace": "app/${topic}", "redis.separator": "/"})
    task.put([_rec("1", "a", 0, topic="t1"), _rec(b"2", "b", 1, topic="t2"), _rec(3, "c", 2, topic="t1")])
    task.stop()
    assert db.mget("app/t1/1", "app/t2/2", "app/t1/3") == ["a", "b", "c"]
    task = _task(redis_service.uri, "STRING", **{"redis.keyspace": ""})
    task.put([_rec("bare", "v", 3)])
    task.stop()
    assert db.get("bare") == "v"


def test_a_struct_value_becomes_hash_fields_and_nested_values_json(redis_service, db):
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("ok", Schema.BOOLEAN_SCHEMA).field(
        "tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build()).build()
    value = Struct(schema).put("id", 42).put("ok", True).put("tags", ["a", "b"])
    task = _task(redis_service.uri, "HASH")
    task.put([_rec("s", value, 0, value_schema=schema)])
    task.stop()
    assert db.hgetall("orders:s") == {"id": "42", "ok": "true", "tags": '["a","b"]'}


def test_key_ttl_multiexec_and_wait_without_replicas(redis_service, db):
    task = _task(redis_service.uri, "SET", **{"redis.key.ttl": "100", "redis.multiexec": "true"})
    task.put([_rec("a", "1", 0), _rec("b", "1", 1)])
    task.stop()
    assert db.smembers("orders") == {"a", "b"} and 0 < db.ttl("orders") <= 100
    task = _task(redis_service.uri, "STRING", **{"redis.wait.replicas": "1", "redis.wait.timeout": "10"})
    with pytest.raises(RetriableException, match="0 of the 1 replicas"):
        task.put([_rec("w", "1", 0)])  # no replica: the batch is written, but WAIT says it is not replicated
    task.stop()
    assert db.get("orders:w") == "1"


def test_a_hash_fed_a_string_is_reported_naming_the_record_and_the_rest_lands(redis_service, db):
    reporter = Reporter()
    task = _task(redis_service.uri, "HASH", reporter)
    task.put([_rec("good", {"a": "1"}, 10), _rec("bad", "just text", 11), _rec("good2", {"b": "2"}, 12)])
    task.stop()
    assert [r.kafka_offset for r, _ in reporter.reported] == [11]
    error = reporter.reported[0][1]
    assert isinstance(error, DataException)
    assert "topic orders partition 0 offset 11" in str(error) and "map or struct" in str(error)
    assert db.hgetall("orders:good") == {"a": "1"} and db.hgetall("orders:good2") == {"b": "2"}
    assert db.exists("orders:bad") == 0


def test_without_a_reporter_a_bad_record_fails_the_batch_before_anything_is_written(redis_service, db):
    task = _task(redis_service.uri, "ZSET")
    with pytest.raises(DataException, match=r"ZSET needs a number.*topic orders partition 0 offset 5.*'abc'"):
        task.put([_rec("m1", "1", 4), _rec("m2", "abc", 5)])
    assert db.exists("orders") == 0
    task.stop()
    tolerant = _task(redis_service.uri, "ZSET", **{"errors.tolerance": "all"})
    tolerant.put([_rec("m1", "1", 4), _rec("m2", "abc", 5)])
    tolerant.stop()
    assert db.zrange("orders", 0, -1, withscores=True) == [("m1", 1.0)]


def test_a_key_of_another_type_is_reported_by_redis_and_the_rest_lands(redis_service, db):
    db.set("orders:taken", "a string")
    reporter = Reporter()
    task = _task(redis_service.uri, "HASH", reporter)
    task.put([_rec("taken", {"a": "1"}, 3), _rec("free", {"a": "1"}, 4)])
    task.stop()
    assert [r.kafka_offset for r, _ in reporter.reported] == [3]
    assert "WRONGTYPE" in str(reporter.reported[0][1]) and "offset 3" in str(reporter.reported[0][1])
    assert db.hgetall("orders:free") == {"a": "1"}


def test_a_record_without_a_key_is_a_data_exception(redis_service, db):
    task = _task(redis_service.uri, "STRING")
    with pytest.raises(DataException, match="offset 9 has no key"):
        task.put([_rec(None, "v", 9)])
    task.stop()


def test_an_unreachable_server_during_put_is_retriable(redis_factory):
    server = redis_factory()
    task = _task(server.uri, "STRING", **{"redis.timeout": "1"})
    task.put([_rec("a", "1", 0)])
    server.kill()
    try:
        with pytest.raises(RetriableException, match=f"Redis at {server.uri} is unreachable"):
            task.put([_rec("b", "1", 1)])
    finally:
        server.start()
    task.put([_rec("b", "1", 1)])  # the redelivered batch lands once the server is back
    task.stop()
    assert redis.Redis(port=server.port).get("orders:b") == b"1"


def test_validation_refuses_an_unreachable_server_naming_it(redis_service):
    from services.base import free_port

    uri = f"redis://127.0.0.1:{free_port()}"
    errors = config_errors(RedisSinkConnector().validate({"redis.uri": uri, "redis.type": "HASH", "topics": "t"}))
    assert list(errors) == ["redis.uri"]
    assert errors["redis.uri"][0].startswith(f"Cannot reach Redis at {uri}: ")
    assert config_errors(RedisSinkConnector().validate({"redis.uri": redis_service.uri, "redis.type": "HASH"})) == {}


def test_validation_refuses_a_wrong_password_without_showing_it(redis_factory):
    server = redis_factory(password="right-secret")
    config = {"redis.uri": server.uri, "redis.type": "STRING", "redis.password": "wrong-secret"}
    errors = config_errors(RedisSinkConnector().validate(config))
    assert list(errors) == ["redis.password"] and "refused the credentials" in errors["redis.password"][0]
    assert "secret" not in errors["redis.password"][0]
    assert config_errors(RedisSinkConnector().validate({**config, "redis.password": "right-secret"})) == {}
    with_uri_password = {"redis.uri": f"redis://:wrong-secret@127.0.0.1:{server.port}", "redis.type": "STRING"}
    errors = config_errors(RedisSinkConnector().validate(with_uri_password))
    assert errors and "wrong-secret" not in str(errors) and ":***@127.0.0.1" in str(errors)


@pytest.mark.parametrize(("config", "key", "words"), [
    ({"redis.type": "LIST", "redis.keyspace": ""}, "redis.keyspace", "cannot be empty"),
    ({"redis.type": "JSON"}, "redis.type", "RedisJSON module"),
    ({"redis.type": "GEO"}, "redis.type", "String must be one of"),
    ({"redis.uri": "http://x:1"}, "redis.uri", "scheme"),
    ({"redis.key.ttl": "-5"}, "redis.key.ttl", "at least -1"),
])
def test_validation_refuses_bad_configs_naming_the_key(redis_service, config, key, words):
    errors = config_errors(RedisSinkConnector().validate({"redis.uri": redis_service.uri, **config}))
    assert list(errors) == [key] and words in errors[key][0], errors


def test_start_parses_and_a_stopped_task_refuses_put(redis_service):
    task = _task(redis_service.uri, "STRING")
    task.stop()
    with pytest.raises(ConnectException, match="stopped"):
        task.put([_rec("a", "1", 0)])


def test_tls_with_rediss_the_ca_and_a_client_certificate(redis_factory, tmp_path):
    from tests.rest.tls_certs import make_certs

    certs = make_certs(tmp_path)
    server = redis_factory(tls_cert=certs.server_store, tls_key=tmp_path / "server.key", tls_ca=certs.ca,
                           tls_auth_clients=True)
    assert server.uri.startswith("rediss://")
    mutual = {"redis.cacert": str(certs.ca), "redis.key.cert": str(certs.client_cert),
              "redis.key.file": str(certs.client_key)}
    base = {"redis.uri": server.uri, "redis.type": "STRING"}
    assert config_errors(RedisSinkConnector().validate({**base, **mutual})) == {}
    untrusted = config_errors(RedisSinkConnector().validate({**base, "redis.key.cert": str(certs.client_cert),
                                                        "redis.key.file": str(certs.client_key)}))
    assert list(untrusted) == ["redis.uri"] and "certificate verify failed" in untrusted["redis.uri"][0]
    no_client_cert = config_errors(RedisSinkConnector().validate({**base, "redis.cacert": str(certs.ca)}))
    assert list(no_client_cert) == ["redis.uri"]
    plain = f"redis://127.0.0.1:{server.port}"  # redis.tls=true turns redis:// into TLS
    assert config_errors(RedisSinkConnector().validate({**base, **mutual, "redis.uri": plain, "redis.tls": "true"})) == {}
    task = _task(server.uri, "STRING", **mutual)
    task.put([_rec("secure", "yes", 0)])
    task.stop()
    client = redis.Redis.from_url(server.uri, ssl_ca_certs=str(certs.ca), ssl_certfile=str(certs.client_cert),
                                  ssl_keyfile=str(certs.client_key), decode_responses=True)
    assert client.get("orders:secure") == "yes"
    client.close()
