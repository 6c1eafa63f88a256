"""The REST API guide's table of intended differences from Kafka Connect (docs/guide/rest-api.md) lists exactly
tests/compat/known_differences.py."""

from __future__ import annotations

import re
from pathlib import Path

from tests.compat.known_differences import KNOWN_DIFFERENCES

REST_GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide" / "rest-api.md"


def _documented_steps() -> list[str]:
    text = REST_GUIDE.read_text()
    section = text.split("## Checked against Apache Kafka Connect 4.1", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| Step")]
    return [re.split(r"\s*\|\s*", row.strip("| "))[0] for row in rows]


def test_the_rest_guide_lists_every_known_difference_and_no_other() -> None:
    documented = _documented_steps()
    expected = []
    for d in KNOWN_DIFFERENCES:
        step = d.step if isinstance(d.step, str) else " / ".join(d.step)
        expected.append("every status" if step == "*" else step)
    assert documented == expected
    assert all(d.reason.strip() for d in KNOWN_DIFFERENCES)
