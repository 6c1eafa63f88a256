"""Helpers for the Flume tests: a minimal Avro IPC client over a socket (for bad input and unit tests; the
real clients are Flume's Java ones), and the records of a topic read back as bytes with their headers."""

from __future__ import annotations

import io
import json
import socket
import zlib
from pathlib import Path
from typing import Any

import fastavro

from connect.log import open_log_reader
from plugins.flume import avro_ipc as ipc

HANDSHAKE_REQUEST = fastavro.parse_schema({
    "type": "record", "name": "HandshakeRequest", "namespace": "org.apache.avro.ipc",
    "fields": [{"name": "clientHash", "type": {"type": "fixed", "name": "MD5", "size": 16}},
               {"name": "clientProtocol", "type": ["null", "string"]}, {"name": "serverHash", "type": "MD5"},
               {"name": "meta", "type": ["null", {"type": "map", "values": "bytes"}]}],
})
HANDSHAKE_RESPONSE = fastavro.parse_schema({
    "type": "record", "name": "HandshakeResponse", "namespace": "org.apache.avro.ipc",
    "fields": [{"name": "match", "type": {"type": "enum", "name": "HandshakeMatch",
                                          "symbols": ["BOTH", "CLIENT", "NONE"]}},
               {"name": "serverProtocol", "type": ["null", "string"]},
               {"name": "serverHash", "type": ["null", {"type": "fixed", "name": "MD5", "size": 16}]},
               {"name": "meta", "type": ["null", {"type": "map", "values": "bytes"}]}],
})
EVENTS = fastavro.parse_schema({"type": "array", "items": {
    "type": "record", "name": "AvroFlumeEvent",
    "fields": [{"name": "headers", "type": {"type": "map", "values": "string"}}, {"name": "body", "type": "bytes"}]}})


def handshake(client_hash: bytes = ipc.PROTOCOL_HASH, protocol: str | None = None,
              server_hash: bytes = ipc.PROTOCOL_HASH) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, HANDSHAKE_REQUEST, {"clientHash": client_hash, "clientProtocol": protocol,
                                                        "serverHash": server_hash, "meta": None})
    return out.getvalue()


