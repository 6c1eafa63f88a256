"""A real ``connect-standalone`` over HTTP: names that arrive over REST never import code, and the file
connectors stay out of the worker's own state and inside ``connector.allowed.paths``.

These are the links of the unauthenticated code-execution chains: a FileStreamSource reading the config
topic's segment (every connector config, secrets included) and a FileStreamSink writing a ``.pth`` file
into Python's import path (run at the next interpreter start).
"""

from __future__ import annotations

import os

import httpx
import pytest

from tests.support import (
    REPO,
    RestWorker,
    connect_standalone,
    free_port,
    line_count,
    run_cli,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(240)

SIDE_EFFECT_MODULE = '''
open({marker!r}, "a").write("imported\\n")
from connect.api import SourceConnector, SourceTask, Transformation, Converter

class EvilConnector(SourceConnector):
    def version(self): return "1"
    def start(self, props): pass
    def task_class(self): return EvilTask
    def task_configs(self, max_tasks): return [{{}}]
    def stop(self): pass
    def config(self): return None

class EvilTask(SourceTask):
    def version(self): return "1"
    def start(self, props): pass
    def poll(self): return None
    def stop(self): pass

class EvilTransform(Transformation):
    def configure(self, configs): pass
    def apply(self, record): return record
    def config(self): return None

class EvilConverter(Converter):
    def configure(self, configs, is_key): pass
    def from_connect_data(self, topic, schema, value): return b""
    def to_connect_data(self, topic, value): return None
'''


@pytest.fixture
def import_dirs(tmp_path, monkeypatch):
    """Two folders on the worker's import path: one with a module that marks its import, one standing in
    for site-packages (harmless: a .pth file is only run from a real site directory)."""
    mods, site = tmp_path / "mods", tmp_path / "site"
    mods.mkdir()
    site.mkdir()
    marker = tmp_path / "imported.marker"
    (mods / "headrace_e2e_side_effect.py").write_text(SIDE_EFFECT_MODULE.format(marker=str(marker)))
    # no empty entry: it would put the worker's working directory (the test's tmp_path) on its import path
    entries = [str(mods), str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(entries))
    return marker, site


def _create(c: httpx.Client, name: str, config: dict[str, str]) -> httpx.Response:
    return c.post("/connectors", json={"name": name, "config": config})


def _task_state(c: httpx.Client, name: str) -> str | None:
    tasks = c.get(f"/connectors/{name}/status").json().get("tasks") or []
    return tasks[0]["state"] if tasks else None


def test_names_over_rest_never_import_an_unregistered_module(tmp_path, import_dirs):
    marker, _ = import_dirs
    w = RestWorker(tmp_path).start()
    try:
        with w.http() as c:
            for plugin in ("headrace_e2e_side_effect.EvilConnector", "headrace_e2e_side_effect.EvilTransform",
                           ".foo.Bar", "..headrace_e2e_side_effect.EvilConnector", "this.X"):
                r = c.get(f"/connector-plugins/{plugin}/config")
                assert r.status_code == 404, (plugin, r.text)
                assert "Unknown plugin" in r.json()["message"]
            evil = "headrace_e2e_side_effect."
            source = {"connector.class": "FileStreamSource", "topic": "t", "file": str(tmp_path / "in.txt")}
            for key, config in (
                ("connector.class", {**source, "connector.class": evil + "EvilConnector"}),
                ("connector.class", {**source, "connector.class": ".foo.Bar"}),
                ("transforms.x.type", {**source, "transforms": "x", "transforms.x.type": evil + "EvilTransform"}),
                ("predicates.p.type", {**source, "predicates": "p", "predicates.p.type": evil + "EvilTransform"}),
                ("value.converter", {**source, "value.converter": evil + "EvilConverter"}),
                ("key.converter", {**source, "key.converter": ".foo.Bar"}),
                ("header.converter", {**source, "header.converter": evil + "EvilConverter"}),
            ):
                r = _create(c, "n", config)
                assert r.status_code == 400, (key, r.text)
                assert key in r.json()["message"] and "could not be found" in r.json()["message"], r.text
            r = c.put("/connector-plugins/FileStreamSource/config/validate",
                      json={**source, "name": "v", "value.converter": evil + "EvilConverter"})
            assert r.status_code == 200 and r.json()["error_count"] == 1, [v["value"] for v in r.json()["configs"] if v["value"]["errors"]]
            assert c.get("/connectors").json() == []
    finally:
        w.stop()
    assert not marker.exists(), "a module named over REST was imported"


def test_a_source_cannot_read_the_config_topic(tmp_path, import_dirs):
    w = RestWorker(tmp_path).start()
    try:
        with w.http() as c:
            secret = {"connector.class": "FileStreamSink", "topics": "t", "file": str(tmp_path / "o.txt"),
                      "value.converter.password": "hunter2"}
            assert _create(c, "holder", secret).status_code == 201
            segments = wait_until(lambda: sorted((tmp_path / "data").glob("connect-configs*/*.log")), 30)
            for path in (str(segments[0]), str(tmp_path / "data" / ".." / "data" / segments[0].parent.name)):
                r = _create(c, "leak", {"connector.class": "FileStreamSource", "topic": "leak", "file": path})
                assert r.status_code == 400, r.text
                message = r.json()["message"]
                assert "configuration file" in message and "embedded log directory" in message
            (tmp_path / "innocent").symlink_to(segments[0])
            r = _create(c, "leak", {"connector.class": "FileStreamSource", "topic": "leak",
                                    "file": str(tmp_path / "innocent")})
            assert r.status_code == 400 and "embedded log directory" in r.json()["message"]
            assert c.get("/connectors").json() == ["holder"]
            assert not list((tmp_path / "data").glob("leak*"))
    finally:
        w.stop()


def test_a_sink_cannot_write_into_the_python_import_path(tmp_path, import_dirs):
    _, site = import_dirs
    w = RestWorker(tmp_path).start()
    try:
        with w.http() as c:
            for target in (site / "x.pth", site / "sub" / ".." / "x.pth"):
                r = _create(c, "pth", {"connector.class": "FileStreamSink", "topics": "t", "file": str(target)})
                assert r.status_code == 400, r.text
                assert "configuration file" in r.json()["message"] and "import path" in r.json()["message"]
            r = _create(c, "offsets", {"connector.class": "FileStreamSink", "topics": "t",
                                       "file": str(tmp_path / "connect.offsets")})
            assert r.status_code == 400 and "offsets file" in r.json()["message"]
            assert c.get("/connectors").json() == []
    finally:
        w.stop()
    assert not (site / "x.pth").exists()


def test_allow_list_outside_refused_inside_runs_symlinks_followed(tmp_path):
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "in.txt").write_text("".join(f"line {i}\n" for i in range(20)))
    (allowed / "escape").symlink_to(outside / "victim.txt")
    w = RestWorker(tmp_path, **{"connector.allowed.paths": allowed}).start()
    try:
        with w.http() as c:
            for path in (outside / "victim.txt", allowed / ".." / "outside" / "victim.txt", allowed / "escape"):
                r = _create(c, "out", {"connector.class": "FileStreamSink", "topics": "t", "file": str(path)})
                assert r.status_code == 400, r.text
                message = r.json()["message"]
                assert "configuration file" in message and str(path) in message
                assert f"connector.allowed.paths: {os.path.realpath(allowed)}" in message
            assert _create(c, "src", {"connector.class": "FileStreamSource", "topic": "t",
                                      "file": str(allowed / "in.txt")}).status_code == 201
            out = allowed / "out.txt"
            assert _create(c, "snk", {"connector.class": "FileStreamSink", "topics": "t",
                                      "file": str(out)}).status_code == 201
            wait_until(lambda: out.exists() and out.read_text().count("\n") == 20, 60, what="20 lines copied")

            # the path is checked again when a task starts: a symlink swapped in meanwhile fails the task
            assert c.put("/connectors/snk/stop").status_code == 204
            wait_until(lambda: _task_state(c, "snk") is None, 30, what="tasks stopped")
            out.unlink()
            out.symlink_to(outside / "victim.txt")
            assert c.put("/connectors/snk/resume").status_code == 202
            wait_until(lambda: _task_state(c, "snk") == "FAILED", 30, what="task FAILED")
            trace = c.get("/connectors/snk/status").json()["tasks"][0]["trace"]
            assert "configuration file" in trace and "outside the directories" in trace
    finally:
        w.stop()
    assert not (outside / "victim.txt").exists()


