"""FlumeAvroSource on a real socket with this test playing the runtime: the Netty framing, the handshake, OK
only after the log acknowledged every event, FAILED when it does not, deflate, and bad input refused with a
reason. Flume's own Java clients are in tests/e2e/test_flume_clients.py."""

from __future__ import annotations

import hashlib
import io
import socket
import threading
import time
import tracemalloc
import zlib

import pytest

from plugins.flume import avro_ipc as ipc
from plugins.flume.avro_source import FlumeAvroSourceTask
from tests.flume_support import (
    AvroClient,
    call,
    deflate_bomb,
    frame,
    handshake,
    other_protocol,
    read_call_response,
    read_handshake_response,
)
from tests.plugins.task_contexts import SourceContext
from tests.support import free_port, wait_until


class _Runtime:
    """Plays the worker: polls the task and acknowledges every record, as the log's delivery callback does."""

    def __init__(self, task: FlumeAvroSourceTask, acknowledge: bool = True) -> None:
        self.task = task
        self.records: list = []
        self.acknowledge = acknowledge
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for record in self.task.poll() or []:
                self.records.append(record)
                if self.acknowledge:
                    self.task.commit_record(record, None)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.fixture
def source():
    started: list[tuple[FlumeAvroSourceTask, _Runtime]] = []

    def start(acknowledge: bool = True, **props: str) -> tuple[FlumeAvroSourceTask, _Runtime, int]:
        port = free_port()
        config = {"name": "flume-in", "topic": "flume", "listeners": f"tcp://127.0.0.1:{port}", **props}
        task = FlumeAvroSourceTask()
        task.initialize(SourceContext(config))
        task.start(config)
        runtime = _Runtime(task, acknowledge)
        started.append((task, runtime))
        return task, runtime, port

    yield start
    for task, runtime in started:
        task.stop()
        runtime.stop()


EVENTS = [{"headers": {"seq": "1", "timestamp": "1700000000123", "city": "Zürich"}, "body": b"one"},
          {"headers": {}, "body": b"\x00\xffbinary"}]


def test_append_batch_is_ok_once_acknowledged_with_headers_body_and_timestamp(source):
    task, runtime, port = source()
    client = AvroClient(port)
    try:
        assert client.append_batch(EVENTS, first=True) == (False, "OK")
        # the second call carries no handshake: the connection is stateful
        assert client.append_batch([{"headers": {"seq": "3"}, "body": b"three"}]) == (False, "OK")
    finally:
        client.close()
    first = runtime.records[0]
    assert first.value == b"one" and first.timestamp == 1700000000123 and first.topic == "flume"
    assert {h.key: h.value for h in first.headers} == {"seq": "1", "timestamp": "1700000000123", "city": "Zürich"}
    assert runtime.records[1].value == b"\x00\xffbinary" and len(list(runtime.records[1].headers)) == 0
    assert [r.value for r in runtime.records] == [b"one", b"\x00\xffbinary", b"three"]
    assert "received=3" in task.counters.text()


def test_single_append_and_a_ping(source):
    _, runtime, port = source()
    client = AvroClient(port)
    try:
        ping = client.send(handshake() + b"\x00" + b"\x00")  # empty metadata, empty message name
        assert read_handshake_response(ping)["match"] == "BOTH" and ping.read() == b""
        answer = client.send(call("append", [{"headers": {"a": "b"}, "body": b"x"}]))
        assert read_call_response(answer) == (False, "OK")
    finally:
        client.close()
    assert [r.value for r in runtime.records] == [b"x"]


def test_failed_when_the_log_does_not_acknowledge_in_time(source):
    task, runtime, port = source(acknowledge=False, **{"ack.timeout.ms": "200"})
    client = AvroClient(port)
    try:
        assert client.append_batch(EVENTS, first=True) == (False, "FAILED")
    finally:
        client.close()
    assert "failed_unacknowledged=2" in task.counters.text()


