"""``/admin/loggers``: this worker's Python logging levels."""

from __future__ import annotations

import logging

from flask import Blueprint, Response, current_app, request

from rest.log_levels import LoggerLevels, parse_level
from rest.parsing import json_object_body
from rest.responses import RestError, empty_response, json_response

__all__ = ["LEVELS_KEY", "bp"]

log = logging.getLogger(__name__)

LEVELS_KEY = "headrace.logger_levels"

bp = Blueprint("loggers", __name__)


def _levels() -> LoggerLevels:
    levels: LoggerLevels = current_app.extensions[LEVELS_KEY]
    return levels


@bp.get("/admin/loggers")
def list_loggers() -> Response:
    return json_response({name: lvl.to_json() for name, lvl in _levels().all_levels().items()})


@bp.get("/admin/loggers/<logger>")
def get_logger(logger: str) -> Response:
    level = _levels().level(logger)
    if level is None:
        raise RestError(404, f"No logger named '{logger}' exists in this worker")
    return json_response(level.to_json())


@bp.put("/admin/loggers/<logger>")
def set_logger_level(logger: str) -> Response:
    scope = request.args.get("scope", "worker").strip().lower()
    if scope not in ("worker", "cluster"):
        log.warning("Unknown scope '%s' in a request to change a logging level; using 'worker'", scope)
        scope = "worker"
    body = json_object_body("The logger level request")
    text = body.get("level")
    if text is None:
        raise RestError(400, "The request body needs \"level\", e.g. {\"level\": \"DEBUG\"}")
    level = parse_level(text) if isinstance(text, str) else None
    if level is None:
        raise RestError(400, f"Invalid log level {text!r}; use one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF")
    changed = _levels().set_level(logger, level)
    log.info("Set level of logger %s and its children to %s (%s)", logger, text, scope)
    if scope == "cluster":
        # Kafka answers a cluster-wide change with 204; levels are per process, so it applies here.
        return empty_response(204)
    return json_response(changed)
