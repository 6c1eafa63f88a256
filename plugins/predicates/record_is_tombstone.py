"""RecordIsTombstone: true for records whose value is null."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import AbstractConfig, ConfigDef, ConnectRecord, Predicate
from plugins.predicates._common import VERSION

__all__ = ["RecordIsTombstone"]

CONFIG_DEF = ConfigDef()


class RecordIsTombstone(Predicate[ConnectRecord]):
    """A predicate which is true for records which are tombstones (i.e. have null value)."""

    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        AbstractConfig(CONFIG_DEF, configs)

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None

    def __repr__(self) -> str:
        return "RecordIsTombstone{}"