def test_failed_when_too_many_events_wait(source):
    task, runtime, port = source(acknowledge=False, **{"max.pending.events": "1", "ack.timeout.ms": "300"})
    runtime.stop()  # nothing takes the queue: the first call's event stays in it
    client = AvroClient(port)
    try:
        assert client.append_batch(EVENTS[:1], first=True) == (False, "FAILED")
        assert client.append_batch(EVENTS[:1]) == (False, "FAILED")
    finally:
        client.close()
    assert "failed_busy=1" in task.counters.text() and "failed_unacknowledged=1" in task.counters.text()


def test_deflate_connection(source):
    _, runtime, port = source(**{"compression.type": "deflate"})
    client = AvroClient(port, deflate=True)
    try:
        for i in range(3):
            assert client.append_batch([{"headers": {"i": str(i)}, "body": b"z" * 5000}], first=i == 0) == (False, "OK")
    finally:
        client.close()
    assert len(runtime.records) == 3 and runtime.records[2].value == b"z" * 5000


def test_unknown_client_hash_gets_none_then_its_protocol_is_learned(source):
    _, runtime, port = source()
    theirs = ipc.PROTOCOL_JSON.replace('"namespace"', '"doc":"a client with docs","namespace"')
    their_hash = hashlib.md5(theirs.encode()).digest()
    client = AvroClient(port)
    try:
        first = client.send(handshake(their_hash, None, their_hash) + call("appendBatch", EVENTS))
        answer = read_handshake_response(first)
        assert answer["match"] == "NONE" and answer["serverHash"] == ipc.PROTOCOL_HASH
        assert first.read() == b""  # nothing was called
        second = client.send(handshake(their_hash, theirs, ipc.PROTOCOL_HASH) + call("appendBatch", EVENTS))
        assert read_handshake_response(second)["match"] == "BOTH"
        assert read_call_response(second) == (False, "OK")
    finally:
        client.close()
    assert len(runtime.records) == 2


def test_a_different_protocol_is_refused_with_a_reason(source):
    task, runtime, port = source()
    theirs = other_protocol()
    their_hash = hashlib.md5(theirs.encode()).digest()
    client = AvroClient(port)
    try:
        answer = client.send(handshake(their_hash, theirs, b"\x01" * 16) + b"\x00" + b"\x16appendBatch" + b"\x00")
        assert read_handshake_response(answer)["match"] == "CLIENT"
        error, text = read_call_response(answer)
        assert error and "protocol x.Other declares message 'appendBatch' with other types" in text
    finally:
        client.close()
    assert not runtime.records and "refused_calls=1" in task.counters.text()


@pytest.mark.parametrize("payload, reason", [
    (handshake() + b"\x00\x0eunknown", "no message 'unknown' in Flume's AvroSourceProtocol"),
    (handshake() + call("appendBatch", EVENTS)[:-3], "the appendBatch request is not AvroFlumeEvent data"),
    (handshake() + call("appendBatch", EVENTS) + b"zz", "the appendBatch request has 2 bytes after its events"),
])
def test_bad_calls_get_an_avro_error_and_the_connection_goes_on(source, payload, reason):
    _, runtime, port = source()
    client = AvroClient(port)
    try:
        answer = client.send(payload)
        assert read_handshake_response(answer)["match"] == "BOTH"
        error, text = read_call_response(answer)
        assert error and reason in text
        assert client.append_batch(EVENTS) == (False, "OK")
    finally:
        client.close()


@pytest.mark.parametrize("data, reason", [
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "claims 790644820 buffers: not a Flume Avro RPC frame"),
    (frame(1, b"x")[:8] + (-5).to_bytes(4, "big", signed=True) + b"x", "a length cannot be negative"),
    (frame(1, b"x")[:8] + (70 << 20).to_bytes(4, "big") + b"x", "more than max.frame.bytes=67108864"),
])
def test_bytes_that_are_not_frames_close_the_connection_with_a_logged_reason(source, caplog, data, reason):
    task, _, port = source()
    client = AvroClient(port)
    try:
        client.write(data)
        wait_until(client.closed, 10, what="the connection closed")
    finally:
        client.close()
    assert reason in caplog.text and "refused_connections_bad_frames=1" in task.counters.text()


