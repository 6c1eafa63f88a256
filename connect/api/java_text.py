"""Values as Java's ``toString`` prints them: what Kafka's FileStreamSink and ``Struct.toString`` write.

Lists print as ``[a, b]``, maps as ``{k=v, k2=v2}``, null as ``null``, booleans as ``true``/``false``.
Kafka's JsonConverter reads a JSON object into a ``java.util.HashMap``, so a map prints in that table's
bucket order rather than in insertion order; ``hash_map_order`` reproduces it for string and integer
keys (the keys a converter produces), so a sink file matches Kafka Connect's byte for byte; the order
is worked out once per set of string keys and cached. Numbers print as ``Double.toString`` and
``BigDecimal.toString`` print them. Timestamps, dates and times print as ``java.util.Date`` does, in UTC.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import functools
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from connect.api.java_numbers import decimal_to_string, double_to_string

__all__ = ["hash_map_order", "java_date_string", "java_hash_code", "java_to_string"]

_MASK32 = 0xFFFFFFFF


def java_hash_code(key: Any) -> int | None:
    """``key.hashCode()`` as an unsigned 32-bit number for String and Integer/Long keys; None otherwise."""
    if isinstance(key, str):
        h = 0
        # a character beyond the BMP counts as its two UTF-16 units, as in Java
        for unit in map(ord, key) if key.isascii() or max(key) < "\U00010000" else _utf16_units(key):
            h = (31 * h + unit) & _MASK32
        return h
    if isinstance(key, int) and not isinstance(key, bool):
        if -(2**31) <= key < 2**31:
            return key & _MASK32
        v = key & 0xFFFFFFFFFFFFFFFF
        return (v ^ (v >> 32)) & _MASK32
    return None


def _utf16_units(text: str) -> Iterable[int]:
    for ch in text:
        code = ord(ch)
        if code < 0x10000:
            yield code
        else:
            code -= 0x10000
            yield 0xD800 + (code >> 10)
            yield 0xDC00 + (code & 0x3FF)


def hash_map_order(keys: list[Any]) -> list[Any]:
    """``keys`` (in insertion order) in the order a ``java.util.HashMap`` holding them iterates.

    A HashMap starts with 16 buckets and doubles whenever it holds more than three quarters of its
    capacity; a key's bucket is its spread hash modulo the capacity, and a bucket keeps insertion order
    (resizes split buckets without reordering). Keys of other types keep insertion order.
    """
    hashes = [java_hash_code(k) for k in keys]
    if any(h is None for h in hashes):
        return list(keys)
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2
    buckets = [((h ^ (h >> 16)) & (capacity - 1), i) for i, h in enumerate(hashes) if h is not None]
    return [keys[i] for _, i in sorted(buckets)]


def java_to_string(value: Any) -> str:
    """``value`` as Java's ``String.valueOf`` would print the Connect value it stands for."""
    text_of = _PRINTERS.get(type(value))
    if text_of is not None:
        return text_of(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return _list_text(value)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return java_date_string(value)
    if isinstance(value, Mapping):
        return _map_text(value)
    if isinstance(value, float):
        return double_to_string(value)
    if isinstance(value, _decimal.Decimal):
        return decimal_to_string(value)
    return str(value)


def _texts(values: Sequence[Any]) -> Iterator[str]:
    """Each value's text, by the printer of its exact type, iterated in C: a Python frame only for the
    values that need one (a float, a nested map or list), and for nesting just one frame a level."""
    return map(operator.call, map(_PRINTERS.__getitem__, map(type, values)), values)


def _list_text(value: list[Any] | tuple[Any, ...]) -> str:
    return "[" + ", ".join(_texts(value)) + "]"


# A map's keys, in HashMap order, with each key's printed prefix ("key="), and a getter for its values
# in that order. Records of one topic mostly share one key set, so the order is worked out once per
# key set rather than once per record.
_Layout = tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]

# Bounds on what the cache holds: at most this many key sets, each of at most so many keys and characters
# (a map with more is laid out afresh each time; its values cost more to print than its order anyway).
_LAYOUT_CACHE_SIZE = 1024
_LAYOUT_MAX_KEYS = 64
_LAYOUT_MAX_KEY_CHARS = 2048


@functools.lru_cache(maxsize=_LAYOUT_CACHE_SIZE)
def _string_key_layout(keys: tuple[Any, ...]) -> _Layout | None:
    """The layout of a map with these keys, or None unless every key is a str.

    Only all-str key sets are laid out: Python's equality treats ``1``, ``1.0`` and ``True`` as one
    key, but Java hashes (and so orders) them differently, so an equal tuple of other keys is no
    evidence of an equal order. None is cached too: any tuple equal to this one holds a non-str as well.
    """
    if not all(type(k) is str for k in keys):
        return None
    ordered = hash_map_order(list(keys))
    prefixes = tuple(k + "=" for k in ordered)
    if len(ordered) == 1:
        only = ordered[0]
        return prefixes, lambda m: (m[only],)
    return prefixes, operator.itemgetter(*ordered)


def _map_text(value: Mapping[Any, Any]) -> str:
    keys = tuple(value)
    if not keys:
        return "{}"
    layout = None
    if len(keys) <= _LAYOUT_MAX_KEYS:
        try:
            if sum(map(len, keys)) <= _LAYOUT_MAX_KEY_CHARS:
                layout = _string_key_layout(keys)
        except TypeError:  # a key without a length (a number) or without a hash: not cached
            pass
    if layout is None:
        ordered = hash_map_order(list(keys))
        return "{" + ", ".join([f"{java_to_string(k)}={java_to_string(value[k])}" for k in ordered]) + "}"
    prefixes, values_in_order = layout
    return "{" + ", ".join(map(operator.add, prefixes, _texts(values_in_order(value)))) + "}"


def _double_text(value: float) -> str:
    # Python's repr lays out 1e-3 <= |x| < 1e7 as Double.toString does; NaN fails both tests
    return repr(value) if 1e-3 <= value < 1e7 or -1e7 < value <= -1e-3 else double_to_string(value)


class _Printers(dict[type, Callable[[Any], str]]):
    """The printer of each exact type; any other type (a subclass too) goes through java_to_string."""

    def __missing__(self, key: type) -> Callable[[Any], str]:
        return java_to_string


_PRINTERS = _Printers({
    str: str.__str__,
    int: int.__repr__,
    bool: {True: "true", False: "false"}.__getitem__,
    type(None): {None: "null"}.__getitem__,
    float: _double_text,
    dict: _map_text,
    list: _list_text,
    tuple: _list_text,
})


_EPOCH_DAY = _dt.date(1970, 1, 1)


def java_date_string(value: _dt.datetime | _dt.date | _dt.time) -> str:
    """``java.util.Date.toString`` in UTC: ``Thu Feb 29 13:45:07 UTC 2024``.

    Kafka's Timestamp, Date and Time values are ``java.util.Date`` objects, which print in the JVM's
    default zone; Headrace prints them in UTC (a Date is midnight UTC, a Time is on 1970-01-01).
    """
    if isinstance(value, _dt.datetime):
        moment = value.astimezone(_dt.UTC) if value.tzinfo else value
    elif isinstance(value, _dt.date):
        moment = _dt.datetime(value.year, value.month, value.day)
    else:
        moment = _dt.datetime.combine(_EPOCH_DAY, value.replace(tzinfo=None))
    # English names whatever the locale, as Date.toString uses
    day = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[moment.weekday()]
    month = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")[moment.month - 1]
    return f"{day} {month} {moment.day:02d} {moment:%H:%M:%S} UTC {moment.year}"
