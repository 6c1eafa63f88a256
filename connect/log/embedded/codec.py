"""The on-disk record batch format: encoding a batch of columns and decoding it back.

A batch is a fixed 52-byte header followed by a payload. Every integer is
little-endian.

Header::

    H  magic (0x4842, "HB")        B  version (1)       B  attributes
    q  base offset                 i  last offset delta i  record count
    q  first timestamp             q  max timestamp     q  delete horizon (-1: none)
    I  payload length              I  CRC-32C

The CRC covers the payload and then the 48 header bytes before it, so a torn
or damaged header is caught as surely as a damaged payload, while the costly
part (the payload) can be checksummed before the base offset is known.

The payload is columnar so that a batch of n records is packed and unpacked
with a handful of C-level calls rather than a Python loop per record::

    value lengths      i32 x n  (-1 = null)
    key lengths        i32 x n  (only with ATTR_KEYS)
    timestamps         i64 x n  (only with ATTR_TIMESTAMPS, else all = first)
    offset deltas      i32 x n  (only with ATTR_OFFSETS, else contiguous)
    header counts      i32 x n  (only with ATTR_HEADERS, then m = their sum)
    header key lengths i32 x m, header value lengths i32 x m (-1 = null)
    key bytes, value bytes, header key bytes (UTF-8), header value bytes

A batch of a transaction (ATTR_TRANSACTIONAL) starts its payload with 11 more bytes, ``q`` producer id,
``h`` producer epoch and ``B`` kind: 1 data, 2 a COMMIT marker, 3 an ABORT marker. A marker is a batch
of one record of its own (so it takes an offset, as Kafka's control records do) that readers never
hand to an application; transactions.py and txn_filter.py say how they are used.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate, chain, pairwise
from typing import Any, NamedTuple

import crc32c

MAGIC = 0x4842
VERSION = 1

ATTR_KEYS = 0x01
ATTR_TIMESTAMPS = 0x02
ATTR_OFFSETS = 0x04
ATTR_HEADERS = 0x08
ATTR_LOG_APPEND_TIME = 0x10
ATTR_NULL_VALUES = 0x20
ATTR_NULL_KEYS = 0x40
ATTR_TRANSACTIONAL = 0x80
_KNOWN_ATTRS = 0xFF

TXN_NONE = 0
TXN_DATA = 1
TXN_COMMIT = 2
TXN_ABORT = 3
_TXN = struct.Struct("<qhB")
TXN_FIELDS_SIZE = _TXN.size

HEADER = struct.Struct("<HBBqiiqqqII")
HEADER_SIZE = HEADER.size
_CRC_SPAN = HEADER_SIZE - 4
# Anything bigger is certainly a damaged length field, not a real batch.
MAX_PAYLOAD = 1 << 30

Headers = tuple[tuple[str, bytes | None], ...]


class CorruptBatchError(Exception):
    """Bytes that do not form a valid batch (torn write or damage)."""


class BatchHeader(NamedTuple):
    magic: int
    version: int
    attributes: int
    base_offset: int
    last_offset_delta: int
    count: int  # type: ignore[assignment]  # the batch's record count; shadows tuple.count on purpose
    first_timestamp: int
    max_timestamp: int
    delete_horizon: int
    payload_length: int
    crc: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def total_size(self) -> int:
        return HEADER_SIZE + self.payload_length


class EncodedBatch:
    """A payload ready to be framed once the log has picked its base offset."""

    __slots__ = (
        "attributes",
        "count",
        "delete_horizon",
        "first_timestamp",
        "last_offset_delta",
        "max_timestamp",
        "parts",
        "payload_crc",
        "payload_length",
    )

    def __init__(
        self,
        parts: list[bytes],
        count: int,
        last_offset_delta: int,
        first_timestamp: int,
        max_timestamp: int,
        attributes: int,
        delete_horizon: int,
    ) -> None:
        self.parts = parts
        self.count = count
        self.last_offset_delta = last_offset_delta
        self.first_timestamp = first_timestamp
        self.max_timestamp = max_timestamp
        self.attributes = attributes
        self.delete_horizon = delete_horizon
        crc = 0
        length = 0
        for part in parts:
            crc = crc32c.crc32c(part, crc)
            length += len(part)
        self.payload_crc = crc
        self.payload_length = length

    @property
    def size(self) -> int:
        return HEADER_SIZE + self.payload_length

    def frame(self, base_offset: int) -> bytes:
        """The header for this payload placed at ``base_offset``."""
        prefix = HEADER.pack(
            MAGIC,
            VERSION,
            self.attributes,
            base_offset,
            self.last_offset_delta,
            self.count,
            self.first_timestamp,
            self.max_timestamp,
            self.delete_horizon,
            self.payload_length,
            0,
        )[:_CRC_SPAN]
        return prefix + struct.pack("<I", crc32c.crc32c(prefix, self.payload_crc))


class DecodedBatch(NamedTuple):
    """One batch as columns; ``offsets`` is a range unless the batch was compacted."""

    base_offset: int
    last_offset: int
    offsets: Sequence[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[Headers] | None
    timestamp_type: int
    delete_horizon: int
    txn: int = TXN_NONE  # TXN_DATA, TXN_COMMIT or TXN_ABORT for a batch of a transaction
    producer_id: int = -1
    producer_epoch: int = -1


def _lengths(column: Sequence[bytes | None]) -> tuple[list[int], bool]:
    """Byte lengths of a column (-1 for None) and whether any None was seen."""
    try:
        # map(len) runs in C; it only fails when a None is present.
        return list(map(len, column)), False  # type: ignore[arg-type]
    except TypeError:
        return [-1 if v is None else len(v) for v in column], True


def _pack_i32(values: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(values)}i", *values)


def encode(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None] | None = None,
    timestamps: Sequence[int] | None = None,
    headers: Sequence[Headers] | None = None,
    *,
    default_timestamp: int = 0,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
    delete_horizon: int = -1,
    log_append_time: bool = False,
    transaction: tuple[int, int, int] | None = None,
) -> EncodedBatch:
    """Pack columns into a batch payload.

    ``offset_deltas`` (strictly increasing, first may be > 0) is only given by
    the compactor, which also passes ``last_offset_delta`` so that a cleaned
    batch still accounts for the offsets it once held. ``transaction``:
    (producer id, epoch, kind) of a transactional batch.
    """
    n = len(values)
    if n == 0:
        raise ValueError("a batch needs at least one record")
    attrs = 0
    vlens, vnull = _lengths(values)
    parts: list[bytes] = [_pack_i32(vlens)]
    blobs: list[bytes] = []
    if vnull:
        attrs |= ATTR_NULL_VALUES

    if keys is not None and keys.count(None) != len(keys):
        if len(keys) != n:
            raise ValueError("keys and values differ in length")
        klens, knull = _lengths(keys)
        attrs |= ATTR_KEYS | (ATTR_NULL_KEYS if knull else 0)
        parts.append(_pack_i32(klens))
        blobs.append(b"".join([k for k in keys if k is not None]) if knull else b"".join(keys))  # type: ignore[arg-type]

    if timestamps is None or log_append_time:
        first_ts = max_ts = default_timestamp
    else:
        if len(timestamps) != n:
            raise ValueError("timestamps and values differ in length")
        first_ts = timestamps[0]
        if timestamps.count(first_ts) == n:
            max_ts = first_ts
        else:
            max_ts = max(timestamps)
            attrs |= ATTR_TIMESTAMPS
            parts.append(struct.pack(f"<{n}q", *timestamps))
    if log_append_time:
        attrs |= ATTR_LOG_APPEND_TIME

    if offset_deltas is not None:
        if len(offset_deltas) != n:
            raise ValueError("offset deltas and values differ in length")
        attrs |= ATTR_OFFSETS
        parts.append(_pack_i32(offset_deltas))
        last_delta = offset_deltas[-1] if last_offset_delta is None else last_offset_delta
    else:
        last_delta = n - 1 if last_offset_delta is None else last_offset_delta

    header_blobs: list[bytes] = []
    if headers is not None and any(headers):
        if len(headers) != n:
            raise ValueError("headers and values differ in length")
        attrs |= ATTR_HEADERS
        # one pass in C per column: a batch of a source with headers has one or more on every record
        names, hvals = zip(*chain.from_iterable(headers), strict=True)
        hkeys = list(map(str.encode, names))
        hvlens, hvnull = _lengths(hvals)
        parts.append(_pack_i32(list(map(len, headers))))
        parts.append(_pack_i32(list(map(len, hkeys))))
        parts.append(_pack_i32(hvlens))
        header_blobs.append(b"".join(hkeys))
        header_blobs.append(b"".join([v for v in hvals if v is not None]) if hvnull else b"".join(hvals))  # type: ignore[arg-type]

    blobs.append(b"".join([v for v in values if v is not None]) if vnull else b"".join(values))  # type: ignore[arg-type]
    parts.extend(blobs)
    parts.extend(header_blobs)
    if transaction is not None:
        attrs |= ATTR_TRANSACTIONAL
        parts.insert(0, _TXN.pack(*transaction))
    return EncodedBatch(parts, n, last_delta, first_ts, max_ts, attrs, delete_horizon)


def parse_header(buf: bytes | memoryview, pos: int = 0) -> BatchHeader:
    """Read and sanity-check a header; raises CorruptBatchError when it cannot be one."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptBatchError("short header")
    hdr = BatchHeader._make(HEADER.unpack_from(buf, pos))
    if hdr.magic != MAGIC or hdr.version != VERSION:
        raise CorruptBatchError("bad magic or version")
    if (
        hdr.attributes & ~_KNOWN_ATTRS
        or hdr.count <= 0
        or hdr.last_offset_delta < hdr.count - 1
        or hdr.payload_length > MAX_PAYLOAD
        or hdr.base_offset < 0
    ):
        raise CorruptBatchError("implausible header fields")
    return hdr


