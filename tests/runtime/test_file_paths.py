"""FilePathPolicy and its use by connector config validation: where file connectors may read and write."""

from __future__ import annotations

import os
import sys

import pytest

from connect.api import ConfigDef, ConfigType, FilePath
from connect.api.config import CompositeValidator, NonEmptyString
from connect.api.errors import ConfigException
from connect.runtime.connector_validation import ConnectorConfigValidator
from connect.runtime.file_paths import FilePathPolicy
from connect.runtime.plugins import PluginRegistry
from connect.runtime.worker_config import StandaloneConfig


@pytest.fixture(scope="module")
def plugins():
    return PluginRegistry()


@pytest.fixture
def worker_dirs(tmp_path):
    (tmp_path / "allowed").mkdir()
    (tmp_path / "outside").mkdir()
    return tmp_path


def _worker(tmp_path, **extra: str) -> StandaloneConfig:
    return StandaloneConfig({
        "key.converter": "StringConverter", "value.converter": "StringConverter",
        "embedded.log.dir": str(tmp_path / "data"), "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
        "plugin.path": str(tmp_path / "plugins"), **extra,
    })


def _sink(path: str) -> dict[str, str]:
    return {"name": "s", "connector.class": "FileStreamSink", "topics": "t", "file": path}


def _source(path: str) -> dict[str, str]:
    return {"name": "s", "connector.class": "FileStreamSource", "topic": "t", "file": path}


def test_file_path_declares_itself_also_inside_composites():
    assert FilePath.declared_by(FilePath("write")) == FilePath("write")
    assert FilePath.declared_by(CompositeValidator.of(NonEmptyString(), FilePath())) == FilePath("read")
    assert FilePath.declared_by(NonEmptyString()) is None
    with pytest.raises(ValueError):
        FilePath("append")
    with pytest.raises(ConfigException, match="NUL"):
        FilePath().ensure_valid("file", "a\x00b")


def test_no_allow_list_means_anywhere_but_the_worker_state(worker_dirs):
    policy = FilePathPolicy.for_worker(_worker(worker_dirs))
    assert policy.refusal(str(worker_dirs / "outside" / "x.txt")) is None
    for state in ("data/connect-configs-0/00000000000000000000.log", "data", "connect.offsets",
                  "connect.offsets.tmp", "connect.offsets.config-key", "connect.offsets.worker-id", "plugins/evil.py"):
        reason = policy.refusal(str(worker_dirs / state))
        assert reason is not None and "may never read or write there" in reason, state


def test_python_import_path_is_always_refused(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    policy = FilePathPolicy()
    reason = policy.refusal(str(tmp_path / "site" / "x.pth"))
    assert reason is not None and "Python's import path" in reason
    site_packages = next(p for p in sys.path if p.endswith("site-packages"))
    assert policy.refusal(os.path.join(site_packages, "x.pth")) is not None


def test_allow_list_follows_symlinks_and_dotdot(worker_dirs):
    policy = FilePathPolicy.for_worker(_worker(worker_dirs, **{"connector.allowed.paths": str(worker_dirs / "allowed")}))
    allowed, outside = worker_dirs / "allowed", worker_dirs / "outside"
    assert policy.refusal(str(allowed / "in.txt")) is None
    assert policy.refusal(str(allowed / "new" / "deeper.txt")) is None
    (allowed / "link").symlink_to(outside)
    (allowed / "file-link").symlink_to(outside / "victim.txt")
    for path in (outside / "x.txt", allowed / ".." / "outside" / "x.txt", allowed / "link" / "x.txt",
                 allowed / "file-link", worker_dirs / "allowed-but-not-really"):
        reason = policy.refusal(str(path))
        assert reason is not None and "outside the directories" in reason and str(allowed) in reason, path


def test_relative_entries_and_paths_resolve_against_the_working_directory(worker_dirs, monkeypatch):
    monkeypatch.chdir(worker_dirs / "allowed")
    policy = FilePathPolicy.for_worker(_worker(worker_dirs, **{"connector.allowed.paths": "."}))
    assert policy.refusal("test.txt") is None
    assert policy.refusal("../outside/test.txt") is not None


def test_validation_refuses_a_declared_path_naming_key_path_and_allowed_dirs(plugins, worker_dirs):
    config = _worker(worker_dirs, **{"connector.allowed.paths": str(worker_dirs / "allowed")})
    validator = ConnectorConfigValidator(plugins, FilePathPolicy.for_worker(config))
    outside = str(worker_dirs / "outside" / "x.txt")
    errors = dict(validator.validate(_sink(outside)).errors)
    assert list(errors) == ["file"]
    assert outside in errors["file"] and str(worker_dirs / "allowed") in errors["file"]
    assert validator.validate(_source(str(worker_dirs / "allowed" / "in.txt"))).error_count == 0
    assert validator.validate({**_source(""), "file": ""}).error_count == 0  # stdin
    segment = str(worker_dirs / "data" / "connect-configs-0" / "00000000000000000000.log")
    assert "embedded log directory" in dict(validator.validate(_source(segment)).errors)["file"]


def test_transform_path_keys_are_checked_too(worker_dirs):
    from connect.api import Transformation

    class WritesAFile(Transformation):
        def configure(self, configs): pass
        def apply(self, record): return record
        def config(self): return ConfigDef().define("dump", ConfigType.STRING, None, FilePath("write"))

    registry = PluginRegistry()
    registry.register(WritesAFile)
    validator = ConnectorConfigValidator(registry, FilePathPolicy.for_worker(_worker(worker_dirs)))
    config = {**_source(""), "transforms": "d", "transforms.d.type": "WritesAFile",
              "transforms.d.dump": str(worker_dirs / "data" / "x")}
    assert "embedded log directory" in dict(validator.validate(config).errors)["transforms.d.dump"]


def test_task_start_check_sees_a_symlink_swapped_in_after_validation(plugins, worker_dirs):
    config = _worker(worker_dirs, **{"connector.allowed.paths": str(worker_dirs / "allowed")})
    validator = ConnectorConfigValidator(plugins, FilePathPolicy.for_worker(config))
    path = worker_dirs / "allowed" / "out.txt"
    props = _sink(str(path))
    assert validator.validate(props).error_count == 0
    validator.check_task_paths(props, {**props, "task.class": "plugins.file.sink.FileStreamSinkTask"})
    path.symlink_to(worker_dirs / "outside" / "victim.txt")
    with pytest.raises(ConfigException) as err:
        validator.check_task_paths(props, {**props, "task.class": "plugins.file.sink.FileStreamSinkTask"})
    assert err.value.name == "file" and "outside the directories" in str(err.value)
    # a task config that names another file than the connector's is checked as well
    with pytest.raises(ConfigException):
        validator.check_task_paths(_sink(""), {"file": str(worker_dirs / "data" / "x")})


def test_files_the_worker_config_names_are_refused(worker_dirs):
    policy = FilePathPolicy.for_worker(_worker(
        worker_dirs, **{"rest.basic.auth.credentials.file": str(worker_dirs / "users.properties"),
                        "listeners.https.ssl.keystore.location": str(worker_dirs / "keystore.pem"),
                        "rest.basic.auth.jaas.config": str(worker_dirs / "jaas.conf")}))
    for name, key in (("users.properties", "rest.basic.auth.credentials.file"),
                      ("keystore.pem", "listeners.https.ssl.keystore.location"), ("jaas.conf", "rest.basic.auth.jaas.config")):
        reason = policy.refusal(str(worker_dirs / name))
        assert reason is not None and key in reason, name
    assert policy.refusal(str(worker_dirs / "users.properties.bak")) is None
