"""ElasticsearchSparkSink against a real Elasticsearch 7.17 node, the task run in the test process.

What landed is read back over plain HTTP, not through the client the sink
writes with, so a client-side mistake cannot hide itself.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from services.elasticsearch import ELASTICSEARCH_VERSION
from spark_sinks.search import ElasticsearchSparkSinkTask, probe_cluster
from tests.spark.support import InProcessTask, produce_json, produce_records

pytestmark = pytest.mark.timeout(300)


def _docs(es: httpx.Client, index: str) -> dict[str, dict[str, Any]]:
    """Every document of an index by id, after a refresh."""
    es.post(f"/{index}/_refresh").raise_for_status()
    r = es.get(f"/{index}/_search", params={"size": 1000})
    r.raise_for_status()
    body = r.json()
    assert body["hits"]["total"]["value"] <= 1000
    return {h["_id"]: h["_source"] for h in body["hits"]["hits"]}


def _props(name: str, topic: str, url: str, **extra: str) -> dict[str, str]:
    return {"name": name, "topics": topic, "connection.url": url, "spark.master": "local[1]",
            "trigger.interval.ms": "200", **extra}


def test_offset_ids_engine_and_malformed_document(tmp_path, elasticsearch, spark):
    es = httpx.Client(base_url=elasticsearch.url, timeout=30)
    # the node is the 7.x we mean to test, and the sink sees it as Elasticsearch
    assert es.get("/").json()["version"]["number"] == ELASTICSEARCH_VERSION
    assert probe_cluster([elasticsearch.url]) == ("elasticsearch", ELASTICSEARCH_VERSION)

    topic = f"events-{uuid.uuid4().hex[:8]}"
    # a typeless 7.x mapping that one record violates
    r = es.put(f"/{topic}", json={"settings": {"number_of_replicas": 0},
                                  "mappings": {"properties": {"n": {"type": "long"}}}})
    assert r.status_code == 200, r.text
    log_dir = tmp_path / "data"
    produce_json(log_dir, topic, 200, partitions=2, doc=lambda i: {"id": i, "n": "not-a-number" if i == 7 else i})

    props = _props("es-ids", topic, elasticsearch.url, **{"key.ignore": "true",
                                                          "behavior.on.malformed.documents": "warn"})
    with InProcessTask(ElasticsearchSparkSinkTask, props, log_dir, tmp_path / "s1") as t:
        progress = t.wait_records(200)
        assert t.task.settings["engine"] == "elasticsearch"  # engine=auto, told from the root response
    assert progress["documents_written"] == 199 and progress["documents_malformed"] == 1

    # produce_json puts record i at partition i % 2, offset i // 2
    docs = _docs(es, topic)
    assert {doc_id: d["id"] for doc_id, d in docs.items()} == {
        f"{topic}+{i % 2}+{i // 2}": i for i in range(200) if i != 7}


def test_keyed_upsert_insert_and_tombstones(tmp_path, elasticsearch, spark):
    es = httpx.Client(base_url=elasticsearch.url, timeout=30)
    topic = f"accounts-{uuid.uuid4().hex[:8]}"
    log_dir = tmp_path / "data"
    # three versions of 50 keys, each round with a field of its own, the latest last; then tombstones for 5
    rounds = [(f"k{i}".encode(), json.dumps({"key": f"k{i}", "v": r, f"field{r}": True}).encode())
              for r in range(3) for i in range(50)]
    produce_records(log_dir, topic, rounds + [(f"k{i}".encode(), None) for i in range(5)])
    expected_ids = {f"k{i}" for i in range(5, 50)}

    # upsert merges each version into the document of its key
    upsert = _props("es-upsert", topic, elasticsearch.url, **{
        "key.ignore": "false", "write.method": "upsert", "behavior.on.null.values": "delete"})
    with InProcessTask(ElasticsearchSparkSinkTask, upsert, log_dir, tmp_path / "s1") as t:
        progress = t.wait_records(155)
    assert progress["documents_written"] == 150 and progress["documents_deleted"] == 5
    docs = _docs(es, topic)
    assert set(docs) == expected_ids
    assert all(d["v"] == 2 and d["field0"] and d["field1"] and d["field2"] for d in docs.values())

    # insert replaces the whole document, written with external versions (the offsets)
    insert = _props("es-insert", topic, elasticsearch.url, **{
        "key.ignore": "false", "write.method": "insert", "behavior.on.null.values": "delete",
        "index.name.format": "${topic}-insert"})
    with InProcessTask(ElasticsearchSparkSinkTask, insert, log_dir, tmp_path / "s2") as t:
        progress = t.wait_records(155)
    assert progress["documents_deleted"] == 5
    docs = _docs(es, f"{topic}-insert")
    assert set(docs) == expected_ids
    assert all(d["v"] == 2 and "field0" not in d and d["field2"] for d in docs.values())
    # the version of each document is the offset of its latest record: round 2 of key i is at offset 100 + i
    r = es.get(f"/{topic}-insert/_doc/k7")
    assert r.status_code == 200 and r.json()["_version"] == 107


def test_a_document_the_cluster_refuses_fails_the_task_unless_tolerated(tmp_path, elasticsearch, spark):
    from tests.spark.support import wait_until

    es = httpx.Client(base_url=elasticsearch.url, timeout=30)
    topic = f"blocked-{uuid.uuid4().hex[:8]}"
    # a write-blocked index: each document is refused with 403 (cluster_block_exception), not as malformed
    r = es.put(f"/{topic}", json={"settings": {"number_of_replicas": 0, "index.blocks.write": True}})
    assert r.status_code == 200, r.text
    log_dir = tmp_path / "data"
    produce_json(log_dir, topic, 20, partitions=1)

    tolerant = _props("es-tolerant", topic, elasticsearch.url, **{"key.ignore": "true", "errors.tolerance": "all"})
    with InProcessTask(ElasticsearchSparkSinkTask, tolerant, log_dir, tmp_path / "s1") as t:
        progress = t.wait_records(20)
    assert progress["documents_rejected"] == 20 and progress["documents_written"] == 0

    strict = _props("es-strict", topic, elasticsearch.url, **{"key.ignore": "true"})
    with InProcessTask(ElasticsearchSparkSinkTask, strict, log_dir, tmp_path / "s2") as t:
        wait_until(lambda: t.error is not None, 120, interval=0.5, what="the task to fail")
    assert "20 document(s) of batch 0 were rejected" in str(t.error) and "HTTP 403" in str(t.error)
    assert "cluster_block_exception" in str(t.error) and "errors.tolerance=none" in str(t.error)
