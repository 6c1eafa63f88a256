"""FlumeHttpSource's reading of Flume's JSONHandler bodies into records with Flume's headers and body."""

from __future__ import annotations

import pytest

from plugins.flume.http_source import parse_flume_events
from plugins.ingest.http import BadInput


def test_each_element_becomes_a_record_with_its_headers_body_and_timestamp():
    body = (b'[{"headers": {"host": "a", "timestamp": "1700000000000"}, "body": "hello \\u00fc"},'
            b' {"body": "no headers"}, {"headers": {"k": "v"}}]')
    first, second, third = parse_flume_events(body, "t", 1024)
    assert first.topic == "t" and first.value == "hello ü".encode()
    assert {h.key: h.value for h in first.headers} == {"host": "a", "timestamp": "1700000000000"}
    assert first.timestamp == 1_700_000_000_000
    assert second.value == b"no headers" and len(second.headers) == 0 and second.timestamp > 1_700_000_000_000
    assert third.value == b""


@pytest.mark.parametrize("body, why", [
    (b'{"body": "x"}', "not a JSON array of Flume events"),
    (b'[{"body": "x"}, 3]', "element 1: a Flume event is an object"),
    (b'[{"body": "x", "extra": 1}]', "element 0: a Flume event is an object with only headers and body"),
    (b'[{"headers": {"n": 1}, "body": "x"}]', "element 0: headers must be an object of strings"),
    (b'[{"body": {"a": 1}}]', "element 0: body must be a string"),
    (b'[{"body": "' + b"x" * 100 + b'"}]', "element 0: the body is 100 bytes, more than max.event.bytes=64"),
    (b'[{"body": ', "not JSON"),
])
def test_bad_bodies_are_refused_naming_the_element(body, why):
    with pytest.raises(BadInput, match=why):
        parse_flume_events(body, "t", 64)
