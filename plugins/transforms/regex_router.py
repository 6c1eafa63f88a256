"""RegexRouter: rename the topic with a regular expression and a replacement."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from connect.api import ConfigDef, ConfigException, ConfigType, ConnectRecord, Importance
from plugins._java_regex import JavaReplacement, compile_java_regex
from plugins.transforms._base import BuiltinTransformation
from plugins.transforms._config import parse_config, regex_validator

__all__ = ["RegexRouter"]

REGEX = "regex"
REPLACEMENT = "replacement"

CONFIG_DEF = (
    ConfigDef()
    .define(REGEX, ConfigType.STRING, validator=regex_validator(), importance=Importance.HIGH,
            documentation="Regular expression to use for matching.")
    .define(REPLACEMENT, ConfigType.STRING, importance=Importance.HIGH,
            documentation="Replacement string.")
)


class RegexRouter(BuiltinTransformation[ConnectRecord]):
    """Update the record topic using the configured regular expression and replacement string.

    As with Java's ``Matcher.matches()``, the expression must match the whole
    topic; the replacement may refer to groups as ``$1`` or ``${name}``.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._regex: re.Pattern[str] | None = None
        self._replacement: JavaReplacement | None = None
        # Topics repeat endlessly, so each topic's outcome is worked out once.
        self._routes: dict[str, str] = {}

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._regex = compile_java_regex(config.get_string(REGEX) or "")
        replacement = config.get_string(REPLACEMENT) or ""
        try:
            self._replacement = JavaReplacement(replacement, self._regex)
        except ValueError as exc:
            raise ConfigException(REPLACEMENT, replacement, str(exc)) from None
        self._routes = {}

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        topic = record.topic
        routed = self._routes.get(topic)
        if routed is None:
            routed = self._route(topic)
        if routed == topic:
            return record
        return record.new_record(topic=routed)

    def _route(self, topic: str) -> str:
        assert self._regex is not None and self._replacement is not None, "configure() first"
        match = self._regex.fullmatch(topic)
        routed = self._replacement.expand(match) if match else topic
        if len(self._routes) >= 4096:
            self._routes.clear()
        self._routes[topic] = routed
        return routed
