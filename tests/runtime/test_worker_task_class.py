"""The Worker makes a task only from a registered connector's task class, with its file paths checked again."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect.log import open_log_backend
from connect.runtime.herder import ConnectorTaskId, State, TargetState
from connect.runtime.plugins import PluginRegistry
from connect.runtime.storage.offsets import FileOffsetStore
from connect.runtime.storage.status import StatusStore
from connect.runtime.worker import Worker
from connect.runtime.worker_config import StandaloneConfig


@pytest.fixture
def worker(tmp_path):
    config = StandaloneConfig({
        "key.converter": "StringConverter", "value.converter": "StringConverter",
        "embedded.log.dir": str(tmp_path / "data"), "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
        "connector.allowed.paths": str(tmp_path / "allowed"),
    })
    backend = open_log_backend(config.backend_config())
    w = Worker("test-worker", config, PluginRegistry(), backend, FileOffsetStore(tmp_path / "connect.offsets"),
               StatusStore())
    yield w
    w.stop()
    backend.close()


def _start(worker: Worker, task_class: str, file: Path) -> tuple[bool, str]:
    config = {"name": "c", "connector.class": "FileStreamSink", "topics": "t", "file": str(file)}
    task_id = ConnectorTaskId("c", 0)
    started = worker.start_task(task_id, config, {**config, "task.class": task_class}, TargetState.STARTED)
    status = worker.status.task(task_id)
    assert status is not None
    if not started:
        assert status.state is State.FAILED
    return started, status.trace or ""


@pytest.mark.parametrize("task_class", ["headrace_task_side_effect.EvilTask", ".foo.Bar", "os.system"])
def test_a_task_class_outside_the_registry_is_never_imported(worker, tmp_path, monkeypatch, task_class):
    marker = tmp_path / "imported.marker"
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "headrace_task_side_effect.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\n"
        "from connect.api import SinkTask\n"
        "class EvilTask(SinkTask):\n"
        "    def version(self): return '1'\n"
        "    def start(self, props): pass\n"
        "    def put(self, records): pass\n"
        "    def stop(self): pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    started, trace = _start(worker, task_class, tmp_path / "allowed" / "out.txt")
    assert not started
    assert "task.class" in trace and "not the task class of any installed connector" in trace
    assert not marker.exists()


def test_a_path_that_became_a_symlink_out_of_the_allow_list_fails_the_task(worker, tmp_path):
    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed" / "out.txt").symlink_to(tmp_path / "victim.txt")
    started, trace = _start(worker, "plugins.file.sink.FileStreamSinkTask", tmp_path / "allowed" / "out.txt")
    assert not started
    assert "configuration file" in trace and "outside the directories" in trace
    assert not (tmp_path / "victim.txt").exists()


def test_the_task_of_a_registered_connector_starts(worker, tmp_path):
    (tmp_path / "allowed").mkdir()
    started, _ = _start(worker, "plugins.file.sink.FileStreamSinkTask", tmp_path / "allowed" / "out.txt")
    assert started
