"""Filter: drop every record it sees; pair it with a predicate to drop only some."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import ConfigDef, ConnectRecord
from plugins.transforms._base import BuiltinTransformation
from plugins.transforms._config import parse_config

__all__ = ["Filter"]

CONFIG_DEF = ConfigDef()


class Filter(BuiltinTransformation[ConnectRecord]):
    """Drops all records, filtering them from subsequent transformations in the chain.

    Intended to be used conditionally, to filter out records matching (or,
    with ``negate``, not matching) a particular predicate.
    """

    CONFIG_DEF = CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parse_config(CONFIG_DEF, configs)

    def apply(self, record: ConnectRecord) -> None:
        return None
