"""The ``connect`` service: Apache Kafka Connect 4.1 (Java) runs against the session broker.

The compat suite compares Headrace with this worker, and the distributed
take-over test hands a stopped Java cluster's internal topics to Headrace
workers; both rest on what this test shows: a FileStreamSource created over
REST runs, its records reach the topic in JsonConverter envelopes, and the
config, offset and status topics hold Kafka Connect's own records.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log.api import ConsumerRecord, NewTopic
from connect.log.kafka.backend import KafkaBackend
from services.base import ServiceError, port_is_free
from services.kafka import KafkaService
from services.kafka_connect import JavaConnectService
from tests.support import wait_until

pytestmark = pytest.mark.timeout(240)

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


@pytest.fixture
def backend(kafka: KafkaService) -> Iterator[KafkaBackend]:
    b = KafkaBackend({"bootstrap.servers": kafka.bootstrap_servers, "key.converter": "x"})
    yield b
    b.close()


def read_topic(backend: KafkaBackend, topic: str) -> list[ConsumerRecord]:
    """Every record now in ``topic``, all partitions, up to the end offsets at the time of the call."""
    admin = backend.admin()
    try:
        ends = admin.describe_topic(topic).offsets
    finally:
        admin.close()
    want = {p: end for p, (_, end) in ends.items() if end > 0}
    if not want:
        return []
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    got: list[ConsumerRecord] = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in want])

        def at_end() -> bool:
            for batch in consumer.poll(0.2, 10_000):
                got.extend(batch.records())
            return all(consumer.position(TopicPartition(topic, p)) >= end for p, end in want.items())

        wait_until(at_end, 30, interval=0, what=f"the end of {topic}")
    finally:
        consumer.close()
    return got


def by_key(records: list[ConsumerRecord]) -> dict[str, list[bytes | None]]:
    out: dict[str, list[bytes | None]] = {}
    for r in records:
        out.setdefault((r.key or b"").decode(), []).append(r.value)
    return out


def test_java_connect_distributed_runs_a_file_source_and_keeps_its_state_in_the_internal_topics(
    java_connect: Callable[..., JavaConnectService],
    backend: KafkaBackend,
    unique_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = unique_topic("java-src")
    name = unique_topic("java-file-source")
    source = tmp_path / "input.txt"
    lines = [f"line {i}" for i in range(5)]
    source.write_text("".join(f"{line}\n" for line in lines))
    admin = backend.admin()
    admin.create_topic(NewTopic(topic, partitions=1))

    began = time.monotonic()
    worker = java_connect(mode="distributed")
    print(f"\nJava Connect (distributed) ready in {time.monotonic() - began:.1f}s at {worker.rest_url}")

    status, root = worker.request("GET", "/")
    assert status == 200 and root["version"] == "4.1.2"
    status, body = worker.request(
        "POST",
        "/connectors",
        {
            "name": name,
            "config": {"connector.class": FILE_SOURCE, "tasks.max": "1", "file": str(source), "topic": topic},
        },
    )
    assert status == 201, body
    assert body["name"] == name and body["config"]["file"] == str(source)

    def running() -> bool:
        code, st = worker.request("GET", f"/connectors/{name}/status")
        return (
            code == 200
            and st["connector"]["state"] == "RUNNING"
            and [t["state"] for t in st["tasks"]] == ["RUNNING"]
        )

    wait_until(running, 60, interval=0.3, what=f"{name} RUNNING")

    # The records, as JsonConverter envelopes (schemas on, the default).
    records = wait_until(lambda: len(r := read_topic(backend, topic)) >= len(lines) and r, 60, interval=0.5)
    assert [json.loads(r.value or b"null") for r in records] == [
        {"schema": {"type": "string", "optional": False}, "payload": line} for line in lines
    ]

    # The offset of the whole file, committed through the offset topic and readable over REST.
    size = source.stat().st_size

    def offset_committed() -> bool:
        code, body = worker.request("GET", f"/connectors/{name}/offsets")
        return code == 200 and [o["offset"] for o in body["offsets"]] == [{"position": size}]

    wait_until(offset_committed, 30, interval=0.3, what="the source offset")

    config_topic, offset_topic, status_topic = worker.internal_topics()
    assert worker.cluster_properties()["config.storage.topic"] == config_topic

    worker.stop()
    assert not worker.is_running() and port_is_free(worker.port)
    assert "Kafka Connect stopped" in worker.log_path.read_text()

    # What a stopped Java cluster leaves behind, in Kafka Connect's own record layout.
    assert {config_topic, offset_topic, status_topic} <= set(admin.list_topics())
    for t in (config_topic, offset_topic, status_topic):
        assert admin.describe_topic(t).configs.get("cleanup.policy") == "compact", t
    assert admin.describe_topic(config_topic).partitions == 1
    admin.close()

    configs = by_key(read_topic(backend, config_topic))
    assert {f"connector-{name}", f"task-{name}-0", f"commit-{name}"} <= configs.keys()
    connector_config = json.loads(configs[f"connector-{name}"][-1] or b"null")
    assert connector_config["properties"]["connector.class"] == FILE_SOURCE
    assert json.loads(configs[f"commit-{name}"][-1] or b"null") == {"tasks": 1}

    offsets = by_key(read_topic(backend, offset_topic))
    key = json.dumps([name, {"filename": str(source)}], separators=(",", ":"))
    assert key in offsets, sorted(offsets)
    assert json.loads(offsets[key][-1] or b"null") == {"position": size}

    statuses = by_key(read_topic(backend, status_topic))
    states = [json.loads(v)["state"] for v in statuses[f"status-connector-{name}"] if v]
    assert "RUNNING" in states
    assert f"status-task-{name}-0" in statuses


def test_java_connect_standalone_runs_connector_files_and_keeps_offsets_in_its_work_folder(
    java_connect: Callable[..., JavaConnectService],
    backend: KafkaBackend,
    unique_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = unique_topic("java-standalone")
    source = tmp_path / "input.txt"
    source.write_text("alpha\nbeta\n")
    connector = tmp_path / "file-source.properties"
    connector.write_text(
        f"name=standalone-source\nconnector.class={FILE_SOURCE}\ntasks.max=1\nfile={source}\ntopic={topic}\n"
    )
    admin = backend.admin()
    admin.create_topic(NewTopic(topic, partitions=1))
    admin.close()

    worker = java_connect(mode="standalone", connector_files=[connector])
    with pytest.raises(ServiceError, match="standalone"):
        worker.internal_topics()

    def running() -> bool:
        code, st = worker.request("GET", "/connectors/standalone-source/status")
        return code == 200 and [t["state"] for t in st["tasks"]] == ["RUNNING"]

    wait_until(running, 60, interval=0.3, what="the standalone connector RUNNING")
    records = wait_until(lambda: len(r := read_topic(backend, topic)) >= 2 and r, 60, interval=0.5)
    assert [json.loads(r.value or b"null")["payload"] for r in records] == ["alpha", "beta"]
    worker.stop()
    # Offsets go to the file in the work folder, written at the latest on a clean stop.
    assert (worker.work_dir / "connect.offsets").stat().st_size > 0


def test_a_java_worker_that_cannot_start_names_its_log_and_the_reason(
    java_connect: Callable[..., JavaConnectService],
) -> None:
    with pytest.raises(ServiceError) as failed:
        java_connect(worker_properties={"key.converter": "no.such.Converter"})
    message = str(failed.value)
    assert "connect.log" in message and "exited during start-up" in message
    assert "no.such.Converter" in message