def test_connector_file_outside_the_allow_list_is_one_error_line(tmp_path):
    (tmp_path / "allowed").mkdir()
    worker = worker_properties(tmp_path, **{"connector.allowed.paths": tmp_path / "allowed"})
    connector = write_properties(tmp_path / "sink.properties", {
        "name": "s", "connector.class": "FileStreamSink", "topics": "t", "file": tmp_path / "elsewhere.txt"})
    result = run_cli(["connect-standalone", str(worker), str(connector)], cwd=tmp_path)
    assert result.returncode == 1
    err = result.stderr.decode()
    assert f"{connector}: Invalid value '{tmp_path / 'elsewhere.txt'}' for configuration file" in err
    assert "Traceback" not in err
    assert not (tmp_path / "elsewhere.txt").exists()


def test_shipped_quickstart_configs_run_with_the_allow_list_on(tmp_path):
    """scripts/quickstart.sh's run: configs/*.properties copied into a working directory, which the shipped
    worker config allows (connector.allowed.paths=.); a file elsewhere is refused over REST."""
    for name in ("connect-standalone", "connect-file-source", "connect-file-sink"):
        (tmp_path / f"{name}.properties").write_text((REPO / "configs" / f"{name}.properties").read_text())
    port = free_port()
    worker_cfg = tmp_path / "connect-standalone.properties"
    text = worker_cfg.read_text()
    assert "\nconnector.allowed.paths=.\n" in text
    worker_cfg.write_text(text.replace("listeners=http://127.0.0.1:8083", f"listeners=http://127.0.0.1:{port}"))
    (tmp_path / "test.txt").write_text("".join(f"hello headrace line {i}\n" for i in range(1, 6)))
    proc = connect_standalone(tmp_path, worker_cfg, tmp_path / "connect-file-source.properties",
                              tmp_path / "connect-file-sink.properties")
    try:
        wait_until(lambda: line_count(tmp_path / "test.sink.txt") >= 5 or not proc.alive(), 60, what="quickstart")
        assert (tmp_path / "test.sink.txt").read_text().splitlines() == [f"hello headrace line {i}" for i in range(1, 6)]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            r = _create(c, "elsewhere", {"connector.class": "FileStreamSink", "topics": "connect-test",
                                         "file": str(tmp_path.parent / "elsewhere.txt")})
            assert r.status_code == 400 and "connector.allowed.paths" in r.json()["message"]
            r = _create(c, "own-state", {"connector.class": "FileStreamSource", "topic": "x",
                                         "file": "headrace-data/connect.offsets"})
            assert r.status_code == 400 and "may never read or write there" in r.json()["message"]
    finally:
        assert proc.terminate() == 0, proc.log()
