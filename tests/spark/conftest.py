"""Fixtures of the Spark sink tests (helpers are in support.py).

Every test here is marked ``spark`` by tests/conftest.py, which also stops the run when PySpark is missing.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

# the modules here import PySpark (through spark_sinks) when they are collected: say what is missing
# before any of them fails on it
if importlib.util.find_spec("pyspark") is None:
    raise pytest.UsageError("tests/spark needs PySpark: pip install -e '.[test]' (scripts/install.sh)")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The pytest process's own Spark session (local[1]), for in-process tasks and reading back.

    PYSPARK_PYTHON is left as the environment has it: the session hands Spark this interpreter itself
    (tests/spark/test_worker_python.py)."""
    from spark_sinks.session import spark_session

    session = spark_session({"spark.master": "local[1]", "spark.driver.memory": "768m",
                             "spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()
