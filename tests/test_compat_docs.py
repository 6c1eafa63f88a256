"""The README's table of intended differences from Kafka Connect lists exactly tests/compat/known_differences.py."""

from __future__ import annotations

import re
from pathlib import Path

from tests.compat.known_differences import KNOWN_DIFFERENCES

README = Path(__file__).resolve().parent.parent / "README.md"


def _readme_steps() -> list[str]:
    text = README.read_text()
    section = text.split("### Checked against Apache Kafka Connect 4.1", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| Step")]
    return [re.split(r"\s*\|\s*", row.strip("| "))[0] for row in rows]


def test_the_readme_lists_every_known_difference_and_no_other() -> None:
    documented = _readme_steps()
    expected = []
    for d in KNOWN_DIFFERENCES:
        step = d.step if isinstance(d.step, str) else " / ".join(d.step)
        expected.append("every status" if step == "*" else step)
    assert documented == expected
    assert all(d.reason.strip() for d in KNOWN_DIFFERENCES)
