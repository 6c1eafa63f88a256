"""Java's number text: ``Double.toString``, ``Float.toString``, ``BigDecimal.toString`` and ``new BigDecimal(String)``.

The number formatters (``double_to_string``, ``float_to_string``,
``decimal_to_string``) reproduce Java's ``Double.toString``, ``Float.toString``
(JDK 19+, shortest form) and ``BigDecimal.toString``; the JSON converter uses
them too so its output matches Kafka's byte for byte. ``to_float32`` is Java's
``(float)`` cast and ``parse_big_decimal`` accepts what Java's BigDecimal
constructor accepts.
"""

from __future__ import annotations

import decimal as _decimal
import math
import re
import struct
from typing import Any

from connect.api.errors import DataException

__all__ = ["decimal_to_string", "double_to_string", "float_to_string", "parse_big_decimal", "to_float32"]

_F32 = struct.Struct(">f")


def to_float32(value: float) -> float:
    """Round to the nearest 32-bit float, infinite beyond its range (Java's ``(float)`` cast)."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _digits_and_exponent(literal: str) -> tuple[str, int]:
    """Significant digits (no trailing zeros) and the power of ten of the first one."""
    _sign, digits, exponent = _decimal.Decimal(literal).as_tuple()
    text = "".join(map(str, digits))
    return text.rstrip("0") or "0", len(digits) - 1 + int(exponent)


def _java_layout(negative: bool, digits: str, exp10: int) -> str:
    # Java prints plainly for 1e-3 <= |x| < 1e7, else as d.dddE<n>; always a digit after the point.
    if -3 <= exp10 < 7:
        if exp10 >= 0:
            text = digits[: exp10 + 1].ljust(exp10 + 1, "0") + "." + (digits[exp10 + 1 :] or "0")
        else:
            text = "0." + "0" * (-exp10 - 1) + digits
    else:
        text = digits[0] + "." + (digits[1:] or "0") + "E" + str(exp10)
    return "-" + text if negative else text


def _non_finite(value: float) -> str | None:
    if value != value:
        return "NaN"
    if value == math.inf:
        return "Infinity"
    if value == -math.inf:
        return "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return None


def _prefer_two_digits(magnitude: float, literal: str, round_trip: Any) -> str:
    # Java considers two-digit decimals when one digit suffices and takes the closest; this only
    # changes the answer for the least precise subnormals (5e-324 prints as 4.9E-324).
    if len(_digits_and_exponent(literal)[0]) != 1:
        return literal
    candidate = f"{magnitude:.1e}"
    if round_trip(float(candidate)) != magnitude:
        return literal
    exact = _decimal.Decimal(magnitude)
    if abs(_decimal.Decimal(candidate) - exact) < abs(_decimal.Decimal(literal) - exact):
        return candidate
    return literal


def double_to_string(value: float) -> str:
    """Java's ``Double.toString``: ``1.0``, ``123.456``, ``1.0E10``, ``1.5E-5``, ``NaN``."""
    value = float(value)
    special = _non_finite(value)
    if special is not None:
        return special
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        return repr(value)  # Python's shortest repr is laid out exactly like Java's in this range
    literal = repr(magnitude)
    if magnitude < 1e-320:
        literal = _prefer_two_digits(magnitude, literal, float)
    digits, exp10 = _digits_and_exponent(literal)
    return _java_layout(value < 0, digits, exp10)


def float_to_string(value: float) -> str:
    """Java's ``Float.toString`` of ``value`` rounded to 32 bits: ``0.1``, ``3.4028235E38``."""
    single = to_float32(float(value))
    special = _non_finite(single)
    if special is not None:
        return special
    magnitude = abs(single)
    literal = repr(magnitude)
    for precision in range(9):
        candidate = f"{magnitude:.{precision}e}"
        if to_float32(float(candidate)) == magnitude:
            literal = candidate
            break
    if magnitude < 1e-43:
        literal = _prefer_two_digits(magnitude, literal, to_float32)
    digits, exp10 = _digits_and_exponent(literal)
    return _java_layout(single < 0, digits, exp10)


def decimal_to_string(value: _decimal.Decimal) -> str:
    """Java's ``BigDecimal.toString`` (the same rules as Python's, but with no negative zero)."""
    if not value.is_finite():
        raise DataException(f"Decimal value is not a finite number: {value}")
    if value.is_zero() and value.is_signed():
        value = value.copy_abs()
    return str(value)


# Java's BigDecimal(String) grammar: no whitespace, no NaN/Infinity, no underscores
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def parse_big_decimal(text: str) -> _decimal.Decimal | None:
    if _NUMBER.fullmatch(text) is None:
        return None
    return _decimal.Decimal(text)
