"""The shipped configs/ files, as the benchmarks start workers and tasks from them (issue #37).

Every benchmark's headline runs the files in ``configs/`` with only what a run cannot share with a user's
set-up changed (ports, paths, addresses, topic names, and what the case intrinsically needs); a tuned run is a
``Variant`` that names the settings it changes, and is printed beside the headline under that label.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

from connect.runtime.properties import parse_properties

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
WORKER = "connect-standalone.properties"

Changes = dict[str, str | None]


@dataclass(frozen=True)
class Variant:
    """Settings changed from the shipped files, by file; a value None drops the key.

    ``source`` and ``sink`` are the changes to the case's source and sink connector files (which ones is the
    benchmark's business), ``files`` those to any other file by its name in configs/; ``changes`` is the label
    printed beside the figures.
    """

    label: str
    changes: str = "shipped configs/"
    worker: Changes = field(default_factory=dict)
    source: Changes = field(default_factory=dict)
    sink: Changes = field(default_factory=dict)
    files: dict[str, Changes] = field(default_factory=dict)

    @property
    def shipped(self) -> bool:
        return not (self.worker or self.source or self.sink or any(self.files.values()))

    def of(self, name: str) -> Changes:
        """The changes to configs/``name`` (empty for a file the variant leaves as shipped)."""
        return self.files.get(name, {})

    def title(self) -> str:
        """``shipped`` for the headline, else ``<label>: <settings changed>``."""
        return "shipped configs/ (headline)" if self.shipped else f"{self.label}: {self.changes}"


SHIPPED = Variant("shipped")


def with_changes(text: str, changes: Changes) -> str:
    """The properties text with each key of ``changes`` set (in place, or appended) or dropped (None)."""
    out, seen = [], set()
    for line in text.splitlines():
        stripped = line.strip()
        key = stripped.split("=", 1)[0].strip() if stripped and not stripped.startswith(("#", "!")) else None
        if key in changes:
            seen.add(key)
            if changes[key] is not None:
                out.append(f"{key}={changes[key]}")
            continue
        out.append(line)
    out += [f"{k}={v}" for k, v in changes.items() if k not in seen and v is not None]
    return "\n".join(out) + "\n"


def shipped_text(name: str, configs: Path = CONFIGS) -> str:
    return (configs / name).read_text()


def write_shipped(path: Path, name: str, *changes: Changes) -> Path:
    """configs/``name`` with each of ``changes`` applied in turn, written to ``path``."""
    text = shipped_text(name)
    for change in changes:
        text = with_changes(text, change)
    path.write_text(text)
    return path


def shipped_props(name: str, *changes: Changes) -> dict[str, str]:
    """configs/``name`` as a dict, with each of ``changes`` applied in turn (for a REST body or a task)."""
    text = shipped_text(name)
    for change in changes:
        text = with_changes(text, change)
    return parse_properties(text)


def describe(changes: Changes) -> str:
    """``k=v, k2 dropped`` for a line of output."""
    return ", ".join(f"{k}={v}" if v is not None else f"{k} dropped" for k, v in changes.items()) or "nothing"


def free_port() -> int:
    """A free loopback port, for ``listeners`` instead of the shipped 8083."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
