"""A Kafka producer that reports failed deliveries only (delivery.report.only.error), as source tasks use it."""

from __future__ import annotations

import pytest

from connect.log import open_log_backend
from connect.log.api import LogError, NewTopic

pytestmark = pytest.mark.timeout(60)


def test_failures_are_still_raised_by_flush_and_callbacks_are_refused(kafka, unique_topic) -> None:
    backend = open_log_backend({"bootstrap.servers": kafka.bootstrap_servers})
    topic = unique_topic("reports")
    admin = backend.admin()
    producer = backend.producer({"delivery.report.only.error": "true", "message.timeout.ms": "3000"})
    try:
        admin.create_topic(NewTopic(topic, 1, configs={"max.message.bytes": "2000"}))
        producer.send_batch(topic, None, [b"a", b"b"], None, [1, 2])
        assert producer.flush(10) == 0
        assert admin.describe_topic(topic).offsets[0] == (0, 2)
        # too large for the topic: the broker refuses them, which only a delivery report tells
        producer.send_batch(topic, 0, [b"c" * 5000, b"d" * 5000])
        with pytest.raises(LogError, match=r"2 record\(s\) could not be delivered"):
            producer.flush(10)
        with pytest.raises(LogError, match="delivery.report.only.error"):
            producer.send(topic, b"e", on_delivery=lambda err, md: None)
        producer.send(topic, b"f")  # without a callback it is fine
        assert producer.flush(10) == 0
        assert admin.describe_topic(topic).offsets[0] == (0, 3)
    finally:
        producer.close(5)
        admin.close()
        backend.close()
