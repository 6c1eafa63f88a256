"""The REST layer's own errors and its responses: JSON bodies, the one JSON error body every failure uses.

The REST layer's errors::

    RestError                  a request refused by the REST layer itself (a query parameter, a body, a
                               forward that failed); ``status`` is the HTTP status it is answered with
    RestConfigError            a REST setting of the worker config that cannot be used, found at start-up;
     │                         a ValueError, turned into a ConfigException by the worker's CLI
     ├── AuthConfigError       (rest.auth) an authentication setting or its credentials file
     └── TlsConfigError        (rest.tls) an ssl.* setting of an https listener

The herder's errors carry no status: ``rest.errors`` maps them. Whatever else reaches
a handler is answered 500 with ``INTERNAL_ERROR_MESSAGE``, its trace kept in the log.
"""

from __future__ import annotations

from flask import Response, current_app

from rest.readiness import STARTING_MESSAGE, STARTING_RETRY_AFTER_S

__all__ = ["INTERNAL_ERROR_MESSAGE", "RestConfigError", "RestError", "empty_response", "error_response", "json_response",
           "starting_response"]

# a 500's message: the trace stays in the log, as it can name hosts, files and secrets
INTERNAL_ERROR_MESSAGE = "Internal server error while handling the request; the worker log has the details"


class RestConfigError(ValueError):
    """A REST setting of the worker config (listeners, ssl.*, authentication, ...) that cannot be used;
    the message names the key and why."""


class RestError(Exception):
    """A problem with the request itself (query parameter, body, route), answered with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def json_response(body: object, status: int = 200) -> Response:
    response: Response = current_app.json.response(body)  # type: ignore[assignment]  # flask's is a Response
    response.status_code = status
    return response


def error_response(status: int, message: str) -> Response:
    # Kafka Connect's ErrorMessage shape; clients key off error_code, so it always equals the HTTP status.
    return json_response({"error_code": status, "message": message}, status)


def starting_response() -> Response:
    """What every endpoint but /health answers until the worker can take requests (rest.readiness)."""
    response = error_response(503, STARTING_MESSAGE)
    response.headers["Retry-After"] = str(STARTING_RETRY_AFTER_S)
    return response


def empty_response(status: int) -> Response:
    response = Response(status=status)
    # An empty body has no media type; leaving Flask's text/html default would mislead clients.
    response.headers.pop("Content-Type", None)
    return response
