"""The status page at /ui in a real headless Chromium (Debian's), against a real ``connect-standalone``.

Playwright drives the system browser (Debian's chromium on PATH; no browser download); a run that
selects these tests without it or without playwright stops at once naming what to install. Each test saves
screenshots under test-artifacts/ui/ (or $HEADRACE_TEST_ARTIFACTS/ui) and fails on any console error
or uncaught exception in the page.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bcrypt
import httpx
import pytest

from tests.support import (
    FAST_OFFSET_FLUSH,
    REPO,
    STRING_CONVERTERS,
    RestWorker,
    connect_standalone,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(300)]

try:
    from playwright import sync_api
except ImportError:  # tests/conftest.py stops the run first, naming what to install (the browser marker)
    sync_api = None  # type: ignore[assignment]

ARTIFACTS = Path(os.environ.get("HEADRACE_TEST_ARTIFACTS", REPO / "test-artifacts")) / "ui"
HOSTILE = '<img src=x onerror="window.__pwned=1">'
WAIT_MS = 20_000

FAILING_PLUGIN = '''
from connect.api import ConfigDef, SourceConnector, SourceTask

class UiFailingSourceConnector(SourceConnector):
    def version(self): return "1.0"
    def start(self, props): self.props = dict(props)
    def task_class(self): return UiFailingSourceTask
    def task_configs(self, max_tasks): return [dict(self.props)]
    def stop(self): pass
    def config(self): return ConfigDef()

class UiFailingSourceTask(SourceTask):
    def version(self): return "1.0"
    def start(self, props): pass
    def poll(self):
        raise RuntimeError("ui test: this task always fails")
    def stop(self): pass
'''


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        # Debian's browser, not one Playwright would download
        browser = playwright.chromium.launch(executable_path=chromium, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestWorker]:
    tmp = tmp_path_factory.mktemp("ui-worker")
    plugins = tmp / "plugins"
    plugins.mkdir()
    (plugins / "ui_failing.py").write_text(FAILING_PLUGIN)
    # automatic restarts on: the first comes at once, the second not within the test, so a failing task
    # shows one try made and the next one planned
    # the tests append raw text records themselves (STRING_CONVERTERS), not JSON, and the page shows offsets once
    # committed: within the page's few-second waits (FAST_OFFSET_FLUSH), not the shipped 10 s
    w = RestWorker(tmp, **STRING_CONVERTERS, **FAST_OFFSET_FLUSH, **{"plugin.path": plugins, "task.restart.enabled": "true",
                           "task.restart.initial.delay.ms": 200, "task.restart.multiplier": 3000,
                           "task.restart.max.delay.ms": 3_600_000, "task.restart.max.tries": 3}).start()
    yield w
    w.stop()


class PageSession:
    """A browser page on the worker's /ui that records console errors and page exceptions."""

    def __init__(self, context: Any, url: str, name: str) -> None:
        self.context = context
        self.page = context.new_page()
        self.page.set_default_timeout(WAIT_MS)
        self.name = name
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("dialog", lambda d: d.accept())  # the confirm() before reset and delete
        self.shots = 0
        response = self.page.goto(f"{url}/ui")
        assert response is not None and response.status == 200

    def shot(self, label: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.shots += 1
        path = ARTIFACTS / f"{self.name}-{self.shots:02d}-{label}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def close(self) -> None:
        try:
            assert self.errors == [], self.errors
            assert self.page.evaluate("window.__pwned") is None, "a connector name ran as markup"
        finally:
            self.context.close()


@pytest.fixture
def session(browser: Any, worker: RestWorker, request: pytest.FixtureRequest) -> Iterator[PageSession]:
    s = PageSession(browser.new_context(), worker.url, request.node.name)
    yield s
    s.close()


def _create(c: httpx.Client, name: str, config: dict[str, str]) -> None:
    r = c.post("/connectors", json={"name": name, "config": config})
    assert r.status_code == 201, r.text


def _state(c: httpx.Client, name: str) -> str:
    return str(c.get(f"/connectors/{name}/status").json()["connector"]["state"])


def _task_states(c: httpx.Client, name: str) -> list[str]:
    return [t["state"] for t in c.get(f"/connectors/{name}/status").json()["tasks"]]


def _row(page: Any, name: str) -> Any:
    return page.locator("#connectors tbody tr").filter(has=page.get_by_role("link", name=name, exact=True))


def test_list_filter_open_pause_and_resume(session: PageSession, worker: RestWorker) -> None:
    tmp = worker.tmp
    (tmp / "list-in.txt").write_text("".join(f"line {i}\n" for i in range(500)))
    with worker.http() as c:
        _create(c, "list-src", {"connector.class": "FileStreamSource", "file": str(tmp / "list-in.txt"),
                                "topic": "ui-list", "db.password": "hunter2-plain",
                                "api.ref": "${file:/nowhere/secrets.properties:key}"})
        _create(c, "list-sink", {"connector.class": "FileStreamSink", "topics": "ui-list",
                                 "file": str(tmp / "list-out.txt")})
        _create(c, HOSTILE, {"connector.class": "FileStreamSink", "topics": "ui-list",
                             "file": str(tmp / "hostile-out.txt")})
        _create(c, "list-failing", {"connector.class": "UiFailingSourceConnector", "topic": "ui-fail"})
        wait_until(lambda: _task_states(c, "list-failing") == ["FAILED"], 30, what="the failing task to be FAILED")
    page = session.page
    sync_api.expect(_row(page, "list-sink")).to_be_visible()
    sync_api.expect(_row(page, HOSTILE)).to_be_visible()  # shown as text, not run as markup
    # a connector with a failed task is listed first, and counted
    sync_api.expect(page.locator("#connectors tbody tr").first).to_have_attribute("data-name", "list-failing")
    sync_api.expect(_row(page, "list-failing").locator(".failed-tasks")).to_have_text("1")
    sync_api.expect(_row(page, "list-src").locator(".running-tasks")).to_have_text("1")
    # records/s appears once two refreshes have the task counters (the source has read its 500 lines)
    sync_api.expect(_row(page, "list-src").locator(".rate")).to_have_text(re.compile(r"^\d+\.\d$"))
    session.shot("list")

    page.select_option("#filter-class", "FileStreamSink")
    rows = page.locator("#connectors tbody tr")
    sync_api.expect(rows).to_have_count(2)
    sync_api.expect(_row(page, "list-src")).to_have_count(0)
    page.select_option("#filter-class", "")
    sync_api.expect(_row(page, "list-src")).to_have_count(1)
    page.select_option("#filter-state", "RUNNING")
    sync_api.expect(_row(page, "list-src")).to_have_count(1)
    session.shot("filtered")
    page.select_option("#filter-state", "")

    page.get_by_role("link", name="list-src", exact=True).click()
    sync_api.expect(page.locator("#connector-name")).to_have_text("list-src")
    sync_api.expect(page.locator("#connector-state")).to_have_text("RUNNING")
    sync_api.expect(page.locator("#tasks tbody tr")).to_have_count(1)
    sync_api.expect(page.locator("#tasks tbody tr td").nth(2)).not_to_be_empty()  # the worker id
    config = page.locator("#config")
    sync_api.expect(config.locator("tr[data-key='db.password'] td").nth(1)).to_have_text("********")
    sync_api.expect(config.locator("tr[data-key='api.ref'] td").nth(1)).to_have_text("********")
    sync_api.expect(config.locator("tr[data-key='topic'] td").nth(1)).to_have_text("ui-list")
    assert "hunter2-plain" not in page.content()
    sync_api.expect(page.locator("#offsets tbody tr")).to_have_count(1)  # the file position, once committed
    sync_api.expect(page.locator("#chart polyline")).to_have_count(1)
    session.shot("connector")

    page.click("#action-pause")
    sync_api.expect(page.locator("#connector-state")).to_have_text("PAUSED")
    sync_api.expect(page.locator("#message")).to_contain_text("Pause: done for list-src")
    sync_api.expect(page.locator("#action-pause")).to_be_disabled()
    with worker.http() as c:
        assert _state(c, "list-src") == "PAUSED"
    session.shot("paused")
    page.click("#action-resume")
    sync_api.expect(page.locator("#connector-state")).to_have_text("RUNNING")
    with worker.http() as c:
        assert _state(c, "list-src") == "RUNNING"

    # a name that is markup is a name like any other: its page opens and shows it as text
    page.goto(f"{worker.url}/ui")
    _row(page, HOSTILE).get_by_role("link").click()
    sync_api.expect(page.locator("#connector-name")).to_have_text(HOSTILE)
    sync_api.expect(page.locator("#connector-state")).to_have_text("RUNNING")
    sync_api.expect(page.locator("#offsets tbody tr")).to_have_count(1)  # the sink's consumed position
    sync_api.expect(page.locator("#offsets tbody tr td").first).to_contain_text('"kafka_topic":"ui-list"')

    # the failing connector's page shows the task's trace and offers restarting the failed task
    page.goto(f"{worker.url}/ui#/connector/list-failing")
    sync_api.expect(page.locator("#tasks pre.trace")).to_contain_text("ui test: this task always fails")
    sync_api.expect(page.locator("#action-restart-failed")).to_be_enabled()
    page.click("#action-restart-failed")
    sync_api.expect(page.locator("#message")).to_contain_text("Restart failed tasks: done for list-failing at ")
    page.locator("#tasks tr[data-task='0'] button.task-restart").click()
    sync_api.expect(page.locator("#message")).to_contain_text("Restart task 0: done for list-failing at ")
    # it fails again at once: the trace is back
    sync_api.expect(page.locator("#tasks pre.trace")).to_contain_text("ui test: this task always fails")
    session.shot("failed-task")



def test_lag_dlq_and_auto_restart_columns(session: PageSession, worker: RestWorker) -> None:
    tmp = worker.tmp
    source = tmp / "lag-in.txt"
    source.write_text("".join(f"lag {i}\n" for i in range(40)))
    with worker.http() as c:
        _create(c, "lag-src", {"connector.class": "FileStreamSource", "file": str(source), "topic": "ui-lag"})
        _create(c, "lag-sink", {"connector.class": "FileStreamSink", "topics": "ui-lag",
                                "file": str(tmp / "lag-out.txt")})
        # plain text is no JSON: every record fails conversion and goes to the dead letter queue
        _create(c, "dlq-sink", {"connector.class": "FileStreamSink", "topics": "ui-lag",
                                "file": str(tmp / "dlq-out.txt"),
                                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                                "value.converter.schemas.enable": "false", "errors.tolerance": "all",
                                "errors.deadletterqueue.topic.name": "ui-dlq",
                                "errors.deadletterqueue.topic.replication.factor": "1"})
        _create(c, "restart-failing", {"connector.class": "UiFailingSourceConnector", "topic": "ui-fail-2"})
    page = session.page
    # the sink caught up and committed: no lag; the DLQ sink sent all 40 there
    sync_api.expect(_row(page, "lag-sink").locator(".lag")).to_have_text("0", timeout=30_000)
    sync_api.expect(_row(page, "dlq-sink").locator(".dlq")).to_have_text("40", timeout=30_000)
    sync_api.expect(_row(page, "lag-sink").locator(".dlq")).to_have_text("0")
    sync_api.expect(_row(page, "lag-src").locator(".lag")).to_have_text("")  # sources have no lag
    # one automatic restart made, the next one planned (an hour of backoff away)
    sync_api.expect(_row(page, "restart-failing").locator(".auto-restart")).to_have_text(
        re.compile(r"^1/3 tries, next \d\d:\d\d:\d\d$"), timeout=30_000)
    sync_api.expect(_row(page, "lag-src").locator(".auto-restart")).to_have_text("")

    # a paused sink stops reading: the records written meanwhile are its lag
    with worker.http() as c:
        assert c.put("/connectors/lag-sink/pause").status_code == 202
        wait_until(lambda: _task_states(c, "lag-sink") == ["PAUSED"], 30, what="lag-sink paused")
        with source.open("a") as f:
            f.write("".join(f"more {i}\n" for i in range(25)))
    sync_api.expect(_row(page, "lag-sink").locator(".lag")).to_have_text("25", timeout=30_000)
    sync_api.expect(_row(page, "dlq-sink").locator(".dlq")).to_have_text("65", timeout=30_000)
    session.shot("lag-dlq-restart")
    with worker.http() as c:  # the page shows what status says
        tasks = c.get("/connectors/lag-sink/status").json()["tasks"]
        assert tasks[0]["metrics"]["lag"] == 25
        failing = c.get("/connectors/restart-failing/status").json()["tasks"][0]
        assert failing["restart_tries"] == 1 and failing["next_restart_ms"] is not None

    page.get_by_role("link", name="restart-failing", exact=True).click()
    sync_api.expect(page.locator("#tasks tr[data-task='0'] .auto-restart")).to_have_text(
        re.compile(r"^1/3 tries, next \d\d:\d\d:\d\d$"))
    session.shot("task-auto-restart")
    with worker.http() as c:
        assert c.put("/connectors/lag-sink/resume").status_code == 202
        for name in ("lag-src", "lag-sink", "dlq-sink", "restart-failing"):
            assert c.delete(f"/connectors/{name}").status_code == 204


def test_create_through_the_form_shows_the_fields_error_then_creates(session: PageSession, worker: RestWorker) -> None:
    page = session.page
    page.click("#nav-new")
    # /connector-plugins lists the class under the name Kafka Connect gives it
    page.select_option("#plugin-class", "org.apache.kafka.connect.file.FileStreamSinkConnector")
    sync_api.expect(page.locator("#field-topics")).to_be_visible()
    page.fill("#connector-name-input", "form-sink")
    page.fill("#field-topics", "ui-form")
    page.fill("#field-file", str(worker.tmp / "form-out.txt"))
    page.fill("#field-tasks\\.max", "many")
    page.click("#submit")
    error = page.locator("#error-tasks\\.max")
    sync_api.expect(error).to_contain_text("tasks.max")
    sync_api.expect(error).to_contain_text("many")
    # the error sits in that field's own row, and only there
    sync_api.expect(page.locator(".field.invalid")).to_have_count(1)
    sync_api.expect(page.locator(".field.invalid")).to_have_attribute("data-key", "tasks.max")
    session.shot("form-error")
    with worker.http() as c:
        assert c.get("/connectors/form-sink").status_code == 404

    page.fill("#field-tasks\\.max", "1")
    page.click("#submit")
    sync_api.expect(page.locator("#connector-name")).to_have_text("form-sink")
    sync_api.expect(page.locator("#connector-state")).to_have_text("RUNNING")
    session.shot("form-created")
    with worker.http() as c:
        config = c.get("/connectors/form-sink/config").json()
    assert config["topics"] == "ui-form" and config["tasks.max"] == "1"
    assert config["file"] == str(worker.tmp / "form-out.txt")

    # edit: the same form, filled from the connector's config, saved with PUT .../config
    page.click("#action-edit")
    sync_api.expect(page.locator("#field-topics")).to_have_value("ui-form")
    sync_api.expect(page.locator("#plugin-class")).to_be_disabled()
    page.fill("#field-topics", "ui-form-2")
    page.click("#submit")
    sync_api.expect(page.locator("#message")).to_contain_text("Saved connector form-sink")
    sync_api.expect(page.locator("#config tr[data-key='topics'] td").nth(1)).to_have_text("ui-form-2")
    with worker.http() as c:
        assert c.get("/connectors/form-sink/config").json()["topics"] == "ui-form-2"


def test_stop_then_reset_offsets(session: PageSession, worker: RestWorker) -> None:
    source = worker.tmp / "reset-in.txt"
    source.write_text("".join(f"r{i}\n" for i in range(50)))
    with worker.http() as c:
        _create(c, "reset-src", {"connector.class": "FileStreamSource", "file": str(source), "topic": "ui-reset"})
        wait_until(lambda: c.get("/connectors/reset-src/offsets").json()["offsets"], 30, what="committed offsets")
    page = session.page
    page.goto(f"{worker.url}/ui#/connector/reset-src")
    sync_api.expect(page.locator("#offsets tbody tr")).to_have_count(1)
    sync_api.expect(page.locator("#action-reset-offsets")).to_be_disabled()  # only once stopped
    page.click("#action-stop")
    sync_api.expect(page.locator("#connector-state")).to_have_text("STOPPED")
    sync_api.expect(page.locator("#action-reset-offsets")).to_be_enabled()
    session.shot("stopped")
    page.click("#action-reset-offsets")
    sync_api.expect(page.locator("#message")).to_contain_text("Reset offsets: done for reset-src")
    sync_api.expect(page.locator("#offsets tbody tr")).to_have_count(0)
    session.shot("offsets-reset")
    with worker.http() as c:
        assert c.get("/connectors/reset-src/offsets").json()["offsets"] == []
    page.click("#action-delete")
    sync_api.expect(page.locator("#message")).to_contain_text("Delete: done for reset-src")
    sync_api.expect(page.locator("#connectors")).to_be_visible()
    with worker.http() as c:
        assert c.get("/connectors/reset-src").status_code == 404


def test_page_works_with_basic_auth(browser: Any, tmp_path: Path) -> None:
    users = tmp_path / "users.properties"
    users.write_text(f"ops={bcrypt.hashpw(b'op-pass', bcrypt.gensalt(rounds=4)).decode()}\n")
    w = RestWorker(tmp_path, **{
        "rest.extension.classes": "BasicAuthSecurityRestExtension",
        "rest.basic.auth.credentials.file": users,
    })
    # not RestWorker.start: it polls /health without credentials, which this worker answers with 401
    w.proc = connect_standalone(w.tmp, w.cfg)
    auth = {"Authorization": "Basic " + base64.b64encode(b"ops:op-pass").decode()}

    def up() -> bool:
        try:
            return httpx.get(f"{w.url}/health", headers=auth, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False
    try:
        wait_until(lambda: up() or not w.proc.alive(), 60, what="REST with basic auth")  # type: ignore[union-attr]
        r = httpx.post(f"{w.url}/connectors", headers=auth, json={"name": "auth-sink", "config": {
            "connector.class": "FileStreamSink", "topics": "t", "file": str(tmp_path / "o.txt")}})
        assert r.status_code == 201, r.text

        # without credentials the page itself is refused with a Basic challenge (headless Chromium
        # cannot show its prompt, so the navigation ends in an authentication error)
        anonymous = browser.new_context()
        page = anonymous.new_page()
        answers: list[Any] = []
        page.on("response", lambda r: answers.append(r))
        with pytest.raises(sync_api.Error, match="ERR_INVALID_AUTH_CREDENTIALS"):
            page.goto(f"{w.url}/ui")
        assert [(a.url, a.status) for a in answers] == [(f"{w.url}/ui", 401)]
        assert answers[0].headers["www-authenticate"].startswith("Basic ")
        anonymous.close()

        # the credentials the browser asked for once serve the page and its same-origin API calls
        s = PageSession(browser.new_context(http_credentials={"username": "ops", "password": "op-pass"}),
                        w.url, "basic_auth")
        sync_api.expect(_row(s.page, "auth-sink")).to_be_visible()
        s.page.get_by_role("link", name="auth-sink", exact=True).click()
        sync_api.expect(s.page.locator("#connector-state")).to_have_text("RUNNING")
        s.shot("connector")
        s.close()
    finally:
        w.stop()
        shutil.rmtree(tmp_path / "data", ignore_errors=True)
