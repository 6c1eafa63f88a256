"""HttpSource's bounds on one request and on all requests at once (issue #35 item 4), on a real socket with no
runtime polling: this test plays the runtime (``poll``, ``commit_batch``) where a test needs the log to answer.

A request carries at most ``max.request.events`` events and never more than ``max.pending.events``; the
requests of a source hold at most ``max.inflight.bytes`` of memory at once (bodies being read, decoded and
parsed, and their events until the log has them). Each bound is checked while reading and parsing, so a
request of a million tiny events is refused once the count passes the limit, not after it was all made.
"""

from __future__ import annotations

import gzip
import socket
import threading
import time
import tracemalloc
import zlib

import httpx
import pytest

from connect.api import SourceRecordBatch
from plugins.ingest.http import BadInput, EventParser, HttpSourceTask, TooLarge, json_tree_bytes, parse_events
from tests.plugins.task_contexts import SourceContext
from tests.support import free_port, wait_until

TINY = b'{"message":"x"}\n'




@pytest.fixture
def source():
    """``source(**props)``: a started HttpSourceTask and its URL; every one started is stopped after the test."""
    started: list[HttpSourceTask] = []

    def start(**props: str) -> tuple[HttpSourceTask, str]:
        port = free_port()
        config = {"name": "bounds", "topic": "logs", "listeners": f"http://127.0.0.1:{port}",
                  "http.ack.timeout.ms": "3000", **props}
        task = HttpSourceTask()
        task.initialize(SourceContext(config))
        task.start(config)
        started.append(task)
        return task, f"http://127.0.0.1:{port}/"

    yield start
    for task in started:
        task.stop()


def _gzip(body: bytes) -> bytes:
    return gzip.compress(body, 9)


def _post(url: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(url, content=body, headers=headers, timeout=30)


def test_a_gzip_bomb_of_a_million_tiny_events_gets_413_before_its_events_are_made(source):
    task, url = source()
    bomb = _gzip(TINY * 1_048_576)
    assert len(bomb) < 64 << 10  # ~32 KB on the wire, 16 MiB decoded: under max.request.bytes
    started = time.monotonic()
    answer = _post(url, bomb, **{"Content-Encoding": "gzip"})
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"] == ("the request has more than 10000 events (max.request.events=10000); "
                                      "send them in several requests")
    assert time.monotonic() - started < 20  # parsing stopped at the limit (a million events take far longer)
    assert task._queued == 0 and not task._waiting
    assert "rejected_too_large=1" in task.counters.text()


def test_200000_events_in_one_request_get_413_and_nothing_is_queued(source):
    task, url = source()
    answer = _post(url, TINY * 200_000)
    assert answer.status_code == 413 and "max.request.events=10000" in answer.json()["error"]
    assert task._queued == 0
    # a request of exactly the limit is taken
    small, url = source(**{"max.request.events": "3"})
    assert _post(url, TINY * 4).status_code == 413
    answers: list[httpx.Response] = []
    poster = threading.Thread(target=lambda: answers.append(_post(url, TINY * 3)))
    poster.start()
    small.commit_batch(wait_until(small.poll, 10, what="the 3 events polled"))
    poster.join(10)
    assert answers[0].status_code == 200 and answers[0].json() == {"accepted": 3}


def test_max_pending_events_holds_for_a_request_that_arrives_while_the_queue_is_empty(source):
    task, url = source(**{"max.pending.events": "5"})
    answer = _post(url, TINY * 6)
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"] == ("the request has more than 5 events (max.pending.events=5, the most that "
                                      "may wait for the log); send them in several requests")
    assert task._queued == 0


