"""Issue #38 item 2: every worker and connector config key no definition knows is reported, with the key it was
probably meant to be, as Kafka Connect's AbstractConfig.logUnused reports keys "supplied but not known"."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect.api.config import ConfigDef, ConfigType, closest_key
from connect.runtime.connector_validation import ConnectorConfigValidator
from connect.runtime.plugins import PluginRegistry
from connect.runtime.properties import load_config_file
from connect.runtime.worker_config import DistributedConfig, StandaloneConfig, WorkerConfig
from tests.support import REPO

CONFIGS = REPO / "configs"
WORKER = {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
          "value.converter": "org.apache.kafka.connect.json.JsonConverter",
          "offset.storage.file.filename": "/tmp/x.offsets"}
SOURCE = {"name": "file-source", "connector.class": "FileStreamSource", "topic": "t"}


@pytest.fixture(scope="module")
def validator() -> ConnectorConfigValidator:
    return ConnectorConfigValidator.for_worker(PluginRegistry([]), None)


# --- the suggestion ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("typed", "meant"), [
    ("listners", "listeners"),
    ("embeded.log.dir", "embedded.log.dir"),
    ("fiel", "file"),
    ("tasks.maxx", "tasks.max"),
    ("Listeners", "listeners"),
])
def test_a_misspelt_key_suggests_the_known_key_it_is_closest_to(typed: str, meant: str) -> None:
    known = ["listeners", "embedded.log.dir", "file", "topic", "tasks.max", "batch.size", "embedded.log.fsync"]
    assert closest_key(typed, known) == meant


def test_a_key_like_no_known_one_suggests_nothing() -> None:
    assert closest_key("colour", ["listeners", "file", "topic", "tasks.max"]) is None
    assert closest_key("anything", []) is None


def test_a_misspelt_family_prefix_suggests_the_same_key_under_the_family() -> None:
    assert closest_key("prodcuer.acks", ["listeners"], ["producer.", "consumer."]) == "producer.acks"
    assert closest_key("value.convertr.schemas.enable", ["value.converter"],
                       ["key.converter.", "value.converter."]) == "value.converter.schemas.enable"
    # a family's own key spelt right is not "corrected" into another family
    assert closest_key("zzz.acks", ["listeners"], ["producer."]) is None


def test_a_definition_knows_its_keys_and_the_families_it_allows() -> None:
    d = ConfigDef().define("file", ConfigType.STRING, None).allow_prefix("spark.", "Spark settings")
    assert d.knows("file") and d.knows("spark.driver.memory") and not d.knows("fiel")
    assert not d.knows("spark")  # the family's name alone is no key of it
    assert d.unknown_keys({"file": "a", "fiel": "b", "spark.x": "1"}) == ["fiel"]
    assert ConfigDef(d).knows("spark.x")  # a copy keeps the families
    embedded = ConfigDef().embed("transforms.a.", "T", 0, d)
    assert embedded.knows("transforms.a.file") and embedded.knows("transforms.a.spark.y")
    assert not embedded.knows("spark.y")


# --- worker configs ------------------------------------------------------------------------------------------
def test_an_unknown_worker_key_is_named_with_the_key_it_probably_meant() -> None:
    config = StandaloneConfig({**WORKER, "listners": "http://127.0.0.1:9"})
    assert config.unknown_key_warnings() == ["listners: not a known setting; did you mean listeners?"]
    assert config.listeners == ["http://127.0.0.1:8083"]  # still accepted, as Kafka Connect accepts it


def test_a_worker_key_like_no_known_one_is_named_without_a_suggestion() -> None:
    config = StandaloneConfig({**WORKER, "colour": "blue"})
    assert config.unknown_key_warnings() == ["colour: not a known setting"]


@pytest.mark.parametrize("key", [
    "producer.linger.ms", "consumer.session.timeout.ms", "admin.request.timeout.ms",
    "key.converter.schemas.enable", "value.converter.schemas.enable", "header.converter.x",
    "config.providers.file.class", "config.providers.vault.param.address",
    "listeners.https.ssl.keystore.location", "spark.driver.memory",
    # client settings the worker's own clients share (Kafka Connect's top-level security keys)
    "security.protocol", "sasl.mechanism", "sasl.jaas.config", "ssl.truststore.location", "request.timeout.ms",
    "metric.reporters", "ssl.keystore.location",
    # the embedded log's broker-style settings
    "log.retention.hours", "log.segment.bytes", "num.partitions", "embedded.log.fsync",
    "auto.create.topics.enable", "log.retention.check.interval.ms",
    # the schema registry served beside the REST API
    "schema.registry.topic", "schema.compatibility.level",
])
def test_keys_the_worker_hands_on_or_reads_elsewhere_are_known(key: str) -> None:
    assert StandaloneConfig({**WORKER, key: "1"}).unknown_key_warnings() == []


def test_a_misspelt_setting_read_outside_the_definition_is_suggested_too() -> None:
    assert StandaloneConfig({**WORKER, "embeded.log.fsync": "true"}).unknown_key_warnings() == [
        "embeded.log.fsync: not a known setting; did you mean embedded.log.fsync?"]
    assert StandaloneConfig({**WORKER, "secutiry.protocol": "SSL"}).unknown_key_warnings() == [
        "secutiry.protocol: not a known setting; did you mean security.protocol?"]


def test_a_distributed_worker_knows_its_own_keys_and_a_standalone_one_does_not() -> None:
    props = {**WORKER, "group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o",
             "status.storage.topic": "s", "bootstrap.servers": "127.0.0.1:9"}
    other_mode = "a setting of the other worker mode (standalone/distributed); ignored here"
    assert DistributedConfig(props).unknown_key_warnings() == [f"offset.storage.file.filename: {other_mode}"]
    assert StandaloneConfig(props).unknown_key_warnings() == [f"status.storage.topic: {other_mode}"]


def test_a_java_worker_setting_headrace_has_no_use_for_is_named_as_such_not_as_a_misspelling() -> None:
    # a worker config written for Apache Kafka Connect may carry these; "did you mean" would mislead
    props = {**WORKER, "plugin.discovery": "service_load", "rest.port": "8083"}
    warnings = StandaloneConfig(props).unknown_key_warnings()
    assert warnings == [
        "plugin.discovery: a Kafka Connect setting Headrace does not use (plugins are found through Python entry "
        "points); ignored",
        "rest.port: a Kafka Connect setting Headrace does not use (removed in Kafka 3.0; use listeners); ignored"]


# --- connector configs ---------------------------------------------------------------------------------------
def test_an_unknown_connector_key_is_a_warning_naming_the_connector_class(validator) -> None:
    result = validator.validate({**SOURCE, "fiel": "in.txt"})
    assert result.warnings == ["fiel: not a known setting of FileStreamSource; did you mean file?"]
    assert result.error_count == 0  # still valid: Kafka Connect accepts unknown keys


@pytest.mark.parametrize("key", [
    "producer.override.linger.ms", "consumer.override.max.poll.records", "admin.override.request.timeout.ms",
    "key.converter.schemas.enable", "value.converter.schemas.enable", "header.converter.x",
    "topic.creation.default.cleanup.policy", "errors.deadletterqueue.topic.name", "exactly.once.support",
])
def test_the_framework_keys_and_families_of_a_source_are_known(validator, key: str) -> None:
    assert validator.validate({**SOURCE, "file": "", key: "1"}).warnings == []


def test_transform_keys_are_checked_against_the_transform_definition(validator) -> None:
    config = {**SOURCE, "transforms": "c", "transforms.c.type": "org.apache.kafka.connect.transforms.Cast$Value",
              "transforms.c.spec": "int32"}
    assert validator.validate(config).warnings == []
    assert validator.validate({**config, "transforms.c.spce": "int8"}).warnings == [
        "transforms.c.spce: not a known setting of FileStreamSource; did you mean transforms.c.spec?"]
    # an alias that is not listed in transforms configures nothing
    assert validator.validate({**config, "transforms.d.type": "x"}).warnings == [
        "transforms.d.type: not a known setting of FileStreamSource; did you mean transforms.c.type?"]


def test_a_transform_whose_type_is_wrong_gets_its_error_not_a_warning_per_key(validator) -> None:
    result = validator.validate({**SOURCE, "transforms": "c", "transforms.c.type": "Nope", "transforms.c.spec": "x"})
    assert result.error_count == 1 and result.warnings == []


def test_topic_creation_keys_of_an_unlisted_group_are_unknown(validator) -> None:
    config = {**SOURCE, "topic.creation.groups": "big", "topic.creation.big.include": "a.*",
              "topic.creation.big.retention.ms": "1"}
    assert validator.validate(config).warnings == []
    assert validator.validate({**config, "topic.creation.small.partitions": "2"}).warnings == [
        "topic.creation.small.partitions: not a known setting of FileStreamSource; "
        "did you mean topic.creation.default.partitions?"]


def test_spark_keys_are_known_only_to_the_spark_sinks(validator) -> None:
    hdfs = load_config_file(CONFIGS / "hdfs-spark-sink.properties")
    assert validator.validate({**hdfs, "spark.sql.shuffle.partitions": "4"}).warnings == []
    sink = {"name": "s", "connector.class": "FileStreamSink", "topics": "t", "spark.driver.memory": "1g"}
    assert validator.validate(sink).warnings == ["spark.driver.memory: not a known setting of FileStreamSink"]


def test_the_connector_class_is_named_as_the_config_gives_it_without_its_package(validator) -> None:
    config = {**SOURCE, "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "fiel": "x"}
    assert validator.validate(config).warnings == [
        "fiel: not a known setting of FileStreamSourceConnector; did you mean file?"]


def test_validate_reports_the_warnings_beside_an_unchanged_error_count(validator) -> None:
    clean = validator.validate({**SOURCE, "tasks.max": "0"}).to_config_infos()
    body = validator.validate({**SOURCE, "tasks.max": "0", "fiel": "x"}).to_config_infos()
    assert body["error_count"] == clean["error_count"] == 1
    assert body["configs"] == clean["configs"]  # Kafka Connect's part of the answer is the same
    assert body["warnings"] == ["fiel: not a known setting of FileStreamSource; did you mean file?"]
    assert "warnings" not in clean  # no unknown key: exactly Kafka Connect's answer


# --- the shipped configs -------------------------------------------------------------------------------------
def _shipped() -> list[Path]:
    return sorted(CONFIGS.glob("*.properties"))


def test_every_shipped_config_is_checked() -> None:
    names = {p.name for p in _shipped()}
    assert {"connect-standalone.properties", "connect-distributed.properties", "connect-file-source.properties",
            "hdfs-spark-sink.properties", "redis-sink.properties"} <= names


@pytest.mark.parametrize("path", _shipped(), ids=lambda p: p.name)
def test_no_shipped_config_has_an_unknown_key(path: Path, validator) -> None:
    props = load_config_file(path)
    if "connector.class" in props:
        assert validator.validate(props).warnings == []
        return
    config_cls: type[WorkerConfig] = DistributedConfig if "group.id" in props else StandaloneConfig
    assert config_cls(props).unknown_key_warnings() == []


# --- FileStream connectors without a file ----------------------------------------------------------------------
def test_a_file_source_without_a_file_warns_that_it_reads_stdin(monkeypatch, caplog, tmp_path: Path) -> None:
    from plugins.file.source import FileStreamSourceTask

    with open(tmp_path / "stdin", "w+") as stdin:
        monkeypatch.setattr("sys.stdin", stdin)
        task = FileStreamSourceTask()
        with caplog.at_level("INFO", logger="plugins.file.source"):
            task.start({"name": "file-source", "topic": "lines"})
        task.stop()
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == ["[file-source] FileStreamSource has no file setting: reading standard input into topic lines"]


def test_a_file_sink_without_a_file_warns_that_it_writes_stdout(caplog) -> None:
    from plugins.file.sink import FileStreamSinkTask

    task = FileStreamSinkTask()
    with caplog.at_level("INFO", logger="plugins.file.sink"):
        task.start({"name": "file-sink", "topics": "lines"})
    task.stop()
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == ["[file-sink] FileStreamSink has no file setting: writing to standard output"]


@pytest.mark.parametrize("path", sorted((CONFIGS / "flume").glob("*.conf")), ids=lambda p: p.name)
def test_no_connector_a_shipped_flume_config_becomes_has_an_unknown_key(path: Path, validator,
                                                                         tmp_path: Path) -> None:
    from connect.flume.translate import translate

    props = load_config_file(path)
    for agent in sorted({key.split(".", 1)[0] for key in props}):
        for connector in translate(props, agent, tmp_path, None).connectors:
            assert validator.unknown_key_warnings(connector) == [], (agent, connector["name"])
