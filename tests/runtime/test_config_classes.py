"""WorkerConfig, ConnectorConfig, SinkConnectorConfig, SourceConnectorConfig and the client override policies:
defaults, types, and bad values refused naming the key and the reason."""

from __future__ import annotations

import os
from typing import Any

import pytest

from connect.api.errors import ConfigException
from connect.runtime.client_config_policy import override_policy
from connect.runtime.connector_config import (
    ConnectorConfig,
    SinkConnectorConfig,
    SourceConnectorConfig,
    TopicCreationGroup,
)
from connect.runtime.connector_validation import ConnectorConfigValidator
from connect.runtime.plugins import PluginRegistry
from connect.runtime.worker_config import DistributedConfig, StandaloneConfig, WorkerConfig

CONVERTERS = {"key.converter": "StringConverter", "value.converter": "StringConverter"}
SINK = {"name": "snk", "connector.class": "FileStreamSink", "topics": "lines"}
SOURCE = {"name": "src", "connector.class": "FileStreamSource", "topic": "lines"}


def refused(config_class: type, props: dict[str, Any]) -> ConfigException:
    with pytest.raises(ConfigException) as err:
        config_class(props)
    return err.value


# --- WorkerConfig -------------------------------------------------------------------------------------------
def test_worker_defaults_are_kafka_connects():
    config = WorkerConfig(CONVERTERS)
    assert config.offset_flush_interval_ms == 60000 and config.offset_flush_timeout_ms == 5000
    assert config.task_shutdown_graceful_timeout_ms == 5000
    assert config.consumer_max_poll_records == 500
    assert config.topic_creation_enable is True
    assert config.client_config_override_policy.name == "All"
    assert config.converter_class("header.converter").endswith(".SimpleHeaderConverter")
    assert config.bootstrap_servers == [] and not config.uses_kafka
    assert config.embedded_log_dir == "./headrace-data" and config.streaming_state_dir == ""
    # streaming state lives with the worker's own state unless streaming.state.dir says otherwise
    assert config.streaming_state_root == os.path.abspath("./headrace-data/streaming-state")


def test_worker_values_are_typed():
    config = WorkerConfig({**CONVERTERS, "offset.flush.interval.ms": " 250 ",
                           "topic.creation.enable": "FALSE",
                           "bootstrap.servers": "a:9092, b:9092", "plugin.path": "/p1,/p2",
                           "connector.client.config.override.policy": "Principal"})
    assert config.offset_flush_interval_ms == 250 and config.topic_creation_enable is False
    assert config.bootstrap_servers == ["a:9092", "b:9092"] and config.uses_kafka
    assert config.plugin_path == ["/p1", "/p2"]
    assert config.client_config_override_policy.name == "Principal"


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("offset.flush.interval.ms", "soon", "Not a number of type LONG"),
    ("offset.flush.timeout.ms", "-1", "Value must be at least 0"),
    ("task.shutdown.graceful.timeout.ms", "1.5", "Not a number of type LONG"),
    ("topic.creation.enable", "yes", "Expected value to be either true or false"),
    ("consumer.max.poll.records", "0", "Value must be at least 1"),
    ("connector.client.config.override.policy", "Some", "String must be one of: All, None, Principal"),
])
def test_a_bad_worker_value_is_refused_naming_the_key_and_the_reason(key, value, reason):
    err = refused(WorkerConfig, {**CONVERTERS, key: value})
    assert err.name == key and reason in str(err) and value in str(err)


def test_a_missing_required_worker_key_is_named():
    err = refused(StandaloneConfig, CONVERTERS)
    assert err.name == "offset.storage.file.filename" and "Missing required configuration" in str(err)
    err = refused(DistributedConfig, {**CONVERTERS, "config.storage.topic": "c"})
    assert err.name == "group.id"


def test_kafka_connects_policy_class_names_are_accepted():
    for name in ("None", "NoneConnectorClientConfigOverridePolicy",
                 "org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy"):
        config = WorkerConfig({**CONVERTERS, "connector.client.config.override.policy": name})
        assert config.client_config_override_policy.name == "None"


# --- ConnectorConfig ----------------------------------------------------------------------------------------
def test_connector_defaults():
    config = SinkConnectorConfig(SINK)
    assert (config.name, config.connector_class, config.tasks_max, config.tasks_max_enforce) == (
        "snk", "FileStreamSink", 1, True)
    assert config.errors_retry_timeout_ms == 0 and config.errors_retry_delay_max_ms == 60000
    assert not config.errors_tolerance_all and not config.errors_log_enable
    assert not config.errors_log_include_messages
    assert config.dlq_topic_name == "" and config.dlq_replication_factor == 3
    assert not config.dlq_context_headers_enable
    assert config.converter_class("value.converter") is None
    assert config.transforms == [] and config.predicates == []
    assert config.max_poll_records is None and config.topics_regex == ""


