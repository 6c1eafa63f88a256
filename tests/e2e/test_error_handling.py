"""Transforms, predicates, error tolerance, retries and dead-letter queues through real ``connect-standalone``
processes on the embedded log.

Records are seeded and read back with the topic-layer API (``connect.log``), the way another process
sharing the log directory would; task state and counters are read over REST.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import httpx
import pytest

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_backend
from connect.log.api import ConsumerRecord, NewTopic
from tests.support import (
    STRING_CONVERTERS,
    RestWorker,
    connect_standalone,
    line_count,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(240)

PLUGINS = Path(__file__).with_name("error_plugins.py")
TOTAL = 10_000
# 37 malformed JSON values at known, spread-out offsets
BAD_OFFSETS = sorted(random.Random(6).sample(range(1_000, TOTAL), 37))
ERR = "__connect.errors."


# --- helpers ----------------------------------------------------------------------------------------------------
def _backend(tmp: Path):
    return open_log_backend({"embedded.log.dir": str(tmp / "data")})


def seed(tmp: Path, topic: str, values: list[bytes], keys: list[bytes] | None = None,
         headers: tuple[tuple[str, bytes], ...] = ()) -> None:
    backend = _backend(tmp)
    admin = backend.admin()
    admin.create_topic(NewTopic(topic, 1), exist_ok=True)
    admin.close()
    producer = backend.producer()
    producer.send_batch(topic, 0, values, keys=keys, headers=[headers] * len(values) if headers else None)
    assert producer.flush(30) == 0
    producer.close()
    backend.close()


def read_topic(tmp: Path, topic: str) -> list[ConsumerRecord]:
    backend = _backend(tmp)
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning([tp])
    end = consumer.end_offsets([tp])[tp]
    out: list[ConsumerRecord] = []
    try:
        while len(out) < end:
            batches = consumer.poll(0.5, 5000)
            if not batches:
                break
            for batch in batches:
                out.extend(batch.records())
    finally:
        consumer.close()
        backend.close()
    return out


def committed(tmp: Path, connector: str, topic: str) -> int | None:
    backend = _backend(tmp)
    admin = backend.admin()
    try:
        return admin.list_group_offsets(f"connect-{connector}").get(TopicPartition(topic, 0))
    finally:
        admin.close()
        backend.close()


def topic_end(tmp: Path, topic: str) -> int:
    backend = _backend(tmp)
    admin = backend.admin()
    try:
        if topic not in admin.list_topics():
            return 0
        return admin.describe_topic(topic).offsets[0][1]
    finally:
        admin.close()
        backend.close()


def error_headers(record: ConsumerRecord) -> dict[str, str]:
    return {k[len(ERR):]: (v or b"").decode() for k, v in record.headers if k.startswith(ERR)}


def plugin_dir(tmp: Path) -> Path:
    folder = tmp / "plugins"
    folder.mkdir(exist_ok=True)
    shutil.copy(PLUGINS, folder / "error_plugins.py")
    return folder


class Worker(RestWorker):
    """A started RestWorker with connector files that commits often, and its connectors' status."""

    def __init__(self, tmp: Path, *connectors: Path, **extra: object) -> None:
        # frequent commits: the tests wait for what the sinks committed
        extra.setdefault("offset_flush_interval_ms", 250)
        # the tests seed raw keys and values into the log themselves (a connector that reads JSON says so)
        for key, value in STRING_CONVERTERS.items():
            extra.setdefault(key, value)
        super().__init__(tmp, *connectors, **extra)
        self.start()

    def status(self, name: str) -> dict:
        r = httpx.get(f"{self.url}/connectors/{name}/status", timeout=10)
        return r.json() if r.status_code == 200 else {}

    def task(self, name: str) -> dict:
        tasks = self.status(name).get("tasks") or [{}]
        return tasks[0]

    def metrics(self, name: str) -> dict:
        return self.task(name).get("metrics") or {}


