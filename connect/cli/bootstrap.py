"""What the commands share: reading a worker config for a tool, and the schema registry's settings in it.

Every command module may import this one; it imports no command module, so the commands never import each
other to reach a helper.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from connect.api.errors import ConfigException
from connect.cli.exit import CliError
from connect.runtime.properties import load_config_file

__all__ = ["registry_settings", "worker_config_for_tools"]


def worker_config_for_tools(path: str | None, bootstrap: str | None) -> dict[str, str]:
    """The worker config a tool opens the log with: the file's keys (none without a file), ``bootstrap``
    (``--bootstrap-server``) replacing its ``bootstrap.servers``."""
    props: dict[str, str] = {}
    if path:
        try:
            props = load_config_file(path)
        except ConfigException as exc:
            raise CliError(str(exc)) from exc
        if not Path(path).exists():
            raise CliError(f"{path}: no such file")
    if bootstrap:
        props["bootstrap.servers"] = bootstrap
    return props


def registry_settings(props: dict[str, str]) -> tuple[str, Any, int]:
    """(topic, default compatibility level, replication factor) from a worker config's keys."""
    # start-up time: the registry's store brings the topic-backed log with it, which the log tools and a
    # worker without a REST listener never use
    from connect.schema_registry.api import Compatibility, SchemaRegistryError
    from connect.schema_registry.store import DEFAULT_TOPIC

    topic = str(props.get("schema.registry.topic") or DEFAULT_TOPIC).strip()
    try:
        level = Compatibility.parse(props.get("schema.compatibility.level") or "BACKWARD")
    except SchemaRegistryError as exc:
        raise CliError(f"schema.compatibility.level: {exc.message}") from None
    raw = props.get("schema.registry.replication.factor") or props.get("config.storage.replication.factor") or "-1"
    try:
        replication = int(raw)
    except ValueError:
        raise CliError(f"schema.registry.replication.factor: {raw!r} is not a number") from None
    return topic, level, replication
