"""``GET /ui``: the status web page, static files that call this worker's own REST API from the browser.

Only the files named in ``ASSETS`` are served (never a path taken from the request), each with a strict
Content-Security-Policy: scripts, styles and requests from this origin only, no inline script or style,
no framing; the page inserts connector data as text only, so a hostile connector name or config value
cannot run script even if it got past that.
"""

from __future__ import annotations

import functools
from pathlib import Path

from flask import Blueprint, Response

from rest.responses import RestError

__all__ = ["ASSETS", "CONTENT_SECURITY_POLICY", "UI_DIR", "bp"]

UI_DIR = Path(__file__).resolve().parent.parent / "ui"

# name served under /ui/ -> media type
ASSETS: dict[str, str] = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

bp = Blueprint("ui", __name__)


@functools.cache
def _read(name: str) -> bytes:
    return (UI_DIR / name).read_bytes()


def _asset_response(name: str) -> Response:
    if name not in ASSETS:
        raise RestError(404, f"No file {name!r} in the status page")
    response = Response(_read(name), status=200, content_type=ASSETS[name])
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    # The files change only with the installed version; revalidating each load keeps them in step.
    response.headers["Cache-Control"] = "no-cache"
    return response


@bp.get("/ui")
def ui_index() -> Response:
    return _asset_response("index.html")


@bp.get("/ui/<asset>")
def ui_asset(asset: str) -> Response:
    return _asset_response(asset)
