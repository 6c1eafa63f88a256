"""Typed values from literal text, as Kafka Connect's ``Values.parseString`` infers them.

InsertHeader's ``value.literal`` goes through this: ``1234`` becomes an
INT16, ``true`` a BOOLEAN, ``null`` a null, ``[-3, 0, 5]`` an ARRAY of INT8,
an ISO-8601 ``2024-01-31`` a Date, and anything that is not a complete
literal stays the original STRING.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

from connect.api import Date, Decimal, Schema, SchemaAndValue, SchemaBuilder, Time, Timestamp, Type

__all__ = ["parse_literal"]

_INTEGER_SCHEMAS = (
    (Schema.INT8_SCHEMA, -(2**7), 2**7 - 1),
    (Schema.INT16_SCHEMA, -(2**15), 2**15 - 1),
    (Schema.INT32_SCHEMA, -(2**31), 2**31 - 1),
    (Schema.INT64_SCHEMA, -(2**63), 2**63 - 1),
)
_FLOAT32_MAX = 3.4028234663852886e38

# Numbers as java.math.BigDecimal reads them, starting with a digit or a sign as Connect requires.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME = re.compile(r"\d{2}:\d{2}:\d{2}\.\d{3}Z")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
_WIDENING = {Type.INT8: 0, Type.INT16: 1, Type.INT32: 2, Type.INT64: 3}


class _Unparseable(Exception):
    pass


def parse_literal(text: str | None) -> SchemaAndValue:
    """The schema and value ``text`` denotes; plain text comes back as an optional-free STRING."""
    if text is None:
        return SchemaAndValue(None, None)
    stripped = text.strip()
    if not stripped:
        return SchemaAndValue(Schema.STRING_SCHEMA, text)
    if stripped[0] in "[{":
        try:
            parser = _Parser(stripped)
            result = parser.value()
            parser.skip_space()
            if parser.at_end():
                return result
        except _Unparseable:
            pass
        return SchemaAndValue(Schema.STRING_SCHEMA, text)
    scalar = _scalar(stripped)
    return scalar if scalar is not None else SchemaAndValue(Schema.STRING_SCHEMA, text)


def _scalar(token: str) -> SchemaAndValue | None:
    if token == "true":
        return SchemaAndValue(Schema.BOOLEAN_SCHEMA, True)
    if token == "false":
        return SchemaAndValue(Schema.BOOLEAN_SCHEMA, False)
    if token == "null":
        return SchemaAndValue(None, None)
    temporal = _temporal(token)
    if temporal is not None:
        return temporal
    if _NUMBER.fullmatch(token) and token[0] != ".":
        return _number(token)
    return None


def _temporal(token: str) -> SchemaAndValue | None:
    try:
        if _TIMESTAMP.fullmatch(token):
            moment = dt.datetime.strptime(token, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
            return SchemaAndValue(Timestamp.SCHEMA, moment)
        if _DATE.fullmatch(token):
            return SchemaAndValue(Date.SCHEMA, dt.date.fromisoformat(token))
        if _TIME.fullmatch(token):
            return SchemaAndValue(Time.SCHEMA, dt.time.fromisoformat(token[:-1]))
    except ValueError:
        return None
    return None


def _number(token: str) -> SchemaAndValue:
    number = decimal.Decimal(token)
    if number == number.to_integral_value():
        integral = int(number)
        for schema, lo, hi in _INTEGER_SCHEMAS:
            if lo <= integral <= hi:
                return SchemaAndValue(schema, integral)
        return SchemaAndValue(Decimal.schema(0), decimal.Decimal(integral))
    as_float = float(number)
    if abs(as_float) <= _FLOAT32_MAX:
        return SchemaAndValue(Schema.FLOAT32_SCHEMA, as_float)
    if abs(as_float) != float("inf"):
        return SchemaAndValue(Schema.FLOAT64_SCHEMA, as_float)
    exponent = number.as_tuple().exponent
    scale = -exponent if isinstance(exponent, int) else 0
    return SchemaAndValue(Decimal.schema(scale), number)


def _common_schema(schemas: list[Schema | None]) -> Schema | None:
    """The schema all elements share, widening integers and floats as Connect does; None if mixed."""
    known = [s for s in schemas if s is not None]
    if not known or len(known) != len(schemas):
        return None
    result = known[0]
    for schema in known[1:]:
        if schema == result:
            continue
        if schema.type in _WIDENING and result.type in _WIDENING and not schema.name and not result.name:
            result = schema if _WIDENING[schema.type] > _WIDENING[result.type] else result
        elif {schema.type, result.type} == {Type.FLOAT32, Type.FLOAT64}:
            result = Schema.FLOAT64_SCHEMA
        else:
            return None
    return result


class _Parser:
    """Recursive descent over the embedded (JSON-like) syntax of arrays and maps."""

    __slots__ = ("text", "pos")

    _TOKEN_END = re.compile(r"[\s,\]}:]")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _consume(self, char: str) -> bool:
        self.skip_space()
        if self.text.startswith(char, self.pos):
            self.pos += len(char)
            return True
        return False

    def value(self) -> SchemaAndValue:
        self.skip_space()
        if self.at_end():
            raise _Unparseable
        if self._consume("["):
            return self._array()
        if self._consume("{"):
            return self._map()
        if self._consume('"'):
            return SchemaAndValue(Schema.STRING_SCHEMA, self._quoted())
        return self._embedded_scalar()

    def _embedded_scalar(self) -> SchemaAndValue:
        # Times contain colons, which otherwise separate map keys from values.
        for pattern in (_TIMESTAMP, _TIME):
            match = pattern.match(self.text, self.pos)
            if match:
                self.pos = match.end()
                result = _temporal(match.group())
                if result is None:
                    raise _Unparseable
                return result
        end = self._TOKEN_END.search(self.text, self.pos)
        stop = end.start() if end else len(self.text)
        token = self.text[self.pos : stop]
        result = _scalar(token)
        if result is None:
            # Unquoted text inside an array or map is not a literal; the whole value stays a string.
            raise _Unparseable
        self.pos = stop
        return result

    def _quoted(self) -> str:
        out: list[str] = []
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            self.pos += 1
            if ch == "\\" and self.pos < len(self.text):
                out.append(self.text[self.pos])
                self.pos += 1
            elif ch == '"':
                return "".join(out)
            else:
                out.append(ch)
        raise _Unparseable

    def _array(self) -> SchemaAndValue:
        items: list[Any] = []
        schemas: list[Schema | None] = []
        if self._consume("]"):
            return SchemaAndValue(None, items)
        while True:
            element = self.value()
            items.append(element.value)
            schemas.append(element.schema)
            if self._consume("]"):
                break
            if not self._consume(","):
                raise _Unparseable
        common = _common_schema(schemas)
        return SchemaAndValue(SchemaBuilder.array(common).build() if common else None, items)

    def _map(self) -> SchemaAndValue:
        entries: dict[Any, Any] = {}
        key_schemas: list[Schema | None] = []
        value_schemas: list[Schema | None] = []
        if self._consume("}"):
            return SchemaAndValue(None, entries)
        while True:
            key = self.value()
            if not self._consume(":"):
                raise _Unparseable
            item = self.value()
            try:
                entries[key.value] = item.value
            except TypeError:
                raise _Unparseable from None
            key_schemas.append(key.schema)
            value_schemas.append(item.schema)
            if self._consume("}"):
                break
            if not self._consume(","):
                raise _Unparseable
        key_schema = _common_schema(key_schemas)
        value_schema = _common_schema(value_schemas)
        if key_schema is None or value_schema is None:
            return SchemaAndValue(None, entries)
        return SchemaAndValue(SchemaBuilder.map(key_schema, value_schema).build(), entries)
