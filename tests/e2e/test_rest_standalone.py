"""The REST API of a real ``connect-standalone`` process, exercised over HTTP as curl would."""

from __future__ import annotations

import httpx
import pytest

from tests.support import (
    RestWorker,
    connect_standalone,
    free_port,
    line_count,
    rest_ready,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(240)

PLUGIN = '''
from connect.api import ConfigDef, ConfigType, Importance, SourceConnector, SourceTask

class SecretSourceConnector(SourceConnector):
    def version(self): return "1.0"
    def start(self, props): self.props = dict(props)
    def task_class(self): return SecretSourceTask
    def task_configs(self, max_tasks): return [dict(self.props)]
    def stop(self): pass
    def config(self):
        return (ConfigDef()
                .define("secret", ConfigType.PASSWORD, importance=Importance.HIGH, documentation="a password")
                .define("out", ConfigType.STRING, importance=Importance.HIGH, documentation="where to write"))

class SecretSourceTask(SourceTask):
    def version(self): return "1.0"
    def start(self, props):
        # proves that ${file:...} references are resolved by the time the task starts
        with open(props["out"], "w") as fh:
            fh.write(props["secret"])
    def poll(self):
        import time
        time.sleep(0.2)
        return None
    def stop(self): pass
'''


@pytest.fixture
def worker(tmp_path):
    w = RestWorker(tmp_path).start()
    yield w
    w.stop()


def _status(c: httpx.Client, name: str) -> dict:
    r = c.get(f"/connectors/{name}/status")
    assert r.status_code == 200, r.text
    return r.json()


def _offsets(c: httpx.Client, name: str) -> list[dict]:
    return [o["offset"] for o in c.get(f"/connectors/{name}/offsets").json()["offsets"]]


def _wait_state(c: httpx.Client, name: str, state: str, tasks: int | None = None) -> dict:
    def check():
        s = _status(c, name)
        ok = s["connector"]["state"] == state and all(t["state"] == state for t in s["tasks"])
        if tasks is not None:
            ok = ok and len(s["tasks"]) == tasks
        return s if ok else None
    return wait_until(check, 30, what=f"{name} to be {state}")


def test_full_lifecycle_over_http(worker, tmp_path):
    src_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    src_file.write_text("".join(f"a{i}\n" for i in range(100)))
    with worker.http() as c:
        assert c.get("/").json()["version"]
        assert c.get("/connectors").json() == []
        r = c.post("/connectors", json={"name": "src", "config": {
            "connector.class": "FileStreamSource", "file": str(src_file), "topic": "lines", "tasks.max": "1"}})
        assert r.status_code == 201, r.text
        assert r.headers["Location"].endswith("/connectors/src")
        body = r.json()
        assert body["name"] == "src" and body["type"] == "source"
        assert body["config"]["file"] == str(src_file) and body["config"]["name"] == "src"
        assert body["tasks"] == [{"connector": "src", "task": 0}]
        r = c.put("/connectors/snk/config", json={"connector.class": "FileStreamSink", "file": str(sink_file),
                                                  "topics": "lines"})
        assert r.status_code == 201 and r.json()["type"] == "sink"
        assert c.post("/connectors", json={"name": "src", "config": {"connector.class": "FileStreamSource",
                                                                     "topic": "x"}}).status_code == 409

        wait_until(lambda: line_count(sink_file) >= 100, 30, what="first lines")
        status = _wait_state(c, "src", "RUNNING", 1)
        assert set(status) == {"name", "connector", "tasks", "type"}
        assert status["connector"]["worker_id"] and "trace" not in status["connector"]
        assert status["tasks"][0]["id"] == 0

        expanded = c.get("/connectors?expand=status&expand=info").json()
        assert set(expanded) == {"src", "snk"}
        assert expanded["snk"]["info"]["type"] == "sink" and expanded["snk"]["status"]["name"] == "snk"
        tasks = c.get("/connectors/src/tasks").json()
        assert tasks[0]["id"] == {"connector": "src", "task": 0} and tasks[0]["config"]["file"] == str(src_file)
        assert c.get("/connectors/src/tasks/0/status").json()["state"] == "RUNNING"
        assert c.get("/connectors/src/topics").json() == {"src": {"topics": ["lines"]}}

        # pause: no new lines arrive, while a running copy of the pair (the control) copies them
        control_file = tmp_path / "control.txt"
        for name, config in (("control-src", {"connector.class": "FileStreamSource", "file": str(src_file),
                                              "topic": "control"}),
                             ("control-snk", {"connector.class": "FileStreamSink", "file": str(control_file),
                                              "topics": "control"})):
            assert c.put(f"/connectors/{name}/config", json=config).status_code == 201
        wait_until(lambda: line_count(control_file) >= 100, 30, what="the control's first lines")
        assert c.put("/connectors/src/pause").status_code == 202
        _wait_state(c, "src", "PAUSED")
        with open(src_file, "a") as fh:
            fh.write("".join(f"b{i}\n" for i in range(50)))
        wait_until(lambda: line_count(control_file) >= 150, 30, what="the control to copy the new lines")
        assert line_count(sink_file) == 100
        for name in ("control-src", "control-snk"):
            assert c.delete(f"/connectors/{name}").status_code == 204
        # resume: they do
        assert c.put("/connectors/src/resume").status_code == 202
        _wait_state(c, "src", "RUNNING")
        wait_until(lambda: line_count(sink_file) >= 150, 30, what="lines after resume")

        # offsets can only change when STOPPED
        r = c.patch("/connectors/src/offsets", json={"offsets": [
            {"partition": {"filename": str(src_file)}, "offset": {"position": 0}}]})
        assert r.status_code == 400 and "STOPPED" in r.json()["message"]
        assert c.put("/connectors/src/stop").status_code == 204
        s = wait_until(lambda: (st := _status(c, "src"))["connector"]["state"] == "STOPPED" and st, 30)
        assert s["tasks"] == []
        assert c.get("/connectors/src/tasks").json() == []
        offsets = c.get("/connectors/src/offsets").json()
        assert offsets["offsets"][0]["partition"] == {"filename": str(src_file)}
        assert offsets["offsets"][0]["offset"]["position"] == src_file.stat().st_size
        r = c.patch("/connectors/src/offsets", json={"offsets": [
            {"partition": {"filename": str(src_file)}, "offset": {"position": 0}}]})
        assert r.status_code == 200 and "altered successfully" in r.json()["message"]
        assert c.get("/connectors/src/offsets").json()["offsets"][0]["offset"] == {"position": 0}
        sink_offsets = wait_until(lambda: c.get("/connectors/snk/offsets").json()["offsets"], 30,
                                  what="the sink's first offset commit")
        assert sink_offsets[0]["partition"] == {"kafka_topic": "lines", "kafka_partition": 0}
        assert isinstance(sink_offsets[0]["offset"]["kafka_offset"], int)
        # resuming re-reads the file from the start
        assert c.put("/connectors/src/resume").status_code == 202
        wait_until(lambda: line_count(sink_file) >= 300, 30, what="re-read from the start")
        lines = sink_file.read_text().splitlines()
        assert lines[150:300] == lines[:150]

        # restart matrix
        assert c.post("/connectors/src/restart").status_code == 204
        r = c.post("/connectors/src/restart?includeTasks=true&onlyFailed=false")
        assert r.status_code == 202 and r.json()["connector"]["state"] == "RESTARTING"
        assert r.json()["tasks"][0]["state"] == "RESTARTING"
        _wait_state(c, "src", "RUNNING", 1)
        assert c.post("/connectors/src/tasks/0/restart").status_code == 204

        assert c.delete("/connectors/src").status_code == 204
        r = c.get("/connectors/src")
        assert r.status_code == 404 and r.json() == {"error_code": 404, "message": r.json()["message"]}
        assert "src" in r.json()["message"]
        assert c.get("/connectors").json() == ["snk"]


@pytest.mark.slow  # several seconds of a real worker: kept out of the fast suite
def test_restart_keeps_rest_created_connectors_state_and_offsets(tmp_path):
    src_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    src_file.write_text("".join(f"x{i}\n" for i in range(200)))
    w = RestWorker(tmp_path).start()
    with w.http() as c:
        assert c.post("/connectors", json={"name": "src", "config": {
            "connector.class": "FileStreamSource", "file": str(src_file), "topic": "t1"}}).status_code == 201
        assert c.post("/connectors", json={"name": "snk", "config": {
            "connector.class": "FileStreamSink", "file": str(sink_file), "topics": "t1"}}).status_code == 201
        wait_until(lambda: line_count(sink_file) >= 200, 30)
        assert c.post("/connectors", json={"name": "paused-src", "initial_state": "PAUSED", "config": {
            "connector.class": "FileStreamSource", "file": str(src_file), "topic": "t2"}}).status_code == 201
        _wait_state(c, "paused-src", "PAUSED")
        size = src_file.stat().st_size
        # the shipped offset.flush.interval.ms (10 s) commits them
        wait_until(lambda: _offsets(c, "src") == [{"position": size}] and _offsets(c, "snk") == [{"kafka_offset": 200}],
                   45, what="the offsets of all 200 lines committed")
    w.stop()
    w.start()  # same worker config, same log directory
    try:
        with w.http() as c:
            assert c.get("/connectors").json() == ["paused-src", "snk", "src"]
            _wait_state(c, "paused-src", "PAUSED")
            _wait_state(c, "src", "RUNNING")
            with open(src_file, "a") as fh:
                fh.write("y0\n")
            # y0 comes after anything re-read, on either side: once it is written, a duplicate would show
            wait_until(lambda: sink_file.read_text().endswith("y0\n"), 30, what="y0 in the sink file")
            # offsets survived: nothing was re-read
            assert sink_file.read_text().splitlines() == [f"x{i}" for i in range(200)] + ["y0"]
    finally:
        w.stop()


@pytest.mark.slow  # several seconds of a real worker: kept out of the fast suite
def test_a_connector_file_unchanged_since_the_last_run_is_not_restarted(tmp_path):
    src_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    src_file.write_text("".join(f"x{i}\n" for i in range(50)))
    sink = write_properties(tmp_path / "sink.properties", {"name": "snk", "connector.class": "FileStreamSink",
                                                            "file": sink_file, "topics": "t1"})
    source = write_properties(tmp_path / "source.properties", {"name": "src", "connector.class": "FileStreamSource",
                                                                "file": src_file, "topic": "t1"})
    port = free_port()
    cfg = worker_properties(tmp_path, port)
    first = connect_standalone(tmp_path, cfg, source, sink)
    try:
        wait_until(lambda: line_count(sink_file) >= 50, 30, what="the first 50 lines")
    finally:
        assert first.terminate() == 0, first.log()
    write_properties(source, {"name": "src", "connector.class": "FileStreamSource", "file": src_file,
                              "topic": "t1", "batch.size": 100})  # changed: replaced as before
    log_before = len(first.log())
    second = connect_standalone(tmp_path, cfg, source, sink)
    try:
        wait_until(lambda: rest_ready(port), 60, what="REST /health")
        with src_file.open("a") as fh:
            fh.write("y0\n")
        wait_until(lambda: line_count(sink_file) >= 51, 30, what="the appended line")
        log = second.log()[log_before:]
    finally:
        assert second.terminate() == 0, second.log()
    assert "[snk] Connector config from the file is unchanged; keeping the running connector" in log
    assert "[src] Connector config updated" in log
    assert "[snk] Connector config updated" not in log
    assert sink_file.read_text().splitlines() == [f"x{i}" for i in range(50)] + ["y0"]


def test_bad_requests_get_clear_4xx(worker, tmp_path):
    with worker.http() as c:
        r = c.post("/connectors", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error_code"] == 400
        r = c.post("/connectors", json={"name": "a", "config": {"connector.class": "NoSuchThing", "topic": "t"}})
        assert r.status_code == 400 and "NoSuchThing" in r.json()["message"]
        r = c.post("/connectors", json={"name": "a", "config": {"connector.class": "FileStreamSource",
                                                                "topic": "t", "tasks.max": "abc"}})
        assert r.status_code == 400
        assert "tasks.max" in r.json()["message"] and "1 error(s)" in r.json()["message"]
        r = c.put("/connectors/a/config", json={"name": "b", "connector.class": "FileStreamSource", "topic": "t"})
        assert r.status_code == 400 and "doesn't match" in r.json()["message"]
        assert c.get("/connectors/nope/status").status_code == 404
        assert c.get("/connectors").json() == []
        assert c.post("/connectors", json={"name": "a", "config": {"connector.class": "FileStreamSource",
                                                                   "topic": "t", "file": str(tmp_path / "f")}}
                      ).status_code == 201
        assert c.get("/connectors/a/tasks/7/status").status_code == 404
        assert c.post("/connectors/a/tasks/7/restart").status_code == 404
        r = c.delete("/connectors/a/offsets")
        assert r.status_code == 400 and "STOPPED" in r.json()["message"]

        r = c.put("/connector-plugins/FileStreamSink/config/validate",
                  json={"connector.class": "FileStreamSink", "name": "v", "tasks.max": "-1"})
        assert r.status_code == 200
        body = r.json()
        assert body["name"] == "FileStreamSink" and body["error_count"] >= 2
        errors = {cfg["value"]["name"]: cfg["value"]["errors"] for cfg in body["configs"]}
        assert errors["tasks.max"] and "at least 1" in errors["tasks.max"][0]
        assert errors["topics"] and errors["topics.regex"]
        assert "Common" in body["groups"]
        r = c.put("/connector-plugins/FileStreamSink/config/validate",
                  json={"connector.class": "FileStreamSource", "name": "v"})
        assert r.status_code == 400


def test_passwords_hidden_and_config_providers_resolved_at_task_start(tmp_path):
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir()
    (plugin_dir / "secret_source.py").write_text(PLUGIN)
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("db.password=hunter2-file\n")
    out = tmp_path / "resolved.txt"
    w = RestWorker(tmp_path, **{"plugin.path": plugin_dir, "config.providers": "file"}).start()
    try:
        with w.http() as c:
            r = c.post("/connectors", json={"name": "s", "config": {
                "connector.class": "SecretSourceConnector", "secret": f"${{file:{secrets}:db.password}}",
                "out": str(out)}})
            assert r.status_code == 201, r.text
            assert r.json()["config"]["secret"] == "[hidden]"
            wait_until(lambda: out.exists() and out.read_text(), 30)
            assert out.read_text() == "hunter2-file"
            assert c.get("/connectors/s/config").json()["secret"] == "[hidden]"
            assert c.get("/connectors/s/tasks").json()[0]["config"]["secret"] == "[hidden]"
            assert c.get("/connectors/s").json()["config"]["secret"] == "[hidden]"
            # a plain password, PUT back as shown, keeps its value
            r = c.put("/connectors/s/config", json={"connector.class": "SecretSourceConnector",
                                                    "secret": "plain-hunter2", "out": str(out)})
            assert r.status_code == 200
            wait_until(lambda: out.read_text() == "plain-hunter2", 30)
            shown = c.get("/connectors/s/config").json()
            assert shown["secret"] == "[hidden]"
            assert c.put("/connectors/s/config", json=shown).status_code == 200
            wait_until(lambda: _status(c, "s")["tasks"] and _status(c, "s")["tasks"][0]["state"] == "RUNNING", 30)
            assert out.read_text() == "plain-hunter2"
            expanded = c.get("/connectors?expand=info").json()
            assert expanded["s"]["info"]["config"]["secret"] == "[hidden]"
    finally:
        w.stop()
    log = w.proc.log()
    assert "plain-hunter2" not in log and "hunter2-file" not in log


def test_a_failed_task_stays_failed_through_pause_and_resume_and_restart_only_failed_revives_it(worker, tmp_path):
    """Pause then resume showed a dead task RUNNING, so restart?onlyFailed=true skipped it and nothing flowed."""
    src_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    src_file.mkdir()  # a directory where the file should be: the task fails opening it
    with worker.http() as c:
        assert c.post("/connectors", json={"name": "src", "config": {
            "connector.class": "FileStreamSource", "file": str(src_file), "topic": "revive"}}).status_code == 201
        assert c.post("/connectors", json={"name": "snk", "config": {
            "connector.class": "FileStreamSink", "file": str(sink_file), "topics": "revive"}}).status_code == 201
        wait_until(lambda: _status(c, "src")["tasks"][0]["state"] == "FAILED", 30, what="the source task to fail")
        assert c.put("/connectors/src/pause").status_code == 202
        wait_until(lambda: _status(c, "src")["connector"]["state"] == "PAUSED", 30, what="the connector paused")
        assert c.put("/connectors/src/resume").status_code == 202
        wait_until(lambda: _status(c, "src")["connector"]["state"] == "RUNNING", 30, what="the connector resumed")
        task = _status(c, "src")["tasks"][0]
        assert task["state"] == "FAILED" and "in.txt" in task["trace"], task
        src_file.rmdir()
        src_file.write_text("x\ny\n")
        r = c.post("/connectors/src/restart?includeTasks=true&onlyFailed=true")
        assert r.status_code == 202, r.text
        assert [t["state"] for t in r.json()["tasks"]] == ["RESTARTING"]
        wait_until(lambda: line_count(sink_file) == 2, 30, what="the lines after the restart")
        _wait_state(c, "src", "RUNNING", 1)
