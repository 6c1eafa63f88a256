"""JsonConverter with schemas (the shipped default) reading a batch: what each record reads, in bulk.

``to_connect_batch`` must give every record the schema and value ``to_connect_data`` gives it, and for
a batch holding a record the per-record path refuses, raise that record's DataException (the first in
the batch's order), so that the runtime's per-record fallback then treats it as configured. The bulk
read must also be bulk: no per-record call for a column of null keys, and a schema's JSON read once per
distinct schema text, however the envelope is spaced or ordered.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
from typing import Any

import pytest

from connect.api import DataException, Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from plugins.converters import JsonConverter

TOPIC = "topic"


def converter(**settings: str) -> JsonConverter:
    conv = JsonConverter()
    conv.configure(settings, False)
    return conv


def identical(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(identical(a[k], b[k]) for k in a)
    if isinstance(a, Struct):
        return a.schema == b.schema and identical(
            [a.get_without_default(f.name) for f in a.schema.fields()],
            [b.get_without_default(f.name) for f in b.schema.fields()],
        )
    return bool(a == b)


def per_record(raws: list[bytes | None], **settings: str) -> tuple[list[Any], list[Any]] | str:
    conv = converter(**settings)
    schemas, values = [], []
    for raw in raws:
        try:
            read = conv.to_connect_data(TOPIC, raw)
        except DataException as exc:
            return str(exc)
        schemas.append(read.schema)
        values.append(read.value)
    return schemas, values


def batched(raws: list[bytes | None], chunk: int, **settings: str) -> tuple[list[Any], list[Any]] | str:
    conv = converter(**settings)
    schemas: list[Any] = []
    values: list[Any] = []
    for start in range(0, len(raws), chunk):
        try:
            got_schemas, got_values = conv.to_connect_batch(TOPIC, raws[start : start + chunk])
        except DataException as exc:
            return str(exc)
        schemas += got_schemas
        values += got_values
    return schemas, values


def assert_same(raws: list[bytes | None], chunk: int = 64, **settings: str) -> None:
    expected = per_record(raws, **settings)
    got = batched(raws, chunk, **settings)
    if isinstance(expected, str) or isinstance(got, str):
        assert got == expected
        return
    assert len(got[0]) == len(expected[0]) == len(raws)
    for i, raw in enumerate(raws):
        assert got[0][i] == expected[0][i], raw
        assert identical(got[1][i], expected[1][i]), (raw, got[1][i], expected[1][i])


# --- a varied set of schemas and values, written by the converter itself -----------------------------

ADDRESS = SchemaBuilder.struct().name("Address").field("street", Schema.STRING_SCHEMA).field(
    "zip", SchemaBuilder.int32().optional().build()).build()
PERSON = (
    SchemaBuilder.struct()
    .name("Person")
    .field("id", Schema.INT64_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("ok", Schema.BOOLEAN_SCHEMA)
    .field("small", Schema.INT8_SCHEMA)
    .field("nick", SchemaBuilder.string().optional().build())
    .field("level", SchemaBuilder.int32().default_value(7).build())
    .build()
)
RICH = (
    SchemaBuilder.struct()
    .field("amount", Decimal.schema(2))
    .field("day", Date.SCHEMA)
    .field("at", Timestamp.SCHEMA)
    .field("blob", Schema.BYTES_SCHEMA)
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
    .field("scores", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.FLOAT64_SCHEMA).build())
    .field("by_id", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build())
    .field("ratio", Schema.FLOAT32_SCHEMA)
    .field("address", ADDRESS)
    .field("maybe", SchemaBuilder.struct().field("x", Schema.INT16_SCHEMA).optional().build())
    .build()
)


def written(rng: random.Random) -> list[bytes | None]:
    conv = converter()
    out: list[bytes | None] = []
    for i in range(300):
        pick = rng.randrange(10)
        if pick == 0:
            out.append(None)
        elif pick == 1:
            out.append(conv.from_connect_data(TOPIC, Schema.STRING_SCHEMA, rng.choice(["", "é✓\U0001f600", "a\"b\\c\n", "1.5", str(i)])))
        elif pick == 2:
            out.append(conv.from_connect_data(TOPIC, Schema.INT64_SCHEMA, rng.choice([0, -1, 2**63 - 1, -(2**63), i])))
        elif pick == 3:
            out.append(conv.from_connect_data(TOPIC, Schema.FLOAT64_SCHEMA, rng.choice([0.1, -0.0, 1e300, float("nan"), 3.0])))
        elif pick in (4, 5):
            person = Struct(PERSON).put("id", rng.randrange(-(2**63), 2**63)).put("name", f"p{i}")
            person.put("ok", rng.random() < 0.5).put("small", rng.randrange(-128, 128))
            if rng.random() < 0.5:
                person.put("nick", "n" + str(i))
            if rng.random() < 0.5:
                person.put("level", i)
            out.append(conv.from_connect_data(TOPIC, PERSON, person))
        elif pick == 6:
            rich = Struct(RICH).put("amount", decimal.Decimal(rng.randrange(-(10**9), 10**9)).scaleb(-2))
            rich.put("day", dt.date(2020, 1, 1) + dt.timedelta(days=i))
            rich.put("at", dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC))
            rich.put("blob", bytes(rng.randrange(256) for _ in range(rng.randrange(5))))
            rich.put("tags", ["a", "b"][: rng.randrange(3)]).put("scores", {"x": 0.5, "y": 2.0})
            rich.put("by_id", {1: "one", -2: "minus two"}).put("ratio", 0.25)
            rich.put("address", Struct(ADDRESS).put("street", "Main").put("zip", rng.choice([None, 12345])))
            out.append(conv.from_connect_data(TOPIC, RICH, rich))
        elif pick == 7:
            out.append(conv.from_connect_data(TOPIC, None, rng.choice([{"a": [1, {"b": None}]}, [True, "x"], 5, "s", 1.25])))
        elif pick == 8:
            out.append(conv.from_connect_data(TOPIC, SchemaBuilder.bytes().optional().build(), rng.choice([None, b"\x00\xff"])))
        else:
            out.append(conv.from_connect_data(TOPIC, SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), {"k": i}))
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("chunk", [1, 7, 500])
def test_written_records_read_in_bulk_as_one_by_one(seed: int, chunk: int) -> None:
    assert_same(written(random.Random(seed)), chunk)


def test_numeric_decimals_and_no_null_replacement_read_in_bulk_as_one_by_one() -> None:
    conv = converter(**{"decimal.format": "NUMERIC", "replace.null.with.default": "false"})
    raws = [conv.from_connect_data(TOPIC, RICH.field("amount").schema, decimal.Decimal("12.34")),  # type: ignore[union-attr]
            conv.from_connect_data(TOPIC, RICH.field("amount").schema, decimal.Decimal("100")),  # type: ignore[union-attr]
            conv.from_connect_data(TOPIC, PERSON, Struct(PERSON).put("id", 1).put("name", "n").put("ok", True)
                                   .put("small", 1).put("level", 3))]
    assert_same(raws * 3, **{"decimal.format": "NUMERIC", "replace.null.with.default": "false"})


# --- envelopes as other producers write them, and envelopes the converter refuses ---------------------

STRING_SCHEMA_JSON = b'{"type":"string","optional":false}'
INT64_SCHEMA_JSON = b'{"type":"int64","optional":false}'
PERSON_JSON = (b'{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},'
               b'{"type":"string","optional":true,"field":"name"}],"optional":false,"name":"P"}')


def envelope(schema: bytes, payload: bytes, spaced: bool = False, payload_first: bool = False) -> bytes:
    sep = b" " if spaced else b""
    parts = [b'"schema":' + sep + schema, b'"payload":' + sep + payload]
    if payload_first:
        parts.reverse()
    return b"{" + sep + (b"," + sep).join(parts) + sep + b"}"


VALID_ODD = [
    envelope(STRING_SCHEMA_JSON, b'"spaced"', spaced=True),
    envelope(STRING_SCHEMA_JSON, b'"first"', payload_first=True),
    envelope(b'{"optional":false,"type":"string"}', b'"keys swapped"'),
    envelope(INT64_SCHEMA_JSON, b"1.0"),  # a fraction an integer schema accepts
    envelope(INT64_SCHEMA_JSON, b"1e2"),
    envelope(INT64_SCHEMA_JSON, b" 42 "),
    envelope(b'{"type":"double","optional":false}', b"0.1"),
    envelope(b'{"type":"float","optional":false}', b"16777217"),
    envelope(b'{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",'
             b'"parameters":{"scale":"2"}}', b"123.456789012345678901234567890"),
    envelope(b"null", b'{"big":123456789012345678901234567890,"f":1.5,"deep":[[[1]]]}'),
    envelope(b"null", b"18446744073709551615"),
    envelope(b"null", b'{"a":[123456789012345678901234567890,-9223372036854775809]}'),
    envelope(b"null", b'[{"b":18446744073709551616}]'),
    envelope(b'{"type":"array","items":{"type":"int64","optional":false},"optional":false}', b"[1,2,-3]"),
    envelope(PERSON_JSON, b'{"id":5,"name":null,"extra":1}'),
    envelope(PERSON_JSON, b'{"id":5}', spaced=True),
    envelope(PERSON_JSON, b'{"id":6,"name":"x"}', spaced=True),
    envelope(b'{"type":"string","optional":true,"default":"dflt"}', b"null"),
    envelope(STRING_SCHEMA_JSON, b'"\\u00e9 \\ud83d\\ude00"'),
    envelope(b"null", b"null"),
]

REFUSED = [
    b"",
    b"   ",
    b"not json",
    b'{"schema":{"type":"string","optional":false},"payload":"x"',  # no closing brace
    b'{"schema":{"type":"string","optional":false},"payload":"x"}}',
    b'{"schema":{"type":"string","optional":false},"payload":"x","extra":1}',
    envelope(STRING_SCHEMA_JSON, b"5"),
    envelope(STRING_SCHEMA_JSON, b"null"),
    envelope(INT64_SCHEMA_JSON, b"9223372036854775808"),
    envelope(INT64_SCHEMA_JSON, b"1.5"),
    envelope(b'{"type":"int8","optional":false}', b"128"),
    envelope(PERSON_JSON, b'{"id":"5"}'),
    envelope(PERSON_JSON, b'{"name":"no id"}'),
    envelope(PERSON_JSON, b"[]"),
    envelope(b'{"type":"nope"}', b"1"),
    envelope(STRING_SCHEMA_JSON, b'"\\ud800"'),  # a lone surrogate: orjson refuses it, the strict parse does not
    envelope(STRING_SCHEMA_JSON, b"NaN"),
    envelope(STRING_SCHEMA_JSON, b'"bad \xff utf8"'),
    envelope(b'{"type":"bytes","optional":false}', b'"!!"'),
    envelope(b"null", b"[" * 600 + b"]" * 600),
]


def test_envelopes_of_other_producers_read_in_bulk_as_one_by_one() -> None:
    ours = converter().from_connect_data(TOPIC, Schema.STRING_SCHEMA, "ours")
    raws: list[bytes | None] = [ours, *VALID_ODD, None, ours, *VALID_ODD[::-1], ours]
    for chunk in (1, 3, 100):
        assert_same(raws, chunk)
        assert_same([r for r in raws if r is not None], chunk)


@pytest.mark.parametrize("bad", REFUSED)
def test_a_refused_record_fails_the_batch_with_its_own_error(bad: bytes) -> None:
    ours = converter().from_connect_data(TOPIC, Schema.STRING_SCHEMA, "ours")
    raws = [ours, ours, *VALID_ODD[:4], bad, ours, b"also not json"]
    expected = per_record(raws)
    assert isinstance(expected, str) and expected  # the per-record path refuses ``bad`` (or one before it)
    assert batched(raws, 500) == expected
    for chunk in (1, 4):
        assert_same(raws, chunk)


def test_the_payload_of_a_refused_record_does_not_leak_into_the_next_batch() -> None:
    ours = converter().from_connect_data(TOPIC, Schema.STRING_SCHEMA, "ours")
    conv = converter()
    with pytest.raises(DataException):
        conv.to_connect_batch(TOPIC, [ours, envelope(STRING_SCHEMA_JSON, b"5")])
    assert conv.to_connect_batch(TOPIC, [ours, bytearray(ours), memoryview(ours)]) == (
        [Schema.STRING_SCHEMA] * 3, ["ours"] * 3)


# --- bulk, not one by one -----------------------------------------------------------------------------


def test_a_column_of_null_keys_makes_no_per_record_call() -> None:
    conv = converter()

    def refuse(*args: Any) -> Any:
        raise AssertionError("to_connect_data called for a null key")

    conv.to_connect_data = refuse  # type: ignore[method-assign]
    assert conv.to_connect_batch(TOPIC, [None] * 500) == ([None] * 500, [None] * 500)


def test_a_batch_of_our_envelopes_makes_no_per_record_call() -> None:
    writer = converter()
    raws = [writer.from_connect_data(TOPIC, PERSON, Struct(PERSON).put("id", i).put("name", "n").put("ok", True)
                                     .put("small", 1)) for i in range(200)]
    raws += [writer.from_connect_data(TOPIC, Schema.STRING_SCHEMA, f"line {i}") for i in range(200)]
    conv = converter()
    conv.to_connect_batch(TOPIC, raws[:1])  # the first envelope of each schema may be read in full

    def refuse(*args: Any) -> Any:
        raise AssertionError("to_connect_data called for a batch of one schema")

    conv.to_connect_data = refuse  # type: ignore[method-assign]
    schemas, values = conv.to_connect_batch(TOPIC, raws[:200])
    assert schemas == [PERSON] * 200 and [v.get("id") for v in values] == list(range(200))


def test_a_schema_is_read_once_per_distinct_text_however_the_envelope_is_spaced() -> None:
    conv = converter()
    reads: list[Any] = []
    real = conv._schemas.as_connect_schema

    def counting(node: Any) -> Any:
        if "field" not in node:  # a whole schema, not one of a struct's fields read on its way
            reads.append(node)
        return real(node)

    conv._schemas.as_connect_schema = counting  # type: ignore[method-assign]
    raws = [envelope(PERSON_JSON, b'{"id":%d,"name":"x"}' % i, spaced=True) for i in range(300)]
    raws += [envelope(STRING_SCHEMA_JSON, b'"s%d"' % i, payload_first=True) for i in range(300)]
    schemas, values = conv.to_connect_batch(TOPIC, raws)
    assert len(reads) == 2
    assert [v.get("id") for v in values[:300]] == list(range(300))
    assert values[300:] == [f"s{i}" for i in range(300)]


# --- writing a batch of strings: byte for byte what each record gives ----------------------------------

TEXTS = ["", "plain line", 'a "quoted" word', "back\\slash", "tab\there", "new\nline", "\x00\x1f\x7f", "é✓",
         "\U0001f600 emoji", "caf\u00e9", " ", "{}", "\u2028"]


@pytest.mark.parametrize("schemas_enable", ["true", "false"])
@pytest.mark.parametrize("texts", [["line one", "line two", ""] * 50, TEXTS, TEXTS[:3], TEXTS[-3:]])
def test_a_batch_of_strings_is_written_as_each_string_is(schemas_enable: str, texts: list[str]) -> None:
    schema = SchemaBuilder.string().optional().doc("lines\nof text").build()
    for target in (Schema.STRING_SCHEMA, schema):
        conv = converter(**{"schemas.enable": schemas_enable})
        expected = [converter(**{"schemas.enable": schemas_enable}).from_connect_data(TOPIC, target, t) for t in texts]
        assert conv.from_connect_batch(TOPIC, target, texts) == expected
        assert conv.from_connect_batch(TOPIC, target, texts) == expected  # with the envelope prefix cached


def test_a_batch_holding_a_lone_surrogate_fails_as_its_record_does() -> None:
    texts = ["fine", "bad \ud800", "fine"]
    with pytest.raises(DataException) as one:
        converter().from_connect_data(TOPIC, Schema.STRING_SCHEMA, texts[1])
    with pytest.raises(DataException) as batch:
        converter().from_connect_batch(TOPIC, Schema.STRING_SCHEMA, texts)
    assert str(batch.value) == str(one.value)


FUZZ_TOKENS = [b"1", b"-0", b"0.5", b"1e5", b'"s"', b'"\\u00e9"', b'"\\ud800"', b"null", b"true", b"[", b"]", b"{",
               b"}", b",", b":", b'"k"', b"99999999999999999999", b"-9223372036854775808", b" ", b"\xef\xbb\xbf",
               b'"\xff"', b"NaN", b'"a\\"b"', b"18446744073709551615"]
FUZZ_SCHEMAS = [
    b"null", STRING_SCHEMA_JSON, INT64_SCHEMA_JSON, PERSON_JSON,
    b'{"type":"array","items":{"type":"int32","optional":true},"optional":false}',
    b'{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int64","optional":false},'
    b'"optional":true}',
    b'{"type":"boolean","optional":true,"default":true}',
]
FUZZ_VALUES = [b"1", b'"x"', b"null", b"true", b"[1,2]", b'{"id":3,"name":"n"}', b'{"a":1}', b"-5",
               b"9223372036854775808", b"[null]"]


def test_random_batches_read_in_bulk_as_one_by_one() -> None:
    rng = random.Random(37)
    for _ in range(150):
        raws: list[bytes | None] = []
        for _ in range(rng.randrange(1, 12)):
            if rng.random() < 0.5:
                payload = rng.choice(FUZZ_VALUES)
            else:
                payload = b"".join(rng.choice(FUZZ_TOKENS) for _ in range(rng.randrange(6)))
            spaced = rng.random() < 0.3
            raws.append(None if rng.random() < 0.1 else envelope(rng.choice(FUZZ_SCHEMAS), payload, spaced=spaced))
        for chunk in (1, 5, 100):
            assert_same(raws, chunk)
