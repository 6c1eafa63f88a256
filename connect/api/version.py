"""The version a plugin reports: that of the installed distribution that ships its module.

The distribution's metadata (``pyproject.toml``'s ``version``) is the one
place a version is written; plugins ask for it by module name instead of
restating it.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Mapping

__all__ = ["UNKNOWN_VERSION", "distribution_version"]

UNKNOWN_VERSION = "unknown"


@functools.cache
def _distributions_by_package() -> Mapping[str, list[str]]:
    # scans every installed distribution's file list once: call it only when a version is asked for
    return importlib.metadata.packages_distributions()


@functools.cache
def distribution_version(module_name: str) -> str:
    """The version of the distribution that installed the top-level package of ``module_name``.

    ``"unknown"`` for a module no installed distribution ships (a plugin file on ``plugin.path``, say).
    Call it when the version is needed (``version()``), not at import: the first call reads the
    installed distributions' metadata.
    """
    top = module_name.split(".", 1)[0]
    for dist in _distributions_by_package().get(top, ()):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return UNKNOWN_VERSION
