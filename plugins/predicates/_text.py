"""What the text-matching predicates share: a Java-regex validator and the text of a value."""

from __future__ import annotations

import re
from typing import Any

from plugins._java_regex import compile_java_regex

__all__ = ["check_java_regex", "text_of"]


def check_java_regex(name: str, value: Any) -> str | None:
    if value is None:
        return None
    try:
        compile_java_regex(value)
    except re.error as exc:
        return f"Invalid value {value} for configuration {name}: not a Java-compatible regular expression: {exc}"
    return None


def text_of(value: Any) -> str | None:
    """A value as text to match: bytes as UTF-8 (bytes that are not, as U+FFFD), other values as they print."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return str(value)
