"""scripts/quickstart.sh installs only what a file copy runs: the package, not the test extras."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import REPO

SCRIPTS = REPO / "scripts"


def _commands(script: Path, seen: set[Path]) -> list[str]:
    """The script's command lines, with those of the scripts/*.sh it runs ("bash scripts/x.sh") inlined."""
    seen.add(script)
    commands = []
    for line in script.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        commands.append(line)
        for called in re.findall(r"scripts/([\w.-]+\.sh)", line):
            path = SCRIPTS / called
            if path not in seen:
                commands += _commands(path, seen)
    return commands


def test_quickstart_installs_the_package_without_extras():
    commands = _commands(SCRIPTS / "quickstart.sh", set())
    installs = [c for c in commands if re.search(r"\bpip\b.*\binstall\b", c)]
    assert installs, "quickstart.sh installs nothing"
    assert all("[" not in c and "extra" not in c for c in installs), installs  # no ".[test]" or ".[spark]"
    assert not [c for c in commands if "services fetch" in c], "quickstart needs no services"
    # the only Debian package it may add is Python's own venv module (scripts/venv.sh, on a Python without one)
    installs = [c for c in commands if "apt-get install" in c]
    assert installs and all(re.search(r"apt-get install .*python\$version-venv\"", c) for c in installs), installs
    for package in ("kcat", "redis-server", "openssl", "chromium", "iproute2"):
        assert not [c for c in commands if package in c], f"quickstart installs {package}"