def test_connector_values_are_typed_and_lists_drop_empty_items():
    config = SinkConnectorConfig({**SINK, "topics": " a, b,,c ", "tasks.max": "3",
                                  "tasks.max.enforce": "false",
                                  "errors.tolerance": "all", "errors.retry.timeout": "-1",
                                  "errors.deadletterqueue.topic.name": " dlq ",
                                  "errors.deadletterqueue.context.headers.enable": "true",
                                  "transforms": "mask, route", "value.converter": "JsonConverter",
                                  "value.converter.schemas.enable": "false",
                                  "consumer.override.max.poll.records": "7",
                                  "consumer.override.fetch.min.bytes": "1"})
    assert config.topics == ["a", "b", "c"] and config.tasks_max == 3 and not config.tasks_max_enforce
    assert config.errors_tolerance_all and config.errors_retry_timeout_ms == -1
    assert config.dlq_topic_name == "dlq" and config.dlq_context_headers_enable
    assert config.transforms == ["mask", "route"]
    assert config.converter_class("value.converter") == "JsonConverter"
    assert config.originals_with_prefix("value.converter.") == {"schemas.enable": "false"}
    assert config.max_poll_records == 7
    assert config.client_overrides("consumer") == {"max.poll.records": "7", "fetch.min.bytes": "1"}
    assert config.client_overrides("producer") == {}


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("tasks.max", "0", "Value must be at least 1"),
    ("tasks.max", "many", "Not a number of type INT"),
    ("tasks.max.enforce", "maybe", "Expected value to be either true or false"),
    ("errors.tolerance", "some", "String must be one of: none, all"),
    ("errors.retry.delay.max.ms", "0", "Value must be at least 1"),
    ("errors.log.enable", "1", "Expected value to be either true or false"),
    ("errors.deadletterqueue.topic.replication.factor", "99999", "Not a number of type SHORT"),
    ("transforms", "a,a", "Duplicate alias provided."),
    ("consumer.override.max.poll.records", "lots", "Not a number of type INT"),
])
def test_a_bad_connector_value_is_refused_naming_the_key_and_the_reason(key, value, reason):
    err = refused(SinkConnectorConfig, {**SINK, key: value})
    assert err.name == key and reason in str(err)


def test_a_missing_connector_key_is_named():
    err = refused(ConnectorConfig, {"name": "x"})
    assert err.name == "connector.class" and "Missing required configuration" in str(err)


def test_source_topic_creation_groups_are_typed_with_their_defaults():
    config = SourceConnectorConfig({**SOURCE, "topic.creation.groups": "logs, default, logs",
                                    "topic.creation.default.replication.factor": "2",
                                    "topic.creation.logs.include": "log-.*, audit",
                                    "topic.creation.logs.partitions": "6",
                                    "topic.creation.logs.cleanup.policy": "compact"})
    assert config.uses_topic_creation and config.topic_creation_groups == ["logs"]
    assert config.topic_creation_group("default") == TopicCreationGroup("default", (), (), 1, 2, {})
    assert config.topic_creation_group("logs") == TopicCreationGroup(
        "logs", ("log-.*", "audit"), (), 6, None, {"cleanup.policy": "compact"})
    assert not SourceConnectorConfig(SOURCE).uses_topic_creation
    assert SourceConnectorConfig(SOURCE).dlq_topic_name == ""


# --- the client override policies ---------------------------------------------------------------------------
OVERRIDES = {"producer.override.acks": "1", "consumer.override.sasl.mechanism": "PLAIN",
             "admin.override.security.protocol": "SSL", "producer.override.sasl.jaas.config": "x",
             "consumer.max.poll.records": "5", "producer.acks": "all"}


def test_all_allows_every_override_none_none_and_principal_only_who_the_client_is():
    assert override_policy("All").refusals(OVERRIDES) == []
    assert [key for key, _ in override_policy("None").refusals(OVERRIDES)] == [
        "producer.override.acks", "consumer.override.sasl.mechanism", "admin.override.security.protocol",
        "producer.override.sasl.jaas.config"]
    assert override_policy("Principal").refusals(OVERRIDES) == [(
        "producer.override.acks",
        "The 'Principal' policy does not allow 'acks' to be overridden in the connector configuration.")]


def test_the_validator_refuses_overrides_the_workers_policy_forbids(tmp_path):
    """connector.client.config.override.policy was accepted but ignored: every override passed validation."""
    props = {**SINK, "file": str(tmp_path / "out.txt"), "consumer.override.max.poll.records": "5"}
    strict = ConnectorConfigValidator.for_worker(PluginRegistry(), WorkerConfig(
        {**CONVERTERS, "connector.client.config.override.policy": "None"}))
    result = strict.validate(props)
    assert result.errors == [("consumer.override.max.poll.records", "The 'None' policy does not allow "
                              "'max.poll.records' to be overridden in the connector configuration.")]
    assert "consumer.override.max.poll.records: The 'None' policy" in result.error_message()
    lax = ConnectorConfigValidator.for_worker(PluginRegistry(), WorkerConfig(CONVERTERS))
    assert lax.validate(props).errors == []
