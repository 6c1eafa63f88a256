"""``/admin/loggers`` over this process's Python loggers."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

NS = "headrace_test_ns"


@pytest.fixture(autouse=True)
def scratch_loggers() -> Iterator[None]:
    """A private logger tree; every logger's level is put back afterwards, since setting the
    root namespace touches them all."""
    existing = [lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    saved = [(lg, lg.level) for lg in [logging.getLogger(), *existing]]
    logging.getLogger(f"{NS}.child").setLevel(logging.INFO)
    logging.getLogger(f"{NS}.child.grandchild")
    logging.getLogger(f"{NS}x")  # a name sharing the prefix but not a descendant
    yield
    for lg, level in saved:
        lg.setLevel(level)
    for name in list(logging.root.manager.loggerDict):
        if name.startswith(NS):
            logging.getLogger(name).setLevel(logging.NOTSET)


def test_list_loggers_has_root_and_every_logger_with_level_and_last_modified(client: FlaskClient) -> None:
    body = client.get("/admin/loggers").get_json()
    assert "root" in body
    assert body[f"{NS}.child"] == {"level": "INFO", "last_modified": None}
    assert body[f"{NS}.child.grandchild"] == {"level": "INFO", "last_modified": None}
    assert list(body) == sorted(body)


def test_get_one_logger_effective_level_and_404(client: FlaskClient) -> None:
    r = client.get(f"/admin/loggers/{NS}.child.grandchild")
    assert (r.status_code, r.get_json()) == (200, {"level": "INFO", "last_modified": None})
    assert client.get("/admin/loggers/ROOT").status_code == 200
    r = client.get("/admin/loggers/no.such.logger.anywhere")
    assert r.status_code == 404
    assert r.get_json()["error_code"] == 404 and "no.such.logger.anywhere" in r.get_json()["message"]


def test_put_sets_namespace_and_children_and_returns_changed_sorted(client: FlaskClient) -> None:
    r = client.put(f"/admin/loggers/{NS}.child", json={"level": "DEBUG"})
    assert r.status_code == 200
    assert r.get_json() == [f"{NS}.child", f"{NS}.child.grandchild"]
    assert logging.getLogger(f"{NS}.child.grandchild").getEffectiveLevel() == logging.DEBUG
    assert logging.getLogger(f"{NS}x").level == logging.NOTSET
    level = client.get(f"/admin/loggers/{NS}.child").get_json()
    assert level["level"] == "DEBUG" and isinstance(level["last_modified"], int) and level["last_modified"] > 0
    # Setting the same level again changes nothing, so nothing is reported.
    assert client.put(f"/admin/loggers/{NS}.child", json={"level": "debug"}).get_json() == []


def test_put_creates_a_missing_namespace_logger(client: FlaskClient) -> None:
    r = client.put(f"/admin/loggers/{NS}.fresh", json={"level": "WARN"})
    assert r.get_json() == [f"{NS}.fresh"]
    assert client.get(f"/admin/loggers/{NS}.fresh").get_json()["level"] == "WARN"


@pytest.mark.parametrize(("given", "reported"), [("TRACE", "TRACE"), ("WARNING", "WARN"), ("critical", "FATAL"),
                                                  ("OFF", "OFF"), ("Error", "ERROR")])
def test_level_names(client: FlaskClient, given: str, reported: str) -> None:
    client.put(f"/admin/loggers/{NS}.child", json={"level": given})
    assert client.get(f"/admin/loggers/{NS}.child").get_json()["level"] == reported


@pytest.mark.parametrize(("body", "fragment"), [({"level": "LOUD"}, "LOUD"), ({}, '"level"'),
                                                ({"level": 10}, "10"), (["DEBUG"], "JSON object")])
def test_put_bad_level_is_400(client: FlaskClient, body: object, fragment: str) -> None:
    r = client.put(f"/admin/loggers/{NS}.child", json=body)
    assert r.status_code == 400
    assert fragment in r.get_json()["message"]


def test_scope_cluster_is_204_and_unknown_scope_means_worker(client: FlaskClient) -> None:
    r = client.put(f"/admin/loggers/{NS}.child?scope=cluster", json={"level": "ERROR"})
    assert r.status_code == 204 and r.get_data() == b""
    assert logging.getLogger(f"{NS}.child").level == logging.ERROR
    r = client.put(f"/admin/loggers/{NS}.child?scope=galaxy", json={"level": "INFO"})
    assert r.status_code == 200 and f"{NS}.child" in r.get_json()
    assert client.put(f"/admin/loggers/{NS}.child?scope=worker", json={"level": "DEBUG"}).status_code == 200


def test_root_namespace_reaches_every_logger(client: FlaskClient) -> None:
    r = client.put("/admin/loggers/root", json={"level": "ERROR"})
    assert r.status_code == 200
    changed = r.get_json()
    assert "root" in changed and f"{NS}.child" in changed
    assert logging.getLogger().level == logging.ERROR
