"""EmbeddedProducer.record_limit: what the runtime checks records against before sending them. A record within it
is always written (the check never lets through what the log then refuses, which would fail a whole send), and
it names the setting that makes it."""

from __future__ import annotations

import pytest

from connect.log.api import LogError, NewTopic, record_bytes
from connect.log.embedded.backend import EmbeddedBackend

pytestmark = pytest.mark.timeout(60)
QUIET = {"log.retention.check.interval.ms": 3_600_000}


@pytest.fixture
def backend(tmp_path):
    b = EmbeddedBackend(str(tmp_path), QUIET)
    yield b
    b.close()


@pytest.mark.parametrize("transactional", [False, True])
def test_a_record_at_the_limit_is_written_with_keys_timestamps_and_headers(backend, transactional) -> None:
    backend.admin().create_topic(NewTopic("t", 1))
    config = {"max.request.size": "4096", **({"transactional.id": "tx"} if transactional else {})}
    producer = backend.producer(config)
    if transactional:
        producer.init_transactions()
        producer.begin_transaction()
    limit = producer.record_limit("t")
    assert limit.max_bytes == 4096 and limit.setting == "max.request.size"
    headers = (("h\u00e9", b"v"), ("empty", None))
    key = b"k" * 10
    value = b"v" * (limit.max_record_bytes - record_bytes(key, None, headers))
    assert record_bytes(key, value, headers) == limit.max_record_bytes
    producer.send_batch("t", None, [value], [key], [123], [headers])  # raises if the log refuses it
    producer.send("t", value, key, None, 456, headers)
    if transactional:
        producer.commit_transaction()
    producer.flush()
    with pytest.raises(LogError):  # far above: refused, as the check expects
        producer.send_batch("t", None, [b"x" * 5000])
    producer.close()


def test_a_topic_limit_below_the_producer_limit_is_named(backend) -> None:
    backend.admin().create_topic(NewTopic("small", 1, configs={"max.message.bytes": "2000"}))
    producer = backend.producer()
    limit = producer.record_limit("small")
    assert (limit.max_bytes, limit.setting) == (2000, "max.message.bytes of topic small")
    producer.send_batch("small", None, [b"v" * limit.max_record_bytes])
    producer.close()


def test_a_topic_not_there_yet_is_made_as_a_send_would(backend) -> None:
    producer = backend.producer()
    assert producer.record_limit("new-topic").max_bytes == 1048576
    assert "new-topic" in backend.admin().list_topics()
    producer.close()


@pytest.mark.parametrize(("overrides", "expected"), [({}, 1000000), ({"max.request.size": "2097152"}, 2097152)])
def test_the_kafka_producer_limit_is_librdkafka_s_message_max_bytes(overrides, expected) -> None:
    """No broker needed: librdkafka refuses a larger message in produce() itself, and max.request.size becomes
    message.max.bytes."""
    from connect.log.kafka.config import client_config
    from connect.log.kafka.producer import KafkaProducer

    config, own = client_config({"bootstrap.servers": "127.0.0.1:1"}, "producer", overrides)
    producer = KafkaProducer(config, own)
    try:
        limit = producer.record_limit("t")
        assert (limit.max_bytes, limit.setting) == (expected, "max.request.size")
        assert 0 < limit.overhead < 200
    finally:
        producer.close(0)


def test_a_record_sent_without_a_callback_that_the_log_refuses_fails_the_next_flush(backend) -> None:
    """As the Kafka producer's: a failure nobody has a callback for is raised by flush, never only logged (the
    runtime would count the record as written)."""
    backend.admin().create_topic(NewTopic("t", 1))
    producer = backend.producer({"max.request.size": "2000", "linger.ms": "1000"})
    producer.send("t", b"small")
    producer.send("t", b"x" * 5000)
    with pytest.raises(LogError, match="exceeds the 2000-byte limit"):
        producer.flush()
    producer.send("t", b"after")
    assert producer.flush() == 0, "reported once"
    producer.close()
