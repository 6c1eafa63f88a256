"""Configuration pieces the built-in transforms share (Kafka's SimpleConfig and common keys)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigException,
    ConfigType,
    Importance,
    LambdaValidator,
)
from plugins._java_regex import compile_java_regex

__all__ = [
    "FIELD_SYNTAX_VERSION_CONFIG",
    "REPLACE_NULL_WITH_DEFAULT_CONFIG",
    "define_field_syntax_version",
    "define_replace_null_with_default",
    "non_empty_list",
    "parsed_by",
    "parse_config",
    "regex_validator",
]

REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"
FIELD_SYNTAX_VERSION_CONFIG = "field.syntax.version"


def parse_config(definition: ConfigDef, props: Mapping[str, Any]) -> AbstractConfig:
    """Kafka's SimpleConfig: parse ``props`` against ``definition``, raising ConfigException."""
    return AbstractConfig(definition, props)


def _check_non_empty_list(name: str, value: Any) -> str | None:
    return "Empty list" if not value else None


def non_empty_list() -> LambdaValidator:
    return LambdaValidator(_check_non_empty_list, "non-empty list")


def parsed_by(parse: Callable[[list[str]], Any], description: str) -> LambdaValidator:
    """A validator of a LIST value that ``parse`` accepts; its ConfigException's reason is the message."""

    def check(name: str, value: Any) -> str | None:
        try:
            parse(value or [])
        except ConfigException as exc:
            return exc.reason
        return None

    return LambdaValidator(check, description)


def regex_validator() -> LambdaValidator:
    def check(name: str, value: Any) -> str | None:
        if value is None:
            return None
        try:
            compile_java_regex(value)
        except re.error as exc:
            return f"Invalid regex: {exc}"
        return None

    return LambdaValidator(check, "valid regex")


def define_replace_null_with_default(definition: ConfigDef) -> ConfigDef:
    return definition.define(
        REPLACE_NULL_WITH_DEFAULT_CONFIG,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.MEDIUM,
        documentation="Whether to replace fields that have a default value and that are null to the default "
        "value. When set to true, the default value is used, otherwise null is used.",
    )


def define_field_syntax_version(definition: ConfigDef) -> ConfigDef:
    return definition.define(
        FIELD_SYNTAX_VERSION_CONFIG,
        ConfigType.STRING,
        "V1",
        CaseInsensitiveValidString.in_("V1", "V2"),
        Importance.HIGH,
        "Defines the version of the syntax to access fields. If set to `V1`, then the field paths are "
        "limited to access the elements at the root level of the struct or map. If set to `V2`, the syntax "
        "will support accessing nested elements. To access nested elements, dotted notation is used. If "
        "dots are already included in the field name, then backtick pairs can be used to wrap field names "
        'containing dots. E.g. to access the subfield `baz` from a field named "foo.bar" in a struct/map '
        'the following format can be used to access its elements: "`foo.bar`.baz".',
    )