def check_crc(buf: bytes | memoryview, pos: int, hdr: BatchHeader) -> bool:
    """Whether the batch whose header starts at ``pos`` in ``buf`` is intact (buf must hold it all)."""
    view = memoryview(buf)
    start = pos + HEADER_SIZE
    crc = crc32c.crc32c(view[start : start + hdr.payload_length])
    return crc32c.crc32c(view[pos : pos + _CRC_SPAN], crc) == hdr.crc


_FIXED_CHUNK = 4096


@lru_cache(maxsize=64)
def _fixed_width(width: int, n: int) -> struct.Struct:
    # Equal-width values can be cut out by one C call instead of n slices.
    return struct.Struct(f"{width}s" * n)


def _slice_column(buf: bytes, start: int, lens: Sequence[int], has_nulls: bool) -> tuple[list[Any], int]:
    """Cut ``len(lens)`` byte strings out of ``buf`` starting at ``start``; returns them and the end."""
    n = len(lens)
    if not has_nulls:
        width = lens[0]
        if n > 1 and lens.count(width) == n:
            if n <= _FIXED_CHUNK:
                return list(_fixed_width(width, n).unpack_from(buf, start)), start + width * n
            # a large batch in pieces of one cached Struct: a Struct of n fields is a format string of n items
            values: list[Any] = []
            chunk = _fixed_width(width, _FIXED_CHUNK)
            pos = start
            whole, rest = divmod(n, _FIXED_CHUNK)
            for _ in range(whole):
                values.extend(chunk.unpack_from(buf, pos))
                pos += width * _FIXED_CHUNK
            if rest > 1:
                values.extend(_fixed_width(width, rest).unpack_from(buf, pos))
            elif rest == 1:
                values.append(buf[pos:pos + width])
            return values, start + width * n
        bounds = list(accumulate(lens, initial=start))
        return [buf[a:b] for a, b in pairwise(bounds)], bounds[-1]
    out: list[bytes | None] = []
    append = out.append
    pos = start
    for length in lens:
        if length < 0:
            append(None)
        else:
            end = pos + length
            append(buf[pos:end])
            pos = end
    return out, pos


