"""Topic creation settings of source connectors (topic.creation.*), as Kafka Connect's KIP-158 has them."""

from __future__ import annotations

import pytest

from connect.api.errors import ConfigException
from connect.log.api import NewTopic
from connect.runtime.connector_config import SourceConnectorConfig
from connect.runtime.topic_creation import TopicCreation


def from_configs(worker: dict[str, str], connector: dict[str, str]) -> TopicCreation | None:
    enabled = worker.get("topic.creation.enable", "true") == "true"
    return TopicCreation.from_config(enabled, SourceConnectorConfig({"name": "src", "connector.class": "S",
                                                                     **connector}))


def test_off_unless_the_worker_allows_and_the_connector_sets_the_default_group() -> None:
    assert from_configs({}, {"topic": "t"}) is None
    assert from_configs({"topic.creation.enable": "false"},
                        {"topic.creation.default.partitions": "3"}) is None
    assert from_configs({}, {"topic.creation.default.replication.factor": "1"}) is not None


def test_default_group_takes_every_topic_with_its_settings() -> None:
    tc = from_configs({}, {"topic.creation.default.partitions": "3",
                           "topic.creation.default.replication.factor": "-1",
                           "topic.creation.default.cleanup.policy": "compact",
                           "topic.creation.default.include": "nothing"})
    assert tc.new_topic("any") == NewTopic("any", 3, -1, {"cleanup.policy": "compact"})
    only_rf = from_configs({}, {"topic.creation.default.replication.factor": "2"})
    assert only_rf.new_topic("x") == NewTopic("x", 1, 2, {})


def test_first_matching_group_wins_and_inherits_partitions_and_replication_only() -> None:
    tc = from_configs({}, {
        "topic.creation.groups": "compacted, logs",
        "topic.creation.default.partitions": "2",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.retention.ms": "1000",
        "topic.creation.compacted.include": "state-.*, .*-changelog",
        "topic.creation.compacted.exclude": "state-tmp",
        "topic.creation.compacted.cleanup.policy": "compact",
        "topic.creation.logs.include": "log-.*,state-.*",
        "topic.creation.logs.partitions": "6",
        "topic.creation.logs.replication.factor": "3",
    })
    assert tc.new_topic("state-a") == NewTopic("state-a", 2, 1, {"cleanup.policy": "compact"})
    assert tc.new_topic("x-changelog").configs == {"cleanup.policy": "compact"}
    # excluded from the first group: the next that includes it
    assert tc.new_topic("state-tmp") == NewTopic("state-tmp", 6, 3, {})
    assert tc.new_topic("log-1") == NewTopic("log-1", 6, 3, {})
    # whole-name matches only
    assert tc.new_topic("my-state-a") == NewTopic("my-state-a", 2, 1, {"retention.ms": "1000"})
    assert tc.group_for("changelog").name == "default"


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("topic.creation.default.partitions", "three", "Not a number of type INT"),
    ("topic.creation.logs.replication.factor", "many", "Not a number of type SHORT"),
    ("topic.creation.logs.include", "log-(", "Invalid regular expression 'log-('"),
])
def test_a_bad_group_setting_is_refused_naming_the_key(key: str, value: str, reason: str) -> None:
    with pytest.raises(ConfigException) as err:
        from_configs({}, {"topic.creation.groups": "logs", "topic.creation.default.partitions": "1",
                          key: value})
    assert err.value.name == key and reason in str(err.value)
