"""The same file pipeline run on Apache Kafka Connect 4.1 (Java) and on Headrace, the data compared.

One Java standalone worker and one Headrace standalone worker run on the session broker for the
module. For each scenario both get the same connector configs (FileStreamSource → topic, topic →
FileStreamSink, with the scenario's converters and transforms) over REST, each with its own topics and
files, and read the same input file. Then the records each side wrote are compared record by record
(key bytes, value bytes, headers) and the sink files byte for byte.

Normalised before comparing, because they differ by nature: the topic names (each side has its own
prefix, and a transform may copy the topic into a value) and the records' timestamps and offsets (not
compared). Nothing else is normalised, and no data difference is accepted.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from services.kafka import KafkaService
from services.kafka_connect import JavaConnectService
from tests.support import RestWorker, wait_until

pytestmark = pytest.mark.timeout(300)

JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"

# Unicode, an empty line, a long line, JSON-looking text and trailing blanks.
INPUT_LINES = [
    "plain ascii line",
    "",
    "unicode: héllo wörld – 日本語 – emoji 🚀",
    '{"looks": "like json", "n": 1, "nested": {"a": [1, 2, 3]}}',
    "x" * 5000,
    "tabs\tand  spaces  ",
    "[1, 2, 3]",
    "null",
    "quote \" and backslash \\ inside",
    "last line",
]
INPUT = "".join(f"{line}\n" for line in INPUT_LINES)


@attrs.frozen
class Scenario:
    """One pipeline: the converter and transform settings shared by its source and sink connectors."""

    name: str
    settings: dict[str, str]
    routed: bool = False  # the chain ends in a RegexRouter that renames "<topic>" to "<topic>-routed"


ROUTER = {
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "(.*)",
    "transforms.route.replacement": "$1-routed",
}

# Fixed strings parsed by TimestampConverter (in UTC, as Kafka's is), a number cast from text, then the
# value nested one level and flattened again.
TIME_AND_COUNT = {
    "transforms.when.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.when.static.field": "when",
    "transforms.when.static.value": "2024-02-29 13:45:07",
    "transforms.day.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.day.static.field": "day",
    "transforms.day.static.value": "2024-03-01",
    "transforms.count.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.count.static.field": "count",
    "transforms.count.static.value": "42",
    "transforms.totime.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
    "transforms.totime.field": "when",
    "transforms.totime.format": "yyyy-MM-dd HH:mm:ss",
    "transforms.today.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
    "transforms.today.field": "day",
    "transforms.today.format": "yyyy-MM-dd",
    "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
    "transforms.nest.type": "org.apache.kafka.connect.transforms.HoistField$Value",
    "transforms.nest.field": "outer",
    "transforms.flat.type": "org.apache.kafka.connect.transforms.Flatten$Value",
    "transforms.flat.delimiter": "_",
}

SCENARIOS = [
    Scenario("string", {"key.converter": STRING, "value.converter": STRING}),
    Scenario(
        "json-schemas",
        {"key.converter": JSON, "value.converter": JSON,
         "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"},
    ),
    Scenario(
        "json-schemaless",
        {"key.converter": JSON, "value.converter": JSON,
         "key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false"},
    ),
    Scenario(
        "json-chain",
        {
            "key.converter": JSON,
            "value.converter": JSON,
            "key.converter.schemas.enable": "true",
            "value.converter.schemas.enable": "true",
            "transforms": "hoist,insert,route",
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "line",
            "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.insert.static.field": "origin",
            "transforms.insert.static.value": "file",
            "transforms.insert.topic.field": "topic",
            **ROUTER,
        },
        routed=True,
    ),
    Scenario(
        "json-schemaless-chain",
        {
            "key.converter": JSON,
            "value.converter": JSON,
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "transforms": "hoist,tokey,extract,insert,rename,mask,copyheader,literalheader,keep,route",
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "line",
            "transforms.tokey.type": "org.apache.kafka.connect.transforms.ValueToKey",
            "transforms.tokey.fields": "line",
            "transforms.extract.type": "org.apache.kafka.connect.transforms.ExtractField$Key",
            "transforms.extract.field": "line",
            "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.insert.static.field": "origin",
            "transforms.insert.static.value": "file",
            "transforms.rename.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
            "transforms.rename.renames": "line:text",
            "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
            "transforms.mask.fields": "origin",
            "transforms.mask.replacement": "***",
            "transforms.copyheader.type": "org.apache.kafka.connect.transforms.HeaderFrom$Value",
            "transforms.copyheader.fields": "text",
            "transforms.copyheader.headers": "copied",
            "transforms.copyheader.operation": "copy",
            "transforms.literalheader.type": "org.apache.kafka.connect.transforms.InsertHeader",
            "transforms.literalheader.header": "source",
            "transforms.literalheader.value.literal": "file ✓",
            # a Filter whose predicate (negated) matches every record of this topic: it drops none
            "transforms.keep.type": "org.apache.kafka.connect.transforms.Filter",
            "transforms.keep.predicate": "elsewhere",
            "transforms.keep.negate": "true",
            "predicates": "elsewhere",
            "predicates.elsewhere.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
            "predicates.elsewhere.pattern": ".*-schemaless-chain",
            **ROUTER,
        },
        routed=True,
    ),
    Scenario(
        "json-schemas-cast-time",
        {
            "key.converter": JSON,
            "value.converter": JSON,
            "key.converter.schemas.enable": "true",
            "value.converter.schemas.enable": "true",
            "transforms": "hoist,when,day,count,totime,today,cast,nest,flat",
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "line",
            **TIME_AND_COUNT,
            "transforms.totime.target.type": "Timestamp",
            "transforms.today.target.type": "Date",
            "transforms.cast.spec": "count:int32",
        },
    ),
    Scenario(
        "json-schemaless-cast-time",
        {
            "key.converter": JSON,
            "value.converter": JSON,
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "transforms": "hoist,when,day,count,totime,today,cast,nest,flat",
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "line",
            **TIME_AND_COUNT,
            "transforms.totime.target.type": "unix",
            "transforms.today.target.type": "unix",
            "transforms.today.unix.precision": "seconds",
            "transforms.cast.spec": "count:int64",
        },
    ),
    Scenario(
        "json-schemas-chain",
        {
            "key.converter": JSON,
            "value.converter": JSON,
            "key.converter.schemas.enable": "true",
            "value.converter.schemas.enable": "true",
            "transforms": "hoist,insert,tokey,extract,rename,mask,meta,copyheader",
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "line",
            "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.insert.static.field": "origin",
            "transforms.insert.static.value": "file",
            "transforms.tokey.type": "org.apache.kafka.connect.transforms.ValueToKey",
            "transforms.tokey.fields": "line",
            "transforms.extract.type": "org.apache.kafka.connect.transforms.ExtractField$Key",
            "transforms.extract.field": "line",
            "transforms.rename.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
            "transforms.rename.renames": "line:text",
            "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
            "transforms.mask.fields": "origin",
            "transforms.meta.type": "org.apache.kafka.connect.transforms.SetSchemaMetadata$Value",
            "transforms.meta.schema.name": "com.example.Line",
            "transforms.meta.schema.version": "3",
            "transforms.copyheader.type": "org.apache.kafka.connect.transforms.HeaderFrom$Value",
            "transforms.copyheader.fields": "text",
            "transforms.copyheader.headers": "copied",
            "transforms.copyheader.operation": "copy",
        },
    ),
]


@attrs.define
class Side:
    """One worker under test, with the prefix of its connector and topic names and its folder."""

    label: str
    url: str
    prefix: str
    folder: Path
    client: httpx.Client = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.client = httpx.Client(base_url=self.url, timeout=60)

    def topic(self, scenario: Scenario) -> str:
        return f"{self.prefix}{scenario.name}"

    def sink_topic(self, scenario: Scenario) -> str:
        return self.topic(scenario) + ("-routed" if scenario.routed else "")

    def sink_file(self, scenario: Scenario) -> Path:
        return self.folder / f"{scenario.name}.out"

    def run(self, scenario: Scenario) -> None:
        """Create the scenario's source (the transforms apply there) and sink (converters only)."""
        source = {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "tasks.max": "1",
            "file": str(self.folder / "in.txt"),
            "topic": self.topic(scenario),
            **scenario.settings,
        }
        sink = {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "tasks.max": "1",
            "file": str(self.sink_file(scenario)),
            "topics": self.sink_topic(scenario),
            **{k: v for k, v in scenario.settings.items() if "converter" in k},
        }
        for kind, config in (("src", source), ("sink", sink)):
            name = f"{self.prefix}{scenario.name}-{kind}"
            r = self.client.put(f"/connectors/{name}/config", json=config)
            assert r.status_code in (200, 201), f"{self.label} {name}: {r.status_code} {r.text}"

    def statuses(self, scenario: Scenario) -> list[object]:
        """Both connectors' status bodies, for a failure message."""
        return [self.client.get(f"/connectors/{self.prefix}{scenario.name}-{kind}/status").json()
                for kind in ("src", "sink")]

    def failure_causes(self, scenario: Scenario) -> list[str]:
        """The first and "Caused by" lines of every failed task's trace."""
        traces = [t.get("trace", "") for body in self.statuses(scenario) for t in body.get("tasks", [])]
        return [line for trace in traces for i, line in enumerate(trace.splitlines())
                if i == 0 or line.startswith("Caused by")]

    def outcome(self, scenario: Scenario) -> str | None:
        """"done" once the sink file has every line, "failed" once a connector or task failed."""
        if self.sink_done(scenario):
            return "done"
        text = repr(self.statuses(scenario))
        return "failed" if "'FAILED'" in text else None

    def sink_done(self, scenario: Scenario) -> bool:
        path = self.sink_file(scenario)
        return path.exists() and path.read_bytes().count(b"\n") >= len(INPUT_LINES)


