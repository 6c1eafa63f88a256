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
    def configure(self, configs: Mapping[str, Any]) -> None: ...

    @abc.abstractmethod
    def apply(self, record: R) -> R | None: ...

    @abc.abstractmethod
    def config(self) -> ConfigDef: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        pass

    def version(self) -> str:
        return "unknown"


class Predicate(abc.ABC, Generic[R]):
    """Decides whether a transform applies to a record."""

    @abc.abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None: ...

    @abc.abstractmethod
    def test(self, record: R) -> bool: ...

    @abc.abstractmethod
    def config(self) -> ConfigDef: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        pass

    def version(self) -> str:
        return "unknown"
