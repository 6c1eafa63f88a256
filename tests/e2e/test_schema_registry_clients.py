"""Confluent's own Python clients (confluent-kafka's SchemaRegistryClient, AvroSerializer, AvroDeserializer)
against Headrace's schema registry, run as ``headrace schema-registry`` and inside ``connect-standalone``, both
real processes over HTTP; the registry survives ``kill -9``; bad Avro records follow errors.tolerance and
the DLQ through a real worker."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from connect.api import Schema as ConnectSchema
from connect.api import SchemaBuilder, Struct
from plugins.converters.avro import AvroConverter
from tests.support import CliProcess, RestWorker, free_port, wait_until, write_properties

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

V1 = json.dumps({"type": "record", "name": "User", "namespace": "com.example",
                 "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]})
V2 = json.dumps({"type": "record", "name": "User", "namespace": "com.example",
                 "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
                            {"name": "email", "type": ["null", "string"], "default": None}]})
BAD = json.dumps({"type": "record", "name": "User", "namespace": "com.example",
                  "fields": [{"name": "id", "type": "string"}, {"name": "name", "type": "string"}]})
CTX = SerializationContext("users", MessageField.VALUE)


class RegistryProcess:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.port = free_port()
        self.cfg = write_properties(tmp / "registry.properties", {"embedded.log.dir": tmp / "data"})
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: CliProcess | None = None

    def start(self) -> RegistryProcess:
        exe = Path(sys.executable).with_name("headrace")
        self.proc = CliProcess([str(exe), "schema-registry", "-c", str(self.cfg), "--listener", self.url],
                               self.tmp, "registry.log").start()
        proc = self.proc
        wait_until(lambda: _up(self.url) or not proc.alive(), 60, what="schema registry up")
        assert proc.alive(), proc.log()
        return self


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/subjects", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def snapshot(url: str) -> dict:
    """Everything the registry holds, read over its API: subjects, versions (soft-deleted too), ids, schemas."""
    out: dict = {"config": httpx.get(f"{url}/config").json()}
    for subject in httpx.get(f"{url}/subjects", params={"deleted": "true"}).json():
        versions = httpx.get(f"{url}/subjects/{subject}/versions", params={"deleted": "true"}).json()
        out[subject] = [httpx.get(f"{url}/subjects/{subject}/versions/{v}", params={"deleted": "true"}).json()
                        for v in versions]
        for entry in out[subject]:
            assert httpx.get(f"{url}/schemas/ids/{entry['id']}").json()["schema"] == entry["schema"]
    return out


def converter(url: str) -> AvroConverter:
    conv = AvroConverter()
    conv.configure({"schema.registry.url": url}, False)
    return conv


def test_confluent_clients_work_unchanged_and_every_schema_survives_kill_9(tmp_path: Path) -> None:
    registry = RegistryProcess(tmp_path).start()
    assert registry.proc is not None
    try:
        client = SchemaRegistryClient({"url": registry.url})
        id1 = client.register_schema("users-value", Schema(V1, "AVRO"))
        id2 = client.register_schema("users-value", Schema(V2, "AVRO"))  # a new optional field: BACKWARD
        assert id2 != id1
        with pytest.raises(SchemaRegistryError) as refused:
            client.register_schema("users-value", Schema(BAD, "AVRO"))
        assert refused.value.http_status_code == 409
        assert client.test_compatibility("users-value", Schema(BAD, "AVRO")) is False
        found = client.lookup_schema("users-value", Schema(V1, "AVRO"))
        assert (found.schema_id, found.version) == (id1, 1)
        assert client.get_versions("users-value") == [1, 2]
        assert client.get_latest_version("users-value").schema_id == id2
        assert client.register_schema("copy-value", Schema(V2, "AVRO")) == id2  # ids are global
        assert sorted(client.get_subjects()) == ["copy-value", "users-value"]

        # Confluent's serializer writes, Headrace's converter reads
        serialize = AvroSerializer(client, V2)
        user = {"id": 7, "name": "Ada", "email": "ada@example.com"}
        theirs = serialize(user, CTX)
        read = converter(registry.url).to_connect_data("users", theirs)
        assert isinstance(read.value, Struct) and read.schema.name == "com.example.User"
        assert (read.value.get("id"), read.value.get("name"), read.value.get("email")) == (7, "Ada", "ada@example.com")

        # Headrace's converter writes, Confluent's deserializer reads; the Avro body is the same bytes
        ours = converter(registry.url).from_connect_data("users", read.schema, read.value)
        assert ours[5:] == theirs[5:]
        deserialize = AvroDeserializer(client)
        assert deserialize(ours, CTX) == user

        # byte-identical whole records: Confluent's serializer given the schema Headrace registered
        schema_id = struct.unpack(">I", ours[1:5])[0]
        registered = client.get_schema(schema_id).schema_str
        assert AvroSerializer(client, registered)(user, CTX) == ours

        # deletes: soft, then hard
        assert client.delete_version("copy-value", 1) == 1
        assert client.delete_subject("copy-value", permanent=True) == [1]
        assert client.get_subjects() == ["users-value"]
        client.set_compatibility("users-value", "FULL")

        before = snapshot(registry.url)
        registry.proc.kill9()
        registry.start()
        assert snapshot(registry.url) == before
        # old records still decode with a fresh client and a fresh converter
        assert AvroDeserializer(SchemaRegistryClient({"url": registry.url}))(theirs, CTX) == user
        assert converter(registry.url).to_connect_data("users", ours).value == read.value
        # and new ids go on after the old ones
        assert client.register_schema("more-value", Schema(BAD, "AVRO")) > max(id1, id2, schema_id)
    finally:
        registry.proc.terminate()
    assert "Schema registry: registered schema id" in registry.proc.log()


def test_the_workers_own_registry_serves_confluents_client_and_survives_kill_9(tmp_path: Path) -> None:
    worker = RestWorker(tmp_path).start()
    assert worker.proc is not None
    try:
        url = f"{worker.url}/schema-registry"
        client = SchemaRegistryClient({"url": url})
        ids = [client.register_schema("a-value", Schema(V1, "AVRO")), client.register_schema("a-value", Schema(V2, "AVRO"))]
        assert client.register_schema("b-value", Schema(V1, "AVRO")) == ids[0]
        before = snapshot(url)
        worker.proc.kill9()
    finally:
        if worker.proc.alive():
            worker.proc.terminate()
    again = RestWorker(tmp_path).start()
    try:
        url = f"{again.url}/schema-registry"
        assert snapshot(url) == before
        assert SchemaRegistryClient({"url": url}).get_latest_version("a-value").schema_id == ids[1]
    finally:
        again.stop()


def test_bad_avro_records_follow_errors_tolerance_and_the_dlq(tmp_path: Path) -> None:
    from tests.e2e.test_error_handling import committed, error_headers, read_topic, seed

    worker = RestWorker(tmp_path, offset_flush_interval_ms=250).start()  # the test waits for the sink's commit
    try:
        url = f"{worker.url}/schema-registry"
        schema = SchemaBuilder.struct().name("Event").field("id", ConnectSchema.INT32_SCHEMA) \
            .field("name", ConnectSchema.STRING_SCHEMA).build()
        conv = converter(url)
        good = conv.from_connect_batch("avro-events", schema,
                                       [Struct(schema).put("id", i).put("name", f"n{i}") for i in range(20)])
        bad = {5: b'{"not": "avro"}', 11: b"\x00" + struct.pack(">I", 4242) + b"\x02", 17: good[17][:6]}
        values = [bad.get(i, value) for i, value in enumerate(good)]
        seed(tmp_path, "avro-events", values)  # type: ignore[arg-type]
        sink = {"connector.class": "FileStreamSink", "tasks.max": "1", "topics": "avro-events",
                "file": str(tmp_path / "out.txt"),
                "value.converter": "io.confluent.connect.avro.AvroConverter",
                "value.converter.schema.registry.url": url,
                "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "avro-dlq",
                "errors.deadletterqueue.topic.replication.factor": "1",
                "errors.deadletterqueue.context.headers.enable": "true"}
        created = httpx.put(f"{worker.url}/connectors/avro-sink/config", json=sink, timeout=30)
        assert created.status_code in (200, 201), created.text
        wait_until(lambda: committed(tmp_path, "avro-sink", "avro-events") == 20, 60, what="offsets committed")
    finally:
        worker.stop()
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert lines == [f"Struct{{id={i},name=n{i}}}" for i in range(20) if i not in bad]
    dlq = read_topic(tmp_path, "avro-dlq")
    assert [r.value for r in dlq] == [bad[5], bad[11], bad[17]]
    messages = [error_headers(r)["exception.message"] for r in dlq]
    assert "magic byte" in messages[0]
    assert "schema id 4242 is unknown" in messages[1] and "40403" in messages[1]
    assert "schema id" in messages[2]
    assert all(error_headers(r)["stage"] == "VALUE_CONVERTER" for r in dlq)
