"""Flume's Avro RPC as bytes: Netty framing, the Avro IPC handshake, and the calls of ``AvroSourceProtocol``.

No sockets here: ``NettyFrameDecoder`` turns a connection's bytes into request frames, ``AvroSession`` turns
one request into the events it carries (answering the handshake on a connection's first call), and
``AvroSession.reply`` / ``error_reply`` give the bytes of the answer, which ``encode_frame`` frames.
``BufferBudget`` bounds the bytes that the decoders of all connections of one source hold together.

The wire format, as Avro's Netty transport and IPC specification define it:

- a frame is ``int32 serial``, ``int32 buffer count``, then per buffer ``int32 length`` and that many bytes
  (big-endian); a request's payload is its buffers joined, and the answer goes back under the same serial;
- the Netty transport is stateful, so a ``HandshakeRequest`` precedes only the first call of a connection
  (and the calls after an answer of ``NONE``); a handshake with an empty message name is a ping;
- a call is ``map<bytes>`` metadata, the message name, then the request's parameters; an answer is
  ``map<bytes>`` metadata, an error flag, then the response (a ``Status`` enum index) or the error (a union
  whose branch 0 is a string: the system error a Java client raises as ``AvroRemoteException``).

The data and handshake records are read and written with fastavro; the protocol's hash is the MD5 of its
JSON text, as every Avro implementation computes it.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
from collections.abc import Mapping
from typing import IO, Any, TypedDict, cast

import attrs
import fastavro
from fastavro.types import Schema

__all__ = [
    "AvroCallError",
    "AvroSession",
    "AvroRequest",
    "BufferBudget",
    "BufferBudgetExceeded",
    "FlumeEvent",
    "FrameError",
    "KnownProtocols",
    "NettyFrameDecoder",
    "PROTOCOL_JSON",
    "PROTOCOL_HASH",
    "STATUS_OK",
    "STATUS_FAILED",
    "encode_frame",
    "protocol_shape",
]

_NAMESPACE = "org.apache.flume.source.avro"
_EVENT = {
    "type": "record", "name": "AvroFlumeEvent",
    "fields": [{"name": "headers", "type": {"type": "map", "values": "string"}}, {"name": "body", "type": "bytes"}],
}
_STATUS = {"type": "enum", "name": "Status", "symbols": ["OK", "FAILED", "UNKNOWN"]}
PROTOCOL: dict[str, Any] = {
    "protocol": "AvroSourceProtocol",
    "namespace": _NAMESPACE,
    "types": [_STATUS, _EVENT],
    "messages": {
        "append": {"request": [{"name": "event", "type": "AvroFlumeEvent"}], "response": "Status"},
        "appendBatch": {"request": [{"name": "events", "type": {"type": "array", "items": "AvroFlumeEvent"}}],
                        "response": "Status"},
    },
}
PROTOCOL_JSON = json.dumps(PROTOCOL, separators=(",", ":"))
PROTOCOL_HASH = hashlib.md5(PROTOCOL_JSON.encode()).digest()  # the protocol's identity in Avro IPC, not security

STATUS_OK = 0
STATUS_FAILED = 1

_MD5 = {"type": "fixed", "name": "MD5", "namespace": "org.apache.avro.ipc", "size": 16}
_META = ["null", {"type": "map", "values": "bytes"}]
_HANDSHAKE_REQUEST = fastavro.parse_schema({
    "type": "record", "name": "HandshakeRequest", "namespace": "org.apache.avro.ipc",
    "fields": [{"name": "clientHash", "type": _MD5}, {"name": "clientProtocol", "type": ["null", "string"]},
               {"name": "serverHash", "type": "MD5"}, {"name": "meta", "type": _META}],
})
_HANDSHAKE_RESPONSE = fastavro.parse_schema({
    "type": "record", "name": "HandshakeResponse", "namespace": "org.apache.avro.ipc",
    "fields": [{"name": "match", "type": {"type": "enum", "name": "HandshakeMatch",
                                          "symbols": ["BOTH", "CLIENT", "NONE"]}},
               {"name": "serverProtocol", "type": ["null", "string"]},
               {"name": "serverHash", "type": ["null", _MD5]}, {"name": "meta", "type": _META}],
})
_CALL_META = fastavro.parse_schema({"type": "map", "values": "bytes"})
_STRING = fastavro.parse_schema("string")
_EVENT_SCHEMA = fastavro.parse_schema(dict(_EVENT, namespace=_NAMESPACE))
_BATCH_SCHEMA = fastavro.parse_schema({"type": "array", "items": dict(_EVENT, namespace=_NAMESPACE)})

_EMPTY_META = b"\x00"  # an empty map<bytes>
_OK_ANSWER = _EMPTY_META + b"\x00" + b"\x00"  # metadata, no error, enum index 0
_FAILED_ANSWER = _EMPTY_META + b"\x00" + b"\x02"  # enum index 1 (zig-zag)

_INT = struct.Struct(">i")
_HEADER = struct.Struct(">ii")


class FlumeEvent(TypedDict):
    """An ``AvroFlumeEvent`` as fastavro reads it."""

    headers: dict[str, str]
    body: bytes


class _HandshakeRequest(TypedDict):
    clientHash: bytes
    clientProtocol: str | None
    serverHash: bytes
    meta: dict[str, bytes] | None


def _read_string(stream: IO[bytes]) -> str:
    value = fastavro.schemaless_reader(stream, _STRING, None)
    if not isinstance(value, str):  # fastavro types its result as any Avro value; a "string" schema reads a str
        raise TypeError(f"an Avro string read as {type(value).__name__}")
    return value


def _read_record(stream: IO[bytes], schema: Schema) -> dict[str, Any]:
    value = fastavro.schemaless_reader(stream, schema, None)
    if not isinstance(value, dict):  # a record schema reads a dict
        raise TypeError(f"an Avro record read as {type(value).__name__}")
    return value


def _read_events(stream: IO[bytes], message: str) -> list[FlumeEvent]:
    """The events of an ``append`` or ``appendBatch`` call."""
    if message == "append":
        return [cast(FlumeEvent, _read_record(stream, _EVENT_SCHEMA))]  # the AvroFlumeEvent schema shapes it
    events = fastavro.schemaless_reader(stream, _BATCH_SCHEMA, None)
    if not isinstance(events, list):  # an array schema reads a list
        raise TypeError(f"an Avro array read as {type(events).__name__}")
    return cast(list[FlumeEvent], events)  # each item read with the AvroFlumeEvent schema


class FrameError(ValueError):
    """Bytes that are not a Netty frame (a negative or oversized length or buffer count); the connection is lost."""


class BufferBudgetExceeded(FrameError):
    """A frame that would take the bytes held by all connections of a source past their budget."""


class AvroCallError(ValueError):
    """A request that cannot be served; answered with ``handshake`` (the answer to the request's handshake,
    if it had one) and an Avro system error carrying this text."""

    def __init__(self, message: str, handshake: bytes = b"") -> None:
        super().__init__(message)
        self.handshake = handshake


def encode_frame(serial: int, payload: bytes) -> bytes:
    """One Netty frame holding ``payload`` as a single buffer."""
    return _HEADER.pack(serial, 1) + _INT.pack(len(payload)) + payload


class BufferBudget:
    """The bytes of frames, unfinished or not yet answered, that the connections of one source may hold together.

    Not thread-safe: the connections of a source share one event loop."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, n: int) -> bool:
        if self.used + n > self.limit:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        self.used -= n


class NettyFrameDecoder:
    """Cuts a connection's byte stream into ``(serial, payload)`` frames, keeping a partial frame between feeds.

    A frame's buffers are copied into its payload as their bytes arrive, so a connection holds about the bytes
    it was sent, once. With a ``budget``, what the connection holds beyond ``free_bytes`` (its partial frame and
    the frames handed out until ``release``) is charged to it; a feed that would take it past its limit raises
    BufferBudgetExceeded before holding the bytes. ``close`` gives the charge back.
    """

    def __init__(self, max_frame_bytes: int, budget: BufferBudget | None = None, free_bytes: int = 0) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._budget = budget
        self._free = free_bytes
        self._field = bytearray()  # the part received of a frame header or a buffer length
        self._serial: int | None = None
        self._count = 0  # buffers of the current frame
        self._lengths_read = 0  # of them
        self._left = 0  # bytes still to come of the current buffer
        self._payload = bytearray()
        self._handed_out = 0  # bytes of frames returned by feed and not yet released
        self._charged = 0

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """The frames completed by ``data``; raises FrameError on bytes that cannot be a frame."""
        out: list[tuple[int, bytes]] = []
        view = memoryview(data)
        pos, end = 0, len(data)
        while True:
            if self._serial is None:
                header, pos = self._read_field(view, pos, end, 8)
                if header is None:
                    break
                serial, count = _HEADER.unpack(header)
                if count < 1 or count > self.max_frame_bytes // 4 + 1:
                    raise FrameError(f"frame {serial} claims {count} buffers: not a Flume Avro RPC frame "
                                     "(is the client using the avro source's compression-type and no TLS?)")
                self._serial, self._count, self._lengths_read = serial, count, 0
            elif self._left:
                take = min(self._left, end - pos)
                if not take:
                    break
                self._charge(take)
                self._payload += view[pos:pos + take]
                self._left -= take
                pos += take
            elif self._lengths_read < self._count:
                field, pos = self._read_field(view, pos, end, 4)
                if field is None:
                    break
                (length,) = _INT.unpack(field)
                if length < 0 or len(self._payload) + length > self.max_frame_bytes:
                    raise FrameError(f"frame {self._serial} has a buffer of {length} bytes"
                                     + (f", more than max.frame.bytes={self.max_frame_bytes} in all" if length >= 0
                                        else ": a length cannot be negative"))
                self._left = length
                self._lengths_read += 1
            else:
                payload = bytes(self._payload)
                out.append((self._serial, payload))
                self._serial = None
                self._payload = bytearray()  # a fresh one: the last frame's capacity is not kept while idle
                self._handed_out += len(payload)
        return out

    def _read_field(self, view: memoryview, pos: int, end: int, size: int) -> tuple[bytes | None, int]:
        """A fixed-size field that may span feeds: its bytes once complete, and the position after them."""
        need = size - len(self._field)
        if not self._field and end - pos >= size:
            return bytes(view[pos:pos + size]), pos + size
        self._field += view[pos:pos + need]
        pos = min(end, pos + need)
        if len(self._field) < size:
            return None, pos
        field = bytes(self._field)
        self._field.clear()
        return field, pos

    def _charge(self, more: int) -> None:
        """Charge the budget for holding ``more`` bytes (beyond the free ones), before they are held."""
        budget = self._budget
        if budget is None:
            return
        want = max(0, len(self._payload) + self._handed_out + more - self._free)
        if want > self._charged:
            if not budget.take(want - self._charged):
                raise BufferBudgetExceeded(
                    f"frame {self._serial} would take the bytes held by the source's connections past "
                    f"max.buffered.bytes={budget.limit} (this one holds {len(self._payload)} bytes, the others "
                    f"{budget.used - self._charged} beyond their first {self._free})")
            self._charged = want

    def _settle(self) -> None:
        want = max(0, len(self._payload) + self._handed_out - self._free)
        if self._budget is not None and want < self._charged:
            self._budget.give(self._charged - want)
            self._charged = want

    def release(self, n: int) -> None:
        """A frame of ``n`` bytes returned by ``feed`` is answered: its bytes no longer count."""
        self._handed_out = max(0, self._handed_out - n)
        self._settle()

    def close(self) -> None:
        """The connection is gone: drop what it held and give back its charge."""
        self._payload = bytearray()
        self._field.clear()
        self._handed_out = 0
        if self._budget is not None:
            self._budget.give(self._charged)
        self._charged = 0

    @property
    def pending(self) -> int:
        """Bytes held of a frame not yet complete."""
        return len(self._field) + len(self._payload)

    @property
    def in_frame(self) -> bool:
        """Whether a frame has begun and not ended (its header may have come without any of its bytes yet)."""
        return self._serial is not None or bool(self._field)


