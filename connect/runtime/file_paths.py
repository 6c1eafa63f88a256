"""Where on this worker's filesystem connectors may read and write files.

A plugin declares the config keys that are file paths with the SDK's
``FilePath`` validator. The worker refuses such a path when it resolves
(following symlinks and ``..``, relative to the worker's working directory)

- outside every directory of ``connector.allowed.paths``, when that list is
  set (empty: no restriction, as in Kafka Connect), or
- inside the worker's own state or code, always: the embedded log directory
  (whose config topic holds every connector config), the offsets file, the
  ``plugin.path`` folders, every file or folder a worker setting names (keys
  ending in ``.location``, ``.file``, ``.filename``, ``.dir`` or ``.path``:
  keystores, the REST users file, ...) and every entry of Python's import
  path (a sink writing ``x.pth`` or ``json.py`` there would run code at the
  next start).

A key may also be declared a Hadoop-style URL (``FilePath(url=True)``: only
``file:`` URLs and paths without a scheme are local, read as Hadoop's ``Path``
reads them) or a path below another key's location (``FilePath(under=...)``:
HdfsSparkSink's ``topics.dir`` below ``hdfs.url``, checked, default included,
when that location is local).

The check runs when a config is validated (REST create/validate, connector
files) and again just before each task starts, since a path may have become a
symlink in between.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigKey, ConfigType, FilePath, parse_type
from connect.api.errors import ConfigException
from connect.runtime.config_encryption import default_key_file
from connect.runtime.worker_config import WorkerConfig
from connect.runtime.worker_identity import identity_file

__all__ = ["ALLOWED_PATHS_CONFIG", "FilePathPolicy"]

ALLOWED_PATHS_CONFIG = "connector.allowed.paths"
# worker settings whose value is a file or folder of the worker's own (keystores, users files, key files)
_WORKER_FILE_SUFFIXES = (".location", ".file", ".filename", ".dir", ".path")
_WORKER_FILE_KEYS = ("rest.basic.auth.jaas.config",)


def _real(path: str) -> str:
    return os.path.realpath(path or ".")


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


class FilePathPolicy:
    """The allow-list and the always-protected locations of one worker."""

    def __init__(self, allowed: Iterable[str] = (), protected: Mapping[str, str] | None = None,
                 protect_import_path: bool = True) -> None:
        self.allowed: tuple[str, ...] = tuple(_real(p) for p in allowed if p.strip())
        # real path -> what it is, for the error message
        self._protected = {_real(p): what for p, what in (protected or {}).items() if p}
        self._protect_import_path = protect_import_path

    @classmethod
    def for_worker(cls, config: WorkerConfig | None) -> FilePathPolicy:
        """The policy ``config`` sets; without a worker config only Python's import path is protected."""
        if config is None:
            return cls()
        protected: dict[str, str] = {}
        for key, value in config.originals.items():
            if (key.endswith(_WORKER_FILE_SUFFIXES) or key in _WORKER_FILE_KEYS) and isinstance(value, str):
                # a *.path setting may list several folders, as plugin.path does
                for entry in parse_type(key, value, ConfigType.LIST) if key.endswith(".path") else [value]:
                    if entry.strip():
                        protected[entry.strip()] = f"a location of the worker's own ({key})"
        protected[str(config.get("embedded.log.dir"))] = "the worker's embedded log directory"
        offsets = config.values.get("offset.storage.file.filename")
        if offsets:
            protected[str(offsets)] = "the worker's offsets file"
            protected[f"{offsets}.tmp"] = "the worker's offsets file"
            protected[str(default_key_file(offsets))] = "the worker's config encryption key"
            protected[str(identity_file(offsets))] = "the worker's id file"
        for folder in config.get_list("plugin.path"):
            protected[folder] = "a plugin.path folder"
        return cls(config.get_list(ALLOWED_PATHS_CONFIG), protected)

    def protected_locations(self) -> dict[str, str]:
        """Every location no connector may use, resolved now (the import path can grow at run time)."""
        out = dict(self._protected)
        if self._protect_import_path:
            for entry in sys.path:  # '' is the working directory
                out.setdefault(_real(entry), "Python's import path")
        return out

    def refusal(self, path: str) -> str | None:
        """Why a connector may not use ``path``, or None when it may."""
        real = _real(path)
        for location, what in self.protected_locations().items():
            if _inside(real, location):
                return (f"{path} resolves to {real}, inside {what} ({location}); "
                        "connectors may never read or write there")
        if self.allowed and not any(_inside(real, directory) for directory in self.allowed):
            return (f"{path} resolves to {real}, outside the directories this worker allows connectors to use "
                    f"({ALLOWED_PATHS_CONFIG}: {', '.join(self.allowed)})")
        return None

    def check(self, definition: ConfigDef, config: Mapping[str, Any]) -> list[ConfigException]:
        """One ConfigException per key of ``definition`` declared a FilePath whose value in ``config`` is refused."""
        declared = {key.name: (key, found) for key in definition.config_keys.values()
                    if (found := FilePath.declared_by(key.validator)) is not None}
        refused: dict[str, ConfigException] = {}
        # locations first, then the paths below them: one error for a refused hdfs.url, not one per folder
        for key, path in sorted(declared.values(), key=lambda entry: entry[1].under is not None):
            value = self._value(key, config, path.under is not None)
            if not value:
                continue  # no file (stdin/stdout), or a value its validator already refuses
            base = None
            if path.under is not None:
                under = definition.config_keys.get(path.under)
                base = self._value(under, config, True) if under is not None else None
                if not base or path.under in refused:
                    continue
            local = path.local_path(value, base)
            if local is None:
                continue  # another file system's URL (hdfs://...)
            reason = self.refusal(local)
            if reason is not None:
                refused[key.name] = ConfigException(key.name, value, reason)
        return list(refused.values())

    @staticmethod
    def _value(key: ConfigKey, config: Mapping[str, Any], with_default: bool) -> str | None:
        """``key``'s value in ``config``, stripped as the plugin's own parsing of a STRING does; its default too
        when ``with_default`` (a location below another key's is used even when not given)."""
        value = config.get(key.name)
        if value is None and with_default:
            value = key.default_value
        if not isinstance(value, str):
            return None
        value = value.strip()
        return value if value and "\x00" not in value else None
