"""``headrace flume-agent`` with the Flume User Guide's TAILDIR source and Kafka sink examples, unchanged but
for paths, the broker's address and the Guide's one typo: lines appended to the tailed files arrive in the
Kafka topic as Flume's bodies, read back with a Kafka consumer; a header names another topic for its event.

Marked ``kafka`` by the ``kafka`` fixture (tests/conftest.py): a real broker from services/."""

from __future__ import annotations

import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tests.support import CliProcess, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TAILDIR_TO_KAFKA = textwrap.dedent("""
    # The User Guide's TAILDIR example (its maxBatchCount line names source "ri", a typo: fixed to r1)
    a1.sources = r1
    a1.channels = c1
    a1.sinks = k1
    a1.sources.r1.type = TAILDIR
    a1.sources.r1.channels = c1
    a1.sources.r1.positionFile = {tmp}/taildir_position.json
    a1.sources.r1.filegroups = f1 f2
    a1.sources.r1.filegroups.f1 = {tmp}/test1/example.log
    a1.sources.r1.headers.f1.headerKey1 = value1
    a1.sources.r1.filegroups.f2 = {tmp}/test2/.*log.*
    a1.sources.r1.headers.f2.headerKey1 = value2
    a1.sources.r1.headers.f2.headerKey2 = value2-2
    a1.sources.r1.fileHeader = true
    a1.sources.r1.maxBatchCount = 1000

    a1.channels.c1.type = memory

    # The User Guide's Kafka sink example
    a1.sinks.k1.channel = c1
    a1.sinks.k1.type = org.apache.flume.sink.kafka.KafkaSink
    a1.sinks.k1.kafka.topic = {topic}
    a1.sinks.k1.kafka.bootstrap.servers = {servers}
    a1.sinks.k1.kafka.flumeBatchSize = 20
    a1.sinks.k1.kafka.producer.acks = 1
    a1.sinks.k1.kafka.producer.linger.ms = 1
    a1.sinks.k1.kafka.producer.compression.type = snappy
""")


def _consume(servers: str, topic: str, count: int, timeout: float = 60) -> list[bytes]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": servers, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    out: list[bytes] = []
    try:
        def more() -> bool:
            for msg in consumer.consume(1000, 1.0):
                if msg.error() is None:
                    out.append(msg.value())
            return len(out) >= count

        wait_until(more, timeout, interval=0, what=f"{count} records in {topic}")
        for msg in consumer.consume(1000, 2.0):  # and nothing more
            if msg.error() is None:
                out.append(msg.value())
    finally:
        consumer.close()
    return out


def test_taildir_to_kafka_from_the_user_guide_delivers_every_line_as_its_body(tmp_path, kafka):
    (tmp_path / "test1").mkdir()
    (tmp_path / "test2").mkdir()
    topic = f"flume-{uuid.uuid4().hex[:8]}"
    conf = tmp_path / "flume.conf"
    conf.write_text(TAILDIR_TO_KAFKA.format(tmp=tmp_path, topic=topic, servers=kafka.bootstrap_servers))
    exe = Path(sys.executable).with_name("headrace")
    agent = CliProcess([str(exe), "flume-agent", "--conf-file", str(conf), "--name", "a1", "--work-dir",
                        str(tmp_path / "work")], tmp_path, "agent.log").start()
    expected: list[bytes] = []
    try:
        wait_until(lambda: agent.log().count("tailing") >= 2 or not agent.alive(), 60, what="both file groups")
        assert agent.alive(), agent.log()
        with open(tmp_path / "test1" / "example.log", "a") as one, open(tmp_path / "test2" / "app.log.1", "a") as two:
            for i in range(3000):
                (one if i % 2 else two).write(f"line {i} Zürich\n")
                expected.append(f"line {i} Zürich".encode())
        (tmp_path / "test2" / "ignored.txt").write_text("not a match\n")
        got = _consume(kafka.bootstrap_servers, topic, len(expected))
        assert agent.alive(), agent.log()[-3000:]
    finally:
        assert agent.terminate(60) == 0, agent.log()[-3000:]
    assert sorted(got) == sorted(expected)
    assert "FlumeKafkaSink[a1-k1] producing to " + topic in agent.log()


def test_the_kafka_sink_routes_by_topic_key_and_partition_headers_and_writes_flume_avro_events(kafka):
    """FlumeKafkaSinkTask against the real broker: Flume's header routing and useFlumeEventFormat."""
    import io

    import fastavro
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewTopic

    from connect.api import ConnectException, ConnectHeaders, Schema, SinkRecord
    from plugins.flume.kafka_sink import FlumeKafkaSinkTask

    main, other = f"fk-{uuid.uuid4().hex[:8]}", f"fk-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    for f in admin.create_topics([NewTopic(main, 3, 1), NewTopic(other, 1, 1)]).values():
        f.result(30)

    def record(offset: int, body: bytes, **headers: str) -> SinkRecord:
        h = ConnectHeaders()
        for k, v in headers.items():
            h.add(k, v, Schema.OPTIONAL_STRING_SCHEMA)
        return SinkRecord("a1.r1", 0, None, None, Schema.BYTES_SCHEMA, body, offset, headers=h)

    task = FlumeKafkaSinkTask()
    task.start({"name": "k", "kafka.bootstrap.servers": kafka.bootstrap_servers, "kafka.topic": main,
                "partition.id.header": "p", "flume.event.format": "true", "kafka.producer.linger.ms": "1"})
    task.put([record(0, b"plain"), record(1, b"keyed", key="user-7", p="2"), record(2, b"elsewhere", topic=other)])
    task.flush({})
    bad = FlumeKafkaSinkTask()
    bad.start({"name": "bad", "kafka.bootstrap.servers": kafka.bootstrap_servers, "kafka.topic": main,
               "default.partition.id": "9"})
    bad.put([record(5, b"nowhere")])
    with pytest.raises(ConnectException, match=r"a1\.r1-0@5 could not be written to " + main):
        bad.flush({})
    task.stop()
    bad.stop()

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"c-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([main, other])
    got = []
    wait_until(lambda: got.extend(m for m in consumer.consume(10, 1.0) if m.error() is None) or len(got) >= 3, 60,
               interval=0, what="three records")
    consumer.close()
    schema = {"type": "record", "name": "AvroFlumeEvent", "fields": [
        {"name": "headers", "type": {"type": "map", "values": "string"}}, {"name": "body", "type": "bytes"}]}
    events = {fastavro.schemaless_reader(io.BytesIO(m.value()), schema, None)["body"]: m for m in got}
    assert set(events) == {b"plain", b"keyed", b"elsewhere"}
    keyed = events[b"keyed"]
    assert (keyed.topic(), keyed.partition(), keyed.key()) == (main, 2, b"user-7")
    assert fastavro.schemaless_reader(io.BytesIO(keyed.value()), schema, None)["headers"] == {"key": "user-7", "p": "2"}
    assert events[b"elsewhere"].topic() == other and events[b"plain"].topic() == main
