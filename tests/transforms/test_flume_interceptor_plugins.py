"""The plugins Flume's interceptors and multiplexing selector translate to: ValueMatches and
HeaderValueMatches (with Filter), and InsertTimestampHeader."""

from __future__ import annotations

import time

import pytest

from connect.api import ConfigException, ConnectHeaders, SourceRecord
from plugins.predicates import HeaderValueMatches, ValueMatches
from plugins.transforms import Filter, InsertTimestampHeader


def record(value=b"body", headers=None, timestamp=1_700_000_000_000):
    return SourceRecord(None, None, "t", 0, None, None, None, value, timestamp, headers)


def configured(cls, **props):
    plugin = cls()
    plugin.configure(props)
    return plugin


def test_value_matches_finds_the_pattern_anywhere_in_the_text_by_default():
    predicate = configured(ValueMatches, pattern="ERR(OR)?")
    assert predicate.test(record(b"2024 ERROR disk full"))
    assert predicate.test(record("an ERR in text"))
    assert not predicate.test(record(b"all fine"))
    assert not predicate.test(record(None))
    assert predicate.test(record(b"\xff\xfe ERR"))  # bytes that are not UTF-8 still match their text part


def test_value_matches_full_needs_the_whole_value():
    predicate = configured(ValueMatches, pattern="ERR", match="full")
    assert predicate.test(record(b"ERR")) and not predicate.test(record(b"ERR!"))


def test_header_value_matches_the_whole_value_of_the_last_header():
    predicate = configured(HeaderValueMatches, name="state", pattern="CZ|US")
    assert predicate.test(record(headers=ConnectHeaders().add_string("state", "CZ")))
    assert not predicate.test(record(headers=ConnectHeaders().add_string("state", "CZE")))
    assert not predicate.test(record(headers=ConnectHeaders().add_string("state", "US").add_string("state", "DE")))
    assert not predicate.test(record())
    assert not predicate.test(record(headers=ConnectHeaders().add_string("state", None)))


@pytest.mark.parametrize(("cls", "props", "key"), [
    (ValueMatches, {"pattern": "["}, "pattern"),
    (ValueMatches, {"pattern": "x", "match": "partly"}, "match"),
    (HeaderValueMatches, {"pattern": "x"}, "name"),
    (HeaderValueMatches, {"name": "h", "pattern": "(unclosed"}, "pattern"),
])
def test_bad_configs_name_the_key(cls, props, key):
    with pytest.raises(ConfigException) as info:
        cls().configure(props)
    assert info.value.name == key


def test_filter_with_value_matches_keeps_or_drops_like_regex_filter():
    drop_matching = configured(Filter)
    matches = configured(ValueMatches, pattern="DEBUG")
    kept = [r for r in (record(b"DEBUG x"), record(b"INFO y")) if not matches.test(r) or drop_matching.apply(r)]
    assert [r.value for r in kept] == [b"INFO y"]


def test_insert_timestamp_header_sets_wallclock_millis_replacing_an_existing_one():
    transform = configured(InsertTimestampHeader)
    before = time.time_ns() // 1_000_000
    out = transform.apply(record(headers=ConnectHeaders().add_string("timestamp", "1").add_string("k", "v")))
    after = time.time_ns() // 1_000_000
    stamps = out.headers.all_with_name("timestamp")
    assert len(stamps) == 1 and before <= int(stamps[0].value) <= after
    assert out.headers.last_with_name("k").value == "v"


def test_insert_timestamp_header_from_the_record_and_preserving_an_existing_one():
    from_record = configured(InsertTimestampHeader, **{"header": "ts", "timestamp.source": "record"})
    assert from_record.apply(record()).headers.last_with_name("ts").value == "1700000000000"
    preserve = configured(InsertTimestampHeader, **{"preserve.existing": "true"})
    kept = preserve.apply(record(headers=ConnectHeaders().add_string("timestamp", "42")))
    assert [h.value for h in kept.headers.all_with_name("timestamp")] == ["42"]
