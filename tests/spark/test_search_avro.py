"""Avro values (AvroConverter, Headrace's schema registry) land in OpenSearch with an index mapping derived from the
registered schema; a BACKWARD-compatible evolution (a new optional field) adds its field to the mapping; an index
made beforehand keeps the types it has; typed fields answer typed queries (ranges on a long and a date)."""

from __future__ import annotations

import uuid

import pytest

from plugins.converters.avro import AvroConverter
from spark_sinks.search import ElasticsearchSparkSinkTask
from tests.schema_registry.registry_support import ServedRegistry
from tests.spark.support import InProcessTask, produce_records, wait_until
from tests.spark.test_hdfs_avro import V1, V2, order

pytestmark = pytest.mark.timeout(420)


def _count(client, index: str, query: dict | None = None) -> int:
    if not client.indices.exists(index=index):
        return 0
    client.indices.refresh(index=index)
    return int(client.count(index=index, body={"query": query} if query else None)["count"])


def test_avro_topic_gets_a_typed_index_mapping_that_follows_the_evolution(tmp_path, opensearch, spark):
    registry = ServedRegistry(tmp_path / "registry")
    client = opensearch.client()
    suffix = uuid.uuid4().hex[:8]
    topic, kept = f"orders-{suffix}", f"kept-{suffix}"
    try:
        conv = AvroConverter()
        conv.configure({"schema.registry.url": registry.url}, False)
        log_dir = tmp_path / "data"
        produce_records(log_dir, topic, [(None, v) for v in conv.from_connect_batch(
            topic, V1, [order(V1, i) for i in range(200)])])
        props = {"name": f"typed-{suffix}", "topics": topic, "connection.url": opensearch.url, "key.ignore": "true",
                 "spark.master": "local[1]", "trigger.interval.ms": "200",
                 "value.converter": "io.confluent.connect.avro.AvroConverter",
                 "value.converter.schema.registry.url": registry.url}
        with InProcessTask(ElasticsearchSparkSinkTask, props, log_dir, tmp_path / "s1") as t:
            t.wait_records(200)
            wait_until(lambda: _count(client, topic) == 200, 120, interval=0.5, what="the first batch indexed")
            fields = client.indices.get_mapping(index=topic)[topic]["mappings"]["properties"]
            assert fields["id"]["type"] == "long" and fields["qty"]["type"] == "integer"  # INT16 is an Avro int
            assert fields["paid"]["type"] == "boolean" and fields["price"]["type"] == "double"
            assert fields["day"]["type"] == "date" and fields["at"]["type"] == "date"
            assert fields["customer"]["type"] == "text" and fields["customer"]["fields"]["keyword"]["type"] == "keyword"
            assert "email" not in fields
            assert _count(client, topic) == 200
            # typed queries: a numeric range on the long, a date range, an exact match on the keyword
            assert _count(client, topic, {"range": {"id": {"gte": 150}}}) == 50
            assert _count(client, topic, {"range": {"day": {"gte": "2026-11-03"}}}) == len(
                [i for i in range(200) if i % 3 == 2])
            assert _count(client, topic, {"term": {"customer.keyword": "c3"}}) == len(
                [i for i in range(200) if i % 7 == 3])
            assert _count(client, topic, {"range": {"price": {"gt": 1.5}}}) == len([i for i in range(200) if i > 150])

            # the evolution: a new optional field, registered BACKWARD-compatible, added to the mapping
            produce_records(log_dir, topic, [(None, v) for v in conv.from_connect_batch(
                topic, V2, [order(V2, i) for i in range(200, 300)])])
            t.wait_records(300)
            wait_until(lambda: _count(client, topic) == 300, 120, interval=0.5, what="the evolved batch indexed")
        fields = client.indices.get_mapping(index=topic)[topic]["mappings"]["properties"]
        assert fields["email"]["type"] == "text" and fields["id"]["type"] == "long"
        assert _count(client, topic) == 300
        assert _count(client, topic, {"term": {"email.keyword": "u250@example.com"}}) == 1

        # an index made beforehand keeps its own types; only the fields it lacks are added
        client.indices.create(index=kept, body={"mappings": {"properties": {"customer": {"type": "keyword"}}}})
        produce_records(log_dir, kept, [(None, v) for v in conv.from_connect_batch(
            kept, V1, [order(V1, i) for i in range(20)])])
        with InProcessTask(ElasticsearchSparkSinkTask, {**props, "name": f"kept-{suffix}", "topics": kept}, log_dir,
                           tmp_path / "s2") as t:
            t.wait_records(20)
            wait_until(lambda: _count(client, kept) == 20, 120, interval=0.5, what="the kept index's batch")
        fields = client.indices.get_mapping(index=kept)[kept]["mappings"]["properties"]
        assert fields["customer"] == {"type": "keyword"} and fields["id"]["type"] == "long"
        assert _count(client, kept) == 20
    finally:
        registry.close()
