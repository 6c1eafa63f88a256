"""Values as Java's ``toString`` prints them: what Kafka's FileStreamSink and ``Struct.toString`` write.

Lists print as ``[a, b]``, maps as ``{k=v, k2=v2}``, null as ``null``, booleans as ``true``/``false``.
Kafka's JsonConverter reads a JSON object into a ``java.util.HashMap``, so a map prints in that table's
bucket order rather than in insertion order; ``hash_map_order`` reproduces it for string and integer
keys (the keys a converter produces), so a sink file matches Kafka Connect's byte for byte. Timestamps,
dates and times print as ``java.util.Date`` does, in UTC.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["hash_map_order", "java_date_string", "java_hash_code", "java_to_string"]

_MASK32 = 0xFFFFFFFF


def java_hash_code(key: Any) -> int | None:
    """``key.hashCode()`` as an unsigned 32-bit number for String and Integer/Long keys; None otherwise."""
    if isinstance(key, str):
        h = 0
        for unit in _utf16_units(key):
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
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(java_to_string(v) for v in value) + "]"
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return java_date_string(value)
    if isinstance(value, Mapping):
        keys = hash_map_order(list(value.keys()))
        return "{" + ", ".join(f"{java_to_string(k)}={java_to_string(value[k])}" for k in keys) + "}"
    return str(value)


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
