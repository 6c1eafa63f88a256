"""What the predicates share: their version and Java-compatible regular expressions.

Kept apart from plugins.transforms' helper so that this package depends on
connect.api alone.
"""

from __future__ import annotations

import re

__all__ = ["VERSION", "compile_java_regex"]

VERSION = "0.1.0"

_JAVA_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")
_JAVA_NAMED_BACKREF = re.compile(r"\\k<([A-Za-z][A-Za-z0-9]*)>")


def compile_java_regex(pattern: str) -> re.Pattern[str]:
    """Compile a java.util.regex pattern; only the named-group spellings differ from Python's."""
    translated = _JAVA_NAMED_GROUP.sub(r"(?P<\1>", pattern)
    translated = _JAVA_NAMED_BACKREF.sub(r"(?P=\1)", translated)
    return re.compile(translated)
