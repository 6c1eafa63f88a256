"""The version and commit that ``GET /`` reports, found once per process."""

from __future__ import annotations

import functools
import importlib.metadata
import subprocess
from pathlib import Path

__all__ = ["commit_id", "project_version"]

_PROJECT_ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def project_version() -> str:
    try:
        return importlib.metadata.version("headrace")
    except importlib.metadata.PackageNotFoundError:
        pass
    # Running from a source tree that was never installed: the version lives in pyproject.toml.
    import tomllib  # here only: every worker imports this module as it starts

    try:
        with open(_PROJECT_ROOT / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


@functools.cache
def commit_id() -> str:
    """The source tree's git commit (16 hex digits, as Kafka reports its own), else ``unknown``."""
    try:
        done = subprocess.run(
            ["git", "-C", str(_PROJECT_ROOT), "rev-parse", "--short=16", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else "unknown"