def test_a_plain_client_on_a_deflate_source_is_told_to_check_compression(source, caplog):
    _, _, port = source(**{"compression.type": "deflate"})
    client = AvroClient(port)
    try:
        client.write(frame(1, handshake() + call("appendBatch", EVENTS)))
        wait_until(client.closed, 10, what="the connection closed")
    finally:
        client.close()
    assert "not a deflate stream" in caplog.text and "compression-type deflate" in caplog.text


def test_frame_decoder_joins_buffers_and_keeps_partial_frames():
    decoder = ipc.NettyFrameDecoder(1 << 20)
    data = frame(7, b"a" * 20000, split=8192) + frame(8, b"b")
    out = []
    for i in range(0, len(data), 1000):
        out += decoder.feed(data[i:i + 1000])
    assert out == [(7, b"a" * 20000), (8, b"b")] and decoder.pending == 0


def test_protocol_shape_ignores_docs_and_spelling_of_names():
    assert ipc.protocol_shape(ipc.PROTOCOL) == ipc.protocol_shape({
        "protocol": "AvroSourceProtocol", "namespace": "org.apache.flume.source.avro", "doc": "x",
        "types": [{"type": "enum", "name": "org.apache.flume.source.avro.Status", "symbols": ["OK", "FAILED", "UNKNOWN"]},
                  {"type": "record", "name": "AvroFlumeEvent", "doc": "y", "fields": [
                      {"name": "headers", "type": {"type": "map", "values": {"type": "string"}}},
                      {"name": "body", "type": "bytes"}]}],
        "messages": {"append": {"request": [{"name": "event", "type": "AvroFlumeEvent"}], "response": "Status"},
                     "appendBatch": {"request": [{"name": "events", "type": {"type": "array",
                                                                             "items": "AvroFlumeEvent"}}],
                                     "response": "Status"}}})


# --- bounds against hostile clients (issue #35) ----------------------------------------------------------------------

def _peer_of(client: AvroClient) -> str:
    host, port = client.sock.getsockname()[:2]
    return f"{host}:{port}"


def _closed_within(client: AvroClient, seconds: float) -> bool:
    client.sock.settimeout(seconds)
    try:
        return client.closed()
    except TimeoutError:
        return False
    finally:
        client.sock.settimeout(10)


def test_a_deflate_bomb_is_refused_after_inflating_at_most_the_frame_limit(source, caplog):
    """65 KB on the wire claiming a 64 MiB frame: inflated step by step, and the connection closed once the frame
    passes max.frame.bytes, never inflated whole."""
    task, _, port = source(**{"compression.type": "deflate", "max.frame.bytes": str(8 << 20)})
    bomb = deflate_bomb(64 << 20)
    client = AvroClient(port)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        client.write(bomb)  # already deflated: sent as it is
        wait_until(client.closed, 20, what="the bomb's connection closed")
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
        client.close()
    assert len(bomb) < 80_000
    assert peak < 24 << 20, f"the source held {peak >> 20} MiB for a frame limited to 8 MiB"
    assert "more than max.frame.bytes=8388608" in caplog.text
    assert "refused_connections_bad_frames=1" in task.counters.text()


def test_frames_past_the_sources_buffer_budget_close_that_connection_only(source, caplog):
    task, _, port = source(**{"max.buffered.bytes": str(1 << 20), "max.frame.bytes": str(1 << 20)})
    big = frame(1, handshake() + call("appendBatch", [{"headers": {}, "body": b"a" * (800 << 10)}]), split=8192)
    first, second, small = AvroClient(port), AvroClient(port), AvroClient(port)
    refused = _peer_of(second)
    try:
        first.write(big[:600 << 10])
        wait_until(lambda: task.buffer_budget.used >= 500 << 10, 10, what="the first frame buffered")
        # a small call is served while large frames hold most of the budget
        assert small.append_batch(EVENTS, first=True) == (False, "OK")
        second.write(big[:600 << 10])
        wait_until(second.closed, 10, what="the connection past the budget closed")
        first.write(big[600 << 10:])
        first.serial = 1
        answer = io.BytesIO(first.answer())
        assert read_handshake_response(answer)["match"] == "BOTH"
        assert read_call_response(answer) == (False, "OK")
        assert small.append_batch(EVENTS) == (False, "OK")
        wait_until(lambda: task.buffer_budget.used == 0, 10, what="the budget given back")
    finally:
        for client in (first, second, small):
            client.close()
    assert f"closed the connection from {refused}: frame 1 would take the bytes held" in caplog.text
    assert "max.buffered.bytes=1048576" in caplog.text
    assert "refused_connections_over_budget=1" in task.counters.text()


