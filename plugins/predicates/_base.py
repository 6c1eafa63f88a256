"""The base of the built-in predicates: their version and their config definition."""

from __future__ import annotations

from typing import ClassVar

from connect.api import ConfigDef, ConnectRecord, Predicate

__all__ = ["VERSION", "BuiltinPredicate"]

VERSION = "0.1.0"


class BuiltinPredicate(Predicate[ConnectRecord]):
    """A predicate shipped with Headrace; subclasses set ``CONFIG_DEF``."""

    CONFIG_DEF: ClassVar[ConfigDef]

    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF
