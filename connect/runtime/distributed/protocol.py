"""The bytes of Kafka Connect's ``connect`` group protocol: worker metadata and assignments.

Workers put a ``WorkerMetadata`` in their JoinGroup request and the leader answers each with an
``Assignment`` in SyncGroup, both in Kafka's big-endian wire types (STRING: int16 length + UTF-8;
NULLABLE_BYTES: int32 length, -1 for null; ARRAY: int32 count, -1 for null). Version 0 is the eager
protocol (``default``), 1 adds the worker's current allocation, revocations and a delay (``compatible``,
KIP-415), and 2 has version 1's bytes and turns on signed requests between workers (``sessioned``,
KIP-507). Readers take newer versions by reading the layout they know and ignoring what follows.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable

import attrs

from connect.runtime.herder import ConnectorTaskId

__all__ = [
    "CONFIG_MISMATCH",
    "NO_ERROR",
    "PROTOCOL_VERSIONS",
    "Assignment",
    "ProtocolError",
    "WorkerMetadata",
    "decode_assignment",
    "decode_metadata",
    "encode_assignment",
    "encode_metadata",
    "group_protocols",
    "protocol_version",
]

NO_ERROR = 0
CONFIG_MISMATCH = 1
# group protocol name -> its version of the Connect protocol
PROTOCOL_VERSIONS = {"default": 0, "compatible": 1, "sessioned": 2}
_OFFERED = {
    "sessioned": ("sessioned", "compatible", "default"),
    "compatible": ("compatible", "default"),
    "eager": ("default",),
}
_CONNECTOR_ITSELF = -1


class ProtocolError(ValueError):
    """Bytes that are not a Connect protocol message."""


@attrs.frozen
class Assignment:
    """What the leader gives one worker. From version 1 it is incremental: ``connectors``/``tasks`` are the
    work newly given, ``revoked_*`` the work to stop; the worker keeps the rest of what it ran."""

    error: int
    leader: str
    leader_url: str
    config_offset: int
    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()
    revoked_connectors: tuple[str, ...] = ()
    revoked_tasks: tuple[ConnectorTaskId, ...] = ()
    delay_ms: int = 0
    version: int = 1

    @property
    def empty(self) -> bool:
        return not (self.connectors or self.tasks)


@attrs.frozen
class WorkerMetadata:
    url: str
    config_offset: int
    allocation: Assignment | None = None
    version: int = 1


def protocol_version(name: str) -> int:
    try:
        return PROTOCOL_VERSIONS[name]
    except KeyError:
        raise ProtocolError(f"unknown Connect group protocol '{name}'") from None


def group_protocols(connect_protocol: str, metadata_for_version: Callable[[int], bytes]) -> list[tuple[str, bytes]]:
    """The (protocol name, metadata) pairs a worker offers, most preferred first."""
    try:
        names = _OFFERED[connect_protocol]
    except KeyError:
        raise ProtocolError(f"unknown connect.protocol '{connect_protocol}'") from None
    return [(name, metadata_for_version(PROTOCOL_VERSIONS[name])) for name in names]


# --- writing ---------------------------------------------------------------------------------------------
def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ProtocolError(f"string of {len(raw)} bytes is too long for the protocol")
    return struct.pack(">h", len(raw)) + raw


def _by_connector(connectors: Iterable[str], tasks: Iterable[ConnectorTaskId]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for name in connectors:
        grouped.setdefault(name, []).append(_CONNECTOR_ITSELF)
    for task in tasks:
        grouped.setdefault(task.connector, []).append(task.task)
    return {name: sorted(ids) for name, ids in sorted(grouped.items())}


def _connector_assignments(grouped: dict[str, list[int]] | None) -> bytes:
    if grouped is None:
        return struct.pack(">i", -1)
    out = [struct.pack(">i", len(grouped))]
    for name, ids in grouped.items():
        out.append(_string(name))
        out.append(struct.pack(f">i{len(ids)}i", len(ids), *ids))
    return b"".join(out)


def encode_assignment(a: Assignment) -> bytes:
    head = struct.pack(">hh", a.version, a.error) + _string(a.leader) + _string(a.leader_url) + struct.pack(
        ">q", a.config_offset)
    body = _connector_assignments(_by_connector(a.connectors, a.tasks))
    if a.version == 0:
        return head + body
    revoked = _connector_assignments(_by_connector(a.revoked_connectors, a.revoked_tasks))
    return head + body + revoked + struct.pack(">i", a.delay_ms)


def encode_metadata(md: WorkerMetadata) -> bytes:
    out = struct.pack(">h", md.version) + _string(md.url) + struct.pack(">q", md.config_offset)
    if md.version == 0:
        return out
    if md.allocation is None or md.allocation.empty:
        return out + struct.pack(">i", -1)
    allocation = encode_assignment(attrs.evolve(md.allocation, version=max(1, md.version)))
    return out + struct.pack(">i", len(allocation)) + allocation


# --- reading ---------------------------------------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def _take(self, size: int, field: str) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise ProtocolError(f"{self.what}: {len(self.data)} bytes end inside field '{field}' (at byte {self.pos})")
        chunk, self.pos = self.data[self.pos:end], end
        return chunk

    def int16(self, field: str) -> int:
        return int(struct.unpack(">h", self._take(2, field))[0])

    def int32(self, field: str) -> int:
        return int(struct.unpack(">i", self._take(4, field))[0])

    def int64(self, field: str) -> int:
        return int(struct.unpack(">q", self._take(8, field))[0])

    def string(self, field: str) -> str:
        size = self.int16(field)
        if size < 0:
            raise ProtocolError(f"{self.what}: field '{field}' is null")
        try:
            return self._take(size, field).decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(f"{self.what}: field '{field}' is not UTF-8") from None

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def connector_assignments(self, field: str) -> tuple[tuple[str, ...], tuple[ConnectorTaskId, ...]] | None:
        count = self.int32(field)
        if count < 0:
            return None
        connectors, tasks = [], []
        for _ in range(count):
            name = self.string(f"{field}.connector")
            n = self.int32(f"{field}.tasks")
            if n < 0:
                continue
            for _ in range(n):
                task = self.int32(f"{field}.task")
                if task == _CONNECTOR_ITSELF:
                    connectors.append(name)
                else:
                    tasks.append(ConnectorTaskId(name, task))
        return tuple(connectors), tuple(tasks)


def _assignment(r: _Reader) -> Assignment:
    version = r.int16("version")
    if version < 0:
        raise ProtocolError(f"{r.what}: negative version {version}")
    error = r.int16("error")
    leader, leader_url = r.string("leader"), r.string("leaderUrl")
    config_offset = r.int64("configOffset")
    assigned = r.connector_assignments("assignment") or ((), ())
    revoked: tuple[tuple[str, ...], tuple[ConnectorTaskId, ...]] = ((), ())
    delay = 0
    if version >= 1 and not r.at_end():
        revoked = r.connector_assignments("revoked") or ((), ())
        if not r.at_end():
            delay = r.int32("delay")
    return Assignment(error, leader, leader_url, config_offset, assigned[0], assigned[1], revoked[0], revoked[1],
                      delay, version)


def decode_assignment(data: bytes) -> Assignment:
    return _assignment(_Reader(bytes(data), "Connect assignment"))


def decode_metadata(data: bytes) -> WorkerMetadata:
    r = _Reader(bytes(data), "Connect worker metadata")
    version = r.int16("version")
    if version < 0:
        raise ProtocolError(f"{r.what}: negative version {version}")
    url, config_offset = r.string("url"), r.int64("configOffset")
    allocation = None
    if version >= 1 and not r.at_end():
        size = r.int32("allocation")
        if size >= 0:
            allocation = _assignment(_Reader(r._take(size, "allocation"), "Connect worker allocation"))
    return WorkerMetadata(url, config_offset, allocation, version)
