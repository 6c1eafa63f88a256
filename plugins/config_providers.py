"""Built-in config providers: ``file`` (properties files), ``env`` (environment) and ``directory``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connect.api import ConfigData, ConfigException, ConfigProvider
from connect.api.config import ConfigDef

__all__ = ["DirectoryConfigProvider", "EnvVarConfigProvider", "FileConfigProvider"]


def _read_properties(path: Path) -> dict[str, str]:
    # a tiny reader for key=value files; the SDK may not import the runtime's properties parser
    from jproperties import Properties

    props = Properties()
    props.load(path.read_bytes(), "utf-8")
    return {k: v.data for k, v in props.items()}


class FileConfigProvider(ConfigProvider):
    """``${file:/path/to/file.properties:key}``: a key of a properties file."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.allowed = [Path(p).resolve() for p in str(configs.get("allowed.paths", "") or "").split(",") if p]

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        file = Path(path)
        if getattr(self, "allowed", None) and not any(file.resolve().is_relative_to(a) for a in self.allowed):
            raise ConfigException(message=f"{path} is not allowed by allowed.paths")
        try:
            data = _read_properties(file)
        except OSError as exc:
            raise ConfigException(message=f"Could not read properties from file {path}: {exc.strerror}") from exc
        return ConfigData({k: v for k, v in data.items() if keys is None or k in keys})

    def config(self) -> ConfigDef:
        return ConfigDef()

    def version(self) -> str:
        return "0.1.0"


class EnvVarConfigProvider(ConfigProvider):
    """``${env:NAME}`` (or ``${env::NAME}``): an environment variable."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        import re

        pattern = configs.get("allowlist.pattern")
        self.allow = re.compile(pattern) if pattern else None

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        if path:
            raise ConfigException(message="EnvVarConfigProvider takes no path: use ${env:NAME}")
        env = {k: v for k, v in os.environ.items() if getattr(self, "allow", None) is None or self.allow.fullmatch(k)}
        return ConfigData({k: v for k, v in env.items() if keys is None or k in keys})

    def version(self) -> str:
        return "0.1.0"


class DirectoryConfigProvider(ConfigProvider):
    """``${directory:/path/to/dir:file}``: the contents of a file in a folder (e.g. a mounted secret)."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        pass

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        folder = Path(path)
        if not folder.is_dir():
            raise ConfigException(message=f"{path} is not a directory")
        names = keys if keys is not None else {p.name for p in folder.iterdir() if p.is_file()}
        data = {}
        for name in names:
            file = folder / name
            if file.is_file():
                data[name] = file.read_text("utf-8")
        return ConfigData(data)

    def version(self) -> str:
        return "0.1.0"
