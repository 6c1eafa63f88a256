"""The base of the built-in predicates: their version and their config definition."""

from __future__ import annotations

from typing import ClassVar

from connect.api import ConfigDef, ConnectRecord, Predicate
from connect.api.version import distribution_version

__all__ = ["BuiltinPredicate"]



class BuiltinPredicate(Predicate[ConnectRecord]):
    """A predicate shipped with Headrace; subclasses set ``CONFIG_DEF``."""

    CONFIG_DEF: ClassVar[ConfigDef]

    def version(self) -> str:
        return distribution_version(__name__)

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF
