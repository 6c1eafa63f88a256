"""Spark's Python workers run the worker's own interpreter, whatever ``python3`` comes first on PATH.

A worker started as ``.venv/bin/connect-standalone`` without the venv activated has the system ``python3``
first on PATH: without the project and PySpark, Spark's Python workers started from it failed every Spark
sink with ``ModuleNotFoundError: No module named 'spark_sinks'``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark.support import Worker, connector_file, produce_json, spark_props

# Spark runs inside the test's own worker (local master, embedded log, file:// output): beside the services group
pytestmark = [pytest.mark.beside_services, pytest.mark.timeout(300)]


def _foreign_python3(folder: Path) -> Path:
    """A ``python3`` in ``folder`` that cannot import the project: the system Python, else one that fails."""
    folder.mkdir()
    python3 = folder / "python3"
    system = Path("/usr/bin/python3")
    if system.exists() and system.resolve() != Path(sys.executable).resolve():
        python3.symlink_to(system)
    else:
        python3.write_text("#!/bin/sh\necho 'not the worker interpreter' >&2\nexit 3\n")
        python3.chmod(0o755)
    probe = subprocess.run([str(python3), "-c", "import spark_sinks, pyspark"], capture_output=True,
                           cwd=folder, env={"PATH": "/usr/bin:/bin"})
    assert probe.returncode != 0, "the foreign python3 must not see the project"
    return python3


def test_a_spark_sink_writes_when_the_first_python3_on_path_is_not_the_workers(tmp_path, monkeypatch):
    python3 = _foreign_python3(tmp_path / "bin")
    # the worker (its console script names its interpreter) starts with this PATH and no PYSPARK_PYTHON,
    # as from a shell where the venv was not activated
    monkeypatch.setenv("PATH", f"{python3.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    assert shutil.which("python3") == str(python3)

    produce_json(tmp_path / "data", "orders", 30, partitions=1)
    out = tmp_path / "out"
    conn = connector_file(tmp_path, "py-orders", connector__class="HdfsSparkSink", topics="orders",
                          hdfs__url=f"file://{out}", format="json", **spark_props())
    worker = Worker(tmp_path, conn).start()
    try:
        worker.wait_landed("py-orders", 30, timeout=200)
    finally:
        worker.stop()
    rows = [json.loads(line) for f in (out / "topics" / "orders").rglob("*.json")
            for line in f.read_text().splitlines() if line]
    assert sorted(r["id"] for r in rows) == list(range(30))
