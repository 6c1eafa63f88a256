"""Issue #38 item 2, end to end: a misspelt worker or connector key is named once at start with the key it was
probably meant to be, REST validation returns the same line as a warning, and nothing is refused for it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from connect.runtime.properties import load_config_file
from tests.support import (
    STANDALONE_CONFIG,
    RestWorker,
    connect_standalone,
    rest_ready,
    wait_until,
    worker_properties,
    write_properties,
)

LISTENERS_WARNING = "listners: not a known setting; did you mean listeners?"
FIEL_WARNING = "fiel: not a known setting of FileStreamSource; did you mean file?"
DEFAULT_PORT = 8083  # the listeners default the worker must still start on


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _source(tmp: Path, name: str, **extra: str) -> dict[str, str]:
    shipped = load_config_file(STANDALONE_CONFIG.with_name("connect-file-source.properties"))
    config = {**shipped, "name": name, **extra}
    del config["file"]  # the misspelt key stands in for it
    return config


def test_a_misspelt_listeners_is_named_with_its_suggestion_and_the_worker_starts_on_the_default(
        tmp_path: Path) -> None:
    if not _port_free(DEFAULT_PORT):
        pytest.skip(f"port {DEFAULT_PORT}, the listeners default this test starts on, is in use")
    path = worker_properties(tmp_path, None)
    props = {k: v for k, v in load_config_file(path).items() if k != "listeners"}
    props["listners"] = "http://127.0.0.1:1"  # a port nothing may listen on: the key must not take effect
    write_properties(path, props)
    proc = connect_standalone(tmp_path, path)
    try:
        wait_until(lambda: rest_ready(DEFAULT_PORT) or not proc.alive(), 60, what="REST on the default listener")
        assert proc.alive(), proc.log()
    finally:
        assert proc.terminate() == 0, proc.log()
    log = proc.log()
    assert log.count(LISTENERS_WARNING) == 1, log
    line = next(line for line in log.splitlines() if LISTENERS_WARNING in line)
    assert " WARNING " in line, line
    assert "Traceback" not in log


def test_a_misspelt_connector_key_is_warned_once_per_start_and_validation_returns_it(tmp_path: Path) -> None:
    source_file = write_properties(tmp_path / "source.properties", _source(tmp_path, "file-source", fiel="in.txt"))
    worker = RestWorker(tmp_path, source_file).start()
    try:
        with worker.http() as http:
            # validation: 200, the warning beside Kafka Connect's fields, no error for it
            r = http.put("/connector-plugins/FileStreamSource/config/validate",
                         json=_source(tmp_path, "v", fiel="in.txt"))
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["error_count"] == 0 and body["warnings"] == [FIEL_WARNING]
            assert not any(c["definition"] is None for c in body["configs"])
            clean = http.put("/connector-plugins/FileStreamSource/config/validate",
                             json={**_source(tmp_path, "v"), "file": str(tmp_path / "in.txt")}).json()
            assert "warnings" not in clean and clean["error_count"] == 0
            # created over REST all the same, and said once: the same config put again says nothing new
            rest_config = {k: v for k, v in _source(tmp_path, "rest-source", fiel="x.txt").items() if k != "name"}
            assert http.put("/connectors/rest-source/config", json=rest_config).status_code == 201
            assert http.put("/connectors/rest-source/config", json=rest_config).status_code == 200
            wait_until(lambda: f"[rest-source] {FIEL_WARNING}" in worker.proc.log(), 10, what="the REST warning")
    finally:
        first = worker.stop()
    assert first.count(f"[file-source] {FIEL_WARNING}") == 1, first
    assert first.count(f"[rest-source] {FIEL_WARNING}") == 1, first
    assert "[file-source] FileStreamSource has no file setting: reading standard input into topic" in first
    # the next start: the file's connector (unchanged) and the one restored from the config topic, once each
    again = RestWorker(tmp_path, source_file).start()  # the same state in tmp_path, another port
    second = again.stop()[len(first):]
    assert second.count(f"[file-source] {FIEL_WARNING}") == 1, second
    assert second.count(f"[rest-source] {FIEL_WARNING}") == 1, second
    assert "Traceback" not in first + second
