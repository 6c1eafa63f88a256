"""``/connector-plugins``: installed plugins, their config definitions, and config validation."""

from __future__ import annotations

from flask import Blueprint, Response

from rest.context import current_herder
from rest.parsing import bool_param, json_object_body, string_map
from rest.responses import RestError, json_response

__all__ = ["bp", "plugin_names_match"]

bp = Blueprint("plugins", __name__)

_CONNECTOR_SUFFIX = "Connector"


def _alias_stem(name: str) -> str:
    # FileStreamSourceConnector and its alias FileStreamSource both reduce to FileStreamSource.
    if name.endswith(_CONNECTOR_SUFFIX) and len(name) > len(_CONNECTOR_SUFFIX):
        return name[: -len(_CONNECTOR_SUFFIX)]
    return name


def plugin_names_match(connector_class: str, requested: str) -> bool:
    """Whether ``connector.class`` names the plugin in the URL, judged as Kafka Connect does: by
    name only, so a full class name matches its simple name and its alias."""
    return _alias_stem(connector_class).endswith(_alias_stem(requested))


@bp.get("/connector-plugins")
def list_plugins() -> Response:
    connectors_only = bool_param("connectorsOnly", True)
    plugins = current_herder().connector_plugins(connectors_only=connectors_only)
    return json_response([p.to_json() for p in plugins])


@bp.get("/connector-plugins/<plugin>/config")
def plugin_config(plugin: str) -> Response:
    return json_response(current_herder().connector_plugin_config(plugin))


@bp.put("/connector-plugins/<plugin>/config/validate")
def validate_config(plugin: str) -> Response:
    config = string_map(json_object_body("The connector config"), "The connector config", allow_null=False)
    included = config.get("connector.class")
    if included is not None and not plugin_names_match(included, plugin):
        raise RestError(
            400, f"The connector.class in the request ({included}) does not match the plugin in the URL ({plugin})"
        )
    # 200 even when the config has errors: the body's error_count and per-key errors carry them.
    return json_response(current_herder().validate_connector_config(config))
