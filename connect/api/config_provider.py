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
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Configure with ``config.providers.<name>.param.*`` (prefix removed), e.g. ``allowed.paths``.

        Called once when the worker starts. Raise ConfigException naming the key for a bad setting.
        """

    @abc.abstractmethod
    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        """The values at ``path``; all of them when ``keys`` is None.

        Called on a worker thread when a connector or task starts, to resolve ``${provider:path:key}``
        references in memory. Raise ConfigException when ``path`` is not allowed or cannot be read; the
        message must not contain the secret values.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
