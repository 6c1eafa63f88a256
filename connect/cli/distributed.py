"""``connect-distributed``: not available yet in this build; it says so in one line."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from connect.cli.exit import EXIT_RUNTIME, fail

__all__ = ["distributed_main"]


def distributed_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="connect-distributed", description="Run a distributed Headrace worker.")
    parser.add_argument("worker_config")
    parser.parse_args(argv)
    return fail("distributed mode is not available yet in this build", EXIT_RUNTIME)
