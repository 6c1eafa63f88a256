"""The predicates, and Filter which they usually gate."""

from __future__ import annotations

import pytest

from connect.api import ConfigException, ConnectHeaders, SinkRecord, SourceRecord
from plugins.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from plugins.transforms import Filter


def record(topic="my-prefix-topic", value="v", headers=None):
    return SourceRecord(None, None, topic, 0, None, None, None, value, 1, headers)


def configured(cls, **props):
    predicate = cls()
    predicate.configure(props)
    return predicate


def test_topic_name_matches_whole_topic():
    predicate = configured(TopicNameMatches, pattern="my-prefix-.*")
    assert predicate.test(record("my-prefix-topic"))
    assert predicate.test(record("my-prefix-topic"))  # cached answer
    assert not predicate.test(record("other-my-prefix-topic"))
    assert not configured(TopicNameMatches, pattern="prefix").test(record("my-prefix-topic"))
    assert configured(TopicNameMatches, pattern="(?<name>my)-.*").test(record())


@pytest.mark.parametrize("props", [{}, {"pattern": ""}, {"pattern": "["}])
def test_topic_name_matches_config_errors(props):
    with pytest.raises(ConfigException) as info:
        TopicNameMatches().configure(props)
    assert info.value.name == "pattern"


def test_has_header_key():
    predicate = configured(HasHeaderKey, name="h")
    assert predicate.test(record(headers=ConnectHeaders().add_string("x", "1").add_string("h", None)))
    assert not predicate.test(record(headers=ConnectHeaders().add_string("x", "1")))
    assert not predicate.test(record())
    with pytest.raises(ConfigException) as info:
        HasHeaderKey().configure({"name": ""})
    assert info.value.name == "name"


def test_record_is_tombstone():
    predicate = configured(RecordIsTombstone)
    assert predicate.test(record(value=None))
    assert not predicate.test(record(value=""))
    assert predicate.test(SinkRecord("t", 0, None, "k", None, None, 3))


def test_filter_drops_everything():
    transform = Filter()
    transform.configure({})
    assert transform.apply(record()) is None
    assert transform.apply(record(value=None)) is None


def test_versions():
    for cls in (TopicNameMatches, HasHeaderKey, RecordIsTombstone, Filter):
        assert cls().version() == "0.1.0"
