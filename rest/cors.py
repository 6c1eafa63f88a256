"""Cross-origin resource sharing from ``access.control.allow.origin`` / ``.methods``.

Mirrors the Jetty CrossOriginFilter that Kafka Connect installs: off when the origin setting is
empty; origins are a comma list where ``*`` matches anything (also inside a pattern such as
``https://*.example.com``); methods default to GET, POST and HEAD. The matching origin is echoed
back, and requests whose method is not allowed get no CORS headers at all.
"""

from __future__ import annotations

import re

from flask import Flask, Response, request

from rest.responses import empty_response

__all__ = ["DEFAULT_ALLOWED_HEADERS", "DEFAULT_ALLOWED_METHODS", "install_cors"]

DEFAULT_ALLOWED_METHODS = ("GET", "POST", "HEAD")
DEFAULT_ALLOWED_HEADERS = ("X-Requested-With", "Content-Type", "Accept", "Origin")
PREFLIGHT_MAX_AGE_S = 1800


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _origin_matcher(allow_origin: str) -> re.Pattern[str] | None:
    patterns = _split(allow_origin)
    if not patterns:
        return None
    alternatives = [".*" if p == "*" else ".*".join(re.escape(piece) for piece in p.split("*")) for p in patterns]
    return re.compile("^(?:" + "|".join(alternatives) + ")$")


def install_cors(app: Flask, allow_origin: str, allow_methods: str) -> None:
    matcher = _origin_matcher(allow_origin)
    if matcher is None:
        return
    methods = [m.upper() for m in _split(allow_methods)] or list(DEFAULT_ALLOWED_METHODS)

    def allowed_origin() -> str | None:
        origin = request.headers.get("Origin")
        return origin if origin is not None and matcher.match(origin) else None

    @app.before_request
    def answer_preflight() -> Response | None:
        requested = request.headers.get("Access-Control-Request-Method")
        if request.method != "OPTIONS" or requested is None:
            return None
        response = empty_response(204)
        origin = allowed_origin()
        if origin is not None and requested.upper() in methods:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Allow-Methods"] = ",".join(methods)
            response.headers["Access-Control-Allow-Headers"] = ",".join(DEFAULT_ALLOWED_HEADERS)
            response.headers["Access-Control-Max-Age"] = str(PREFLIGHT_MAX_AGE_S)
        response.vary.add("Origin")
        return response

    @app.after_request
    def add_cors_headers(response: Response) -> Response:
        if "Access-Control-Allow-Origin" in response.headers:
            return response
        origin = allowed_origin()
        if origin is not None and request.method in methods:
            response.headers["Access-Control-Allow-Origin"] = origin
        response.vary.add("Origin")
        return response
