"""Single-message transforms and the predicates that gate them."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from connect.api.config import ConfigDef
from connect.api.records import ConnectRecord

__all__ = ["Predicate", "Transformation"]

R = TypeVar("R", bound=ConnectRecord)


class Transformation(abc.ABC, Generic[R]):
    """Changes one record at a time; returning None drops the record."""

    @abc.abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Configure with the ``transforms.<alias>.*`` settings (prefix removed).

        Called once on the worker's thread before the task starts. Raise ConfigException naming the key.
        """

    @abc.abstractmethod
    def apply(self, record: R) -> R | None:
        """Return the changed record (a new one: records are immutable), or None to drop it.

        Called on the task's thread for every record the predicate lets through. Raise DataException for a
        record it cannot handle: it then follows ``errors.tolerance`` (and, in sinks, the DLQ).
        """

    @abc.abstractmethod
    def config(self) -> ConfigDef:
        """The ConfigDef of the transform's keys, for validation before anything runs; must not raise."""

    def close(self) -> None:  # optional hook
        pass

    def version(self) -> str:
        return "unknown"


class Predicate(abc.ABC, Generic[R]):
    """Decides whether a transform applies to a record."""

    @abc.abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Configure with the ``predicates.<alias>.*`` settings (prefix removed); once, before the task starts."""

    @abc.abstractmethod
    def test(self, record: R) -> bool:
        """Whether the transform gated by this predicate applies to ``record``; on the task's thread."""

    @abc.abstractmethod
    def config(self) -> ConfigDef:
        """The ConfigDef of the predicate's keys, for validation before anything runs; must not raise."""

    def close(self) -> None:  # optional hook
        pass

    def version(self) -> str:
        return "unknown"
