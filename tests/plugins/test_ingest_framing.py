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


def _frames(framer_factory, chunks):
    """The frames, with each refusal as one marker: its wording may say the size or only that it is over."""
    framer = framer_factory()
    out = []
    for chunk in chunks:
        out += ["refused" if isinstance(x, Exception) else x for x in framer.feed(chunk)]
    return out + ["refused" if isinstance(x, Exception) else x for x in framer.end()]


@pytest.mark.parametrize("seed", range(20))
def test_syslog_framing_does_not_depend_on_how_the_bytes_arrive(seed):
    import random

    rng = random.Random(seed)
    pieces = []
    for _ in range(rng.randint(1, 30)):
        body = bytes(rng.choice(b"<>13 abcx:9\r\x00") for _ in range(rng.randint(0, 40)))
        kind = rng.random()
        if kind < 0.4:
            pieces.append(b"%d %s" % (len(body), body))  # octet-counted, sometimes over the limit
        elif kind < 0.8:
            pieces.append(body.replace(b"\n", b"") + b"\n")
        else:
            pieces.append(bytes(rng.choice(b"\r\n\x00") for _ in range(rng.randint(1, 3))))
    data = b"".join(pieces)
    whole = _frames(lambda: SyslogFramer(24), [data])
    bytewise = _frames(lambda: SyslogFramer(24), [data[i:i + 1] for i in range(len(data))])
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, 5))) if len(data) > 1 else []
    chunked = _frames(lambda: SyslogFramer(24), [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)])
    assert bytewise == whole and chunked == whole


def test_a_syslog_message_trickled_a_byte_at_a_time_costs_its_length_once():
    # each byte used to copy the whole pending message and search it again for its newline: quadratic in the
    # message, so a slow client held the source's event loop for seconds (minutes at max.event.bytes of 1 MiB)
    framer = SyslogFramer(2 << 20)
    data = b"<13>" + b"x" * (1 << 20) + b"\n"  # 1 MiB: about 30 s before, 1-2 s now
    started = time.monotonic()
    out = []
    for i in range(len(data)):
        out += framer.feed(data[i:i + 1])
    assert out == [data[:-1]]
    assert time.monotonic() - started < 10
