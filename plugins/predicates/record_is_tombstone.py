"""RecordIsTombstone: true for records whose value is null."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import AbstractConfig, ConfigDef, ConnectRecord
from plugins.predicates._base import BuiltinPredicate

__all__ = ["RecordIsTombstone"]

CONFIG_DEF = ConfigDef()


class RecordIsTombstone(BuiltinPredicate):
    """A predicate which is true for records which are tombstones (i.e. have null value)."""

    CONFIG_DEF = CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        AbstractConfig(CONFIG_DEF, configs)

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None

    def __repr__(self) -> str:
        return "RecordIsTombstone{}"
