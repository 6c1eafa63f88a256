"""HeaderValueMatches (Headrace's): true for records whose last header of a name has a value matching a regular
expression (the whole value). Routes records by a header, as Flume's multiplexing channel selector does."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from connect.api import (
    AbstractConfig,
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

__all__ = ["HeaderValueMatches"]

NAME = "name"
PATTERN = "pattern"

CONFIG_DEF = (
    ConfigDef()
    .define(NAME, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
            documentation="The header name; the last header of that name is tested.")
    .define(PATTERN, ConfigType.STRING,
            validator=CompositeValidator.of(NonEmptyString(), LambdaValidator(check_java_regex, "valid regex")),
            importance=Importance.HIGH,
            documentation="A Java regular expression the header's whole value (as text) must match.")
)


class HeaderValueMatches(BuiltinPredicate):
    """True for records with a header of the configured name whose value matches the pattern; false for
    records without one (or with a null value)."""

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._name = ""
        self._pattern: re.Pattern[str] | None = None

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._name = config.get_string(NAME) or ""
        self._pattern = compile_java_regex(config.get_string(PATTERN) or "")

    def test(self, record: ConnectRecord) -> bool:
        assert self._pattern is not None, "configure() first"
        header = record.headers.last_with_name(self._name)
        text = text_of(header.value) if header is not None else None
        return text is not None and self._pattern.fullmatch(text) is not None

    def __repr__(self) -> str:
        return f"HeaderValueMatches{{name={self._name}, pattern={self._pattern.pattern if self._pattern else None}}}"
