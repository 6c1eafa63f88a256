"""Framing and syslog parsing of the ingestion sources, fed byte by byte and in odd pieces."""

from __future__ import annotations

import time

import pytest

from connect.api.log_event import to_plain
from plugins.ingest._stream import DelimitedFramer
from plugins.ingest.syslog import SyslogError, SyslogFramer, parse_syslog


def _feed_bytewise(framer, data: bytes) -> list:
    out = []
    for i in range(len(data)):
        out += framer.feed(data[i:i + 1])
    return out + framer.end()


def test_delimited_frames_survive_any_split_and_oversized_ones_are_skipped_to_their_end():
    data = b'{"a":1}\n{"b":2}\0\0' + b"z" * 50 + b'\n{"c":3}\r\n{"tail":4}'
    for framer_input in (lambda f: _feed_bytewise(f, data), lambda f: f.feed(data) + f.end()):
        out = framer_input(DelimitedFramer(20, b"\n\0"))
        frames = [f for f in out if isinstance(f, bytes)]
        errors = [f for f in out if isinstance(f, Exception)]
        assert frames == [b'{"a":1}', b'{"b":2}', b'{"c":3}\r', b'{"tail":4}']
        assert len(errors) == 1 and "max.event.bytes=20" in str(errors[0])


def test_syslog_framing_mixes_octet_counting_and_newlines():
    data = b"11 <13>1 - - -<13>plain line\n\n5 abcde30 " + b"q" * 30 + b"<14>after\n"
    out = _feed_bytewise(SyslogFramer(20), data)
    assert [f for f in out if isinstance(f, bytes)] == [b"<13>1 - - -", b"<13>plain line", b"abcde", b"<14>after"]
    assert [str(e) for e in out if isinstance(e, Exception)] == [
        "an octet-counted message of 30 bytes, more than max.event.bytes=20"]


@pytest.mark.parametrize("message, error", [
    (b"no priority", "no <PRI> at the start"),
    (b"<999>1 - - - - - -", "<999> is not a priority"),
    (b"<13>1 yesterday host app - - - m", "RFC 5424 timestamp 'yesterday' is not RFC 3339"),
    (b'<13>1 - h a - - [id k="v"', "structured data element [id is not closed"),
    (b'<13>1 - h a - - [id k=v] m', 'a parameter of [id needs name="value"'),
    (b"<13>1 - h a - - -m", "expected a space after the structured data"),
])
def test_malformed_syslog_is_named(message, error):
    with pytest.raises(SyslogError, match=error.replace("[", r"\[").replace("(", r"\(")):
        parse_syslog(message)


def test_rfc5424_nil_values_bom_and_escapes():
    event = to_plain(parse_syslog(b'<0>1 - - - - - [a@1 q="x\\"y\\\\z\\]"] \xef\xbb\xbfbody', received=0.0))
    assert event["@timestamp"] == "1970-01-01T00:00:00.000000Z" and event["message"] == "body"
    assert event["log"]["syslog"]["structured_data"] == {"a@1": {"q": 'x"y\\z]'}}
    assert event["log"]["level"] == "FATAL" and event["log"]["syslog"]["severity"]["name"] == "emerg"


def test_a_frame_trickled_a_byte_at_a_time_costs_its_length_once():
    # a slow client's frame used to be copied whole for every byte that came (39 s of the event loop for this
    # 256 KiB one, every other connection of the source waiting meanwhile); now about half a second
    framer = DelimitedFramer(1 << 20)
    data = b"x" * (256 << 10) + b"\n"
    started = time.monotonic()
    out = []
    for i in range(len(data)):
        out += framer.feed(data[i:i + 1])
    assert out == [data[:-1]]
    assert time.monotonic() - started < 10