def test_a_frame_that_stops_half_way_or_trickles_is_cut_off_after_frame_timeout(source, caplog):
    task, _, port = source(**{"frame.timeout.ms": "500"})
    data = frame(1, handshake() + call("appendBatch", EVENTS * 200))
    stalled, trickling, normal = AvroClient(port), AvroClient(port), AvroClient(port)
    peers = (_peer_of(stalled), _peer_of(trickling))
    try:
        started = time.monotonic()
        stalled.write(data[:len(data) // 2])
        sent = 0
        while not _closed_within(trickling, 0.1):  # one byte each 0.1 s: never idle, never done
            assert time.monotonic() - started < 8, "the trickling frame was not cut off"
            trickling.write(data[sent:sent + 1])
            sent += 1
        wait_until(stalled.closed, 10, what="the stalled frame's connection closed")
        took = time.monotonic() - started
        assert 0.45 <= took < 8
        assert normal.append_batch(EVENTS, first=True) == (False, "OK")
    finally:
        for client in (stalled, trickling, normal):
            client.close()
    # the second line may be folded into the rate-limited log's next one; the counter has both
    assert any(f"closed the connection from {peer}: its request did not complete within frame.timeout.ms=500"
               in caplog.text for peer in peers)
    assert "timed_out_frames=2" in task.counters.text()


def test_an_idle_deflate_connection_holds_little(source):
    """What a source keeps per idle connection (its inflater, answer deflater, decoder, session)."""
    _, _, port = source(**{"compression.type": "deflate"})
    z = zlib.compressobj()
    ping = z.compress(frame(1, handshake() + b"\x00\x00")) + z.flush(zlib.Z_SYNC_FLUSH)
    held = [tracemalloc.Filter(True, "*/plugins/flume/*"), tracemalloc.Filter(True, "*/plugins/ingest/*")]
    sockets: list[socket.socket] = []
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces(held)
        for _ in range(50):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            sockets.append(s)
            s.sendall(ping)
            assert s.recv(1 << 16)  # answered: the connection's inflater and deflater are in use
        after = tracemalloc.take_snapshot().filter_traces(held)
    finally:
        tracemalloc.stop()
        for s in sockets:
            s.close()
    per_connection = sum(stat.size_diff for stat in after.compare_to(before, "filename")) / len(sockets)
    assert per_connection < 64 << 10, f"{per_connection / 1024:.0f} KiB per idle connection"


def test_a_frame_limit_above_the_buffer_budget_is_a_config_error():
    from plugins.flume.avro_source import FlumeAvroSourceConnector

    values = FlumeAvroSourceConnector().validate({
        "name": "flume-in", "topic": "flume", "max.frame.bytes": str(64 << 20), "max.buffered.bytes": str(32 << 20)})
    assert any("max.frame.bytes=67108864" in e for e in values["max.buffered.bytes"].errors)


def test_frame_decoder_charges_a_shared_budget_beyond_its_free_bytes_and_gives_it_back():
    budget = ipc.BufferBudget(100_000)
    one = ipc.NettyFrameDecoder(1 << 20, budget, free_bytes=10_000)
    two = ipc.NettyFrameDecoder(1 << 20, budget, free_bytes=10_000)
    data = frame(7, b"a" * 100_000)  # one buffer: 12 bytes of header and length, then the payload
    assert one.feed(data[:50_012]) == [] and one.pending == 50_000
    assert budget.used == 40_000
    with pytest.raises(ipc.BufferBudgetExceeded, match="max.buffered.bytes=100000"):
        two.feed(data[:80_012])
    two.close()
    assert budget.used == 40_000
    assert one.feed(data[50_012:]) == [(7, b"a" * 100_000)]
    assert budget.used == 90_000  # the frame stays charged until it is answered
    one.release(100_000)
    assert budget.used == 0 and one.pending == 0
