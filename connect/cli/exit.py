"""How a command ends: its exit codes, and the one ``ERROR`` line an expected failure becomes.

The CLI's one error is CliError: a failure the user can act on (a file, an argument,
a key of a config file), printed as one line and exit code 1. The layers below keep
their own roots (``connect.api.errors.ConnectException``, ``connect.log.api.LogError``);
a command prints those as one line too, with exit code 2. ``connect.cli.signals``'
StopRequested is no error: it carries SIGINT/SIGTERM out of a start-up.
"""

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
