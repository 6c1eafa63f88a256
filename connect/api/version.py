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
def _declared_top_levels() -> Mapping[str, list[importlib.metadata.Distribution]]:
    """Top-level package -> distributions, from the ``top_level.txt`` files that setuptools writes: a few
    milliseconds, where reading every distribution's file list takes a quarter of a second."""
    found: dict[str, list[importlib.metadata.Distribution]] = {}
    for dist in importlib.metadata.distributions():
        for top in (dist.read_text("top_level.txt") or "").split():
            found.setdefault(top, []).append(dist)
    return found


@functools.cache
def _distributions_by_package() -> Mapping[str, list[str]]:
    # scans every installed distribution's file list once: only for a module no top_level.txt names
    return importlib.metadata.packages_distributions()


@functools.cache
def distribution_version(module_name: str) -> str:
    """The version of the distribution that installed the top-level package of ``module_name``.

    ``"unknown"`` for a module no installed distribution ships (a plugin file on ``plugin.path``, say).
    Call it when the version is needed (``version()``), not at import: the first call reads the
    installed distributions' metadata.
    """
    top = module_name.split(".", 1)[0]
    declared = _declared_top_levels().get(top)
    if declared:
        return declared[0].version
    for dist in _distributions_by_package().get(top) or []:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return UNKNOWN_VERSION
