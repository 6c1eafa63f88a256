"""DropHeaders: remove headers by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import ConfigDef, ConfigType, ConnectHeaders, ConnectRecord, Importance, Transformation
from plugins.transforms._common import VERSION, non_empty_list, parse_config

__all__ = ["DropHeaders"]

HEADERS = "headers"

CONFIG_DEF = ConfigDef().define(
    HEADERS, ConfigType.LIST, validator=non_empty_list(), importance=Importance.HIGH,
    documentation="The name of the headers to be removed.",
)


class DropHeaders(Transformation[ConnectRecord]):
    """Removes one or more headers from each record."""

    def __init__(self) -> None:
        self._headers: frozenset[str] = frozenset()

    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._headers = frozenset(parse_config(CONFIG_DEF, configs).get_list(HEADERS))

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        dropped = self._headers
        kept = ConnectHeaders(header for header in record.headers if header.key not in dropped)
        return record.new_record(headers=kept)
