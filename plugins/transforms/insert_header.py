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
)
from connect.api.values import parse_string
from plugins.transforms._base import BuiltinTransformation
from plugins.transforms._config import parse_config

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


class InsertHeader(BuiltinTransformation[ConnectRecord]):
    """Add a header to each record.

    The literal is typed once, at configure time, the way Connect's
    ``Values.parseString`` does it (``42`` is an INT8, ``true`` a BOOLEAN,
    other text a STRING).
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._header = ""
        self._literal = SchemaAndValue(None, None)

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._header = config.get_string(HEADER) or ""
        # Kafka's Values.parseString gives null for the literal "null": the header is then null
        self._literal = parse_string(config.get_string(VALUE_LITERAL)) or SchemaAndValue(None, None)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        headers = record.headers.duplicate()
        headers.add(self._header, self._literal.value, self._literal.schema)
        return record.new_record(headers=headers)