# --- protocol compatibility ------------------------------------------------------------------------------------------

def _full_name(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _shape(schema: Any, types: dict[str, Any], namespace: str | None, seen: frozenset[str] = frozenset()) -> Any:
    """A comparable form of an Avro schema: named types resolved and inlined, docs, aliases and names of
    records left out (only the fields, types and symbols decide how bytes are read)."""
    if isinstance(schema, str):
        if schema in ("null", "boolean", "int", "long", "float", "double", "bytes", "string"):
            return schema
        name = _full_name(schema, namespace)
        if name not in types and schema in types:
            name = schema
        if name not in types:
            raise ValueError(f"unknown type {schema!r}")
        if name in seen:
            return ("recursive", name)
        return _shape(types[name], types, name.rpartition(".")[0] or None, seen | {name})
    if isinstance(schema, list):
        return ("union", tuple(_shape(s, types, namespace, seen) for s in schema))
    if not isinstance(schema, Mapping):
        raise ValueError(f"not a schema: {schema!r}")
    kind = schema.get("type")
    if kind in ("record", "error", "enum", "fixed"):
        name = _full_name(str(schema.get("name")), schema.get("namespace", namespace))
        types.setdefault(name, schema)
        inner = name.rpartition(".")[0] or None
        if kind == "enum":
            return ("enum", tuple(schema.get("symbols", ())))
        if kind == "fixed":
            return ("fixed", schema.get("size"))
        return ("record", tuple((f["name"], _shape(f["type"], types, inner, seen | {name}))
                                for f in schema.get("fields", ())))
    if kind == "array":
        return ("array", _shape(schema["items"], types, namespace, seen))
    if kind == "map":
        return ("map", _shape(schema["values"], types, namespace, seen))
    return _shape(kind, types, namespace, seen)


def protocol_shape(protocol: Mapping[str, Any]) -> dict[str, Any]:
    """Each message's ``(request fields, response)`` in comparable form; raises ValueError when malformed."""
    namespace = protocol.get("namespace")
    types: dict[str, Any] = {}
    for t in protocol.get("types", ()):
        if isinstance(t, Mapping) and "name" in t:
            types[_full_name(str(t["name"]), t.get("namespace", namespace))] = t
    out: dict[str, Any] = {}
    for name, message in (protocol.get("messages") or {}).items():
        request = tuple((p["name"], _shape(p["type"], types, namespace)) for p in message.get("request", ()))
        out[name] = (request, _shape(message.get("response", "null"), types, namespace))
    return out


_OURS = protocol_shape(PROTOCOL)


def _compatibility(text: str) -> str | None:
    """None when a client's protocol reads and writes our messages' bytes as we do; else why not."""
    try:
        protocol = json.loads(text)
        theirs = protocol_shape(protocol)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return f"the client's protocol cannot be read: {exc}"
    named = f"{protocol.get('namespace', '')}.{protocol.get('protocol', '?')}".lstrip(".")
    for message, shape in theirs.items():
        if message not in _OURS:
            return f"the client's protocol {named} has message '{message}', which Flume's AvroSourceProtocol lacks"
        if shape != _OURS[message]:
            return (f"the client's protocol {named} declares message '{message}' with other types than "
                    "Flume's AvroSourceProtocol")
    if not theirs:
        return f"the client's protocol {named} has no messages"
    return None


class KnownProtocols:
    """Client protocols seen by a source, by hash: None when compatible, else the reason they are not.

    Shared by the connections of one source, so a client's protocol text is checked once (Avro clients
    remember the server's hash and send only their own afterwards)."""

    def __init__(self) -> None:
        self._by_hash: dict[bytes, str | None] = {PROTOCOL_HASH: None}

    def get(self, client_hash: bytes) -> tuple[bool, str | None]:
        if client_hash in self._by_hash:
            return True, self._by_hash[client_hash]
        return False, None

    def learn(self, client_hash: bytes, text: str) -> str | None:
        if hashlib.md5(text.encode()).digest() != client_hash:
            problem: str | None = "the client's protocol text does not match its clientHash"
        else:
            problem = _compatibility(text)
        if len(self._by_hash) < 1000:  # bounded: hashes come from the network
            self._by_hash[client_hash] = problem
        return problem


@attrs.define
class AvroRequest:
    """One request, read: the handshake answer to send first (b"" if none), and what the call asks."""

    handshake: bytes
    message: str | None  # None: only the handshake is answered (NONE, or a ping)
    events: list[FlumeEvent] = attrs.field(factory=list)


class AvroSession:
    """The IPC state of one connection: whether its handshake has been done, and with which protocol."""

    def __init__(self, known: KnownProtocols) -> None:
        self._known = known
        self._remote_problem: str | None = None
        self.connected = False

    def read(self, payload: bytes) -> AvroRequest:
        """The request in ``payload``; raises AvroCallError for one that cannot be served."""
        stream = io.BytesIO(payload)
        handshake = b""
        try:
            if not self.connected:
                handshake = self._handshake(stream)
                if not self.connected:
                    return AvroRequest(handshake, None)
            fastavro.schemaless_reader(stream, _CALL_META, None)
            message = _read_string(stream)
        except Exception as exc:  # fastavro raises several kinds on bad bytes
            raise AvroCallError(f"the request is not an Avro IPC call: {_describe(exc)}", handshake) from None
        if message == "":
            return AvroRequest(handshake, None)  # a handshake ping: the answer is the handshake alone
        if self._remote_problem is not None:
            raise AvroCallError(self._remote_problem, handshake)
        if message not in ("append", "appendBatch"):
            raise AvroCallError(f"no message '{message[:80]}' in Flume's AvroSourceProtocol (append, appendBatch)",
                                handshake)
        try:
            events = _read_events(stream, message)
        except Exception as exc:
            raise AvroCallError(f"the {message} request is not AvroFlumeEvent data: {_describe(exc)}",
                                handshake) from None
        if stream.tell() != len(payload):
            raise AvroCallError(f"the {message} request has {len(payload) - stream.tell()} bytes after its events",
                                handshake)
        return AvroRequest(handshake, message, events)

    def _handshake(self, stream: io.BytesIO) -> bytes:
        request = cast(_HandshakeRequest, _read_record(stream, _HANDSHAKE_REQUEST))  # its schema shapes it
        client_hash = request["clientHash"]
        known, problem = self._known.get(client_hash)
        client_protocol = request["clientProtocol"]
        if not known and client_protocol is not None:
            problem = self._known.learn(client_hash, client_protocol)
            known = True
        if not known:
            match = "NONE"  # the client will send its protocol's text with the next request
        else:
            match = "BOTH" if request["serverHash"] == PROTOCOL_HASH else "CLIENT"
        answer: dict[str, Any] = {"match": match, "serverProtocol": None, "serverHash": None, "meta": None}
        if match != "BOTH":
            answer["serverProtocol"] = PROTOCOL_JSON
            answer["serverHash"] = PROTOCOL_HASH
        if match != "NONE":
            self.connected = True
            self._remote_problem = problem
        out = io.BytesIO()
        fastavro.schemaless_writer(out, _HANDSHAKE_RESPONSE, answer)
        return out.getvalue()

    @staticmethod
    def reply(request: AvroRequest, status: int) -> bytes:
        """The answer to a call: its handshake answer, then the Status."""
        if request.message is None:
            return request.handshake
        return request.handshake + (_OK_ANSWER if status == STATUS_OK else _FAILED_ANSWER)

    @staticmethod
    def error_reply(handshake: bytes, message: str) -> bytes:
        """An Avro system error (a Java client throws it as AvroRemoteException with this text)."""
        out = io.BytesIO()
        out.write(handshake)
        out.write(_EMPTY_META + b"\x01" + b"\x00")  # metadata, error flag, union branch 0: string
        fastavro.schemaless_writer(out, _STRING, message)
        return out.getvalue()


def _describe(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text[:200]
