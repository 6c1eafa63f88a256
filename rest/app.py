"""The Flask app factory: routes over a Herder, and JSON for every outcome, errors included."""

from __future__ import annotations

import logging

from flask import Flask, Response, current_app, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound, RequestEntityTooLarge

from connect.api.http_listener import RequestTimedOut
from connect.runtime.herder import Herder, HerderError, NotLeaderError
from connect.schema_registry.api import SchemaRegistry
from rest.access_log import AccessLogMiddleware, printable
from rest.auth import install_basic_auth
from rest.context import ConfigSource, current_herder, install, setting
from rest.cors import install_cors
from rest.errors import status_of
from rest.forwarding import forward_to_leader
from rest.guards import install_guards
from rest.json_provider import OrjsonProvider
from rest.log_levels import LoggerLevels
from rest.readiness import SCHEMA_REGISTRY_PREFIX, answers_while_starting
from rest.reason_phrases import StandardReasonPhrases
from rest.responses import INTERNAL_ERROR_MESSAGE, RestError, error_response, starting_response
from rest.routes import BLUEPRINTS
from rest.routes.loggers import LEVELS_KEY
from rest.routes.schema_registry import REGISTRY_KEY
from rest.routes.schema_registry import bp as schema_registry_bp
from rest.url_rules import LazyBuildRule

__all__ = ["create_app", "starting_response"]

log = logging.getLogger(__name__)


def _http_error(e: HTTPException) -> Response:
    code = e.code or 500
    if isinstance(e, NotFound):
        message = f"No REST endpoint at {request.path}"
    elif isinstance(e, RequestEntityTooLarge) and e.description == RequestEntityTooLarge.description:
        limit = current_app.config["MAX_CONTENT_LENGTH"] - 1  # rest.guards sets one byte more
        message = f"The request body is larger than the {limit} bytes this worker accepts (rest.request.max.bytes)"
    elif isinstance(e, MethodNotAllowed):
        allowed = ", ".join(sorted(e.valid_methods or []))
        message = f"{request.method} is not supported on {request.path}; allowed: {allowed}"
    else:
        message = f"{e.name}: {e.description}" if e.description else e.name
    response = error_response(code, message)
    for name, value in e.get_headers():
        # Keep informative headers such as Allow on a 405; the body and its type are ours.
        if name.lower() != "content-type":
            response.headers[name] = value
    return response


def _register_error_handlers(app: Flask) -> None:
    @app.errorhandler(HerderError)
    def herder_error(e: HerderError) -> Response:
        if not isinstance(e, NotLeaderError):
            return error_response(status_of(e), e.message)
        try:
            return forward_to_leader(e)
        except RestError as refused:  # raised inside an error handler, so Flask would not map it
            return error_response(refused.status, refused.message)

    @app.errorhandler(RestError)
    def rest_error(e: RestError) -> Response:
        return error_response(e.status, e.message)

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException) -> Response:
        return _http_error(e)

    @app.errorhandler(RequestTimedOut)
    def request_timed_out(e: RequestTimedOut) -> Response:
        # a body the listener could not read ahead (rest/server.py), still arriving at its deadline: the
        # client's doing, not the worker's
        response = error_response(408, "The request's body did not arrive within rest.request.body.timeout.ms")
        response.headers["Connection"] = "close"
        return response

    @app.errorhandler(Exception)
    def unexpected_error(e: Exception) -> Response:
        # The trace stays in the worker log: it can name hosts, files and secrets.
        log.error("Unexpected error in REST request %s %s", request.method, printable(request.path), exc_info=e)
        return error_response(500, INTERNAL_ERROR_MESSAGE)


def create_app(herder: Herder, worker_config: ConfigSource, internal_key: bytes | None = None,
               schema_registry: SchemaRegistry | None = None) -> Flask:
    """A Flask app serving Kafka Connect's REST API over ``herder``.

    ``worker_config`` is a WorkerConfig or a plain mapping; the app reads ``listeners`` and
    ``rest.advertised.host.name``/``rest.allowed.hosts`` (Host check), ``rest.request.max.bytes``,
    ``rest.extension.classes`` (basic authentication), ``access.control.allow.origin``/``.methods``
    and ``topic.tracking.enable``/``.allow.reset``. ``internal_key`` is the key the workers sign
    their requests to each other with (rest.auth.sign_internal_request); None: no such requests.
    ``schema_registry``: served under ``/schema-registry/`` (Confluent's API) when given.
    Raises RestConfigError for a setting it cannot use.
    """
    app = Flask("rest")
    app.url_rule_class = LazyBuildRule
    # Jersey serves /connectors/ like /connectors and never redirects; neither should we.
    app.url_map.strict_slashes = False
    app.url_map.merge_slashes = False
    app.json = OrjsonProvider(app)
    install(app, herder, worker_config)
    app.extensions[LEVELS_KEY] = LoggerLevels()
    # Guards, then authentication, run before anything else (CORS preflights included).
    install_guards(app, worker_config)
    install_basic_auth(app, worker_config, internal_key)
    install_cors(
        app,
        str(setting(worker_config, "access.control.allow.origin", "")),
        str(setting(worker_config, "access.control.allow.methods", "")),
    )

    @app.before_request
    def refuse_while_starting() -> Response | None:
        # As Kafka Connect 4.1: nothing but the health probe answers before the worker can take requests, so a
        # client that waits for GET / (or any read) and then writes is never refused; reads would also show a
        # view of the config the worker has not finished reading
        if answers_while_starting(request.path) or current_herder().is_ready():
            return None
        return starting_response()

    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    if schema_registry is not None:
        app.extensions[REGISTRY_KEY] = schema_registry
        app.register_blueprint(schema_registry_bp, url_prefix=SCHEMA_REGISTRY_PREFIX)
    _register_error_handlers(app)

    @app.before_request
    def refuse_encoded_slash() -> None:
        # Like Jetty under Kafka Connect: %2F would be decoded into a path separator and route the
        # request somewhere the client did not mean, so names containing "/" are not addressable.
        raw = str(request.environ.get("REQUEST_URI") or request.environ.get("RAW_URI") or "")
        if "%2f" in raw.split("?", 1)[0].lower():
            raise RestError(400, "The URL path contains an encoded slash (%2F), which is not allowed")

    @app.after_request
    def no_html(response: Response) -> Response:
        # Flask's automatic OPTIONS and HEAD answers default to text/html; an empty body has no type.
        if response.mimetype == "text/html" and not response.get_data():
            response.headers.pop("Content-Type", None)
        return response

    wrapped = AccessLogMiddleware(StandardReasonPhrases(app.wsgi_app))
    app.wsgi_app = wrapped  # type: ignore[method-assign]  # Flask's documented way to add WSGI middleware
    return app
