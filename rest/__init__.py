"""Headrace's REST API: a Flask app over the Herder interface, served by cheroot in the worker.

The names below load on first use: the REST front process (rest.front) imports only the parts it serves
with, and its start-up should not pay for every route of the worker's app.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rest.app import create_app
    from rest.server import RestConfigError, RestServer

__all__ = ["RestConfigError", "RestServer", "create_app"]

_HOMES = {"create_app": "rest.app", "RestConfigError": "rest.server", "RestServer": "rest.server"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'rest' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
