"""RegexRouter and TimestampRouter."""

from __future__ import annotations

import pytest

from connect.api import ConfigException, DataException, SinkRecord, SourceRecord
from plugins.transforms import RegexRouter, TimestampRouter


def sink(topic="test", timestamp=1_483_425_001_864):
    return SinkRecord(topic, 2, None, "k", None, "v", 77, timestamp)


def router(cls, **props):
    transform = cls()
    transform.configure({k.replace("_", "."): v for k, v in props.items()})
    return transform


@pytest.mark.parametrize(
    ("regex", "replacement", "topic", "expected"),
    [
        ("foo", "bar", "foo", "bar"),
        ("foo", "bar", "foobar", "foobar"),  # the whole topic must match
        ("foo", "bar", "barfoo", "barfoo"),
        ("(.*)foo", "$1bar", "foo", "bar"),
        ("(.*)foo", "$1bar", "blahfoo", "blahbar"),
        ("(.*)-(\\d\\d\\d\\d\\d\\d)", "$1", "index-201806", "index"),
        ("(?<name>[a-z]+)\\.(.*)", "${name}_$2", "db.table", "db_table"),
        ("(.*)", "\\$$1", "x", "$x"),
        ("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)", "$11-$12", "abcdefghijk", "k-a2"),
    ],
)
def test_regex_router(regex, replacement, topic, expected):
    transform = router(RegexRouter, regex=regex, replacement=replacement)
    out = transform.apply(sink(topic))
    assert out.topic == expected
    assert transform.apply(sink(topic)).topic == expected  # cached route


def test_regex_router_keeps_the_rest_of_the_record():
    out = router(RegexRouter, regex="(.*)", replacement="new-$1").apply(sink())
    assert (out.topic, out.kafka_partition, out.key, out.value, out.kafka_offset) == ("new-test", 2, "k", "v", 77)
    assert out.original_topic == "test"
    source = SourceRecord({"p": 1}, {"o": 1}, "t", None, None, None, None, "v")
    moved = router(RegexRouter, regex="t", replacement="u").apply(source)
    assert moved.topic == "u" and moved.source_offset == {"o": 1}


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"replacement": "x"}, "regex"),
        ({"regex": "("}, "regex"),
        ({"regex": "a"}, "replacement"),
        ({"regex": "(a)", "replacement": "$2"}, "replacement"),
        ({"regex": "(a)", "replacement": "${nope}"}, "replacement"),
        ({"regex": "(a)", "replacement": "trailing\\"}, "replacement"),
    ],
)
def test_regex_router_config_errors(props, key):
    with pytest.raises(ConfigException) as info:
        RegexRouter().configure(props)
    assert info.value.name == key


def test_timestamp_router_defaults():
    assert router(TimestampRouter).apply(sink()).topic == "test-20170103"


def test_timestamp_router_custom_formats():
    transform = router(TimestampRouter, topic_format="logs_${timestamp}_${topic}",
                       timestamp_format="yyyy.MM.dd-HH:mm:ss.SSS")
    assert transform.apply(sink()).topic == "logs_2017.01.03-06:30:01.864_test"
    assert transform.apply(sink(timestamp=0)).topic == "logs_1970.01.01-00:00:00.000_test"


def test_timestamp_router_needs_a_timestamp():
    with pytest.raises(DataException, match="Timestamp missing on record"):
        router(TimestampRouter).apply(sink(timestamp=None))


def test_timestamp_router_bad_pattern():
    with pytest.raises(ConfigException) as info:
        TimestampRouter().configure({"timestamp.format": "yyyy-bb"})
    assert info.value.name == "timestamp.format"


def test_timestamp_router_routes_interleaved_topics_and_days_each_by_its_own():
    """The last route is reused only for the same topic and the same day."""
    router = TimestampRouter()
    router.configure({"topic.format": "${topic}-${timestamp}", "timestamp.format": "yyyyMMdd"})
    day = 86_400_000
    stamps = [(t, d) for d in (0, 0, 1, 0, 1) for t in ("a", "b", "a")]
    routed = [router.apply(sink(t, 1_700_000_000_000 + d * day)).topic for t, d in stamps]
    assert routed == [f"{t}-{'20231114' if d == 0 else '20231115'}" for t, d in stamps]
