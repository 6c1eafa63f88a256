"""How a command ends: its exit codes, and the one ``ERROR`` line an expected failure becomes."""

from __future__ import annotations

import sys

__all__ = ["EXIT_CONFIG", "EXIT_RUNTIME", "CliError", "fail"]

EXIT_CONFIG = 1
EXIT_RUNTIME = 2


class CliError(Exception):
    """An expected failure, reported as one line."""


def fail(message: str, code: int = EXIT_CONFIG) -> int:
    print(f"ERROR {message}", file=sys.stderr, flush=True)
    return code
