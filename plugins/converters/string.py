"""StringConverter, plus the ``converter.type`` setting every converter here shares.

Text is encoded with ``converter.encoding`` (a Java charset name such as
``UTF-8``, ``ISO-8859-1`` or ``UTF-16``). Like Java, unmappable characters are
written as ``?`` and undecodable bytes read as U+FFFD rather than failing.
"""

from __future__ import annotations

import codecs
import decimal
from collections.abc import Callable, Sequence
from typing import Any, cast

from connect.api import (
    AbstractConfig,
    ConfigException,
    ConfigType,
    ConnectHeaders,
    Importance,
    Schema,
    SchemaAndValue,
    Width,
)
from connect.api.java_numbers import decimal_to_string, double_to_string
from plugins.converters._base import BuiltinConverter, converter_config_def

__all__ = [
    "StringConverter",
]

ENCODING_CONFIG = "converter.encoding"


_CONFIG_DEF = converter_config_def().define(
    ENCODING_CONFIG,
    ConfigType.STRING,
    "UTF-8",
    importance=Importance.HIGH,
    documentation="The Java character set used to turn strings into bytes and back, for example UTF-8.",
    group="Converter",
    order_in_group=0,
    width=Width.MEDIUM,
    display_name="Encoding",
)


def _java_text(value: Any) -> str:
    """What Java's ``toString`` gives for the common value types."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return double_to_string(value)
    if isinstance(value, decimal.Decimal):
        return decimal_to_string(value)
    return str(value)


def _decode_with_bom(data: bytes, big: str, little: str, bom_big: bytes, bom_little: bytes) -> str:
    if data.startswith(bom_big):
        return data[len(bom_big) :].decode(big, "replace")
    if data.startswith(bom_little):
        return data[len(bom_little) :].decode(little, "replace")
    return data.decode(big, "replace")


def _utf8_encode(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate; Java writes '?' for it
        return text.encode("utf-8", "replace")


def _utf8_decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _codec(name: str) -> tuple[Callable[[str], bytes], Callable[[bytes], str]]:
    """Encoder and decoder for a Java charset name, with Java's byte-order rules for UTF-16/32."""
    try:
        python_name = codecs.lookup(name).name
    except LookupError:
        raise ConfigException(ENCODING_CONFIG, name, "Unknown character set") from None
    if python_name == "utf-8":
        return _utf8_encode, _utf8_decode
    if python_name == "utf-16":
        # Java writes a big-endian BOM before any text; Python would use the machine's order
        return (
            lambda text: b"\xfe\xff" + text.encode("utf-16-be", "replace") if text else b"",
            lambda data: _decode_with_bom(data, "utf-16-be", "utf-16-le", b"\xfe\xff", b"\xff\xfe"),
        )
    if python_name == "utf-32":
        # Java's UTF-32 is big-endian and writes no BOM
        return (
            lambda text: text.encode("utf-32-be", "replace"),
            lambda data: _decode_with_bom(
                data, "utf-32-be", "utf-32-le", b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00"
            ),
        )
    return (
        lambda text: text.encode(python_name, "replace"),
        lambda data: data.decode(python_name, "replace"),
    )


class StringConverter(BuiltinConverter):
    """Writes any value as its text; reads bytes back as an optional string."""

    def __init__(self) -> None:
        self._encode: Callable[[str], bytes] = _utf8_encode
        self._decode: Callable[[bytes], str] = _utf8_decode

    CONFIG_DEF = _CONFIG_DEF

    def _configured(self, config: AbstractConfig) -> None:
        self._encode, self._decode = _codec(config.get_string(ENCODING_CONFIG) or "UTF-8")

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: ConnectHeaders | None = None
    ) -> bytes | None:
        if value is None:
            return None
        return self._encode(value if type(value) is str else _java_text(value))

    def to_connect_data(
        self, topic: str, value: bytes | None, headers: ConnectHeaders | None = None
    ) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
        return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, self._decode(bytes(value)))

    def from_connect_batch(self, topic: str, schema: Schema | None, values: Sequence[Any]) -> list[bytes | None]:
        if self._encode is _utf8_encode:
            try:
                return list(map(str.encode, values))  # all text, the usual case: one pass in C
            except (TypeError, UnicodeEncodeError):
                pass  # a None, a non-text value or a lone surrogate: the careful way below
        encode = self._encode
        return [None if v is None else encode(v if type(v) is str else _java_text(v)) for v in values]

    def to_connect_batch(self, topic: str, values: Sequence[bytes | None]) -> tuple[list[Schema | None], list[Any]]:
        n = len(values)
        schemas: list[Schema | None] = [Schema.OPTIONAL_STRING_SCHEMA] * n
        nulls = values.count(None)
        if nulls == n:  # keys, most often: all absent
            return schemas, [None] * n
        if not nulls and self._decode is _utf8_decode:
            try:
                # no None, counted above; all valid UTF-8 bytes: one pass in C
                return schemas, list(map(bytes.decode, cast("Sequence[bytes]", values)))
            except (TypeError, UnicodeDecodeError):
                pass  # another bytes-like type or bad UTF-8: the careful way below
        decode = self._decode
        return schemas, [None if v is None else decode(bytes(v)) for v in values]
