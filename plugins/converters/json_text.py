"""JSON text for the JsonConverter: written as Jackson writes it, parsed strictly.

Writing follows Jackson's rules: no whitespace; control characters escaped as
Jackson escapes them (``\\u001F`` with uppercase hex, ``\\b``, ``\\t``...);
doubles and floats as Java prints them, with NaN and the infinities as the
strings ``"NaN"``, ``"Infinity"``; bytes as base64. Parsing reads fractions as
Decimal (so no digit is lost before a value's schema says what it is),
rejects the bare NaN and Infinity tokens, and gives empty input as
``MISSING`` (Jackson's MissingNode).
"""

from __future__ import annotations

import base64
import decimal as _decimal
import json
import re
from json.encoder import encode_basestring as _encode_basestring
from typing import Any

from connect.api import DataException

__all__ = ["MISSING", "base64_text", "is_int", "loads", "loads_payload", "node_type", "number_text", "quote"]

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


# built once: json.loads with options would build a decoder per call
_DECODER = json.JSONDecoder(parse_float=_decimal.Decimal, parse_constant=_reject_constant)


def loads(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
        if not text or text.isspace():
            return MISSING
        return _DECODER.decode(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DataException(READ_FAILED + str(exc)) from exc


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
