"""Setting: a typed, read-only attribute of an AbstractConfig subclass naming one key.

Config classes declare what they read as ``tasks_max = Setting[int]("tasks.max")``;
the key's type, default, validator and documentation stay in the ConfigDef.
"""

from __future__ import annotations

from typing import Generic, TypeVar, overload

from connect.api.config import AbstractConfig

__all__ = ["Setting"]


T = TypeVar("T")


class Setting(Generic[T]):
    """Reads one key's parsed value from the AbstractConfig it is an attribute of."""

    def __init__(self, key: str) -> None:
        self.key = key

    @overload
    def __get__(self, config: None, owner: type) -> Setting[T]: ...

    @overload
    def __get__(self, config: AbstractConfig, owner: type) -> T: ...

    def __get__(self, config: AbstractConfig | None, owner: type) -> Setting[T] | T:
        if config is None:
            return self
        return config.get(self.key)  # type: ignore[no-any-return]
