"""Reading request bodies and query parameters, with 400s that name what is wrong."""

from __future__ import annotations

import json
from typing import Any

from flask import request

from rest.guards import MAX_JSON_DEPTH
from rest.responses import RestError

__all__ = ["bool_param", "json_body", "json_object_body", "string_map"]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def json_body() -> Any:
    """The request body parsed as JSON (rest.guards has already refused other media types and bodies
    over the size limit)."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        raise RestError(400, "Request body is empty; this endpoint expects a JSON document")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RestError(400, f"Request body is not UTF-8 text (bad byte at position {e.start})") from None
    try:
        body = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise RestError(
            400, f"Request body is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}"
        ) from None
    except RecursionError:
        raise RestError(400, f"Request body nests JSON deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as e:
        raise RestError(400, f"Request body is not valid JSON: {e}") from None
    if _depth_exceeds(body, MAX_JSON_DEPTH):
        raise RestError(400, f"Request body nests JSON deeper than {MAX_JSON_DEPTH} levels")
    return body


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def json_object_body(what: str) -> dict[str, Any]:
    body = json_body()
    if not isinstance(body, dict):
        raise RestError(400, f"{what} must be a JSON object, not a JSON {_json_kind(body)}")
    return body


def _scalar_text(value: bool | int | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def string_map(value: Any, what: str, allow_null: bool) -> dict[str, Any]:
    """A JSON object as ``{str: str}``, numbers and booleans turned into their text as Jackson does.

    Kafka Connect's Map<String, String> bodies accept ``"tasks.max": 1``, so existing scripts send
    such values; objects and arrays cannot be a config value and are refused. ``null`` values are
    kept only where they mean something (PATCH removes the key).
    """
    if not isinstance(value, dict):
        raise RestError(400, f"{what} must be a JSON object of string values, not a JSON {_json_kind(value)}")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, str):
            out[key] = item
        elif item is None:
            if not allow_null:
                raise RestError(400, f"{what}: the value of '{key}' is null; config values must be strings")
            out[key] = None
        elif isinstance(item, bool | int | float):
            out[key] = _scalar_text(item)
        else:
            raise RestError(
                400, f"{what}: the value of '{key}' is a JSON {_json_kind(item)}; config values must be strings"
            )
    return out


def bool_param(name: str, default: bool) -> bool:
    """A true/false query parameter (any letter case).

    Jersey reads anything but "true" as false; Headrace refuses other values so that a typo such as
    ``includeTasks=yes`` is not silently taken as false.
    """
    raw = request.args.get(name)
    if raw is None:
        return default
    lowered = raw.strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise RestError(400, f"Query parameter '{name}' must be true or false, not '{raw}'")