def call(message: str, events: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    out.write(b"\x00")  # empty call metadata
    fastavro.schemaless_writer(out, "string", message)
    if message == "append":
        fastavro.schemaless_writer(out, EVENTS["items"], events[0])
    else:
        fastavro.schemaless_writer(out, EVENTS, events)
    return out.getvalue()


def frame(serial: int, payload: bytes, split: int = 0) -> bytes:
    """A Netty frame; ``split`` > 0 cuts the payload into buffers of that size, as Java's client does."""
    parts = [payload[i:i + split] for i in range(0, len(payload), split)] if split else [payload]
    return (serial.to_bytes(4, "big") + len(parts).to_bytes(4, "big")
            + b"".join(len(p).to_bytes(4, "big") + p for p in parts))


def read_handshake_response(stream: io.BytesIO) -> dict[str, Any]:
    return fastavro.schemaless_reader(stream, HANDSHAKE_RESPONSE, None)


def read_call_response(stream: io.BytesIO) -> tuple[bool, Any]:
    """(error?, the Status symbol or the error text)."""
    fastavro.schemaless_reader(stream, {"type": "map", "values": "bytes"}, None)
    error = stream.read(1) == b"\x01"
    if error:
        fastavro.schemaless_reader(stream, "int", None)  # the union's branch
        return True, fastavro.schemaless_reader(stream, "string", None)
    return False, ["OK", "FAILED", "UNKNOWN"][fastavro.schemaless_reader(stream, "int", None)]


class AvroClient:
    """One connection to a Flume Avro source; ``send`` returns the answer's payload."""

    def __init__(self, port: int, deflate: bool = False, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.decoder = ipc.NettyFrameDecoder(1 << 26)
        self.serial = 0
        self.deflater = zlib.compressobj() if deflate else None
        self.inflater = zlib.decompressobj() if deflate else None

    def write(self, data: bytes) -> None:
        if self.deflater is not None:
            data = self.deflater.compress(data) + self.deflater.flush(zlib.Z_SYNC_FLUSH)
        self.sock.sendall(data)

    def send(self, payload: bytes) -> io.BytesIO:
        self.serial += 1
        self.write(frame(self.serial, payload, split=8192))
        return io.BytesIO(self.answer())

    def answer(self) -> bytes:
        while True:
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("the source closed the connection")
            if self.inflater is not None:
                data = self.inflater.decompress(data)
            frames = self.decoder.feed(data)
            if frames:
                serial, payload = frames[0]
                assert serial == self.serial
                return payload

    def closed(self) -> bool:
        """True once the source has closed the connection (reads end)."""
        try:
            return self.sock.recv(1 << 16) == b""
        except ConnectionResetError:
            return True

    def append_batch(self, events: list[dict[str, Any]], first: bool = False) -> tuple[bool, Any]:
        stream = self.send((handshake() if first else b"") + call("appendBatch", events))
        if first:
            assert read_handshake_response(stream)["match"] == "BOTH"
        return read_call_response(stream)

    def close(self) -> None:
        self.sock.close()


def read_topic(tmp: Path, topic: str) -> list[tuple[bytes, dict[str, str]]]:
    """Every record of ``topic`` in the embedded log under ``tmp/data``: the value's bytes, headers as text."""
    reader = open_log_reader({"embedded.log.dir": str(tmp / "data")})
    try:
        out: list[tuple[bytes, dict[str, str]]] = []
        for tp, (start, end) in reader.partition_offsets([topic]).items():
            position = start
            while position < end:
                found = reader.read(tp.topic, tp.partition, position, end)
                for batch in found.batches:
                    for i, v in enumerate(batch.values):
                        headers = batch.headers[i] if batch.headers is not None else ()
                        out.append((bytes(v or b""), {k: (h or b"").decode() for k, h in headers}))
                if found.next_offset <= position:
                    break
                position = found.next_offset
        return out
    finally:
        reader.close()


def count_topic(tmp: Path, topic: str) -> int:
    try:
        return len(read_topic(tmp, topic))
    except Exception:  # the topic does not exist yet
        return 0


def other_protocol() -> str:
    """A protocol that is not Flume's: appendBatch takes strings."""
    return json.dumps({"protocol": "Other", "namespace": "x", "types": [],
                       "messages": {"appendBatch": {"request": [{"name": "lines", "type": {"type": "array",
                                                                                            "items": "string"}}],
                                                    "response": "int"}}})


def read_sequence_file(data: bytes) -> tuple[str, str, list[tuple[bytes, bytes]]]:
    """(key class, value class, [(key bytes, value bytes)]) of an uncompressed Hadoop SequenceFile (version 6),
    as `hdfs dfs -text` would read it; raises AssertionError on anything else."""
    stream = io.BytesIO(data)

    def vint() -> int:
        first = int.from_bytes(stream.read(1), "big", signed=True)
        if first >= -112:
            return first
        negative = first < -120
        size = (-119 - first) if negative else (-111 - first)
        value = int.from_bytes(stream.read(size - 1), "big")
        return ~value if negative else value

    def text() -> str:
        return stream.read(vint()).decode()

    assert stream.read(4) == b"SEQ\x06", "not a version 6 SequenceFile"
    key_class, value_class = text(), text()
    compressed, block = stream.read(1), stream.read(1)
    assert compressed == b"\x00" and block == b"\x00", "compressed SequenceFiles are not read here"
    for _ in range(int.from_bytes(stream.read(4), "big")):  # metadata
        text(), text()
    sync = stream.read(16)
    records = []
    while True:
        head = stream.read(4)
        if not head:
            break
        length = int.from_bytes(head, "big", signed=True)
        if length == -1:
            assert stream.read(16) == sync
            continue
        key_length = int.from_bytes(stream.read(4), "big")
        key = stream.read(key_length)
        records.append((key, stream.read(length - key_length)))
    return key_class, value_class, records


def deflate_bomb(claimed: int, piece: int = 1 << 16, serial: int = 1) -> bytes:
    """The zlib bytes of one Netty frame claiming ``claimed`` bytes in buffers of ``piece`` zero bytes: about a
    thousandth of it on the wire. Sync-flushed and left open, as a Flume client with compression-type deflate
    leaves its connection's stream."""
    z = zlib.compressobj(9)
    count = -(-claimed // piece)
    out = [z.compress(serial.to_bytes(4, "big") + count.to_bytes(4, "big"))]
    zeros = bytes(piece)
    for i in range(count):
        size = min(piece, claimed - i * piece)
        out.append(z.compress(size.to_bytes(4, "big") + zeros[:size]))
    out.append(z.flush(zlib.Z_SYNC_FLUSH))
    return b"".join(out)
