"""Two ``headrace schema-registry`` processes on one Kafka cluster share one ``_schemas`` topic: a schema
registered through either has the same id through both, writes at once never share an id, and a registry
killed with ``kill -9`` comes back with every schema and id."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import httpx
import pytest

from services.kafka import KafkaService
from tests.support import CliProcess, free_port, wait_until, write_properties

pytestmark = pytest.mark.timeout(240)

HEADERS = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def schema(field: str) -> str:
    return json.dumps({"type": "record", "name": "R", "fields": [{"name": field, "type": "int"}]})


class Registry:
    def __init__(self, tmp: Path, name: str, kafka: KafkaService, topic: str) -> None:
        self.url = f"http://127.0.0.1:{free_port()}"
        self.cfg = write_properties(tmp / f"{name}.properties", {
            "bootstrap.servers": kafka.bootstrap_servers, "schema.registry.topic": topic,
            "schema.registry.replication.factor": 1})
        self.tmp, self.name = tmp, name
        self.proc: CliProcess | None = None

    def start(self) -> Registry:
        exe = Path(sys.executable).with_name("headrace")
        self.proc = CliProcess([str(exe), "schema-registry", "-c", str(self.cfg), "--listener", self.url], self.tmp,
                               f"{self.name}.log").start()
        proc = self.proc
        wait_until(lambda: self.up() or not proc.alive(), 90, what=f"registry {self.name} up")
        assert proc.alive(), proc.log()
        return self

    def up(self) -> bool:
        try:
            return httpx.get(f"{self.url}/subjects", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def register(self, subject: str, text: str) -> int:
        answer = httpx.post(f"{self.url}/subjects/{subject}/versions", json={"schema": text}, headers=HEADERS,
                            timeout=60)
        assert answer.status_code == 200, answer.text
        return int(answer.json()["id"])

    def latest_id(self, subject: str) -> int | None:
        answer = httpx.get(f"{self.url}/subjects/{subject}/versions/latest", timeout=10)
        return int(answer.json()["id"]) if answer.status_code == 200 else None


def test_two_registries_on_one_kafka_cluster_serve_the_same_ids(kafka: KafkaService, tmp_path: Path,
                                                                unique_topic) -> None:
    topic = unique_topic("_schemas")
    a = Registry(tmp_path, "a", kafka, topic).start()
    b = Registry(tmp_path, "b", kafka, topic).start()
    try:
        first = a.register("orders-value", schema("x"))
        assert wait_until(lambda: b.latest_id("orders-value"), 30, what="b sees a's schema") == first
        assert b.register("copy-value", schema("x")) == first  # the same schema through b: the same id

        ids: dict[str, int] = {}

        def many(registry: Registry, side: str) -> None:
            for i in range(5):
                ids[f"{side}-{i}"] = registry.register(f"{side}-{i}", schema(f"{side}{i}"))
        threads = [threading.Thread(target=many, args=(r, side)) for r, side in ((a, "a"), (b, "b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert len(ids) == 10 and len(set(ids.values()) | {first}) == 11
        for subject, schema_id in ids.items():
            assert wait_until(lambda s=subject: a.latest_id(s), 30) == schema_id
            assert wait_until(lambda s=subject: b.latest_id(s), 30) == schema_id

        assert a.proc is not None
        a.proc.kill9()
        a.start()
        for subject, schema_id in {**ids, "orders-value": first}.items():
            assert a.latest_id(subject) == schema_id
    finally:
        for registry in (a, b):
            if registry.proc is not None:
                registry.proc.terminate()
