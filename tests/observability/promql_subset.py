"""A small PromQL evaluator for the dashboard queries the tests check: enough of the language for them.

Supported: selectors with ``=``, ``!=``, ``=~``, ``!~`` matchers; ``rate(selector[range])`` over the two
scrapes given (the range is not checked: two scrapes are the window); ``sum(...)`` with ``by (...)`` before
or after; ``a * on(labels) group_left(labels) b``; a trailing comparison with a number (``!= 0``) as a
filter. Scrapes are parsed with prometheus_client's own text parser; every series gets the target labels a
Prometheus scrape config would add.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Scrape", "evaluate"]

Series = list[tuple[dict[str, str], float]]

_TOKEN = re.compile(r"""\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>\d+(?:\.\d+)?[smhd]?)|(?P<name>[A-Za-z_:][\w:]*)
                        |(?P<op>=~|!~|!=|==|[=(){}\[\],*<>]))""", re.X)


class Scrape:
    def __init__(self, text: str, at: float, target_labels: Mapping[str, str]) -> None:
        self.at = at
        self.samples: dict[str, Series] = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                self.samples.setdefault(s.name, []).append(({**target_labels, **s.labels}, s.value))


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot read the query at {text[pos:pos + 20]!r}")
        out.append(m.group(m.lastgroup or "op"))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, query: str, first: Scrape, second: Scrape) -> None:
        self.toks = _tokens(query)
        self.i = 0
        self.first, self.second = first, second

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise ValueError(f"expected {expected!r}, found {tok!r}")
        self.i += 1
        return tok

    def labels(self) -> list[str]:
        self.take("(")
        names = []
        while self.peek() != ")":
            names.append(self.take())
            if self.peek() == ",":
                self.take(",")
        self.take(")")
        return names

    def expr(self) -> Series:
        left = self.product()
        if self.peek() in ("!=", "==", ">", "<"):
            op = self.take()
            bound = float(self.take())
            test = {"!=": lambda v: v != bound, "==": lambda v: v == bound, ">": lambda v: v > bound,
                    "<": lambda v: v < bound}[op]
            left = [(lab, v) for lab, v in left if test(v)]
        return left

    def product(self) -> Series:
        left = self.unary()
        while self.peek() == "*":
            self.take("*")
            on: list[str] = []
            extra: list[str] = []
            if self.peek() == "on":
                self.take()
                on = self.labels()
            if self.peek() == "group_left":
                self.take()
                extra = self.labels()
            right = self.unary()
            out = []
            for lab, v in left:
                key = tuple(lab.get(n) for n in on)
                for rlab, rv in right:
                    if tuple(rlab.get(n) for n in on) == key:
                        out.append(({**lab, **{n: rlab[n] for n in extra if n in rlab}}, v * rv))
                        break
            left = out
        return left

    def unary(self) -> Series:
        tok = self.peek()
        if tok == "(":
            self.take("(")
            inner = self.expr()
            self.take(")")
            return inner
        if tok == "sum":
            self.take()
            by = self.labels_after("by")
            self.take("(")
            inner = self.expr()
            self.take(")")
            by = by or self.labels_after("by")
            groups: dict[tuple, float] = {}
            for lab, v in inner:
                key = tuple((n, lab.get(n, "")) for n in by)
                groups[key] = groups.get(key, 0.0) + v
            return [({n: val for n, val in key if val}, v) for key, v in groups.items()]
        if tok == "rate":
            self.take()
            self.take("(")
            name, matchers = self.selector()
            self.take("[")
            self.take()
            self.take("]")
            self.take(")")
            before = {tuple(sorted(lab.items())): v for lab, v in self._select(self.first, name, matchers)}
            span = self.second.at - self.first.at
            out = []
            for lab, v in self._select(self.second, name, matchers):
                prev = before.get(tuple(sorted(lab.items())))
                if prev is not None:
                    out.append(({k: x for k, x in lab.items() if k != "__name__"}, max(0.0, v - prev) / span))
            return out
        name, matchers = self.selector()
        return self._select(self.second, name, matchers)

    def labels_after(self, word: str) -> list[str]:
        if self.peek() == word:
            self.take()
            return self.labels()
        return []

    def selector(self) -> tuple[str, list[tuple[str, str, str]]]:
        name = self.take()
        matchers = []
        if self.peek() == "{":
            self.take("{")
            while self.peek() != "}":
                label, op, value = self.take(), self.take(), self.take()
                matchers.append((label, op, value[1:-1].encode().decode("unicode_escape")))
                if self.peek() == ",":
                    self.take(",")
            self.take("}")
        return name, matchers

    @staticmethod
    def _select(scrape: Scrape, name: str, matchers: list[tuple[str, str, str]]) -> Series:
        out = []
        for lab, v in scrape.samples.get(name, []):
            ok = True
            for label, op, value in matchers:
                have = lab.get(label, "")
                full = re.fullmatch(value, have) is not None
                ok = ok and {"=": have == value, "!=": have != value, "=~": full, "!~": not full}[op]
            if ok:
                out.append((dict(lab), v))
        return out


def evaluate(query: str, first: Scrape, second: Scrape) -> Series:
    """The instant vector ``query`` gives at the second scrape (``rate`` uses both)."""
    parser = _Parser(query, first, second)
    result = parser.expr()
    if parser.peek() is not None:
        raise ValueError(f"unexpected {parser.peek()!r} in {query!r}")
    return result
