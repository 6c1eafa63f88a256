"""Where routes find the herder and the worker config of the app serving the current request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from flask import Flask, current_app

if TYPE_CHECKING:
    from connect.runtime.herder import Herder

__all__ = ["ConfigSource", "HERDER_KEY", "CONFIG_KEY", "current_herder", "install", "setting", "setting_bool"]

HERDER_KEY = "headrace.herder"
CONFIG_KEY = "headrace.worker_config"


class ConfigSource(Protocol):
    """A worker config: a plain mapping or connect.runtime's WorkerConfig (both have ``get``)."""

    def get(self, key: str, /) -> Any: ...


def install(app: Flask, herder: Herder, worker_config: ConfigSource) -> None:
    app.extensions[HERDER_KEY] = herder
    app.extensions[CONFIG_KEY] = worker_config


def current_herder() -> Herder:
    herder: Herder = current_app.extensions[HERDER_KEY]
    return herder


def setting(config: ConfigSource, key: str, default: Any = None) -> Any:
    """``config[key]``, or ``default`` when unset or unknown to the config's definition.

    WorkerConfig.get raises for keys it does not define, while a dict answers None; both mean
    "not configured" here.
    """
    try:
        value = config.get(key)
    except Exception:
        return default
    return default if value is None else value


def setting_bool(config: ConfigSource, key: str, default: bool) -> bool:
    value = setting(config, key, default)
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)
