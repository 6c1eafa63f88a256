"""DropHeaders: remove headers by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import ConfigDef, ConfigType, ConnectHeaders, ConnectRecord, Importance
from plugins.transforms._base import BuiltinTransformation
from plugins.transforms._config import non_empty_list, parse_config

__all__ = ["DropHeaders"]

HEADERS = "headers"

CONFIG_DEF = ConfigDef().define(
    HEADERS, ConfigType.LIST, validator=non_empty_list(), importance=Importance.HIGH,
    documentation="The name of the headers to be removed.",
)


class DropHeaders(BuiltinTransformation[ConnectRecord]):
    """Removes one or more headers from each record."""

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._headers: frozenset[str] = frozenset()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._headers = frozenset(parse_config(CONFIG_DEF, configs).get_list(HEADERS))

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        dropped = self._headers
        kept = ConnectHeaders(header for header in record.headers if header.key not in dropped)
        return record.new_record(headers=kept)