@attrs.frozen
class Record:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def read_topic(bootstrap: str, topic: str, count: int) -> list[Record]:
    """Every record of the topic's single partition from the start, waiting for ``count`` of them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"compat-data-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    records: list[Record] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])

        def enough() -> bool:
            for msg in consumer.consume(100, timeout=0.5):
                assert msg.error() is None, msg.error()
                records.append(Record(msg.key(), msg.value(), tuple(msg.headers() or ())))
            return len(records) >= count

        wait_until(enough, 60, what=f"{count} records on {topic}")
        return records
    finally:
        consumer.close()


def normalised(data: bytes | None, side: Side, other: Side) -> bytes | None:
    """The other side's topic prefix in place of this side's: a transform may copy the topic into data.
    (The prefixes carry a random run id, so no input text can contain one.)"""
    if data is None:
        return None
    return data.replace(side.prefix.encode(), other.prefix.encode())


def differences(java: list[Record], headrace: list[Record], j: Side, h: Side) -> list[str]:
    problems = []
    if len(java) != len(headrace):
        problems.append(f"record count: Java {len(java)}, Headrace {len(headrace)}")
    for i, (jr, hr) in enumerate(zip(java, headrace, strict=False)):
        for part in ("key", "value"):
            jv, hv = normalised(getattr(jr, part), j, h), getattr(hr, part)
            if jv != hv:
                problems.append(f"record {i} {part}: Java {jv!r:.300}, Headrace {hv!r:.300}")
        jh = tuple((k, normalised(v, j, h)) for k, v in jr.headers)
        if jh != hr.headers:
            problems.append(f"record {i} headers: Java {jh!r:.300}, Headrace {hr.headers!r:.300}")
    return problems


@pytest.fixture(scope="module")
def sides(kafka: KafkaService, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    run = uuid.uuid4().hex[:6]
    java_dir = tmp_path_factory.mktemp("java-data")
    headrace_dir = tmp_path_factory.mktemp("headrace-data")
    for folder in (java_dir, headrace_dir):
        (folder / "in.txt").write_text(INPUT, encoding="utf-8")
    java = JavaConnectService(kafka.bootstrap_servers, mode="standalone", work_dir=java_dir / "worker")
    headrace = RestWorker(
        headrace_dir,
        bootstrap_servers=kafka.bootstrap_servers,
        config_storage_topic=f"headrace-compat-data-configs-{run}",
    )
    java.start()
    try:
        headrace.start()
        try:
            yield (Side("Java", java.rest_url, f"jdata{run}-", java_dir),
                   Side("Headrace", headrace.url, f"hdata{run}-", headrace_dir))
        finally:
            headrace.stop()
    finally:
        java.cleanup()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_same_pipeline_writes_the_same_records_and_sink_file_on_java_kafka_connect_and_headrace(
    sides: tuple[Side, Side], kafka: KafkaService, scenario: Scenario
) -> None:
    java, headrace = sides
    for side in sides:
        side.run(scenario)
    for side in sides:
        outcome = wait_until(lambda side=side: side.outcome(scenario), 90, what=f"{side.label} {scenario.name}")
        assert outcome == "done", f"{side.label}: a task of {scenario.name} failed: {side.failure_causes(scenario)}"
    java_records = read_topic(kafka.bootstrap_servers, java.sink_topic(scenario), len(INPUT_LINES))
    headrace_records = read_topic(kafka.bootstrap_servers, headrace.sink_topic(scenario), len(INPUT_LINES))
    problems = differences(java_records, headrace_records, java, headrace)
    java_file, headrace_file = java.sink_file(scenario).read_bytes(), headrace.sink_file(scenario).read_bytes()
    if normalised(java_file, java, headrace) != headrace_file:
        problems.append(f"sink files differ:\nJava     {java_file!r:.2000}\nHeadrace {headrace_file!r:.2000}")
    assert not problems, "\n".join(problems)

