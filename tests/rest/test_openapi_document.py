"""rest/openapi.json stays in step with the routes the app really serves."""

from __future__ import annotations

import json
import re

from flask import Flask

from rest.routes.root import OPENAPI_PATH

METHODS = {"get", "put", "post", "patch", "delete"}


def served_operations(app: Flask) -> set[tuple[str, str]]:
    out = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
        out |= {(method.lower(), path) for method in rule.methods or () if method.lower() in METHODS}
    return out


def documented_operations() -> set[tuple[str, str]]:
    doc = json.loads(OPENAPI_PATH.read_text())
    return {(method, path) for path, item in doc["paths"].items() for method in item if method in METHODS}


def test_every_route_is_documented_and_every_documented_operation_is_served(app: Flask) -> None:
    assert served_operations(app) == documented_operations()


def test_every_operation_documents_json_errors_and_has_an_id() -> None:
    doc = json.loads(OPENAPI_PATH.read_text())
    ids = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method not in METHODS:
                continue
            ids.append(op["operationId"])
            for status, response in op["responses"].items():
                if status.startswith(("4", "5")) and path != "/health":
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorMessage"}, (method, path, status)
    assert len(ids) == len(set(ids))
