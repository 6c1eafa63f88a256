"""URL rules that compile their URL builders when first asked to build a URL.

Werkzeug compiles two Python functions (through ``ast`` and ``compile``) for every route as it is added, for
``url_for``. The REST API never builds its own URLs, and those compilations were a tenth of the worker's
start-up CPU spent on the REST app (about 20 ms for its 65 routes); matching requests does not use them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from werkzeug.routing import Rule

__all__ = ["LazyBuildRule"]


class LazyBuildRule(Rule):
    """A ``Rule`` whose builders are compiled on the first ``build`` (then as Werkzeug compiles them)."""

    def _compile_builder(self, append_unknown: bool = True) -> Callable[..., tuple[str, str]]:
        compiled: Callable[..., tuple[str, str]] | None = None
        compile_now = super()._compile_builder

        def build(rule: Rule, *args: Any, **kwargs: Any) -> tuple[str, str]:
            nonlocal compiled
            if compiled is None:  # two threads may both compile: the same function, harmlessly
                compiled = compile_now(append_unknown)
            return compiled(rule, *args, **kwargs)

        return build