def test_a_json_array_of_tiny_events_is_counted_before_its_events_are_made():
    body = b"[" + b",".join([b'{"message":"x"}'] * 200_000) + b"]"
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge, match="more than 10000 events"):
            parse_events(body, 1 << 20, max_events=10_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # what parsing took stays within what the source reserves for the parsed JSON (json_tree_bytes, which the
    # inflight budget charges), so no event was made: 200,000 log event Structs would add ~100 MB on top of it.
    # Relative, not a fixed figure: orjson 3.8 peaks at ~46 MiB here, 3.13 at ~83 MiB (its parser's document)
    assert peak <= json_tree_bytes(body), (peak, json_tree_bytes(body))


def test_ndjson_parsing_stops_at_the_limit_without_making_every_event():
    body = TINY * 1_048_576
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge, match="more than 10000 events"):
            parse_events(body, 1 << 20, max_events=10_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 10,001 events (~3 MB) and a line at a time; not a list of a million lines (~50 MB) nor a million events
    assert peak < 16 << 20, peak


def test_parsing_reserves_the_estimated_memory_of_its_events_as_it_goes():
    reserved: list[int] = []
    events = parse_events(TINY * 5000, 1 << 20, max_events=10_000, reserve=reserved.append)
    assert len(events) == 5000
    # a Struct per event costs ~300 bytes however small the event: the estimate is far above the 80 KB of JSON
    assert sum(reserved) >= 5000 * 300 and len(reserved) >= 4  # in blocks, not at the end only


@pytest.mark.parametrize("encoding, wbits", [("gzip", 31), ("deflate", 15)])
def test_a_decompression_bomb_is_refused_after_decoding_at_most_the_limit(source, encoding, wbits):
    task, url = source(**{"max.request.bytes": "1048576"})
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    # 64 MiB of spaces in ~64 KB: 64 times the limit (a larger bomb only made the test slower to build it)
    bomb = packer.compress(b" " * (64 << 20)) + packer.flush()
    answer = _post(url, bomb, **{"Content-Encoding": encoding})
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"] == "the decoded body is more than max.request.bytes=1048576"
    assert task._queued == 0


def test_requests_over_the_inflight_budget_get_503_until_the_log_has_the_earlier_ones(source):
    # 1 MiB: one request of 1,000 events with a few labels holds ~0.9 MB until acknowledged
    task, url = source(**{"max.inflight.bytes": "1048576", "http.retry.after.seconds": "2"})
    event = b'{"message":"m","a":"1","b":"2"}\n'
    first: list[httpx.Response] = []
    poster = threading.Thread(target=lambda: first.append(_post(url, event * 1000)))
    poster.start()
    wait_until(lambda: task._queued == 1000, 10, what="the first request queued")
    busy = _post(url, event * 1000)
    assert busy.status_code == 503 and busy.headers["Retry-After"] == "2", busy.text
    assert "max.inflight.bytes=1048576" in busy.json()["error"]
    batch = wait_until(task.poll, 10, what="the first request polled")
    task.commit_batch(batch)
    poster.join(10)
    assert first[0].status_code == 200
    # the log has the first request: its memory is free again for the next
    answers: list[httpx.Response] = []
    poster = threading.Thread(target=lambda: answers.append(_post(url, event * 1000)))
    poster.start()
    batch = wait_until(task.poll, 10, what="the second request polled")
    task.commit_batch(batch)
    poster.join(10)
    assert answers[0].status_code == 200, answers[0].text
    assert "rejected_busy=1" in task.counters.text()


def test_a_request_that_alone_needs_more_than_the_budget_gets_413(source):
    task, url = source(**{"max.inflight.bytes": "1048576"})
    answer = _post(url, b'{"message":"m","a":"1","b":"2"}\n' * 9000)  # 290 KB of JSON, ~4 MB of events
    assert answer.status_code == 413, answer.text
    assert "max.inflight.bytes=1048576" in answer.json()["error"]
    assert task._queued == 0


def test_a_request_the_log_did_not_acknowledge_in_time_keeps_its_memory_until_it_does(source):
    task, url = source(**{"max.inflight.bytes": "1048576", "http.ack.timeout.ms": "300"})
    event = b'{"message":"m","a":"1","b":"2"}\n'
    late = _post(url, event * 1000)
    assert late.status_code == 503 and "did not acknowledge" in late.json()["error"]
    # its events are still queued for the log: they still take memory
    busy = _post(url, event * 1000)
    assert busy.status_code == 503 and "max.inflight.bytes" in busy.json()["error"]
    task.commit_batch(wait_until(task.poll, 10, what="the late request polled"))
    assert task._inflight.used == 0


def _raw(port: int, request: bytes, wait: float = 10.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(request)
        chunks = []
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                chunks.append(data)
                if b"\r\n\r\n" in b"".join(chunks):
                    head, _, rest = b"".join(chunks).partition(b"\r\n\r\n")
                    length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n")
                                   if h.lower().startswith(b"content-length:")), None)
                    if length is not None and len(rest) >= length:
                        break
        except TimeoutError:
            pass
    return b"".join(chunks)


