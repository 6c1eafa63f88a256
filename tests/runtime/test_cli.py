"""The command-line programs in-process (connect/cli/): argument handling, one-line errors, worker ids, start and stop of the runtime."""

from __future__ import annotations

import logging
import socket

import pytest

from connect.cli import distributed_main, headrace_main, standalone_main
from connect.cli.standalone import StandaloneRuntime
from connect.cli.worker_process import rest_worker_id as _worker_id
from connect.runtime.herder import State
from connect.runtime.worker_config import StandaloneConfig
from tests.support import worker_properties, write_properties


@pytest.fixture(autouse=True)
def _keep_logging():  # the CLI replaces the root handlers; later tests need pytest's back
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def _errors(err: str) -> list[str]:
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("ERROR")]


def test_usage_errors_exit_with_argparse_status(capsys):
    with pytest.raises(SystemExit) as exc:
        standalone_main([])
    assert exc.value.code == 2
    assert "worker_config" in capsys.readouterr().err


def test_a_missing_worker_config_is_one_error_line(tmp_path, capsys):
    missing = tmp_path / "nope.properties"
    assert standalone_main([str(missing)]) == 1
    [line] = _errors(capsys.readouterr().err)
    assert str(missing) in line and "cannot read" in line


def test_an_unknown_worker_converter_names_the_file_and_the_key(tmp_path, capsys):
    cfg = write_properties(tmp_path / "w.properties", {"key.converter": "NoSuchConverter",
                                                        "value.converter": "StringConverter",
                                                        "offset.storage.file.filename": tmp_path / "o"})
    assert standalone_main([str(cfg)]) == 1
    [line] = _errors(capsys.readouterr().err)
    assert "w.properties" in line and "key.converter" in line and "NoSuchConverter" in line


def test_every_bad_connector_file_is_named_before_anything_runs(tmp_path, capsys):
    bad = write_properties(tmp_path / "bad.properties", {"name": "x", "connector.class": "FileStreamSource"})
    unknown = write_properties(tmp_path / "unknown.properties", {"name": "y", "connector.class": "Nope"})
    assert standalone_main([str(worker_properties(tmp_path)), str(bad), str(unknown)]) == 1
    lines = _errors(capsys.readouterr().err)
    assert any("bad.properties" in line and "topic" in line for line in lines)
    assert any("unknown.properties" in line and "Nope" in line for line in lines)
    assert not (tmp_path / "data").exists()


def test_a_distributed_worker_config_without_kafka_or_its_topics_is_one_line(tmp_path, capsys):
    path = tmp_path / "w.properties"
    base = {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
    write_properties(path, {**base, "bootstrap.servers": "127.0.0.1:9"})
    assert distributed_main([str(path)]) != 0
    errors = _errors(capsys.readouterr().err)
    assert len(errors) == 1 and "group.id" in errors[0], errors
    write_properties(path, {**base, "group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o",
                            "status.storage.topic": "s"})
    assert distributed_main([str(path)]) != 0
    errors = _errors(capsys.readouterr().err)
    assert len(errors) == 1 and "bootstrap.servers" in errors[0] and "connect-standalone" in errors[0], errors


def test_headrace_without_a_subcommand_prints_help(capsys):
    assert headrace_main([]) == 1
    assert "usage" in capsys.readouterr().out


def _config(**extra: str) -> StandaloneConfig:
    return StandaloneConfig({"key.converter": "StringConverter", "value.converter": "StringConverter",
                             "offset.storage.file.filename": "o", **{k.replace("_", "."): v for k, v in extra.items()}})


def test_worker_id_is_the_host_and_the_listener_port_or_the_advertised_ones():
    # the listener's own address, not this machine's name: a worker on 127.0.0.1 is reached only there, and
    # workers on different ports of one machine (or the same port of different hosts) get different ids
    assert _worker_id(_config(listeners="http://127.0.0.1:8083")) == "127.0.0.1:8083"
    assert _worker_id(_config(listeners="http://198.18.0.2:8083")) == "198.18.0.2:8083"
    assert _worker_id(_config(listeners="http://[::1]:8083")) == "[::1]:8083"
    assert _worker_id(_config(listeners="http://localhost:8084")) == "localhost:8084"
    # the advertised protocol picks its listener
    assert _worker_id(_config(listeners="http://127.0.0.1:8083,https://127.0.0.2:8443",
                              rest_advertised_listener="https")) == "127.0.0.2:8443"
    assert _worker_id(_config(listeners="http://127.0.0.1:8083", rest_advertised_host_name="w1",
                              rest_advertised_port="9")) == "w1:9"


def test_a_worker_on_every_interface_is_known_by_this_machines_name():
    name = socket.getfqdn() or socket.gethostname()
    assert _worker_id(_config(listeners="http://:8083")) == f"{name}:8083"
    assert _worker_id(_config(listeners="http://0.0.0.0:8083")) == f"{name}:8083"


def test_a_listener_port_out_of_range_is_left_to_the_rest_servers_check():
    assert _worker_id(_config(listeners="http://127.0.0.1:99999")).startswith("127.0.0.1:")


def test_a_worker_without_listeners_gets_a_unique_id():
    config = _config(listeners="")
    assert _worker_id(config) != _worker_id(config)


def test_the_runtime_starts_the_connector_files_and_stops(tmp_path):
    (tmp_path / "in.txt").write_text("a\nb\n")
    source = write_properties(tmp_path / "src.properties", {
        "name": "src", "connector.class": "FileStreamSource", "file": tmp_path / "in.txt", "topic": "t"})
    runtime = StandaloneRuntime(str(worker_properties(tmp_path)), [str(source)])
    try:
        runtime.start()
        assert runtime.rest is None  # no listeners: no REST server
        status = runtime.herder.connector_status("src")
        assert status.connector.state is State.RUNNING and len(status.tasks) == 1
    finally:
        runtime.shutdown()
    assert runtime.herder.worker.task_ids() == []
