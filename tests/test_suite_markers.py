"""tests/conftest.py: the kafka/spark markers a test gets, and the stop when what it needs is missing."""

from __future__ import annotations

import pytest

from tests import conftest
from tests.conftest import TESTS, markers_of, missing_requirements, xdist_group_of


class _Item:
    """What the hooks read of a collected test."""

    def __init__(self, path: str, fixtures: tuple[str, ...] = (), markers: tuple[str, ...] = ()) -> None:
        self.path = TESTS / path
        self.fixturenames = fixtures
        self.nodeid = f"tests/{path}::test_x"
        self._markers = markers

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self._markers else None


@pytest.mark.parametrize(
    ("path", "fixtures", "expected"),
    [
        ("kafka/test_new.py", (), {"kafka"}),  # a file that does not exist yet gets its directory's marker
        ("compat/test_new.py", (), {"kafka"}),
        ("runtime/test_new.py", ("java_connect",), {"kafka"}),
        ("spark/test_new.py", ("tmp_path",), {"spark"}),
        ("e2e/test_new.py", ("tmp_path", "kafka"), {"kafka"}),
        ("runtime/test_new.py", ("hdfs",), {"spark"}),
        ("log/test_new.py", ("opensearch", "kafka"), {"kafka", "spark"}),
        ("rest/test_new.py", ("elasticsearch",), {"spark"}),
        ("e2e/test_new.py", ("tmp_path", "unique_topic"), set()),
        ("plugins/test_new.py", ("redis_service",), {"redis"}),
        ("e2e/test_new.py", ("tmp_path", "redis_factory"), {"redis"}),
    ],
)
def test_markers_come_from_the_directory_and_the_service_fixtures(path, fixtures, expected):
    assert markers_of(_Item(path, fixtures)) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("path", "fixtures", "markers", "group"),
    [
        ("spark/test_new.py", ("tmp_path", "hdfs"), ("spark",), "services"),
        ("kafka/test_new.py", ("unique_topic",), ("kafka",), "services"),
        # Spark inside the test's own worker, or a broker of the test's own: nothing of the session's to share
        ("spark/test_new.py", ("tmp_path",), ("spark", "beside_services"), None),
        ("kafka/test_new.py", (), ("kafka", "beside_services"), None),
        ("spark/test_new.py", ("spark",), ("spark", "beside_services"), None),  # the test process's own session
        # the marker cannot take a test that does use a session service out of their group
        ("spark/test_new.py", ("opensearch",), ("spark", "beside_services"), "services"),
        ("e2e/test_new.py", ("kafka",), ("kafka", "beside_services"), "services"),
        ("distributed/test_new.py", ("multihost_network",), ("kafka",), "multihost"),
        ("runtime/test_new.py", ("tmp_path",), (), None),
    ],
)
def test_the_tests_of_the_session_services_run_in_one_group(path, fixtures, markers, group):
    assert xdist_group_of(_Item(path, fixtures, markers)) == group  # type: ignore[arg-type]


def test_the_suite_itself_marks_every_test_that_starts_a_service(request):
    for item in request.session.items:
        assert markers_of(item) <= {m.name for m in item.iter_markers()}, item.nodeid


def test_a_missing_package_or_tool_is_named_with_how_to_install_it(monkeypatch):
    monkeypatch.setitem(conftest.MARKER_PACKAGES, "spark", (("no_such_package_xyz", "pytest"), "pip install it"))
    monkeypatch.setitem(conftest.FIXTURE_TOOLS, "kcat", ("no-such-tool-xyz", "apt-get install it"))
    items = [_Item("spark/test_a.py", markers=("spark",)), _Item("kafka/test_b.py", ("kcat",), ("kafka",)),
             _Item("runtime/test_c.py")]
    assert missing_requirements(items) == [  # type: ignore[arg-type]
        "Python package 'no_such_package_xyz' (spark tests): pip install it",
        "command 'no-such-tool-xyz' (e.g. tests/kafka/test_b.py::test_x): apt-get install it",
    ]
    assert missing_requirements([_Item("runtime/test_c.py")]) == []  # type: ignore[list-item]
