"""The config topic store on a real embedded log: durable-before-applied writes, encryption at rest, ownership."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from connect.log import open_log_backend
from connect.log.api import LogError
from connect.runtime.config_encryption import ConfigEncryption, DecryptionError
from connect.runtime.herder import TargetState
from connect.runtime.storage.config_store import (
    ConfigStoreOwnerError,
    ConfigTopicStore,
    ConfigWriteError,
    RecordTooLargeError,
)

ME = {"worker.id": "11111111-1111-1111-1111-111111111111", "rest.worker.id": "host:1"}
OTHER = {"worker.id": "22222222-2222-2222-2222-222222222222", "rest.worker.id": "host:2"}


@pytest.fixture
def backend(tmp_path):
    b = open_log_backend({"embedded.log.dir": str(tmp_path / "data")})
    yield b
    b.close()


def _store(backend, **kw) -> ConfigTopicStore:
    store = ConfigTopicStore(backend, "connect-configs", **kw)
    store.start()
    return store


def _reread(backend, **kw) -> ConfigTopicStore:
    store = _store(backend, **kw)
    store.stop()
    return store


def _segment_bytes(tmp_path) -> bytes:
    return b"".join(p.read_bytes() for p in (tmp_path / "data").rglob("*") if p.is_file())


class _FailingProducer:
    """A producer whose appends fail as a full disk makes them fail."""

    def __init__(self, where: str) -> None:
        self.where = where

    def send_batch(self, *args, **kwargs) -> None:
        if self.where == "send":
            raise OSError(28, "No space left on device")

    def flush(self, timeout: float | None = None) -> int:
        if self.where == "flush":
            raise LogError("1 record(s) could not be delivered; first: disk full")
        return 1 if self.where == "timeout" else 0

    def close(self, timeout: float | None = None) -> None:
        pass


@pytest.mark.parametrize("where", ["send", "flush", "timeout"])
def test_a_failed_append_changes_nothing(backend, where):
    store = _store(backend)
    store.put_connector_config("c", {"name": "c", "v": "1"}, TargetState.STARTED)
    store._producer = _FailingProducer(where)
    with pytest.raises(ConfigWriteError):
        store.put_connector_config("c", {"name": "c", "v": "2"})
    with pytest.raises(ConfigWriteError):
        store.put_target_state("c", TargetState.PAUSED)
    with pytest.raises(ConfigWriteError):
        store.remove_connector("c")
    assert store.snapshot.connectors == {"c": {"name": "c", "v": "1"}}
    assert store.snapshot.target_state("c") is TargetState.STARTED


def test_an_oversize_config_is_refused_before_anything_is_written(backend, tmp_path):
    store = _store(backend)
    store.put_connector_config("c", {"name": "c", "v": "small"}, TargetState.STARTED)
    with pytest.raises(RecordTooLargeError) as err:
        store.put_connector_config("c", {"name": "c", "v": "x" * (1 << 20)})
    assert "connector-c" in str(err.value) and "max.message.bytes" in str(err.value)
    with pytest.raises(RecordTooLargeError):
        store.put_connector_config("big", {"name": "big", "v": "x" * (1 << 20)}, TargetState.STARTED)
    store.stop()
    again = _reread(backend)
    assert again.snapshot.connectors == {"c": {"name": "c", "v": "small"}}
    assert "big" not in again.snapshot.target_states


def test_passwords_are_encrypted_at_rest_and_read_back(backend, tmp_path):
    key = Fernet.generate_key()
    store = _store(backend, encryption=ConfigEncryption(key))
    store.put_connector_config("c", {"name": "c", "db.password": "hunter2-secret", "user": "bob"},
                               TargetState.STARTED, secret_keys={"db.password"})
    store.put_task_configs("c", [{"db.password": "hunter2-secret", "task.class": "T"}], {"db.password"})
    assert store.snapshot.connectors["c"]["db.password"] == "hunter2-secret"
    store.stop()
    on_disk = _segment_bytes(tmp_path)
    assert b"hunter2-secret" not in on_disk and b"[encrypted:fernet]" in on_disk and b"bob" in on_disk
    again = _reread(backend, encryption=ConfigEncryption(key))
    assert again.snapshot.connectors["c"]["db.password"] == "hunter2-secret"
    assert again.snapshot.task_configs["c"] == [{"db.password": "hunter2-secret", "task.class": "T"}]
    with pytest.raises(DecryptionError) as err:
        _reread(backend, encryption=ConfigEncryption(Fernet.generate_key()))
    assert "connector-c" in str(err.value) and "db.password" in str(err.value)
    with pytest.raises(LogError):
        _reread(backend)


def test_generated_key_file_is_owner_only_and_reused(tmp_path):
    offsets = tmp_path / "state" / "connect.offsets"
    first = ConfigEncryption.from_worker_config({}, offsets)
    key_file = tmp_path / "state" / "connect.offsets.config-key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    token = first.encrypt("pw")
    assert ConfigEncryption.from_worker_config({}, offsets).decrypt(token) == "pw"
    inline = Fernet.generate_key().decode()
    assert ConfigEncryption.from_worker_config({"config.storage.encryption.key": inline}, offsets).decrypt(
        ConfigEncryption(inline).encrypt("x")) == "x"


def test_another_workers_config_topic_is_refused(backend):
    _store(backend, owner=ME).stop()
    assert _reread(backend, owner=ME).snapshot.owner == ME
    with pytest.raises(ConfigStoreOwnerError) as err:
        _store(backend, owner=OTHER)
    message = str(err.value)
    assert ME["worker.id"] in message and OTHER["worker.id"] in message and "\n" not in message
