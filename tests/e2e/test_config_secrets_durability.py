"""Secrets never stored or shown resolved; config writes acknowledged only when durable; failed writes change
nothing. Real standalone workers over HTTP."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_rest_standalone import _status, _wait_state
from tests.support import RestWorker, wait_until

pytestmark = pytest.mark.timeout(300)

PLUGIN = '''
from connect.api import ConfigDef, ConfigType, Importance, SourceConnector, SourceTask

class VaultSourceConnector(SourceConnector):
    def version(self): return "1.0"
    def start(self, props): self.props = dict(props)
    def task_class(self): return VaultSourceTask
    def task_configs(self, max_tasks): return [dict(self.props)]
    def stop(self): pass
    def config(self):
        return (ConfigDef()
                .define("secret", ConfigType.PASSWORD, importance=Importance.HIGH, documentation="a password")
                .define("token", ConfigType.STRING, importance=Importance.HIGH, documentation="an api token")
                .define("out", ConfigType.STRING, importance=Importance.HIGH, documentation="where to write"))

class VaultSourceTask(SourceTask):
    def version(self): return "1.0"
    def start(self, props):
        with open(props["out"], "w") as fh:
            fh.write(props["secret"] + "|" + props["token"])
        # a careless plugin: the value it was given ends up in an exception (and so in a trace and a log line)
        raise RuntimeError("token " + props["token"] + " was refused")
    def poll(self): return None
    def stop(self): pass
'''

PASSWORD = "plain-pw-4e1c9a"
TOKEN = "tok-resolved-77d3b1"


def _files_holding(root: Path, *needles: str, skip: tuple[Path, ...] = ()) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and path not in skip:
            data = path.read_bytes()
            found += [f"{path}: {n}" for n in needles if n.encode() in data]
    return found


def test_secrets_never_stored_or_shown_resolved(tmp_path):
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir()
    (plugin_dir / "vault_source.py").write_text(PLUGIN)
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "api.properties").write_text(f"token={TOKEN}\n")
    out = tmp_path / "seen.txt"
    reference = f"${{file:{vault}/api.properties:token}}"
    w = RestWorker(tmp_path, **{"plugin.path": plugin_dir, "config.providers": "file",
                            "config.providers.file.param.allowed.paths": vault}).start()
    try:
        with w.http() as c:
            r = c.post("/connectors", json={"name": "v", "config": {
                "connector.class": "VaultSourceConnector", "secret": PASSWORD, "token": reference,
                "out": str(out)}})
            assert r.status_code == 201, r.text
            wait_until(lambda: out.exists() and out.read_text(), 30)
            assert out.read_text() == f"{PASSWORD}|{TOKEN}", "the task gets resolved values"
            status = wait_until(lambda: (s := _status(c, "v"))["tasks"] and s["tasks"][0]["state"] == "FAILED" and s,
                                30)
            trace = status["tasks"][0]["trace"]
            assert TOKEN not in trace and "[hidden]" in trace, trace
            tasks = c.get("/connectors/v/tasks").json()
            assert tasks[0]["config"]["token"] == reference
            assert tasks[0]["config"]["secret"] == "[hidden]"
            assert c.get("/connectors/v/config").json()["token"] == reference
            # a reference to a file outside allowed.paths is not resolved
            r = c.put("/connectors/v/config", json={"connector.class": "VaultSourceConnector", "secret": PASSWORD,
                                                    "token": f"${{file:{tmp_path}/worker.properties:x}}",
                                                    "out": str(out)})
            assert r.status_code == 200
            wait_until(lambda: (s := _status(c, "v")["connector"])["state"] == "FAILED"
                       and "allowed.paths" in s.get("trace", ""), 30)
            r = c.put("/connectors/v/config", json={"connector.class": "VaultSourceConnector", "secret": PASSWORD,
                                                    "token": reference, "out": str(out)})
            assert r.status_code == 200
    finally:
        w.stop()
    leaks = _files_holding(tmp_path / "data", PASSWORD, TOKEN)
    leaks += _files_holding(tmp_path, PASSWORD, TOKEN, skip=(out, vault / "api.properties"))
    assert not leaks, leaks
    assert (tmp_path / "connect.offsets.config-key").stat().st_mode & 0o777 == 0o600
    # restarted: the password is read back (decrypted) and the reference resolved again
    out.unlink()
    w.start()
    try:
        wait_until(lambda: out.exists() and out.read_text(), 30)
        assert out.read_text() == f"{PASSWORD}|{TOKEN}"
    finally:
        w.stop()
    assert not _files_holding(tmp_path, PASSWORD, TOKEN, skip=(out, vault / "api.properties"))


def _file_source(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": "lines", **extra}


def test_an_oversize_config_is_413_and_changes_nothing(tmp_path):
    (tmp_path / "in.txt").write_text("a\n")
    w = RestWorker(tmp_path).start()
    try:
        with w.http() as c:
            assert c.put("/connectors/src/config", json=_file_source(tmp_path)).status_code == 201
            _wait_state(c, "src", "RUNNING", 1)
            big = "x" * (1100 * 1024)
            r = c.put("/connectors/src/config", json=_file_source(tmp_path, padding=big))
            assert r.status_code == 413, r.text[:500]
            assert "max.message.bytes" in r.json()["message"] and "connector-src" in r.json()["message"]
            r = c.post("/connectors", json={"name": "huge", "config": _file_source(tmp_path, padding=big)})
            assert r.status_code == 413, r.text[:500]
            assert c.get("/connectors").json() == ["src"]
            assert "padding" not in c.get("/connectors/src/config").json()
            _wait_state(c, "src", "RUNNING", 1)
    finally:
        w.stop()
    w.start()
    try:
        with w.http() as c:
            assert c.get("/connectors").json() == ["src"]
            assert "padding" not in c.get("/connectors/src/config").json()
            _wait_state(c, "src", "RUNNING", 1)
    finally:
        w.stop()


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MiB tmpfs for the worker's log, so that a test can fill it."""
    mount = tmp_path / "disk"
    mount.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {res.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * (1 << 16))
                fh.flush()
                os.fsync(fh.fileno())
        except OSError:
            pass
    return filler


