"""The embedded log's batch format and Kafka-compatible partitioner, without any files."""

from __future__ import annotations

import pytest

from connect.log.embedded.codec import (
    HEADER_SIZE,
    CorruptBatchError,
    check_crc,
    decode,
    encode,
    parse_header,
)
from connect.log.key_partition import murmur2, partition_for_key


def roundtrip(batch, base: int = 100):
    data = b"".join([batch.frame(base), *batch.parts])
    hdr = parse_header(data)
    assert hdr.total_size == len(data)
    return hdr, decode(data, 0, hdr)


def test_values_keys_nulls_and_empty_bytes_stay_distinct() -> None:
    values = [b"a", None, b"", b"dd" * 50, None]
    keys = [None, b"", b"k", None, b"kk"]
    hdr, out = roundtrip(encode(values, keys, default_timestamp=7))
    assert out.values == values
    assert out.keys == keys
    assert out.offsets == range(100, 105)
    assert out.timestamps == [7] * 5
    assert out.headers is None
    assert hdr.count == 5 and hdr.last_offset == 104


def test_timestamps_and_headers_round_trip() -> None:
    values = [b"x%d" % i for i in range(4)]
    ts = [5, 3, 9, 9]
    headers = [(), (("a", b"1"), ("é", None)), (("b", b""),), ()]
    hdr, out = roundtrip(encode(values, None, ts, headers))
    assert out.timestamps == ts
    assert hdr.first_timestamp == 5 and hdr.max_timestamp == 9
    assert out.headers == headers
    assert out.keys == [None] * 4


def test_equal_width_and_single_record_batches() -> None:
    values = [b"%09d" % i for i in range(1000)]
    _, out = roundtrip(encode(values, default_timestamp=1))
    assert out.values == values
    _, one = roundtrip(encode([b"only"], [b"k"], [42]))
    assert one.values == [b"only"] and one.keys == [b"k"] and one.timestamps == [42]


def test_sparse_offsets_keep_the_covered_range() -> None:
    batch = encode([b"a", None], [b"k1", b"k2"], [1, 2], offset_deltas=[3, 7], last_offset_delta=9,
                   delete_horizon=1234)
    hdr, out = roundtrip(batch, base=50)
    assert list(out.offsets) == [53, 57]
    assert out.last_offset == 59 and hdr.last_offset == 59
    assert out.delete_horizon == 1234
    assert out.values == [b"a", None]


@pytest.mark.parametrize("where", ["payload", "header"])
def test_a_flipped_byte_fails_the_crc(where: str) -> None:
    batch = encode([b"hello", b"world"], default_timestamp=1)
    data = bytearray(b"".join([batch.frame(0), *batch.parts]))
    # the header byte chosen is inside the first-timestamp field, which parse_header does not vet
    data[-2 if where == "payload" else 20] ^= 0x40
    hdr = parse_header(bytes(data))
    assert not check_crc(bytes(data), 0, hdr)
    with pytest.raises(CorruptBatchError):
        decode(bytes(data), 0, hdr)


def test_garbage_and_short_headers_are_rejected() -> None:
    with pytest.raises(CorruptBatchError):
        parse_header(b"\x00" * HEADER_SIZE)
    with pytest.raises(CorruptBatchError):
        parse_header(b"HB")
    with pytest.raises(ValueError):
        encode([])


def test_murmur2_matches_the_java_client() -> None:
    # vectors from Kafka's own utility tests
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107
    assert all(0 <= partition_for_key(bytes([i]) * i, 7) < 7 for i in range(50))
