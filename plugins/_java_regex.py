"""Java regular expressions (java.util.regex) for the built-in transforms and predicates.

Kafka's configs carry Java patterns and Matcher replacement strings; Python's
``re`` reads the same patterns once the named-group spellings are translated.
"""

from __future__ import annotations

import re

__all__ = ["JavaReplacement", "compile_java_regex"]

_ASCII_DIGITS = frozenset("0123456789")  # str.isdigit() also takes "¹", which int() refuses
_JAVA_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")
_JAVA_NAMED_BACKREF = re.compile(r"\\k<([A-Za-z][A-Za-z0-9]*)>")


def compile_java_regex(pattern: str) -> re.Pattern[str]:
    """Compile a java.util.regex pattern; only the named-group spellings differ from Python's."""
    translated = _JAVA_NAMED_GROUP.sub(r"(?P<\1>", pattern)
    translated = _JAVA_NAMED_BACKREF.sub(r"(?P=\1)", translated)
    return re.compile(translated)


class JavaReplacement:
    """A java.util.regex.Matcher replacement string: ``$n`` / ``${name}`` groups, ``\\`` escapes.

    Parsed once against the compiled pattern, so a bad group reference is a
    configuration error rather than a failure on every record.
    """

    __slots__ = ("_parts",)

    def __init__(self, replacement: str, pattern: re.Pattern[str]) -> None:
        parts: list[str | int] = []
        literal: list[str] = []
        i, n = 0, len(replacement)
        while i < n:
            ch = replacement[i]
            if ch == "\\":
                if i + 1 >= n:
                    raise ValueError("character to be escaped is missing")
                literal.append(replacement[i + 1])
                i += 2
                continue
            if ch != "$":
                literal.append(ch)
                i += 1
                continue
            i += 1
            if i >= n:
                raise ValueError("Illegal group reference: group index is missing")
            if replacement[i] == "{":
                end = replacement.find("}", i)
                if end < 0:
                    raise ValueError("named capturing group is missing trailing '}'")
                name = replacement[i + 1 : end]
                if name not in pattern.groupindex:
                    raise ValueError(f"No group with name {{{name}}}")
                group: int = pattern.groupindex[name]
                i = end + 1
            elif replacement[i] in _ASCII_DIGITS:
                group = int(replacement[i])
                if group > pattern.groups:
                    raise ValueError(f"No group {group}")
                i += 1
                # Like Java, take further digits only while the number still names a group.
                while i < n and replacement[i] in _ASCII_DIGITS and group * 10 + int(replacement[i]) <= pattern.groups:
                    group = group * 10 + int(replacement[i])
                    i += 1
            else:
                raise ValueError("Illegal group reference")
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(group)
        if literal:
            parts.append("".join(literal))
        self._parts = tuple(parts)

    def expand(self, match: re.Match[str]) -> str:
        out: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
            else:
                text = match.group(part)
                if text is not None:
                    out.append(text)
        return "".join(out)
