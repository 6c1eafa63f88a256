"""JSON text for the JsonConverter: written as Jackson writes it, parsed strictly.

Writing follows Jackson's rules: no whitespace; control characters escaped as
Jackson escapes them (``\\u001F`` with uppercase hex, ``\\b``, ``\\t``...);
doubles and floats as Java prints them, with NaN and the infinities as the
strings ``"NaN"``, ``"Infinity"``; bytes as base64. Parsing reads fractions as
Decimal (so no digit is lost before a value's schema says what it is),
rejects the bare NaN and Infinity tokens, and gives empty input as
``MISSING`` (Jackson's MissingNode). ``loads_schemaless`` reads JSON without a
schema in one pass with orjson (fractions as floats), and leaves to ``loads``
every input orjson would read differently or reject.
"""

from __future__ import annotations

import base64
import decimal as _decimal
import functools
import json
import re
from collections.abc import Sequence
from json.encoder import encode_basestring as _encode_basestring
from typing import Any, cast

import orjson

from connect.api import DataException
from connect.api.map_columns import MapColumns, MapTable

__all__ = [
    "MISSING",
    "base64_text",
    "is_int",
    "loads",
    "loads_payload",
    "loads_schemaless",
    "loads_schemaless_batch",
    "loads_whole_batch",
    "node_type",
    "number_text",
    "quote",
    "quote_lines",
    "schemaless_value",
]

READ_FAILED = "Converting byte[] to Kafka Connect data failed due to serialization error: "

# --- JSON text the way Jackson writes it ------------------------------------------------

# Python writes these controls as \u00xx with lowercase hex; Jackson uses uppercase
_NEEDS_JACKSON_ESCAPES = re.compile("[\x00-\x07\x0b\x0e-\x1f]")
_JACKSON_ESCAPES = {code: f"\\u{code:04X}" for code in range(0x20)}
_JACKSON_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"})
_JACKSON_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\"})
# Jackson writes a character beyond the BMP (an emoji, say) as its escaped UTF-16 surrogate pair
_BEYOND_BMP = re.compile("[\U00010000-\U0010FFFF]")


