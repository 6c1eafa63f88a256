"""Fixtures of the edge tests: a worker from the shipped configs, stopped (and checked) after each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.edge.harness import EdgeWorker


@pytest.fixture
def edge_worker(tmp_path: Path) -> Iterator[EdgeWorker]:
    """A started worker with no connectors; the test creates its own over REST."""
    worker = EdgeWorker(tmp_path).start()
    try:
        yield worker
    finally:
        if worker.proc is not None and worker.proc.alive():
            worker.stop()
