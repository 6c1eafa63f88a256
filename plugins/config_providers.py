"""Built-in config providers: ``file`` (properties files), ``env`` (environment) and ``directory``.

``file`` and ``directory`` take ``allowed.paths`` (KIP-993): a comma-separated
list of absolute paths; when set, only files under one of them can be read.
Paths are compared after resolving ``..`` and symbolic links, so neither can
step outside an allowed folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connect.api import ConfigData, ConfigException, ConfigProvider
from connect.api.config import ConfigDef
from connect.api.version import distribution_version

__all__ = ["DirectoryConfigProvider", "EnvVarConfigProvider", "FileConfigProvider"]


def _read_properties(path: Path) -> dict[str, str]:
    # a tiny reader for key=value files; the SDK may not import the runtime's properties parser
    from jproperties import Properties

    props = Properties()
    props.load(path.read_bytes(), "utf-8")
    return {k: v.data for k, v in props.items()}


class _AllowedPaths:
    """The ``allowed.paths`` setting: None allows every path."""

    def __init__(self, configs: Mapping[str, Any]) -> None:
        raw = [p.strip() for p in str(configs.get("allowed.paths", "") or "").split(",") if p.strip()]
        for p in raw:
            if not Path(p).is_absolute():
                raise ConfigException("allowed.paths", p, "allowed.paths must be absolute paths")
        self.roots = [Path(p).resolve() for p in raw] or None

    def check(self, path: str) -> Path:
        """``path`` resolved, or ConfigException if it is outside every allowed path."""
        resolved = Path(path).resolve()
        if self.roots is not None and not any(resolved.is_relative_to(root) for root in self.roots):
            raise ConfigException(message=f"{path} is not under any of allowed.paths")
        return resolved


class FileConfigProvider(ConfigProvider):
    """``${file:/path/to/file.properties:key}``: a key of a properties file."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.allowed = _AllowedPaths(configs)

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        file = self.allowed.check(path) if hasattr(self, "allowed") else Path(path)
        try:
            data = _read_properties(file)
        except OSError as exc:
            raise ConfigException(message=f"Could not read properties from file {path}: {exc.strerror}") from None
        except Exception as exc:  # jproperties' ParseError; its text never holds a value
            raise ConfigException(message=f"Could not parse properties file {path}: {type(exc).__name__}") from None
        return ConfigData({k: v for k, v in data.items() if keys is None or k in keys})

    def config(self) -> ConfigDef:
        return ConfigDef()

    def version(self) -> str:
        return distribution_version(__name__)


class EnvVarConfigProvider(ConfigProvider):
    """``${env:NAME}`` (or ``${env::NAME}``): an environment variable."""

    allow: re.Pattern[str] | None = None  # every variable until configure sets allowlist.pattern

    def configure(self, configs: Mapping[str, Any]) -> None:
        pattern = configs.get("allowlist.pattern")
        self.allow = re.compile(pattern) if pattern else None

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        if path:
            raise ConfigException(message="EnvVarConfigProvider takes no path: use ${env:NAME}")
        allow = self.allow
        env = {k: v for k, v in os.environ.items() if allow is None or allow.fullmatch(k)}
        return ConfigData({k: v for k, v in env.items() if keys is None or k in keys})

    def version(self) -> str:
        return distribution_version(__name__)


class DirectoryConfigProvider(ConfigProvider):
    """``${directory:/path/to/dir:file}``: the contents of a file in a folder (e.g. a mounted secret).

    Keys are the names of regular files directly in the folder; a key naming anything else (``../x``, a
    sub-folder) is not found.
    """

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.allowed = _AllowedPaths(configs)

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        folder = self.allowed.check(path) if hasattr(self, "allowed") else Path(path)
        if not folder.is_dir():
            raise ConfigException(message=f"{path} is not a directory")
        files = {p.name: p for p in folder.iterdir() if p.is_file()}
        data = {}
        for name, file in files.items():
            if keys is not None and name not in keys:
                continue
            if hasattr(self, "allowed"):
                self.allowed.check(str(file))  # a symbolic link out of the allowed folders
            data[name] = file.read_text("utf-8")
        return ConfigData(data)

    def version(self) -> str:
        return distribution_version(__name__)
