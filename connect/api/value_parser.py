"""The parser behind Kafka's ``Values.parseString``: text to a schema and value.

It reads booleans, the smallest integer type that fits, floats, ``[...]``
arrays, ``{k:v}`` maps, ISO-8601 dates/times/timestamps, else the text itself.
Temporal text is parsed strictly (``yyyy-MM-dd``, ``HH:mm:ss.SSSZ``,
``yyyy-MM-ddTHH:mm:ss.SSSZ``, always UTC); Kafka's lenient SimpleDateFormat
rolls ``25:00:00.000Z`` into a valid value, here it stays a string.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import math
import re
from collections.abc import Callable
from typing import Any

from connect.api.errors import DataException
from connect.api.java_numbers import parse_big_decimal, to_float32
from connect.api.logical_types import Date, Decimal, Time, Timestamp
from connect.api.schema import Schema, SchemaAndValue, Type
from connect.api.schema_builder import SchemaBuilder

__all__ = ["ValueParser"]

_UTC = _dt.UTC

# Java's String.trim() strips every char up to U+0020, not just whitespace
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))
_DELIMITERS = frozenset(':,{}[]"')
_NUMERIC_ORDER = {Type.INT8: 0, Type.INT16: 1, Type.INT32: 2, Type.INT64: 3, Type.FLOAT32: 4, Type.FLOAT64: 5}
_BIGGER_THAN_LONG = _decimal.Decimal("1e19")
_TRUE = SchemaAndValue(Schema.BOOLEAN_SCHEMA, True)
_FALSE = SchemaAndValue(Schema.BOOLEAN_SCHEMA, False)

_TIME_RE = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z")
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIMESTAMP_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z")


def _trim(text: str) -> str:
    return text.strip(_JAVA_TRIM)


def _is_blank(text: str) -> bool:
    return not text.strip(_JAVA_TRIM)


def _parse_temporal(token: str) -> SchemaAndValue | None:
    token = token.replace("\\:", ":")  # colons may have been escaped to keep the token whole
    length = len(token)
    try:
        if length == 13:
            m = _TIME_RE.fullmatch(token)
            if m:
                h, mi, s, ms = map(int, m.groups())
                return SchemaAndValue(Time.SCHEMA, _dt.time(h, mi, s, ms * 1000))
        elif length == 24:
            m = _TIMESTAMP_RE.fullmatch(token)
            if m:
                y, mo, d, h, mi, s, ms = map(int, m.groups())
                return SchemaAndValue(Timestamp.SCHEMA, _dt.datetime(y, mo, d, h, mi, s, ms * 1000, tzinfo=_UTC))
        elif length == 10:
            m = _DATE_RE.fullmatch(token)
            if m:
                return SchemaAndValue(Date.SCHEMA, _dt.date(*map(int, m.groups())))
    except ValueError:  # a field out of range: not a date after all
        return None
    return None


def _exact_integer(number: _decimal.Decimal) -> SchemaAndValue | None:
    magnitude = abs(number)
    if magnitude > _BIGGER_THAN_LONG or (magnitude < 1 and not number.is_zero()):
        return None
    if number != number.to_integral_value():
        return None
    integral = int(number)
    if not -(2**63) <= integral < 2**63:
        return None
    if -(2**7) <= integral < 2**7:
        return SchemaAndValue(Schema.INT8_SCHEMA, integral)
    if -(2**15) <= integral < 2**15:
        return SchemaAndValue(Schema.INT16_SCHEMA, integral)
    if -(2**31) <= integral < 2**31:
        return SchemaAndValue(Schema.INT32_SCHEMA, integral)
    return SchemaAndValue(Schema.INT64_SCHEMA, integral)


def _parse_number(token: str) -> SchemaAndValue | None:
    number = parse_big_decimal(token)
    if number is None:
        return None
    exact = _exact_integer(number)
    if exact is not None:
        return exact
    scale = -int(number.as_tuple().exponent)
    as_double = float(number)
    as_float = to_float32(as_double)
    if scale != 0 and not math.isinf(as_float):
        return SchemaAndValue(Schema.FLOAT32_SCHEMA, as_float)
    if scale != 0 and not math.isinf(as_double):
        return SchemaAndValue(Schema.FLOAT64_SCHEMA, as_double)
    return SchemaAndValue(Decimal.schema(scale), number)


def _merge_schemas(previous: Schema, latest: Schema) -> Schema | None:
    """A schema for values of both, widening numbers; None when there is none."""
    if previous.type is not latest.type:
        old_rank = _NUMERIC_ORDER.get(previous.type)
        new_rank = _NUMERIC_ORDER.get(latest.type)
        if old_rank is None or new_rank is None:
            return None
        return latest if new_rank > old_rank else previous
    if previous.optional == latest.optional:
        return previous if previous.optional else latest
    return None  # same type, one optional and one not: never equal


class _SchemaMerger:
    def __init__(self) -> None:
        self.common: Schema | None = None
        self.compatible = True

    def merge(self, latest: SchemaAndValue | None) -> None:
        if latest is None or latest.schema is None or not self.compatible:
            return
        if self.common is None:
            self.common = latest.schema
        else:
            self.common = _merge_schemas(self.common, latest.schema)
            self.compatible = self.common is not None


class _Tokenizer:
    """Splits text at unescaped ``: , { } [ ] "``; each delimiter is a token of its own.

    A backslash escapes the next character and stays in the token, as in Kafka.
    """

    __slots__ = ("text", "pos", "peeked", "previous")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.peeked: str | None = None
        self.previous: str | None = None

    def mark(self) -> int:
        return self.pos - (len(self.peeked) if self.peeked is not None else 0)

    def rewind(self, position: int) -> None:
        self.pos = position
        self.peeked = None
        self.previous = None

    def has_next(self) -> bool:
        return self.peeked is not None or self.pos < len(self.text)

    def _scan(self) -> str:
        text = self.text
        start = i = self.pos
        end = len(text)
        escaped = False
        while i < end:
            char = text[i]
            if char == "\\":
                escaped = not escaped
            elif char in _DELIMITERS and not escaped:
                if start < i:
                    self.pos = i
                    return text[start:i]
                self.pos = i + 1
                return char
            else:
                escaped = False
            i += 1
        self.pos = end
        return text[start:end]

    def next(self) -> str:
        if self.peeked is not None:
            token, self.peeked = self.peeked, None
        else:
            token = self._scan()
        self.previous = token
        return token

    def next_text(self, count: int) -> str | None:
        """The raw text of the next ``count`` tokens, or None (and no move) if there are fewer."""
        start = self.mark()
        for _ in range(count):
            if not self.has_next():
                self.rewind(start)
                return None
            self.next()
        return self.text[start : self.pos]

    def can_consume(self, expected: str) -> bool:
        """Take the next token if, trimmed, it is ``expected``; blank tokens before it are dropped."""
        if self.peeked is None:
            if self.pos >= len(self.text):
                return False
            self.peeked = self._scan()
        while _is_blank(self.peeked) and self.pos < len(self.text):
            self.peeked = self._scan()
        if _trim(self.peeked) == expected:
            self.peeked = None
            return True
        return False


class ValueParser:
    """Reads one text into a schema and value; ``parse(False)`` is ``Values.parseString``.

    ``convert`` is ``connect.api.values.convert_to``, used to bring the elements of an array or map to
    their common schema. It is passed in because the conversions parse text too: taking it as an
    argument keeps the imports one-way (values imports this module, not the other way round).
    """

    def __init__(self, text: str, convert: Callable[[Schema, Schema | None, Any], Any]) -> None:
        self.original = text
        self.tokens = _Tokenizer(text)
        self._convert = convert

    def parse(self, embedded: bool) -> SchemaAndValue | None:
        tokens = self.tokens
        if not tokens.has_next():
            return None
        if embedded and tokens.can_consume('"'):
            return self._quoted_string()
        if self._literal(embedded, "null"):
            return None
        if self._literal(embedded, "true"):
            return _TRUE
        if self._literal(embedded, "false"):
            return _FALSE
        start = tokens.mark()
        try:
            if tokens.can_consume("["):
                return self._array()
            if tokens.can_consume("{"):
                return self._map()
        except DataException:
            tokens.rewind(start)  # not a well-formed array or map: read it as a plain token
        token = tokens.next()
        if _is_blank(token):
            return SchemaAndValue(Schema.STRING_SCHEMA, token)
        return self._scalar(embedded, _trim(token))

    def _literal(self, embedded: bool, literal: str) -> bool:
        # at the top level a literal counts only if nothing follows it: "true}" is a string
        tokens = self.tokens
        start = tokens.mark()
        if tokens.can_consume(literal) and (embedded or not tokens.has_next()):
            return True
        tokens.rewind(start)
        return False

    def _scalar(self, embedded: bool, token: str) -> SchemaAndValue:
        first = token[0]
        starts_with_digit = first.isdecimal()
        if starts_with_digit:
            temporal = self._temporal(token)
            if temporal is not None:
                return temporal
        if starts_with_digit or first in "+-":
            number = _parse_number(token)
            if number is not None:
                return number
        if embedded:
            raise DataException("Failed to parse embedded value")
        return SchemaAndValue(Schema.STRING_SCHEMA, self.original)

    def _temporal(self, token: str) -> SchemaAndValue | None:
        # unescaped colons split a time into five tokens, so try the token with the next four first
        tokens = self.tokens
        position = tokens.mark()
        remainder = tokens.next_text(4)
        if remainder is not None:
            temporal = _parse_temporal(token + remainder)
            if temporal is not None:
                return temporal
        tokens.rewind(position)
        return _parse_temporal(token)

    def _quoted_string(self) -> SchemaAndValue:
        tokens = self.tokens
        parts: list[str] = []
        while tokens.has_next():
            if tokens.can_consume('"'):
                break
            parts.append(tokens.next())
        content = "".join(parts)
        return _parse_temporal(content) or SchemaAndValue(Schema.STRING_SCHEMA, content)

    def _array(self) -> SchemaAndValue:
        tokens = self.tokens
        result: list[Any] = []
        merger = _SchemaMerger()
        while tokens.has_next():
            if tokens.can_consume("]"):
                if merger.common is None:
                    return SchemaAndValue(Schema(Type.ARRAY), result)  # every element is null
                aligned = [self._convert(merger.common, None, v) for v in result]
                return SchemaAndValue(SchemaBuilder.array(merger.common).build(), aligned)
            if tokens.can_consume(","):
                raise DataException("Unable to parse an empty array element: " + self.original)
            element = self.parse(True)
            merger.merge(element)
            result.append(element.value if element is not None else None)
            position = tokens.mark()
            if tokens.can_consume("]"):
                tokens.rewind(position)
            elif not tokens.can_consume(","):
                raise DataException("Array elements missing ',' delimiter")
        if tokens.previous == ",":
            raise DataException("Array is missing element after ',': " + self.original)
        raise DataException("Array is missing terminating ']': " + self.original)

    def _map(self) -> SchemaAndValue:
        tokens = self.tokens
        result: dict[Any, Any] = {}
        keys, values = _SchemaMerger(), _SchemaMerger()
        while tokens.has_next():
            if tokens.can_consume("}"):
                return self._typed_map(result, keys.common, values.common)
            if tokens.can_consume(","):
                raise DataException("Unable to parse a map entry with no key or value: " + self.original)
            key = self.parse(True)
            if key is None or key.value is None:
                raise DataException("Map entry may not have a null key: " + self.original)
            if not tokens.can_consume(":"):
                raise DataException(f"Map entry is missing ':' at {tokens.pos} in {self.original}")
            value = self.parse(True)
            try:
                result[key.value] = value.value if value is not None else None
            except TypeError as exc:  # a list or map as a key: Python cannot hash it
                raise DataException(f"Map key is not hashable: {self.original}") from exc
            tokens.can_consume(",")
            keys.merge(key)
            values.merge(value)
        if tokens.previous == ",":
            raise DataException("Map is missing element after ',': " + self.original)
        raise DataException("Map is missing terminating '}': " + self.original)

    def _typed_map(self, result: dict[Any, Any], key: Schema | None, value: Schema | None) -> SchemaAndValue:
        convert = self._convert
        if key is not None and value is not None:
            aligned = {convert(key, None, k): convert(value, None, v) for k, v in result.items()}
            return SchemaAndValue(SchemaBuilder.map(key, value).build(), aligned)
        if key is not None:
            aligned = {convert(key, None, k): v for k, v in result.items()}
            return SchemaAndValue(Schema(Type.MAP, key_schema=key), aligned)
        return SchemaAndValue(Schema(Type.MAP), result)