def _unpack_i32(buf: bytes, pos: int, n: int) -> tuple[int, ...]:
    return struct.unpack_from(f"<{n}i", buf, pos)


def decode(buf: bytes, pos: int, hdr: BatchHeader, verify: bool = True) -> DecodedBatch:
    """Decode the batch at ``pos`` (header already parsed); ``buf`` must hold all of it."""
    end = pos + hdr.total_size
    if len(buf) < end:
        raise CorruptBatchError("batch extends past the buffer")
    if verify and not check_crc(buf, pos, hdr):
        raise CorruptBatchError(f"CRC mismatch in batch at offset {hdr.base_offset}")
    n = hdr.count
    attrs = hdr.attributes
    p = pos + HEADER_SIZE
    txn = (TXN_NONE, -1, -1)
    if attrs & ATTR_TRANSACTIONAL:
        pid, epoch, kind = _TXN.unpack_from(buf, p)
        if kind not in (TXN_DATA, TXN_COMMIT, TXN_ABORT):
            raise CorruptBatchError(f"unknown transaction record kind {kind} in batch at offset {hdr.base_offset}")
        txn = (kind, pid, epoch)
        p += _TXN.size
    vlens = _unpack_i32(buf, p, n)
    p += 4 * n
    klens: tuple[int, ...] | None = None
    if attrs & ATTR_KEYS:
        klens = _unpack_i32(buf, p, n)
        p += 4 * n
    if attrs & ATTR_TIMESTAMPS:
        timestamps = list(struct.unpack_from(f"<{n}q", buf, p))
        p += 8 * n
    else:
        timestamps = [hdr.first_timestamp] * n
    base = hdr.base_offset
    offsets: Sequence[int]
    if attrs & ATTR_OFFSETS:
        offsets = [base + d for d in _unpack_i32(buf, p, n)]
        p += 4 * n
    else:
        offsets = range(base, base + n)
    hcounts: tuple[int, ...] | None = None
    if attrs & ATTR_HEADERS:
        hcounts = _unpack_i32(buf, p, n)
        p += 4 * n
        m = sum(hcounts)
        hklens = _unpack_i32(buf, p, m)
        p += 4 * m
        hvlens = _unpack_i32(buf, p, m)
        p += 4 * m
    keys: list[Any]
    if klens is not None:
        keys, p = _slice_column(buf, p, klens, bool(attrs & ATTR_NULL_KEYS))
    else:
        keys = [None] * n
    values, p = _slice_column(buf, p, vlens, bool(attrs & ATTR_NULL_VALUES))
    headers: list[Headers] | None = None
    if hcounts is not None:
        hkeys: list[str] = []
        hvals: list[Any] = []
        if m:
            hkey_bytes, p = _slice_column(buf, p, hklens, False)
            hkeys = [k.decode() for k in hkey_bytes]
            hvals, p = _slice_column(buf, p, hvlens, -1 in hvlens)
        pairs = list(zip(hkeys, hvals, strict=True))
        headers = [tuple(pairs[a:b]) for a, b in pairwise(accumulate(hcounts, initial=0))]
    if p != end:
        raise CorruptBatchError(f"payload of batch at offset {base} does not add up")
    return DecodedBatch(
        base,
        base + hdr.last_offset_delta,
        offsets,
        timestamps,
        keys,
        values,
        headers,
        1 if attrs & ATTR_LOG_APPEND_TIME else 0,
        hdr.delete_horizon,
        *txn,
    )
