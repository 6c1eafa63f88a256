"""Resolves ``${provider:path:key}`` references in configs with ConfigProviders.

Configs are stored with their references intact; they are resolved only when
a connector or task starts, so secrets never land in the config topic or in
REST responses. ``file``, ``env`` and ``directory`` are available without
declaring them (Kafka Connect needs ``config.providers``); more can be added
with ``config.providers=<name>`` and ``config.providers.<name>.class``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from connect.api.config_provider import ConfigProvider
from connect.api.errors import ConfigException
from connect.runtime.plugins import PluginRegistry

__all__ = ["ConfigTransformer"]

_REFERENCE = re.compile(r"\$\{([^}:]*?):(?:([^}]*?):)?([^}]*?)\}")
_BUILT_IN = {
    "file": "plugins.config_providers.FileConfigProvider",
    "env": "plugins.config_providers.EnvVarConfigProvider",
    "directory": "plugins.config_providers.DirectoryConfigProvider",
}


class ConfigTransformer:
    def __init__(self, plugins: PluginRegistry, worker_config: Mapping[str, Any]) -> None:
        self.providers: dict[str, ConfigProvider] = {}
        declared = [p.strip() for p in str(worker_config.get("config.providers", "") or "").split(",") if p.strip()]
        for name in set(_BUILT_IN) | set(declared):
            prefix = f"config.providers.{name}."
            class_name = worker_config.get(prefix + "class") or _BUILT_IN.get(name)
            if not class_name:
                raise ConfigException(prefix + "class", None, f"config provider {name} has no class")
            provider = plugins.new_instance(str(class_name), "config_provider", prefix + "class")
            sub = {k[len(prefix + "param."):]: v for k, v in worker_config.items() if k.startswith(prefix + "param.")}
            provider.configure(sub)  # type: ignore[attr-defined]
            self.providers[name] = provider  # type: ignore[assignment]

    def has_references(self, config: Mapping[str, str]) -> bool:
        return any(isinstance(v, str) and _REFERENCE.search(v) for v in config.values())

    def transform(self, config: Mapping[str, str]) -> dict[str, str]:
        """A copy of ``config`` with every resolvable reference replaced; unknown providers stay as written."""
        out = dict(config)
        for key, value in config.items():
            if isinstance(value, str) and "${" in value:
                out[key] = _REFERENCE.sub(lambda m, k=key: self._lookup(k, m), value)
        return out

    def _lookup(self, config_key: str, match: re.Match[str]) -> str:
        provider_name, path, key = match.group(1), match.group(2) or "", match.group(3)
        provider = self.providers.get(provider_name)
        if provider is None:
            return match.group(0)
        data = provider.get(path, {key}).data
        if key not in data:
            raise ConfigException(config_key, None,
                                  f"config provider '{provider_name}' has no key '{key}'" + (f" at {path}" if path else ""))
        return data[key]
