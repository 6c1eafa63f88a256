"""JsonConverter's read path: the fast schemaless parse gives what the strict reference parse gives.

The reference is the parse the converter has always made: the standard library's JSON decoder with
fractions read as Decimal (then a schemaless fraction as a float), NaN and Infinity rejected, and any
failure reported as ``Converting byte[] to Kafka Connect data failed due to serialization error: <why>``.
Every input below, handpicked and random, must give the same value (type, sign of zero and key order
included) or the same error, through ``to_connect_data`` and through ``to_connect_batch``.
"""

from __future__ import annotations

import decimal
import json
import math
import random
from typing import Any

import pytest

from connect.api import DataException
from plugins.converters import JsonConverter

TOPIC = "topic"
READ_FAILED = "Converting byte[] to Kafka Connect data failed due to serialization error: "


def schemaless() -> JsonConverter:
    conv = JsonConverter()
    conv.configure({"schemas.enable": "false"}, False)
    return conv


def _reject(name: str) -> Any:
    raise ValueError(f"Non-standard token '{name}': NaN and Infinity are not JSON numbers")


def _fraction(text: str) -> decimal.Decimal:
    try:
        return decimal.Decimal(text)
    except decimal.InvalidOperation:  # an exponent beyond Decimal's range: the nearest double
        return decimal.Decimal(float(text))


_REFERENCE = json.JSONDecoder(parse_float=_fraction, parse_constant=_reject)


def _as_connect(node: Any) -> Any:
    if isinstance(node, decimal.Decimal):
        return float(node)
    if isinstance(node, list):
        return [_as_connect(v) for v in node]
    if isinstance(node, dict):
        return {k: _as_connect(v) for k, v in node.items()}
    return node


def reference(raw: bytes) -> Any:
    """The value, or the DataException message, of the strict parse."""
    try:
        text = raw.decode("utf-8")
        if not text or text.isspace():
            return None
        return _as_connect(_REFERENCE.decode(text))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return DataException(READ_FAILED + str(exc))


def identical(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(identical(a[k], b[k]) for k in a)
    if isinstance(a, DataException):
        return str(a) == str(b)
    return bool(a == b)


def read_one(conv: JsonConverter, raw: bytes) -> Any:
    try:
        result = conv.to_connect_data(TOPIC, raw)
    except DataException as exc:
        return exc
    assert result.schema is None
    return result.value


HANDPICKED = [
    b'{"id":7,"user":"user-7","amount":12.5,"country":"DE","ts":1700000000007,"ok":true}',
    b'{"a":1,"b":2,"a":3}',  # a duplicate key keeps its first place and its last value
    b"123456789012345678901234567890",  # beyond 64 bits: an exact int, never a float
    b'{"big":18446744073709551616,"neg":-9223372036854775809,"max":18446744073709551615}',
    b'{"card":"12345678901234567890123","n":1.5}',  # a long digit run inside a string
    b"[1.0, 1E2, -0.0, -0, 0.1, 1e400, -1e400, 1e-400, 4.9e-324, 2.2250738585072011e-308]",
    b"[1e99999999999999999, 1e-999999999999999999, 123e999999999999999999, 0e1234567890123456700]",
    b'{"neg":-9223372036854775809,"min":-9223372036854775808,"ns":1700000000000000000}',  # 19 digits
    b"1.7976931348623157e308",
    b"123456789012345678.123456789012345678",
    b"NaN",
    b'{"x": Infinity}',
    b'{"x": -Infinity}',
    b'"\\ud800"',  # a lone surrogate escape: Python keeps it
    b'{"\\ud83d\\ude80": "\\u00e9\\u0000"}',
    b'"\xff"',  # invalid UTF-8
    b'"\xed\xa0\x80"',  # an encoded surrogate: invalid UTF-8 too
    b"\xef\xbb\xbf{}",  # a byte order mark
    b"",
    b"   ",
    b" \t\n{} ",
    b"[1,2",
    b"[1,]",
    b"01",
    b'{"a":1}x',
    b'"a\x01b"',
    b"[" + b",".join([b'{"a":[1]}'] * 300) + b"]",  # more brackets than the fast parse takes
    b"[" * 5000 + b"]" * 5000,  # deeper than the strict parse goes
    b"true",
    b"null",
    b'"plain"',
]


@pytest.mark.parametrize("raw", HANDPICKED, ids=lambda raw: raw[:40].decode("utf-8", "replace"))
def test_handpicked_inputs_read_as_the_reference_reads_them(raw: bytes) -> None:
    expected = reference(raw)
    assert identical(read_one(schemaless(), raw), expected), (read_one(schemaless(), raw), expected)


_PIECES = [
    b"{", b"}", b"[", b"]", b'"', b":", b",", b"1", b"0", b"-", b".", b"e", b"E", b"+", b"\\", b"u", b"d8",
    b"00", b"a", b" ", b"\t", b"true", b"false", b"null", b"NaN", b"\xff", b"\xc3\xa9", b"\xf0\x9f\x9a\x80",
    b"\x01", b"\x7f", b"\\n", b'\\"', b'"k"', b'"k":', b"12345678901234567", b"98765432109876543210", b"0.1",
    b"\xed\xa0\x80",
]


def _random_number(rng: random.Random) -> bytes:
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))
    cut = rng.randint(0, len(digits))
    text = (digits[:cut] or "0") + "." + (digits[cut:] or "0")
    if rng.random() < 0.5:
        text += f"e{rng.randint(-340, 320)}"
    return text.encode()


