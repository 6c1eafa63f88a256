"""Filter: drop every record it sees; pair it with a predicate to drop only some."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import ConfigDef, ConnectRecord, Transformation
from plugins.transforms._common import VERSION, parse_config

__all__ = ["Filter"]

CONFIG_DEF = ConfigDef()


class Filter(Transformation[ConnectRecord]):
    """Drops all records, filtering them from subsequent transformations in the chain.

    Intended to be used conditionally, to filter out records matching (or,
    with ``negate``, not matching) a particular predicate.
    """

    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parse_config(CONFIG_DEF, configs)

    def apply(self, record: ConnectRecord) -> None:
        return None
