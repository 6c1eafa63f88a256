"""ElasticsearchSparkSink against a real OpenSearch node, connectors created over REST."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.spark.support import Worker, produce_records, read_topic, spark_props, wait_until

pytestmark = pytest.mark.timeout(420)


def _count(client, index: str) -> int:
    if not client.indices.exists(index=index):
        return 0
    client.indices.refresh(index=index)
    return int(client.count(index=index)["count"])


def test_upsert_tombstones_and_malformed_documents(tmp_path, opensearch):
    suffix = uuid.uuid4().hex[:8]
    accounts, metrics, dlq = f"accounts-{suffix}", f"metrics-{suffix}", f"dlq-{suffix}"
    client = opensearch.client()
    # an index whose mapping a record will violate
    for index in (metrics, f"{metrics}-strict"):
        client.indices.create(index=index, body={"mappings": {"properties": {"n": {"type": "long"}}}})
    log_dir = tmp_path / "data"
    # three versions of 100 keys, the latest last; then tombstones for ten of them
    rounds = [(f"k{i}".encode(), json.dumps({"key": f"k{i}", "v": r, f"field{r}": True}).encode())
              for r in range(3) for i in range(100)]
    produce_records(log_dir, accounts, rounds)
    good = [(None, json.dumps({"n": i}).encode()) for i in range(60)]
    bad_value = b'{"n": "not-a-number"}'
    # the bad record's own header goes with it to the dead-letter topic
    produce_records(log_dir, metrics, good[:30] + [(b"bad", bad_value)] + good[30:],
                    headers=[[]] * 30 + [[("trace-id", b"t-30")]] + [[]] * 30)

    worker = Worker(tmp_path).start()
    try:
        with worker.http() as c:
            r = c.put("/connectors/es-upsert/config", json={
                "connector.class": "ElasticsearchSparkSink", "topics": accounts,
                "connection.url": opensearch.url, "key.ignore": "false", "write.method": "upsert",
                "behavior.on.null.values": "delete", **{k: str(v) for k, v in spark_props().items()}})
            assert r.status_code == 201, r.text
            r = c.put("/connectors/es-dlq/config", json={
                "connector.class": "ElasticsearchSparkSink", "topics": metrics,
                "connection.url": opensearch.url, "key.ignore": "true",
                "behavior.on.malformed.documents": "warn",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.topic.replication.factor": "1",
                "errors.deadletterqueue.context.headers.enable": "true",
                **{k: str(v) for k, v in spark_props().items()}})
            assert r.status_code == 201, r.text
            # the same records with behavior.on.malformed.documents=fail: the task fails with the error
            r = c.put("/connectors/es-fail/config", json={
                "connector.class": "ElasticsearchSparkSink", "topics": metrics,
                "connection.url": opensearch.url, "key.ignore": "true", "index.name.format": f"{metrics}-strict",
                "behavior.on.malformed.documents": "fail", **{k: str(v) for k, v in spark_props().items()}})
            assert r.status_code == 201, r.text
        worker.wait_landed("es-upsert", 300)
        m = worker.wait_landed("es-dlq", 61)
        assert m["documents_written"] == 60 and m["documents_malformed"] == 1
        assert m["dlq_produce_requests"] == 1
        wait_until(lambda: _count(client, accounts) == 100, 60, what="100 accounts")
        failed = wait_until(lambda: (s := worker.status("es-fail"))["tasks"] and s["tasks"][0]["state"] == "FAILED"
                            and s["tasks"][0], 120, what="es-fail to fail")
        assert "rejected as malformed" in failed["trace"] and "mapper_parsing_exception" in failed["trace"]

        # paused: the query stops and tombstones wait; resumed: they delete their documents
        with worker.http() as c:
            assert c.put("/connectors/es-upsert/pause").status_code == 202
            wait_until(lambda: worker.metrics("es-upsert").get("query") == "PAUSED", 60, what="query paused")
            assert worker.status("es-upsert")["tasks"][0]["state"] == "PAUSED"
            produce_records(log_dir, accounts, [(f"k{i}".encode(), None) for i in range(10)])
            # the query is stopped (PAUSED above), so nothing can delete the documents while it stays paused
            assert worker.metrics("es-upsert").get("query") == "PAUSED"
            assert _count(client, accounts) == 100
            assert c.put("/connectors/es-upsert/resume").status_code == 202
        worker.wait_landed("es-upsert", 310)
        wait_until(lambda: _count(client, accounts) == 90, 60, what="tombstones to delete 10 documents")
    finally:
        worker.stop()

    docs = {h["_id"]: h["_source"] for h in client.search(index=accounts, body={"size": 200})["hits"]["hits"]}
    assert set(docs) == {f"k{i}" for i in range(10, 100)}
    # one document per key, with the latest value (upserts merge: the fields of every round are there)
    assert all(d["v"] == 2 and d["field0"] and d["field2"] for d in docs.values())
    assert _count(client, metrics) == 60

    dead = read_topic(log_dir, dlq)
    assert len(dead) == 1
    record = dead[0]
    assert record.value == bad_value and record.key == b"bad"
    headers = {k: v.decode() for k, v in record.headers}
    assert headers["__connect.errors.topic"] == metrics
    assert headers["__connect.errors.offset"] == "30"
    assert headers["__connect.errors.connector.name"] == "es-dlq"
    assert "mapper_parsing_exception" in headers["__connect.errors.exception.message"]
    assert headers["trace-id"] == "t-30"
