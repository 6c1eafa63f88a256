"""InsertHeader: add a header with a fixed, typed value to every record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Importance,
    NonNullValidator,
    SchemaAndValue,
    Transformation,
)
from plugins.transforms._common import VERSION, parse_config
from plugins.transforms._literals import parse_literal

__all__ = ["InsertHeader"]

HEADER = "header"
VALUE_LITERAL = "value.literal"

CONFIG_DEF = (
    ConfigDef()
    .define(HEADER, ConfigType.STRING, validator=NonNullValidator(), importance=Importance.HIGH,
            documentation="The name of the header.")
    .define(VALUE_LITERAL, ConfigType.STRING, validator=NonNullValidator(), importance=Importance.HIGH,
            documentation="The literal value that is to be set as the header value on all records.")
)


class InsertHeader(Transformation[ConnectRecord]):
    """Add a header to each record.

    The literal is typed once, at configure time, the way Connect's
    ``Values.parseString`` does it (``42`` is an INT8, ``true`` a BOOLEAN,
    other text a STRING).
    """

    def __init__(self) -> None:
        self._header = ""
        self._literal = SchemaAndValue(None, None)

    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._header = config.get_string(HEADER) or ""
        self._literal = parse_literal(config.get_string(VALUE_LITERAL))

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        headers = record.headers.duplicate()
        headers.add(self._header, self._literal.value, self._literal.schema)
        return record.new_record(headers=headers)
