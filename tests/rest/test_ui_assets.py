"""``/ui`` serves the status page's own files, with their media types and a strict Content-Security-Policy."""

from __future__ import annotations

import re

import pytest
from flask.testing import FlaskClient

from rest.routes.ui import ASSETS

CSP_REQUIRED = {
    "default-src": "'none'",
    "script-src": "'self'",
    "style-src": "'self'",
    "connect-src": "'self'",
    "frame-ancestors": "'none'",
    "base-uri": "'none'",
}


def _csp(header: str) -> dict[str, str]:
    return {part.split()[0]: " ".join(part.split()[1:]) for part in header.split(";") if part.strip()}


@pytest.mark.parametrize(("path", "media_type"), [
    ("/ui", "text/html"), ("/ui/", "text/html"), ("/ui/index.html", "text/html"),
    ("/ui/app.js", "text/javascript"), ("/ui/style.css", "text/css"),
])
def test_page_and_assets_have_their_type_and_a_strict_csp(client: FlaskClient, path: str, media_type: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.mimetype == media_type
    assert response.data
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    csp = _csp(response.headers["Content-Security-Policy"])
    for directive, value in CSP_REQUIRED.items():
        assert csp[directive] == value, directive
    assert "unsafe-inline" not in response.headers["Content-Security-Policy"]
    assert "unsafe-eval" not in response.headers["Content-Security-Policy"]


@pytest.mark.parametrize("path", ["/ui/missing.js", "/ui/..%2f..%2fpyproject.toml", "/ui/../app.py", "/ui/__init__.py"])
def test_only_the_pages_own_files_are_served(client: FlaskClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code in (400, 404)
    assert response.is_json and response.json["error_code"] == response.status_code


def test_page_loads_nothing_from_elsewhere_and_has_no_inline_script(client: FlaskClient) -> None:
    html = client.get("/ui").get_data(as_text=True)
    for url in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert url.startswith(("/ui/", "#", "data:")), url
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "inline script would be blocked by the CSP"
    assert " style=" not in html
    assert set(re.findall(r'"/ui/([^"]+)"', html)) <= set(ASSETS)


def test_script_never_writes_markup_from_data(client: FlaskClient) -> None:
    # Connector names and configs are hostile input: the page builds nodes and sets text only.
    script = client.get("/ui/app.js").get_data(as_text=True)
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script, sink