@pytest.mark.slow  # several seconds of a real worker: kept out of the fast suite
def test_a_full_disk_answers_500_and_the_old_connector_keeps_running(tmp_path, small_disk):
    (tmp_path / "in.txt").write_text("")
    sink = tmp_path / "out.txt"
    w = RestWorker(tmp_path, **{"embedded.log.dir": small_disk / "data"}).start()
    try:
        with w.http() as c:
            assert c.put("/connectors/src/config", json=_file_source(tmp_path)).status_code == 201
            assert c.put("/connectors/sink/config", json={"connector.class": "FileStreamSink", "topics": "lines",
                                                          "file": str(sink)}).status_code == 201
            _wait_state(c, "src", "RUNNING", 1)
            filler = _fill(small_disk)
            try:
                # larger than the free bytes of the segment's last page, which the filler cannot take
                change = _file_source(tmp_path, **{"tasks.max": "2", "padding": "p" * 20000})
                r = c.put("/connectors/src/config", json=change)
                assert r.status_code == 500, r.text
                assert "No space left" in r.json()["message"] or "space" in r.json()["message"], r.json()
                r = c.post("/connectors", json={"name": "new", "config": change})
                assert r.status_code == 500, r.text
                assert sorted(c.get("/connectors").json()) == ["sink", "src"]
                assert c.get("/connectors/src/config").json().get("tasks.max", "1") == "1"
                assert _status(c, "src")["tasks"][0]["state"] == "RUNNING"
            finally:
                filler.unlink()
            # the old source still runs: a line written now reaches the sink
            with open(tmp_path / "in.txt", "a") as fh:
                fh.write("after-the-disk-was-full\n")
            wait_until(lambda: sink.exists() and "after-the-disk-was-full" in sink.read_text(), 30)
    finally:
        w.stop()
    w.start()
    try:
        with w.http() as c:
            assert sorted(c.get("/connectors").json()) == ["sink", "src"]
            assert c.get("/connectors/src/config").json().get("tasks.max", "1") == "1"
    finally:
        w.stop()


def test_rest_keeps_no_resolved_value_when_no_provider_is_configured(tmp_path, monkeypatch):
    """Without config.providers, ${env:...} is no way to read the worker's environment over REST."""
    monkeypatch.setenv("HEADRACE_E2E_SECRET", "env-secret-5a5a5a")
    (tmp_path / "in.txt").write_text("")
    w = RestWorker(tmp_path).start()
    try:
        with w.http() as c:
            r = c.put("/connectors/src/config", json=_file_source(tmp_path, topic="${env:HEADRACE_E2E_SECRET}"))
            assert r.status_code in (201, 400), r.text
            with open(tmp_path / "in.txt", "a") as fh:
                fh.write("x\n")
            for path in ("/connectors/src/topics", "/connectors/src/status", "/connectors/src/tasks"):
                try:
                    body = c.get(path).text
                except httpx.HTTPError:
                    continue
                assert "env-secret-5a5a5a" not in body, (path, body)
    finally:
        w.stop()
    assert "env-secret-5a5a5a" not in w.proc.log()
