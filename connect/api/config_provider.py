"""Config providers resolve ``${provider:path:key}`` references in configs at task start."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["ConfigData", "ConfigProvider"]


@attrs.frozen
class ConfigData:
    data: Mapping[str, str]
    ttl_ms: int | None = None


class ConfigProvider(abc.ABC):
    @abc.abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None: ...

    @abc.abstractmethod
    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        """The values at ``path``; all of them when ``keys`` is None."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
