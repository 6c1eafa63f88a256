"""HdfsSparkSink's ``path.template``: the folder of each record from literal text, its time and its headers.

A template is a path below ``hdfs.url`` made of literal text and two kinds of placeholder:

- ``{time:PATTERN}``: the record time in ``timezone``, formatted with a Java/Spark date pattern
  (``{time:yyyy-MM-dd}``, ``{time:HH}``);
- ``{header:NAME}``: the value of the record's header ``NAME`` as text (empty when the record has none).

For example ``/flume/events/{time:yy-MM-dd}/{time:HHmm}/{header:host}``. Unlike ``path.format`` (whose
``name=value`` folders Spark and Hive read back as columns) the folders are exactly what the template
says, which is what a Flume ``hdfs.path`` with escapes needs. A header's value is whoever sent the record's
input: it may hold ``/`` (subfolders, as in Flume) but a ``.`` or ``..`` folder it makes becomes ``_``, so no
record leaves the template's root; the template's own text may have no ``.`` or ``..`` folder.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyspark is imported only where a query is built
    from pyspark.sql import Column

__all__ = ["PathTemplate", "TemplatePiece"]

_PLACEHOLDER = re.compile(r"\{(time|header):([^{}]+)\}")
_HEADER_NAME = re.compile(r"[^\s{}]+")
# pattern letters Spark's formatter takes for formatting (no week-based fields, which Spark 3 refuses)
_TIME_PATTERN = re.compile(r"(?:'[^']*'|[yMdHhmsSaEDkK\-_. :]|)+")
# a whole folder that is . or .. (Java regex, for Spark's regexp_replace); every folder follows a /
_DOT_FOLDER = r"(?<=/)\.{1,2}(?=/|$)"


@dataclass(frozen=True)
class TemplatePiece:
    """One piece of a template: ``kind`` is ``text``, ``time`` (value: a date pattern) or ``header`` (a name)."""

    kind: str
    value: str


class PathTemplate:
    """A parsed ``path.template``; raises ValueError naming the problem for one it cannot use."""

    def __init__(self, template: str) -> None:
        text = template.strip()
        if not text.startswith("/"):
            raise ValueError("it must start with / (a path below hdfs.url)")
        pieces: list[TemplatePiece] = []
        at = 0
        for m in _PLACEHOLDER.finditer(text):
            pieces.extend(_text(text[at:m.start()]))
            kind, value = m.group(1), m.group(2)
            if kind == "header" and not _HEADER_NAME.fullmatch(value):
                raise ValueError(f"{m.group(0)!r} does not name a header")
            if kind == "time" and not _TIME_PATTERN.fullmatch(value):
                raise ValueError(f"{m.group(0)!r}: {value!r} is not a date pattern Spark can format")
            pieces.append(TemplatePiece(kind, value))
            at = m.end()
        pieces.extend(_text(text[at:]))
        # the literal folders, a placeholder standing for some text: none may be . or ..
        shape = "".join(p.value if p.kind == "text" else "x" for p in pieces)
        if any(folder in (".", "..") for folder in shape.split("/")):
            raise ValueError("no . or .. folders")
        self.pieces = pieces
        self.text = text

    @property
    def uses_time(self) -> bool:
        return any(p.kind == "time" for p in self.pieces)

    def static_root(self) -> str:
        """The folder every record's folder lies below: the literal start of the template, up to its last ``/``
        before the first placeholder (where recovery looks for committed files)."""
        literal = ""
        for piece in self.pieces:
            if piece.kind != "text":
                break
            literal += piece.value
        else:
            return literal.rstrip("/") or "/"
        return literal.rsplit("/", 1)[0] or "/"

    def column(self, time_column: Column | None, header: Callable[[str], Column]) -> Column:
        """The folder as a Spark string column: ``time_column`` is the record time (a timestamp column already
        in the template's time zone; None for a template that does not ``uses_time``), ``header(name)`` a column
        with a header's value."""
        from pyspark.sql import functions as F

        parts = []
        for piece in self.pieces:
            if piece.kind == "text":
                parts.append(F.lit(piece.value))
            elif piece.kind == "time":
                if time_column is None:
                    raise ValueError(f"the path template's time pattern {piece.value!r} needs the record time column")
                parts.append(F.date_format(time_column, piece.value))
            else:
                parts.append(F.coalesce(header(piece.value), F.lit("")))
        return F.regexp_replace(F.concat(*parts), _DOT_FOLDER, "_")


def _text(text: str) -> list[TemplatePiece]:
    if not text:
        return []
    if "{" in text or "}" in text:
        raise ValueError(f"{text!r}: braces are only for {{time:PATTERN}} and {{header:NAME}}")
    return [TemplatePiece("text", text)]
