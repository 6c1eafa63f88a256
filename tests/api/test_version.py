"""A plugin's version comes from the installed distribution that ships its module."""

from __future__ import annotations

import importlib.metadata
import sys
import types

from connect.api import version


def test_a_module_is_versioned_by_the_distribution_that_ships_it() -> None:
    assert version.distribution_version("plugins.file.sink") == importlib.metadata.version("headrace")
    assert version.distribution_version("httpx._client") == importlib.metadata.version("httpx")


def test_a_module_no_distribution_ships_is_unknown(monkeypatch) -> None:
    # a plugin file on plugin.path, say: importable, but no installed distribution lists it
    monkeypatch.setitem(sys.modules, "headrace_test_loose_plugin", types.ModuleType("headrace_test_loose_plugin"))
    assert version.distribution_version("headrace_test_loose_plugin.connector") == version.UNKNOWN_VERSION


def test_the_declared_top_levels_answer_without_reading_every_file_list(monkeypatch) -> None:
    version.distribution_version.cache_clear()
    version._distributions_by_package.cache_clear()

    def every_file_list() -> None:
        raise AssertionError("read every distribution's file list for a module a top_level.txt names")

    monkeypatch.setattr(importlib.metadata, "packages_distributions", every_file_list)
    try:
        assert version.distribution_version("plugins.redis.sink") == importlib.metadata.version("headrace")
    finally:
        version.distribution_version.cache_clear()
