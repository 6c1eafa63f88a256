"""SimpleHeaderConverter: header values as UTF-8 text, schemas inferred when read back.

Writing uses ``Values.convert_to_string``, reading ``Values.parse_string``, so
``42`` reads back as INT8 and ``[1,2]`` as an array, exactly as Kafka does.
Bytes that cannot be parsed come back as BYTES, with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connect.api import ConfigDef, HeaderConverter, Schema, SchemaAndValue
from connect.api.value_text import convert_to_string
from connect.api.values import parse_string
from plugins.converters._base import plugin_version

__all__ = ["SimpleHeaderConverter"]

log = logging.getLogger(__name__)

_NULL = SchemaAndValue(None, None)


class SimpleHeaderConverter(HeaderConverter):
    def version(self) -> str:
        return plugin_version()

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        pass  # nothing to configure

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        if type(value) is str:
            text = value
        else:
            text = convert_to_string(schema, value) or ""
        try:
            return text.encode()
        except UnicodeEncodeError:  # a lone surrogate; Java writes '?' for it
            return text.encode("utf-8", "replace")

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return _NULL
        raw = bytes(value)
        try:
            # like Java's String(bytes, UTF_8): malformed input becomes U+FFFD instead of an error
            parsed = parse_string(raw.decode("utf-8", "replace"))
        except Exception:  # any parse failure keeps the raw bytes, as Kafka does
            log.warning(
                "Header '%s' on topic '%s' could not be read as text; keeping it as raw bytes",
                header_key,
                topic,
                exc_info=True,
            )
            return SchemaAndValue(Schema.BYTES_SCHEMA, raw)
        return parsed if parsed is not None else _NULL
