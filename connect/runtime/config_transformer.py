"""Resolves ``${provider:path:key}`` references in configs with ConfigProviders.

Configs are stored with their references intact; they are resolved only in
memory, when a connector or task starts, so resolved values never land in the
config topic or in REST responses. As in Kafka Connect, a provider exists only
when the worker config names it: ``config.providers=file,env`` and
``config.providers.<name>.class`` (the built-in ``file``, ``env`` and
``directory`` providers need no class), with the provider's own settings under
``config.providers.<name>.param.`` (e.g. ``allowed.paths``). A reference to a
provider that is not configured stays as written.

Every value a provider gave out is remembered so that ``redact`` can blank it
from log lines, status traces and anything else that might echo it.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import traceback
from collections.abc import Mapping, Sequence

from connect.api.config import Password
from connect.api.config_provider import ConfigProvider
from connect.api.errors import ConfigException
from connect.runtime.plugins import PluginRegistry
from connect.runtime.worker_config import WorkerConfig

__all__ = ["ConfigTransformer", "SecretRedactingFilter"]

_REFERENCE = re.compile(r"\$\{([^}:]*?):(?:([^}]*?):)?([^}]*?)\}")
_BUILT_IN = {
    "file": "plugins.config_providers.FileConfigProvider",
    "env": "plugins.config_providers.EnvVarConfigProvider",
    "directory": "plugins.config_providers.DirectoryConfigProvider",
}
# Shorter resolved values are not blanked out of text: "1" or "true" would blank half of every log line, and
# such values are no secrets anyway.
_MIN_REDACTED_LENGTH = 4


class ConfigTransformer:
    def __init__(self, plugins: PluginRegistry, worker_config: WorkerConfig) -> None:
        self.providers: dict[str, ConfigProvider] = {}
        self._resolved: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()
        for name in dict.fromkeys(p for p in worker_config.config_providers if p):
            prefix = f"config.providers.{name}."
            class_name = worker_config.originals.get(prefix + "class") or _BUILT_IN.get(name)
            if not class_name:
                raise ConfigException(prefix + "class", None, f"config provider '{name}' has no class")
            provider = plugins.new_instance(str(class_name), "config_provider", prefix + "class")
            sub = worker_config.originals_with_prefix(prefix + "param.")
            try:
                provider.configure(sub)  # type: ignore[attr-defined]
            except ConfigException as exc:
                raise ConfigException(message=f"config provider '{name}': {exc}") from None
            self.providers[name] = provider  # type: ignore[assignment]

    @staticmethod
    def has_references(value: object) -> bool:
        return isinstance(value, str) and _REFERENCE.search(value) is not None

    def transform(self, config: Mapping[str, str]) -> dict[str, str]:
        """A copy of ``config`` with every resolvable reference replaced; unknown providers stay as written."""
        out = dict(config)
        for key, value in config.items():
            if isinstance(value, str) and "${" in value:
                out[key] = _REFERENCE.sub(functools.partial(self._lookup, key), value)
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
        value = data[key]
        self._remember(value)
        return value

    # --- keeping resolved values out of storage and text ----------------------------------------------------
    def reverse(self, raw_config: Mapping[str, str], task_configs: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
        """Task configs as they may be stored: where the connector passed a resolved value on, put its reference
        back. Kafka Connect does this by key; here a resolved value copied into another key, whole or inside a
        longer string (a URL with a password in it), gets its reference back too, so the task, which resolves
        its config at start, sees the same values."""
        referenced = {k: v for k, v in raw_config.items() if self.has_references(v)}
        pieces: dict[str, str] = {}
        for key, raw in referenced.items():
            for match in _REFERENCE.finditer(raw):
                try:
                    value = self._lookup(key, match)
                except Exception:  # a reference that does not resolve now was not passed on
                    continue
                if value != match.group(0) and len(value) >= _MIN_REDACTED_LENGTH:
                    pieces[value] = match.group(0)
        pattern = re.compile("|".join(re.escape(v) for v in sorted(pieces, key=len, reverse=True))) if pieces else None
        out = []
        for config in task_configs:
            new = dict(config)
            for key, value in config.items():
                if key in referenced:
                    new[key] = referenced[key]
                elif pattern is not None and isinstance(value, str):
                    new[key] = pattern.sub(lambda m: pieces[m.group(0)], value)
            out.append(new)
        return out

    def _remember(self, value: str) -> None:
        if len(value) < _MIN_REDACTED_LENGTH:
            return
        with self._lock:
            if value not in self._resolved:
                self._resolved.add(value)
                # longest first, so a secret that contains another is blanked whole
                self._pattern = re.compile("|".join(re.escape(v) for v in sorted(self._resolved, key=len,
                                                                                   reverse=True)))

    def redact(self, text: str) -> str:
        """``text`` with every value a provider resolved replaced by ``[hidden]``."""
        pattern = self._pattern
        if pattern is None or not text:
            return text
        return pattern.sub(Password.HIDDEN, text)


class SecretRedactingFilter(logging.Filter):
    """Blanks resolved provider values out of every log record passing a handler (message, args, traceback)."""

    def __init__(self, transformer: ConfigTransformer) -> None:
        super().__init__()
        self.transformer = transformer

    def filter(self, record: logging.LogRecord) -> bool:
        if self.transformer._pattern is None:
            return True
        message = record.getMessage()
        redacted = self.transformer.redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            # formatted here, as Formatter.formatException would, so the handler prints the blanked text
            record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        if record.exc_text:
            record.exc_text = self.transformer.redact(record.exc_text)
        return True
