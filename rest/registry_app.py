"""The app ``headrace schema-registry`` serves: only the registry's API, at the root as Confluent serves it,
behind the same guards (Host, body size, media type) and basic authentication as a worker's REST API."""

from __future__ import annotations

import logging

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from connect.schema_registry.api import SchemaRegistry, SchemaRegistryError
from rest.access_log import AccessLogMiddleware, printable
from rest.auth import install_basic_auth
from rest.context import ConfigSource
from rest.errors import registry_status_of
from rest.guards import install_guards
from rest.json_provider import OrjsonProvider
from rest.responses import RestError, error_response, json_response
from rest.routes.schema_registry import MEDIA_TYPE, REGISTRY_KEY
from rest.routes.schema_registry import bp as schema_registry_bp

__all__ = ["create_registry_app"]

log = logging.getLogger(__name__)


def create_registry_app(registry: SchemaRegistry, config: ConfigSource) -> Flask:
    app = Flask("schema_registry")
    app.url_map.strict_slashes = False
    app.url_map.merge_slashes = False
    app.json = OrjsonProvider(app)
    app.extensions[REGISTRY_KEY] = registry
    install_guards(app, config)
    install_basic_auth(app, config, None)
    app.register_blueprint(schema_registry_bp)

    @app.before_request
    def refuse_encoded_slash() -> None:
        # %2F would be decoded into a path separator, so a subject with a slash cannot be named in a URL
        raw = str(request.environ.get("REQUEST_URI") or request.environ.get("RAW_URI") or "")
        if "%2f" in raw.split("?", 1)[0].lower():
            raise SchemaRegistryError(42208, "Invalid subject: a subject name cannot contain '/' (%2F)")

    @app.errorhandler(SchemaRegistryError)
    def registry_error(e: SchemaRegistryError) -> Response:
        response = json_response({"error_code": e.error_code, "message": e.message}, registry_status_of(e))
        response.mimetype = MEDIA_TYPE
        return response

    @app.errorhandler(RestError)
    def rest_error(e: RestError) -> Response:
        return error_response(e.status, e.message)

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException) -> Response:
        code = e.code or 500
        message = f"No REST endpoint at {printable(request.path)}" if code == 404 else (e.description or e.name)
        return error_response(code, message)

    @app.errorhandler(Exception)
    def unexpected_error(e: Exception) -> Response:
        log.error("Unexpected error in schema registry request %s %s", request.method, printable(request.path),
                  exc_info=e)
        return error_response(500, "Internal server error; the schema registry's log has the details")

    wrapped = AccessLogMiddleware(app.wsgi_app)
    app.wsgi_app = wrapped  # type: ignore[method-assign]  # Flask's documented way to add WSGI middleware
    return app