def _surrogate_pair(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"


def quote(text: str) -> str:
    """``text`` as a JSON string literal, escaped as Jackson escapes it."""
    if text.isprintable() or _NEEDS_JACKSON_ESCAPES.search(text) is None:
        literal = _encode_basestring(text)
    else:
        literal = '"' + text.translate(_JACKSON_ESCAPES) + '"'
    if text.isascii():
        return literal
    return _BEYOND_BMP.sub(_surrogate_pair, literal)


# what an ASCII text needs escaped in JSON: the quote, the backslash and the control characters (DEL is
# written as it is, by Jackson as by the C encoder)
_ESCAPED_ASCII = bytes(range(0x20)) + b'"\\'


def quote_lines(texts: list[str], before: str, after: str) -> list[bytes] | None:
    """``(before + quote(text) + after).encode()`` of each text, in a few passes in C, or None when only
    ``quote`` one by one can say (a text that is not plain ASCII, or needs an escape).

    A plain ASCII text is its own JSON literal between quotes; all are built as one string, one per line,
    then split (no plain text holds a newline).
    """
    joined = "".join(texts)
    if not joined.isascii() or "\n" in before or "\n" in after:
        return None
    plain = joined.encode("ascii")
    if len(plain.translate(None, _ESCAPED_ASCII)) != len(plain):
        return None
    body = before + '"' + ('"' + after + "\n" + before + '"').join(texts) + '"' + after
    lines = body.encode().split(b"\n")
    return lines if len(lines) == len(texts) else None


def number_text(text: str) -> str:
    # Jackson quotes the non-finite doubles by default (QUOTE_NON_NUMERIC_NUMBERS)
    return text if text[-1].isdigit() else '"' + text + '"'


def base64_text(data: bytes | bytearray | memoryview) -> str:
    return '"' + base64.b64encode(data).decode("ascii") + '"'


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- parsing ---------------------------------------------------------------------------

MISSING: Any = object()  # empty input: Jackson's MissingNode


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Non-standard token '{name}': NaN and Infinity are not JSON numbers")


def _fraction(text: str) -> _decimal.Decimal:
    try:
        return _decimal.Decimal(text)
    except _decimal.InvalidOperation:
        # an exponent beyond Decimal's range (1e99999999999999999999): the nearest double, as orjson
        # reads it, so ±Infinity or ±0; an integer or decimal schema then refuses it
        return _decimal.Decimal(float(text))


# built once: json.loads with options would build a decoder per call
_DECODER = json.JSONDecoder(parse_float=_fraction, parse_constant=_reject_constant)


def loads(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
        if not text or text.isspace():
            return MISSING
        return _DECODER.decode(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DataException(READ_FAILED + str(exc)) from exc


# What orjson reads otherwise than the strict parse: an integer beyond 64 bits (20 digits, or 19 after a
# minus sign), which it gives as a float, and JSON nested deeper than the strict parse goes (at most one
# level per bracket). Input holding such text, even inside a string, takes the strict parse. The check is
# a few passes in C over the text with every digit made a "0" and every "{" a "[".
_SHAPE = bytes.maketrans(b"123456789{", b"000000000[")
_TWENTY_DIGITS = b"0" * 20
_BELOW_INT64 = b"-" + b"0" * 19
_MAX_OPENERS = 512


def _orjson_reads_alike(raw: bytes) -> bool:
    shape = raw.translate(_SHAPE)
    return _TWENTY_DIGITS not in shape and _BELOW_INT64 not in shape and shape.count(b"[") <= _MAX_OPENERS


def loads_schemaless(raw: bytes) -> Any:
    """Like loads, but with fractions as floats, as a schemaless value holds them.

    orjson gives the same values as the strict parse for all it accepts, but for the input kept from it
    above; what it rejects, the strict parse reads or names the error of.
    """
    if _orjson_reads_alike(raw):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # NaN, a lone surrogate escape, empty input, invalid UTF-8...: the strict parse decides
    return schemaless_value(loads(raw))


def loads_schemaless_batch(raws: list[bytes | None]) -> Sequence[Any]:
    """loads_schemaless of each of ``raws`` (None for None): for a batch of plain JSON, one pass in C.

    A batch of objects comes as a ``MapColumns`` (which reads as the list of maps), so that transforms and
    sinks can work on its columns. orjson reads it first; whether the strict parse would have read it
    otherwise is then checked when it is first used: by the columns' types when the columns are asked for,
    else by the text.
    """
    if None not in raws:
        present = cast(list[bytes], raws)
        try:
            values = list(map(orjson.loads, present))
        except orjson.JSONDecodeError:
            pass  # one of them is not plain JSON: each on its own below, and the strict parse names it
        else:
            maps = MapColumns.of(values, functools.partial(_confirmed, present))
            if maps is not None:
                return maps
            if _orjson_reads_all_alike(present):
                return values
    return [None if raw is None else loads_schemaless(raw) for raw in raws]


def _orjson_reads_all_alike(raws: list[bytes]) -> bool:
    """``_orjson_reads_alike`` of every one of ``raws``, checked on the whole batch's text."""
    shape = b"\n".join(raws).translate(_SHAPE)  # a newline joins no digits
    return (
        _TWENTY_DIGITS not in shape
        and _BELOW_INT64 not in shape
        and (shape.count(b"[") <= _MAX_OPENERS or all(map(_few_openers, raws)))
    )


def _confirmed(raws: list[bytes], maps: list[Any], table: MapTable | None) -> list[Any] | None:
    """None when orjson read ``raws`` into ``maps`` (``table``: their columns, if worked out) as the strict
    parse reads them; else what the strict parse reads."""
    if table is not None and _flat_and_exact_columns(table):
        return None
    if _orjson_reads_all_alike(raws):
        return None
    return [loads_schemaless(raw) for raw in raws]


# What orjson reads of a column of flat objects as the strict parse does: strings, integers (within 64 bits:
# one beyond comes as a float), booleans, nulls, and floats below 2**63 in magnitude (no integer text gives
# one of those: orjson reads every integer of -2**63..2**64-1 as an integer).
_EXACT_KINDS = frozenset((str, int, bool, type(None)))
_NUMBER_KINDS = frozenset((int, float))
_BEYOND_INT64 = 2.0**63


def _flat_and_exact_columns(table: MapTable) -> bool:
    """Whether maps read by orjson, given by column, are what the strict parse reads (no text check needed):
    each value a scalar that no text orjson reads otherwise could have given."""
    for place, column in enumerate(table.columns):
        kinds = table.kinds_of(place)
        if kinds <= _EXACT_KINDS:
            continue
        if not kinds <= _NUMBER_KINDS or not -_BEYOND_INT64 < min(column) <= max(column) < _BEYOND_INT64:
            return False
    return True


def _few_openers(raw: bytes) -> bool:
    return raw.count(b"[") + raw.count(b"{") <= _MAX_OPENERS


# A fraction or an exponent is read as a float by orjson but as a Decimal by the strict parse, which a
# schema then reads as it says (an int64 accepts 1.0, a Decimal keeps every digit): a node of orjson's holding
# a float is read again by the strict parse. Every other scalar orjson gives is the strict parse's (an
# integer beyond 64 bits comes as a float). A container's depth is bounded as above, by its text.
_EXACT_SCALARS = frozenset((str, int, bool, type(None)))
_CONTAINERS = (dict, list)


def loads_whole_batch(raws: list[bytes]) -> tuple[list[Any], bool]:
    """What ``loads`` gives for each of ``raws``, or MISSING where only the strict parse can say, and
    whether none is MISSING.

    orjson reads them; what it rejects (empty input, invalid text, a lone surrogate escape) and what it
    reads otherwise (see above) is MISSING, for the caller to read with ``loads``.
    """
    try:
        nodes = list(map(orjson.loads, raws))
    except orjson.JSONDecodeError:
        nodes = list(map(_orjson_or_missing, raws))
    kinds = set(map(type, nodes))
    if kinds <= _EXACT_SCALARS:  # the usual payload of a string, integer or boolean schema
        return nodes, True
    exact = True
    for i, node in enumerate(nodes):
        kind = type(node)
        if kind in _EXACT_SCALARS:
            continue
        if kind is float or node is MISSING or not (_flat_and_exact(node) or _few_openers_no_fractions(raws[i])):
            nodes[i] = MISSING
            exact = False
    return nodes, exact


def _orjson_or_missing(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return MISSING


def _flat_and_exact(node: Any) -> bool:
    """A struct's usual payload: an object of scalars that orjson reads as the strict parse does."""
    return type(node) is dict and set(map(type, node.values())) <= _EXACT_SCALARS


def _few_openers_no_fractions(raw: bytes) -> bool:
    shape = raw.translate(_FRACTION_SHAPE)
    return (
        b"0." not in shape
        and _TWENTY_DIGITS not in shape
        and _BELOW_INT64 not in shape
        and shape.count(b"[") <= _MAX_OPENERS
    )


# digits made "0", "{" a "[", and the marks of a fraction or exponent a ".": "0." is a fraction's shape
_FRACTION_SHAPE = bytes.maketrans(b"123456789{eE", b"000000000[..")


def schemaless_value(node: Any) -> Any:
    """A node of the strict parse as a schemaless Connect value: fractions as floats (Jackson's doubleValue())."""
    if node is MISSING:
        return None
    if isinstance(node, _decimal.Decimal):
        return float(node)
    if isinstance(node, list):
        return [schemaless_value(v) for v in node]
    if isinstance(node, dict):
        return {k: schemaless_value(v) for k, v in node.items()}
    return node


# what a JSON string needs no decoding for: no quote, backslash or (invalid) raw control byte
_NOT_PLAIN_STRING = re.compile(rb'[\x00-\x1f"\\]')


def loads_payload(body: bytes) -> Any:
    """Like loads, with a shortcut for the common payload: a string literal without escapes."""
    end = len(body) - 1
    if end > 0 and body[0] == 0x22 and body[end] == 0x22 and _NOT_PLAIN_STRING.search(body, 1, end) is None:
        try:
            return body[1:end].decode("utf-8")
        except UnicodeDecodeError:
            pass  # let the full parser report it
    return loads(body)


def node_type(node: Any) -> str:
    """The name Jackson gives this kind of node, for error messages."""
    if node is None:
        return "NULL"
    if node is MISSING:
        return "MISSING"
    if isinstance(node, bool):
        return "BOOLEAN"
    if isinstance(node, int | _decimal.Decimal):
        return "NUMBER"
    if isinstance(node, str):
        return "STRING"
    if isinstance(node, list):
        return "ARRAY"
    return "OBJECT"