def _json_values() -> tuple[list[bytes], list[bytes]]:
    bad = set(BAD_OFFSETS)
    values = [(b'{"id": %d, "oops' % i) if i in bad else json.dumps({"id": i, "name": f"n{i}"}).encode()
              for i in range(TOTAL)]
    keys = [f"k{i}".encode() for i in range(TOTAL)]
    return values, keys


def _json_sink(tmp: Path, name: str, **extra: object) -> Path:
    props = {
        "name": name, "connector.class": "FileStreamSink", "tasks.max": 1, "topics": "events",
        "file": tmp / f"{name}.txt",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    props.update(extra)
    return write_properties(tmp / f"{name}.properties", props)


# --- the Kafka documentation's transform configs ---------------------------------------------------------------
def test_documentation_transform_config_runs_unchanged(tmp_path):
    """The file source with MakeMap/InsertSource from Kafka's transformation docs, and a sink whose RegexRouter
    applies only where a TopicNameMatches predicate matches (and a negated InsertField where it does not)."""
    (tmp_path / "test.txt").write_text("foo\nbar\n")
    (tmp_path / "other.txt").write_text("baz\n")
    # the shipped worker config (the settings of Kafka's config/connect-standalone.properties, on the embedded log)
    worker = worker_properties(tmp_path)
    docs_source = tmp_path / "connect-file-source.properties"
    docs_source.write_text(
        "name=local-file-source\n"
        "connector.class=FileStreamSource\n"
        "tasks.max=1\n"
        "file=test.txt\n"
        "topic=connect-test\n"
        "transforms=MakeMap, InsertSource\n"
        "transforms.MakeMap.type=org.apache.kafka.connect.transforms.HoistField$Value\n"
        "transforms.MakeMap.field=line\n"
        "transforms.InsertSource.type=org.apache.kafka.connect.transforms.InsertField$Value\n"
        "transforms.InsertSource.static.field=data_source\n"
        "transforms.InsertSource.static.value=test-file-source\n"
    )
    other_source = tmp_path / "other-source.properties"
    other_source.write_text(docs_source.read_text().replace("local-file-source", "other-file-source")
                            .replace("test.txt", "other.txt").replace("connect-test", "other-test"))
    sink = tmp_path / "connect-file-sink.properties"
    sink.write_text(
        "name=local-file-sink\n"
        "connector.class=FileStreamSink\n"
        "tasks.max=1\n"
        "file=test.sink.txt\n"
        "topics=connect-test,other-test\n"
        "transforms=Router, Unrouted, RoutedTo\n"
        "transforms.Router.type=org.apache.kafka.connect.transforms.RegexRouter\n"
        "transforms.Router.regex=connect-(.*)\n"
        "transforms.Router.replacement=routed-$1\n"
        "transforms.Router.predicate=IsConnectTopic\n"
        "transforms.Unrouted.type=org.apache.kafka.connect.transforms.InsertField$Value\n"
        "transforms.Unrouted.static.field=unrouted\n"
        "transforms.Unrouted.static.value=yes\n"
        "transforms.Unrouted.predicate=IsRoutedTopic\n"
        "transforms.Unrouted.negate=true\n"
        "transforms.RoutedTo.type=org.apache.kafka.connect.transforms.InsertField$Value\n"
        "transforms.RoutedTo.topic.field=routed_to\n"
        "predicates=IsConnectTopic, IsRoutedTopic\n"
        "predicates.IsConnectTopic.type=org.apache.kafka.connect.transforms.predicates.TopicNameMatches\n"
        "predicates.IsConnectTopic.pattern=connect-.*\n"
        "predicates.IsRoutedTopic.type=org.apache.kafka.connect.transforms.predicates.TopicNameMatches\n"
        "predicates.IsRoutedTopic.pattern=routed-.*\n"
    )
    proc = connect_standalone(tmp_path, worker, docs_source, other_source, sink)
    out = tmp_path / "test.sink.txt"
    try:
        wait_until(lambda: line_count(out) >= 3, 60, what="three sink lines")
    finally:
        assert proc.terminate() == 0, proc.log()
    # the topic holds what Kafka's docs show for this example
    assert [json.loads(r.value) for r in read_topic(tmp_path, "connect-test")] == [
        {"schema": {"type": "struct", "fields": [{"type": "string", "optional": False, "field": "line"},
                                                 {"type": "string", "optional": True, "field": "data_source"}],
                    "optional": False},
         "payload": {"line": line, "data_source": "test-file-source"}}
        for line in ("foo", "bar")
    ]
    assert sorted(out.read_text().splitlines()) == [
        "Struct{line=bar,data_source=test-file-source,routed_to=routed-test}",
        "Struct{line=baz,data_source=test-file-source,unrouted=yes,routed_to=other-test}",
        "Struct{line=foo,data_source=test-file-source,routed_to=routed-test}",
    ]


# --- malformed records, tolerated and not ----------------------------------------------------------------------
def test_malformed_json_goes_to_the_dlq_with_original_bytes_and_context_headers(tmp_path):
    values, keys = _json_values()
    seed(tmp_path, "events", values, keys, headers=(("origin", b"seeder"),))
    sink = _json_sink(tmp_path, "json-sink", **{
        "errors.tolerance": "all",
        "errors.log.enable": "true",
        "errors.deadletterqueue.topic.name": "events-dlq",
        "errors.deadletterqueue.topic.replication.factor": 1,
        "errors.deadletterqueue.context.headers.enable": "true",
    })
    worker = Worker(tmp_path, sink)
    try:
        wait_until(lambda: committed(tmp_path, "json-sink", "events") == TOTAL, 120, what="all offsets committed")
        metrics = wait_until(lambda: (m := worker.metrics("json-sink")).get("records_put") == TOTAL - 37 and m, 30)
        assert worker.task("json-sink")["state"] == "RUNNING"
    finally:
        log = worker.stop()

    written = (tmp_path / "json-sink.txt").read_text().splitlines()
    assert len(written) == TOTAL - 37 == 9_963
    bad = set(BAD_OFFSETS)
    # the sink writes maps as Kafka Connect does: {k=v} in java.util.HashMap order, so "name" comes first
    assert written == [f"{{name=n{i}, id={i}}}" for i in range(TOTAL) if i not in bad]

    dlq = read_topic(tmp_path, "events-dlq")
    assert len(dlq) == 37
    for record, offset in zip(dlq, BAD_OFFSETS, strict=True):
        assert record.value == values[offset]
        assert record.key == keys[offset]
        assert record.headers[0] == ("origin", b"seeder")  # the original headers come first
        ctx = error_headers(record)
        assert ctx["topic"] == "events" and ctx["partition"] == "0" and ctx["offset"] == str(offset)
        assert ctx["connector.name"] == "json-sink" and ctx["task.id"] == "0"
        assert ctx["stage"] == "VALUE_CONVERTER"
        assert ctx["class.name"] == "JsonConverter"
        assert ctx["exception.class.name"].endswith("DataException")
        assert ctx["exception.message"]
        assert "Traceback" in ctx["exception.stacktrace"]

    assert metrics["records_read"] == TOTAL
    assert metrics["records_failed"] == metrics["records_skipped"] == metrics["dlq_produce_requests"] == 37
    assert metrics["dlq_produce_failures"] == 0 and metrics["retries"] == 0
    assert metrics["errors_logged"] == 37
    assert f"offset={BAD_OFFSETS[0]}" in log  # errors.log.enable
    assert "Record counts of connector json-sink task 0" in log and "records_failed=37" in log


def test_malformed_json_without_tolerance_fails_the_task_at_the_bad_record(tmp_path):
    values, keys = _json_values()
    seed(tmp_path, "events", values, keys)
    first_bad = BAD_OFFSETS[0]
    worker = Worker(tmp_path, _json_sink(tmp_path, "strict-sink", **{"consumer.override.max.poll.records": 100}))
    try:
        task = wait_until(lambda: (t := worker.task("strict-sink")).get("state") == "FAILED" and t, 60,
                          what="task FAILED")
        assert f"topic=events partition=0 offset={first_bad}" in task["trace"]
        assert "VALUE_CONVERTER" in task["trace"] and "DataException" in task["trace"]
        assert worker.status("strict-sink")["connector"]["state"] == "RUNNING"
        assert task["metrics"]["records_failed"] == 1
    finally:
        worker.stop()
    # nothing past the bad record was committed after the failure, by the periodic commits or the last one at stop
    done = committed(tmp_path, "strict-sink", "events")
    assert done is None or done <= first_bad
    written = (tmp_path / "strict-sink.txt").read_text().splitlines() if (tmp_path / "strict-sink.txt").exists() else []
    assert len(written) <= first_bad
    assert written == [f"{{name=n{i}, id={i}}}" for i in range(len(written))]


# --- retries ----------------------------------------------------------------------------------------------------
def test_retriable_failures_that_clear_lose_nothing_and_count_as_retries(tmp_path):
    n = 500
    seed(tmp_path, "events", [f"v{i}".encode() for i in range(n)])
    plugins = plugin_dir(tmp_path)
    flaky_transform = write_properties(tmp_path / "flaky-transform.properties", {
        "name": "flaky-transform", "connector.class": "RecordingSinkConnector", "topics": "events",
        "out": tmp_path / "flaky-transform.jsonl",
        "transforms": "Flaky", "transforms.Flaky.type": "FlakyTransform", "transforms.Flaky.failures": 3,
        "errors.retry.timeout": 30_000, "errors.retry.delay.max.ms": 100,
    })
    flaky_put = write_properties(tmp_path / "flaky-put.properties", {
        "name": "flaky-put", "connector.class": "RecordingSinkConnector", "topics": "events",
        "out": tmp_path / "flaky-put.jsonl", "fail.puts": 2,
    })
    worker = Worker(tmp_path, flaky_transform, flaky_put, plugin_path=plugins)
    try:
        for name in ("flaky-transform", "flaky-put"):
            wait_until(lambda nm=name: committed(tmp_path, nm, "events") == n, 90, what=f"{name} committed")
        transform_metrics = worker.metrics("flaky-transform")
        put_metrics = worker.metrics("flaky-put")
        assert worker.task("flaky-transform")["state"] == worker.task("flaky-put")["state"] == "RUNNING"
    finally:
        log = worker.stop()
    for name in ("flaky-transform", "flaky-put"):
        lines = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        assert [line["value"] for line in lines] == [f"v{i}" for i in range(n)], name
    assert transform_metrics["retries"] == 3
    assert transform_metrics["records_failed"] == 0 and transform_metrics["records_put"] == n
    assert put_metrics["retries"] == 2
    assert put_metrics["records_failed"] == 0 and put_metrics["records_put"] == n
    assert "retrying TRANSFORMATION" in log and "RetriableException from SinkTask.put" in log


# --- the errant record reporter -----------------------------------------------------------------------------------
def test_errant_record_reporter_sends_rejected_records_to_the_dlq(tmp_path):
    n = 100
    rejected = {3, 17, 18, 40, 66, 90, 99}
    values = [(f"reject-{i}" if i in rejected else f"ok-{i}").encode() for i in range(n)]
    seed(tmp_path, "events", values, [f"k{i}".encode() for i in range(n)])
    sink = write_properties(tmp_path / "picky.properties", {
        "name": "picky", "connector.class": "RecordingSinkConnector", "topics": "events",
        "out": tmp_path / "picky.jsonl", "reject.marker": "reject",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "picky-dlq",
        "errors.deadletterqueue.topic.replication.factor": 1,
        "errors.deadletterqueue.context.headers.enable": "true",
    })
    worker = Worker(tmp_path, sink, plugin_path=plugin_dir(tmp_path))
    try:
        wait_until(lambda: committed(tmp_path, "picky", "events") == n, 60, what="offsets committed")
        metrics = worker.metrics("picky")
    finally:
        worker.stop()
    lines = [json.loads(line) for line in (tmp_path / "picky.jsonl").read_text().splitlines()]
    assert [line["value"] for line in lines] == [f"ok-{i}" for i in range(n) if i not in rejected]
    dlq = read_topic(tmp_path, "picky-dlq")
    assert [r.value for r in dlq] == [values[i] for i in sorted(rejected)]
    assert [r.key for r in dlq] == [f"k{i}".encode() for i in sorted(rejected)]
    for record, offset in zip(dlq, sorted(rejected), strict=True):
        ctx = error_headers(record)
        assert ctx["offset"] == str(offset) and ctx["topic"] == "events"
        assert ctx["stage"] == "TASK_PUT" and ctx["class.name"] == "RecordingSinkTask"
        assert ctx["exception.class.name"].endswith("DataException")
        assert ctx["exception.message"] == f"rejected by the sink: reject-{offset}"
    assert metrics["records_failed"] == metrics["dlq_produce_requests"] == len(rejected)
    assert metrics["records_put"] == n


# --- source connectors: dead-letter queue (Headrace extension) ----------------------------------------------------
def test_source_records_failing_a_transform_go_to_the_source_dlq(tmp_path):
    lines = [str(i) if i % 10 else f"not-a-number-{i}" for i in range(1, 201)]
    (tmp_path / "numbers.txt").write_text("".join(f"{line}\n" for line in lines))
    source = write_properties(tmp_path / "numbers.properties", {
        "name": "numbers", "connector.class": "FileStreamSource", "file": tmp_path / "numbers.txt",
        "topic": "numbers",
        "transforms": "ToInt", "transforms.ToInt.type": "org.apache.kafka.connect.transforms.Cast$Value",
        "transforms.ToInt.spec": "int32",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "numbers-dlq",
        "errors.deadletterqueue.topic.replication.factor": 1,
        "errors.deadletterqueue.context.headers.enable": "true",
    })
    worker = Worker(tmp_path, source)
    try:
        wait_until(lambda: topic_end(tmp_path, "numbers") >= 180 and topic_end(tmp_path, "numbers-dlq") >= 20, 60,
                   what="records and dead letters")
        wait_until(lambda: (tmp_path / "connect.offsets").exists()
                   and str(tmp_path / "numbers.txt") in (tmp_path / "connect.offsets").read_text(), 30)
        metrics = wait_until(lambda: (m := worker.metrics("numbers")).get("records_failed") == 20 and m, 30)
    finally:
        worker.stop()
    good = [int(line) for line in lines if line.isdigit()]
    assert [r.value for r in read_topic(tmp_path, "numbers")] == [str(v).encode() for v in good]
    dlq = read_topic(tmp_path, "numbers-dlq")
    assert len(dlq) == 20
    size = 0
    positions = {}
    for line in lines:
        size += len(line) + 1
        positions[line] = size
    for record, text in zip(dlq, [line for line in lines if not line.isdigit()], strict=True):
        doc = json.loads(record.value)
        assert doc["value"] == text and doc["topic"] == "numbers" and doc["key"] is None
        assert doc["source_partition"] == {"filename": str(tmp_path / "numbers.txt")}
        assert doc["source_offset"] == {"position": positions[text]}
        assert record.key is None
        ctx = error_headers(record)
        assert ctx["stage"] == "TRANSFORMATION" and ctx["class.name"] == "Cast.Value"
        assert ctx["connector.name"] == "numbers" and ctx["topic"] == "numbers"
        assert json.loads(ctx["source.offset"]) == doc["source_offset"]
        assert "offset" not in ctx
    assert metrics["records_polled"] == 200 and metrics["records_written"] == 180
    assert metrics["records_skipped"] == metrics["dlq_produce_requests"] == 20


# --- headers end to end -------------------------------------------------------------------------------------------
def test_headers_travel_from_source_transforms_through_the_log_to_a_sink(tmp_path):
    (tmp_path / "in.txt").write_text("alpha\nbeta\n")
    source = write_properties(tmp_path / "src.properties", {
        "name": "src", "connector.class": "FileStreamSource", "file": tmp_path / "in.txt", "topic": "lines",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "transforms": "MakeMap,CopyLine,Origin",
        "transforms.MakeMap.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.MakeMap.field": "line",
        "transforms.CopyLine.type": "org.apache.kafka.connect.transforms.HeaderFrom$Value",
        "transforms.CopyLine.fields": "line", "transforms.CopyLine.headers": "line_header",
        "transforms.CopyLine.operation": "copy",
        "transforms.Origin.type": "org.apache.kafka.connect.transforms.InsertHeader",
        "transforms.Origin.header": "origin", "transforms.Origin.value.literal": "file",
    })
    sink = write_properties(tmp_path / "snk.properties", {
        "name": "snk", "connector.class": "RecordingSinkConnector", "topics": "lines",
        "out": tmp_path / "snk.jsonl",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "transforms": "Drop", "transforms.Drop.type": "org.apache.kafka.connect.transforms.DropHeaders",
        "transforms.Drop.headers": "line_header",
    })
    worker = Worker(tmp_path, source, sink, plugin_path=plugin_dir(tmp_path))
    try:
        wait_until(lambda: line_count(tmp_path / "snk.jsonl") >= 2, 60, what="two sink records")
    finally:
        worker.stop()
    # in the log: SimpleHeaderConverter bytes of the headers the source transforms added
    assert [(r.value, r.headers) for r in read_topic(tmp_path, "lines")] == [
        (b'{"line":"alpha"}', (("line_header", b"alpha"), ("origin", b"file"))),
        (b'{"line":"beta"}', (("line_header", b"beta"), ("origin", b"file"))),
    ]
    got = [json.loads(line) for line in (tmp_path / "snk.jsonl").read_text().splitlines()]
    assert [(g["value"], g["headers"]) for g in got] == [
        ({"line": "alpha"}, [["origin", "file"]]),
        ({"line": "beta"}, [["origin", "file"]]),
    ]


def _source_positions(offsets_file: Path) -> list[int]:
    if not offsets_file.exists():
        return []
    return [json.loads(v)["position"] for v in json.loads(offsets_file.read_text())["offsets"].values()]


# --- dropped records ------------------------------------------------------------------------------------------------
def test_records_a_transform_drops_still_count_as_processed(tmp_path):
    """Filter (gated by predicates, as in Kafka's docs) drops records; their offsets commit all the same."""
    lines = [f"line-{i}" for i in range(300)]
    (tmp_path / "in.txt").write_text("".join(f"{line}\n" for line in lines))
    source = write_properties(tmp_path / "src.properties", {
        "name": "src", "connector.class": "FileStreamSource", "file": tmp_path / "in.txt", "topic": "dropped",
        "transforms": "Filter", "transforms.Filter.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.Filter.predicate": "IsDropped",
        "predicates": "IsDropped",
        "predicates.IsDropped.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.IsDropped.pattern": "drop.*",
    })
    seed(tmp_path, "events", [f"v{i}".encode() for i in range(200)])
    sink = write_properties(tmp_path / "snk.properties", {
        "name": "snk", "connector.class": "FileStreamSink", "file": tmp_path / "out.txt", "topics": "events",
        "transforms": "Filter", "transforms.Filter.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.Filter.predicate": "IsEvents", "transforms.Filter.negate": "true",
        "predicates": "IsEvents",
        "predicates.IsEvents.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.IsEvents.pattern": "nothing-matches-this",
    })
    offsets = tmp_path / "connect.offsets"
    worker = Worker(tmp_path, source, sink)
    try:
        wait_until(lambda: committed(tmp_path, "snk", "events") == 200, 60, what="sink offsets")
        size = (tmp_path / "in.txt").stat().st_size
        wait_until(lambda: _source_positions(offsets) == [size], 60, what="source offset at the end of the file")
        src_metrics, snk_metrics = worker.metrics("src"), worker.metrics("snk")
    finally:
        worker.stop()
    assert topic_end(tmp_path, "dropped") == 0
    assert line_count(tmp_path / "out.txt") == 0
    assert src_metrics["records_polled"] == src_metrics["records_dropped"] == 300
    assert src_metrics["records_written"] == 0 and src_metrics["records_failed"] == 0
    assert snk_metrics["records_read"] == snk_metrics["records_dropped"] == 200 and snk_metrics["records_put"] == 0
