"""The seed's ELK chapter end to end: a Python app's exceptions, logged through HeadraceHandler to an HttpSource
on a worker, land through ElasticsearchSparkSink in OpenSearch and are found there by exception type."""

from __future__ import annotations

import logging
import time
import uuid

import pytest

from tests.spark.support import Worker, connector_file, spark_props, wait_until

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]


def _found(client, index: str, error_type: str) -> list[dict]:
    if not client.indices.exists(index=index):
        return []
    client.indices.refresh(index=index)
    hits = client.search(index=index, body={"query": {"match": {"error.type": error_type}}})["hits"]["hits"]
    return [h["_source"] for h in hits]


def test_an_apps_exceptions_are_searchable_in_opensearch_by_exception_type(tmp_path, opensearch):
    from connect.appender import HeadraceHandler
    from tests.support import free_port

    topic = f"app-logs-{uuid.uuid4().hex[:8]}"
    http_port = free_port()
    source = connector_file(tmp_path, "app-logs-in", connector__class="HttpSource", topic=topic,
                            listeners=f"http://127.0.0.1:{http_port}",
                            value__converter="org.apache.kafka.connect.json.JsonConverter",
                            value__converter__schemas__enable="false")
    sink = connector_file(tmp_path, "app-logs-search", connector__class="ElasticsearchSparkSink", topics=topic,
                          connection__url=opensearch.url, key__ignore="true", batch__size=500,
                          **spark_props(**{"trigger.interval.ms": 250}))
    worker = Worker(tmp_path, source, sink).start()
    handler = HeadraceHandler(f"http://127.0.0.1:{http_port}/", batch_size=10, linger_ms=50)
    log = logging.getLogger(f"shop-{uuid.uuid4().hex[:6]}")
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
    client = opensearch.client()
    try:
        log.info("warming up")  # the sink's query is running once this is searchable
        wait_until(lambda: client.indices.exists(index=topic) and _count(client, topic) >= 1, 180, interval=0.5,
                   what="the first event in OpenSearch")
        orders: dict[str, int] = {}
        try:
            print(orders["missing-order"])
        except KeyError:
            log.exception("order lookup failed")
        started = time.monotonic()
        prices = [0]
        try:
            print(100 / prices[0])
        except ZeroDivisionError:
            log.exception("price computation failed", extra={"order": "A-17"})
        found = wait_until(lambda: _found(client, topic, "ZeroDivisionError"), 60, interval=0.2,
                           what="the ZeroDivisionError in OpenSearch")
        latency = time.monotonic() - started
        print(f"logged to searchable in {latency:.1f} s")
    finally:
        handler.close()
        worker.stop()
    [event] = found
    assert event["message"] == "price computation failed" and event["log"]["level"] == "ERROR"
    assert "ZeroDivisionError" in event["error"]["stack_trace"] and event["labels"]["order"] == "A-17"
    assert [e["message"] for e in _found(client, topic, "KeyError")] == ["order lookup failed"]


def _count(client, index: str) -> int:
    client.indices.refresh(index=index)
    return int(client.count(index=index)["count"])