def test_a_chunk_declared_larger_than_the_limit_is_refused_before_it_is_read(source):
    task, url = source(**{"max.request.bytes": "1048576"})
    port = task.bound[0][1]
    started = time.monotonic()
    # a 4 GiB chunk is announced and 10 bytes of it sent: nothing waits for (or allocates) the rest
    answer = _raw(port, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n100000000\r\n0123456789")
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"max.request.bytes=1048576" in answer
    assert time.monotonic() - started < 5


def test_a_chunked_body_counts_its_framing_and_a_normal_one_is_read(source):
    task, url = source(**{"max.request.bytes": "4096"})
    port = task.bound[0][1]
    # 1-byte chunks: 6 bytes on the wire each; 1,000 of them are over 4 KiB although the payload is not
    tiny_chunks = b"".join(b"1\r\n \r\n" for _ in range(1000))
    answer = _raw(port, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + tiny_chunks + b"0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    # a normal chunked request (httpx streams a generator that way) is answered once the log has it
    answers: list[httpx.Response] = []
    poster = threading.Thread(target=lambda: answers.append(
        httpx.post(url, content=iter([TINY, TINY, TINY]), timeout=10)))
    poster.start()
    batch = wait_until(task.poll, 10, what="the chunked request polled")
    assert isinstance(batch, SourceRecordBatch) and len(batch) == 3
    task.commit_batch(batch)
    poster.join(10)
    assert answers[0].status_code == 200 and answers[0].json() == {"accepted": 3}


def test_an_unread_body_of_a_refused_request_does_not_become_the_next_request(source):
    task, url = source(**{"http.basic.auth.user": "u", "http.basic.auth.password": "p"})
    port = task.bound[0][1]
    smuggled = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    chunk = b"%x\r\n%s\r\n" % (len(smuggled), smuggled)
    answer = _raw(port, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + b"0\r\n\r\n",
                  wait=3)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert answer.count(b"HTTP/1.1 ") == 1, answer  # the body was read as a body, never answered as a request


def test_a_body_declared_over_the_limit_gets_413_whatever_else_is_wrong_with_the_request(source):
    task, url = source(**{"max.request.bytes": "1048576"})
    port = task.bound[0][1]
    # a GET (405 otherwise) announcing 1 TB: refused and closed at once, nothing read or allocated for it
    answer = _raw(port, b"GET /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\nabc", wait=5)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_the_happy_path_is_unchanged(source):
    task, url = source()
    answers: list[httpx.Response] = []
    body = b'{\n  "message": "pretty"\n}\n'  # one object over several lines
    poster = threading.Thread(target=lambda: answers.append(_post(url, gzip.compress(body),
                                                                   **{"Content-Encoding": "gzip"})))
    poster.start()
    batch = wait_until(task.poll, 10, what="the request polled")
    assert [r.value.get("message") for r in batch] == ["pretty"]
    task.commit_batch(batch)
    poster.join(10)
    assert answers[0].status_code == 200
    assert task._inflight.used == 0


def test_a_gzip_bomb_is_parsed_as_it_is_decoded_and_holds_little(source):
    task, url = source()
    answer = _post(url, _gzip(TINY * 1_048_576), **{"Content-Encoding": "gzip"})
    assert answer.status_code == 413
    # 10,001 events and a piece of the body at a time (~6 MB), not the 16 MiB decoded body beside its copy
    assert task._inflight.peak < 10 << 20, task._inflight.peak
    assert task._inflight.used == 0


BODIES = [
    TINY * 50,
    b"\n\n" + TINY * 3 + b"\n  \n" + b'{"message": "last, no newline"}',
    b'{\n  "message": "one object",\n  "labels": {"a": "b"}\n}\n',
    b'  [{"message": "a"},\n {"message": "b"},\n {"headers": {"host": "h"}, "body": "flume"}]\n',
    TINY * 3 + b'{"message": "x"\n' + TINY,
    TINY * 2 + b'{"message": "caf\xe9"}\n',
    b'[{"message": "a"}, 7]',
    b"[\n" + b"1" * 10 + b"\n",
    b" \n \n ",
    b'{"message": "' + b"x" * 3000 + b'"}\n' + TINY,
    TINY + b'{"message": "' + b"y" * 3000 + b'"}',
    b'{"message": "multi",\n "x": 1',
]


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("piece", [1, 7, 64, 1 << 20])
def test_a_body_fed_in_pieces_gives_what_the_whole_body_gives(body, piece):
    """The listener feeds the parser the pieces it reads or decodes: the events, or the error, are the same."""
    def parse(pieces: list[bytes]):
        parser = EventParser(2048, lambda: "2026-01-01T00:00:00.000000Z", max_events=100)
        try:
            for p in pieces:
                parser.feed(p)
            return [e.get("message") for e in parser.finish()]
        except BadInput as exc:
            return str(exc)

    whole = parse([body])
    assert parse([body[i:i + piece] for i in range(0, len(body), piece)]) == whole


def test_a_line_that_does_not_end_is_refused_a_piece_past_the_limit():
    parser = EventParser(2048, max_events=100)
    parser.feed(b'{"message": "')
    with pytest.raises(BadInput, match=r"line 1: the event is at least \d+ bytes, more than max.event.bytes=2048"):
        for _ in range(3):
            parser.feed(b"x" * (1 << 20))
    assert parser.retained <= 2048 + (2 << 20)


def test_flume_http_source_counts_its_events_before_making_records():
    from plugins.flume.http_source import FlumeHttpSourceTask

    port = free_port()
    config = {"name": "flume", "topic": "logs", "listeners": f"http://127.0.0.1:{port}",
              "max.request.events": "3", "http.ack.timeout.ms": "3000"}
    task = FlumeHttpSourceTask()
    task.initialize(SourceContext(config))
    task.start(config)
    try:
        url = f"http://127.0.0.1:{port}/"
        answer = httpx.post(url, json=[{"headers": {}, "body": "b"}] * 4, timeout=10)
        assert answer.status_code == 413, answer.text
        assert answer.json()["error"] == ("the request has more than 3 events (max.request.events=3); "
                                          "send them in several requests")
        assert task._queued == 0 and task._inflight.used == 0
        answers: list[httpx.Response] = []
        poster = threading.Thread(target=lambda: answers.append(
            httpx.post(url, json=[{"headers": {"h": "1"}, "body": "b"}] * 3, timeout=10)))
        poster.start()
        records = wait_until(task.poll, 10, what="the Flume events polled")
        assert len(records) == 3 and task._inflight.used > 0
        for record in records:
            task.commit_record(record, None)
        poster.join(10)
        assert answers[0].status_code == 200 and task._inflight.used == 0
    finally:
        task.stop()
