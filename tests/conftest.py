"""Session-wide test set-up: the service fixtures, the ``kafka`` / ``spark`` markers, and a check, before
any test runs, that what the selected tests need is installed.

Markers come from where a test lives and what it uses, so new test files get them without a line of
their own: everything under tests/kafka and tests/compat (side by side with Apache Kafka Connect) is
``kafka`` and under tests/spark is ``spark``, and so is any test that asks for a fixture starting such
a service; a test using a redis-server fixture is ``redis``. ``pytest -m "not kafka and not spark and not
slow"`` is the fast suite: redis-server starts in a fraction of a second, so the quick ``redis`` tests stay
in it (``-m "not redis"`` leaves them out) and the long Redis crash tests are ``slow``.

Under ``-n 2 --dist loadgroup`` the tests using the session's services run one at a time in one group
(``xdist_group_of``); a ``kafka`` or ``spark`` test that uses none of them (a broker of its own, Spark inside its
own worker, the test process's own local Spark session) is marked ``beside_services`` and runs beside that group.

Nothing is skipped for a missing package, tool or service: a run that selects tests needing one stops
at once with what to install, so that a CI run cannot pass by leaving tests out.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

pytest_plugins = ["tests.fixtures_services"]

TESTS = Path(__file__).resolve().parent

# Every worker, CLI, agent and Spark Python the tests start is a fresh interpreter importing the project.
# Where the environment forbids bytecode files (PYTHONDONTWRITEBYTECODE, set on some CI images), each of
# them compiles about 200 of the project's modules from source: half a second per start, across hundreds
# of starts. The tests let Python keep them in the usual (git-ignored) __pycache__ folders; installed
# packages are compiled by pip already. Set here, before pytest-xdist starts its workers, so that they and
# every process they start inherit it.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# tests/<directory> -> marker of every test in it
DIRECTORY_MARKERS = {"kafka": "kafka", "spark": "spark", "distributed": "kafka", "compat": "kafka"}
# fixture -> marker of every test that uses it (directly or through another fixture)
FIXTURE_MARKERS = {
    "kafka": "kafka",
    "java_connect": "kafka",
    "spark": "spark",
    "hdfs": "spark",
    "spark_cluster": "spark",
    "opensearch": "spark",
    "elasticsearch": "spark",
    "redis_service": "redis",
    "redis_factory": "redis",
}
# the fixtures of the services one session shares (Kafka, Kafka Connect, HDFS, a Spark cluster, OpenSearch,
# Elasticsearch): the tests using them run one at a time in the "services" group. ``spark`` (tests/spark) is not
# one: it is the test process's own local Spark session, and each xdist worker that needs one starts its own.
SESSION_SERVICES = {fixture for fixture, marker in FIXTURE_MARKERS.items() if marker in ("kafka", "spark")} - {"spark"}
# marker -> Python packages its tests import (the [spark] extra), with how to get them
MARKER_PACKAGES = {
    "redis": (("redis",), "pip install -e '.[test]' (scripts/install.sh)"),
    "spark": (("pyspark", "hdfs", "opensearchpy", "elasticsearch"), "pip install -e '.[test]' (scripts/install.sh)"),
    "browser": (("playwright",), "pip install -e '.[test]' (scripts/install.sh)"),
}
# fixture -> command-line tool it hands to the test, with how to get it
FIXTURE_TOOLS = {
    "kcat": ("kcat", "apt-get install -y kcat (scripts/install.sh)"),
    "redis_service": ("redis-server", "apt-get install -y redis-server (scripts/install.sh)"),
    "redis_factory": ("redis-server", "apt-get install -y redis-server (scripts/install.sh)"),
    "chromium": ("chromium", "apt-get install -y chromium chromium-driver (scripts/install.sh)"),
}


def markers_of(item: pytest.Item) -> set[str]:
    """The service markers ``item`` gets from its directory and its fixtures."""
    names = set()
    try:
        parts = Path(item.path).resolve().relative_to(TESTS).parts
    except ValueError:
        parts = ()
    if len(parts) > 1 and parts[0] in DIRECTORY_MARKERS:
        names.add(DIRECTORY_MARKERS[parts[0]])
    for fixture in getattr(item, "fixturenames", ()):
        if fixture in FIXTURE_MARKERS:
            names.add(FIXTURE_MARKERS[fixture])
    return names


BESIDE_SERVICES = (
    "beside_services: a kafka or spark test that uses none of the session's services (it starts a broker of "
    "its own, or Spark inside its own worker or process): it runs beside the services group rather than in it"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", BESIDE_SERVICES)


def xdist_group_of(item: pytest.Item) -> str | None:
    """The xdist group ``item`` runs in under ``--dist loadgroup``, None for a test any worker may take.

    Under ``pytest -n 2 --dist loadgroup`` (scripts/test.sh) the tests needing Kafka, HDFS, OpenSearch or Spark
    all run on one xdist worker, one at a time and against one set of services, while the other worker runs the
    rest beside them: the wall time of the suite is about the sum of that group. The multi-host tests have a
    broker of their own, in a network namespace (tests/distributed/conftest.py): they run as a group of their
    own, beside the services. A test marked ``beside_services`` shares nothing with the group and so runs
    beside it too, unless it asks for a session service all the same.
    """
    fixtures = getattr(item, "fixturenames", ())
    if "multihost_network" in fixtures:
        return "multihost"
    if not (item.get_closest_marker("kafka") or item.get_closest_marker("spark")):
        return None
    if item.get_closest_marker("beside_services") and not any(f in SESSION_SERVICES for f in fixtures):
        return None
    return "services"


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for name in sorted(markers_of(item) - {m.name for m in item.iter_markers()}):
            item.add_marker(name)
        group = xdist_group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def missing_requirements(items: list[pytest.Item]) -> list[str]:
    """What the selected tests need and this machine lacks, one line each with how to install it."""
    missing: dict[str, str] = {}
    for item in items:
        for marker, (packages, how) in MARKER_PACKAGES.items():
            if item.get_closest_marker(marker) is None:
                continue
            for package in packages:
                if package not in missing and importlib.util.find_spec(package) is None:
                    missing[package] = f"Python package {package!r} ({marker} tests): {how}"
        for fixture in getattr(item, "fixturenames", ()):
            if fixture in FIXTURE_TOOLS:
                tool, how = FIXTURE_TOOLS[fixture]
                if tool not in missing and shutil.which(tool) is None:
                    missing[tool] = f"command {tool!r} (e.g. {item.nodeid}): {how}"
    return list(missing.values())


def pytest_collection_finish(session: pytest.Session) -> None:
    missing = missing_requirements(session.items)
    if missing:
        raise pytest.UsageError(
            "the selected tests need what is not installed (deselect them with -m to run the rest):\n  "
            + "\n  ".join(missing)
        )


@pytest.fixture(scope="session")
def kcat() -> str:
    """The path of Debian's kcat, an independent Kafka client the interoperability tests drive."""
    path = shutil.which("kcat")
    if path is None:
        pytest.fail("kcat is not installed: " + FIXTURE_TOOLS["kcat"][1], pytrace=False)
    return path


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of Debian's chromium, the headless browser the status-page tests drive through Playwright."""
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is not installed: " + FIXTURE_TOOLS["chromium"][1], pytrace=False)
    return path