def test_random_inputs_read_as_the_reference_reads_them() -> None:
    rng = random.Random(37)
    conv = schemaless()
    inputs = [b"".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 12))) for _ in range(20_000)]
    inputs += [_random_number(rng) for _ in range(20_000)]  # fractions must round as Decimal -> float does
    for raw in inputs:
        expected = reference(raw)
        assert identical(read_one(conv, raw), expected), (raw, read_one(conv, raw), expected)


def test_the_batch_gives_what_each_record_gives() -> None:
    conv = schemaless()
    good = [raw for raw in HANDPICKED if not isinstance(reference(raw), DataException)]
    schemas, values = conv.to_connect_batch(TOPIC, [*good, None])
    assert schemas == [None] * (len(good) + 1)
    assert values[-1] is None
    for raw, value in zip(good, values, strict=False):
        assert identical(value, reference(raw)), raw
    # more brackets in the batch than one record may have before it takes the strict parse, and one such record
    nested = [b'{"a":[1,{"b":2.5}]}'] * 600 + [b"[" + b",".join([b"[1]"] * 600) + b"]"]
    assert all(identical(v, reference(raw)) for raw, v in zip(nested, conv.to_connect_batch(TOPIC, nested)[1], strict=True))
    # bytes-like values other than bytes, as to_connect_data takes them
    mixed = [bytearray(good[0]), memoryview(good[1]), None, good[2]]
    assert all(identical(v, None if raw is None else reference(bytes(raw)))
               for raw, v in zip(mixed, conv.to_connect_batch(TOPIC, mixed)[1], strict=True))
    # a bad record fails the batch with its own error; the runtime then converts one by one
    with pytest.raises(DataException, match="serialization error"):
        conv.to_connect_batch(TOPIC, [good[0], b"{not json", good[1]])


def test_exponents_beyond_decimals_range_read_as_the_nearest_double() -> None:
    # Decimal cannot hold these exponents; the parse used to end in a bare decimal.InvalidOperation
    conv = schemaless()
    assert conv.to_connect_data(TOPIC, b'{"a": 0e1234567890123456700}').value == {"a": 0.0}
    assert conv.to_connect_data(TOPIC, b"[-1e-99999999999999999999, 123e999999999999999999]").value == [
        -0.0,
        float("inf"),
    ]
    enveloped = JsonConverter()
    enveloped.configure({}, False)
    message = b'{"schema":{"type":"double","optional":false},"payload":1e99999999999999999999}'
    assert enveloped.to_connect_data(TOPIC, message).value == float("inf")
    for schema in ('{"type":"int64","optional":false}', '{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal"'
                   ',"version":1,"parameters":{"scale":"2"},"optional":false}'):
        message = ('{"schema":' + schema + ',"payload":1e99999999999999999999}').encode()
        with pytest.raises(DataException, match="out of range|Invalid NUMBER value"):
            enveloped.to_connect_data(TOPIC, message)


@pytest.mark.timeout(60)
def test_an_integer_field_written_with_a_huge_exponent_is_out_of_range_at_once() -> None:
    # 1e99999999 is integral, but as an int it has 100 million digits: building it would stall the task
    conv = JsonConverter()
    conv.configure({}, False)
    for payload in ("1e99999", "-1e99999999", "1.5e30"):
        raw = ('{"schema":{"type":"int64","optional":false},"payload":' + payload + "}").encode()
        with pytest.raises(DataException, match="out of range for schema type INT64"):
            conv.to_connect_data(TOPIC, raw)
    raw = b'{"schema":{"type":"int64","optional":false},"payload":9.223372036854775807e18}'
    assert conv.to_connect_data(TOPIC, raw).value == 2**63 - 1


@pytest.mark.parametrize("depth", [100, 400, 600, 900, 2000])
def test_deep_nesting_reads_or_is_a_data_exception(depth: int) -> None:
    # deep JSON used to end in a bare RecursionError while its Connect value was built
    raw = b"[" * depth + b"]" * depth
    enveloped = JsonConverter()
    enveloped.configure({}, False)
    for conv, message in ((schemaless(), raw), (enveloped, b'{"schema":null,"payload":' + raw + b"}")):
        try:
            value = conv.to_connect_data(TOPIC, message).value
        except DataException as exc:
            assert str(exc).startswith(READ_FAILED)
            continue
        for _ in range(depth - 1):
            assert isinstance(value, list) and len(value) == 1
            value = value[0]
        assert value == []
