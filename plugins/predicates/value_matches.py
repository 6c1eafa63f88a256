"""ValueMatches (Headrace's): true for records whose value, as text, contains a match of a regular expression.

What Flume's ``regex_filter`` interceptor tests (``Matcher.find`` on the body): with the Filter transform it
keeps or drops records by their content.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    CompositeValidator,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Importance,
    LambdaValidator,
    NonEmptyString,
)
from plugins._java_regex import compile_java_regex
from plugins.predicates._base import BuiltinPredicate
from plugins.predicates._text import check_java_regex, text_of

__all__ = ["ValueMatches"]

PATTERN = "pattern"
MATCH = "match"

CONFIG_DEF = (
    ConfigDef()
    .define(PATTERN, ConfigType.STRING,
            validator=CompositeValidator.of(NonEmptyString(), LambdaValidator(check_java_regex, "valid regex")),
            importance=Importance.HIGH,
            documentation="A Java regular expression matched against the record's value as text (bytes read as "
                          "UTF-8, a Struct as it prints).")
    .define(MATCH, ConfigType.STRING, "find", CaseInsensitiveValidString.in_("find", "full"), Importance.LOW,
            "find: true when the pattern occurs anywhere in the value (Flume's regex_filter); full: only when "
            "the whole value matches.")
)


class ValueMatches(BuiltinPredicate):
    """True for records whose value, as text, matches the configured regular expression."""

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._pattern: re.Pattern[str] | None = None
        self._full = False

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._pattern = compile_java_regex(config.get_string(PATTERN) or "")
        self._full = str(config.get_string(MATCH)).lower() == "full"

    def test(self, record: ConnectRecord) -> bool:
        assert self._pattern is not None, "configure() first"
        text = text_of(record.value)
        if text is None:
            return False
        found = self._pattern.fullmatch(text) if self._full else self._pattern.search(text)
        return found is not None

    def __repr__(self) -> str:
        return f"ValueMatches{{pattern={self._pattern.pattern if self._pattern else None}}}"
