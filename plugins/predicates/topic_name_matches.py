"""TopicNameMatches: true for records whose topic matches a regular expression."""

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

__all__ = ["TopicNameMatches"]

PATTERN = "pattern"


def _check_regex(name: str, value: Any) -> str | None:
    if value is None:
        return None
    try:
        compile_java_regex(value)
    except re.error as exc:
        return f"entry must be a Java-compatible regular expression: {exc}"
    return None


CONFIG_DEF = ConfigDef().define(
    PATTERN,
    ConfigType.STRING,
    validator=CompositeValidator.of(NonEmptyString(), LambdaValidator(_check_regex, "valid regex")),
    importance=Importance.MEDIUM,
    documentation="A Java regular expression for matching against the name of a record's topic.",
)


class TopicNameMatches(BuiltinPredicate):
    """A predicate which is true for records with a topic name that matches the configured regular expression.

    The whole topic must match, as with Java's ``Matcher.matches()``.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._pattern: re.Pattern[str] | None = None
        # Few distinct topics flow through a task, so each answer is remembered.
        self._answers: dict[str, bool] = {}

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._pattern = compile_java_regex(AbstractConfig(CONFIG_DEF, configs).get_string(PATTERN) or "")
        self._answers = {}

    def test(self, record: ConnectRecord) -> bool:
        topic = record.topic
        if topic is None:
            return False
        answer = self._answers.get(topic)
        if answer is None:
            assert self._pattern is not None, "configure() first"
            answer = self._pattern.fullmatch(topic) is not None
            if len(self._answers) >= 4096:
                self._answers.clear()
            self._answers[topic] = answer
        return answer

    def __repr__(self) -> str:
        return f"TopicNameMatches{{pattern={self._pattern.pattern if self._pattern else None}}}"
