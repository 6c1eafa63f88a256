"""The ``connect`` group protocol's bytes, checked against vectors written by hand from Kafka's layout."""

from __future__ import annotations

import pytest

from connect.runtime.distributed.protocol import (
    CONFIG_MISMATCH,
    NO_ERROR,
    Assignment,
    ProtocolError,
    WorkerMetadata,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
    group_protocols,
    protocol_version,
)
from connect.runtime.herder import ConnectorTaskId

T = ConnectorTaskId


def test_metadata_v0_bytes():
    # version 0 | url "http://a:1" (int16 len 10) | configOffset 7
    expected = bytes.fromhex("0000" "000a") + b"http://a:1" + bytes.fromhex("0000000000000007")
    md = WorkerMetadata("http://a:1", 7, version=0)
    assert encode_metadata(md) == expected
    assert decode_metadata(expected) == md


def test_metadata_v1_without_allocation_has_a_null_allocation():
    expected = bytes.fromhex("0001" "0003") + b"u:1" + bytes.fromhex("0000000000000002" "ffffffff")
    assert encode_metadata(WorkerMetadata("u:1", 2, None, 1)) == expected
    assert decode_metadata(expected) == WorkerMetadata("u:1", 2, None, 1)


def test_assignment_v1_bytes():
    # version 1 | error 0 | leader "L" | leaderUrl "U" | configOffset 5
    # | assignment: 1 connector "c" with tasks [-1, 0, 2] | revoked: 1 connector "d" with [1] | delay 300
    expected = (bytes.fromhex("0001" "0000" "0001") + b"L" + bytes.fromhex("0001") + b"U"
                + bytes.fromhex("0000000000000005")
                + bytes.fromhex("00000001" "0001") + b"c" + bytes.fromhex("00000003" "ffffffff" "00000000" "00000002")
                + bytes.fromhex("00000001" "0001") + b"d" + bytes.fromhex("00000001" "00000001")
                + bytes.fromhex("0000012c"))
    a = Assignment(NO_ERROR, "L", "U", 5, ("c",), (T("c", 0), T("c", 2)), (), (T("d", 1),), 300, 1)
    assert encode_assignment(a) == expected
    assert decode_assignment(expected) == a


def test_assignment_v0_has_no_revocations_or_delay():
    a = Assignment(CONFIG_MISMATCH, "L", "U", 9, ("x",), (T("x", 0),), version=0)
    data = encode_assignment(a)
    assert decode_assignment(data) == a
    assert len(data) == 2 + 2 + 3 + 3 + 8 + 4 + 3 + 4 + 8


def test_metadata_v2_carries_the_current_allocation_round_trip():
    allocation = Assignment(NO_ERROR, "L", "U", 3, ("a", "b"), (T("a", 0), T("b", 1)))
    md = WorkerMetadata("http://w:8083", 3, allocation, 2)
    back = decode_metadata(encode_metadata(md))
    assert back.url == "http://w:8083" and back.config_offset == 3 and back.version == 2
    assert back.allocation is not None
    assert set(back.allocation.connectors) == {"a", "b"} and set(back.allocation.tasks) == {T("a", 0), T("b", 1)}


def test_newer_versions_are_read_with_the_known_layout_and_trailing_bytes_ignored():
    data = encode_assignment(Assignment(NO_ERROR, "L", "U", 1, ("c",), version=1))
    newer = b"\x00\x05" + data[2:] + b"future-fields"
    a = decode_assignment(newer)
    assert a.version == 5 and a.connectors == ("c",)


def test_a_v1_assignment_missing_its_trailing_fields_gets_defaults():
    data = encode_assignment(Assignment(NO_ERROR, "L", "U", 1, ("c",), version=1))
    head = data[: len(data) - 4 - 4]  # drop the revoked array and the delay
    a = decode_assignment(head)
    assert a.revoked_connectors == () and a.delay_ms == 0


@pytest.mark.parametrize("cut", [1, 5, 12])
def test_truncated_bytes_say_which_field_is_short(cut):
    data = encode_assignment(Assignment(NO_ERROR, "leader", "url", 1, ("c",)))
    with pytest.raises(ProtocolError, match="field"):
        decode_assignment(data[:cut])


def test_offered_protocols_in_preference_order():
    assert [n for n, _ in group_protocols("sessioned", lambda v: bytes([v]))] == ["sessioned", "compatible", "default"]
    assert group_protocols("compatible", lambda v: bytes([v])) == [("compatible", b"\x01"), ("default", b"\x00")]
    assert [n for n, _ in group_protocols("eager", lambda v: b"")] == ["default"]
    assert protocol_version("sessioned") == 2
    with pytest.raises(ProtocolError):
        group_protocols("bogus", lambda v: b"")
