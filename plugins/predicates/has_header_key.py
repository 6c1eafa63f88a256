"""HasHeaderKey: true for records with at least one header of a given name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Importance,
    NonEmptyString,
)
from plugins.predicates._base import BuiltinPredicate

__all__ = ["HasHeaderKey"]

NAME = "name"

CONFIG_DEF = ConfigDef().define(
    NAME, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.MEDIUM,
    documentation="The header name.",
)


class HasHeaderKey(BuiltinPredicate):
    """A predicate which is true for records with at least one header with the configured name."""

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._name = ""

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._name = AbstractConfig(CONFIG_DEF, configs).get_string(NAME) or ""

    def test(self, record: ConnectRecord) -> bool:
        return record.headers.last_with_name(self._name) is not None

    def __repr__(self) -> str:
        return f"HasHeaderKey{{name='{self._name}'}}"
