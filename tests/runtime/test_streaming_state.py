"""A streaming sink's state folder belongs to one log and one set of topics (issue #21's defect)."""

from __future__ import annotations

import json
import os

import pytest

from connect.api.errors import ConnectException
from connect.runtime.streaming_state import SOURCE_FILE, StreamingStateFolder
from connect.runtime.streaming_task import log_settings
from connect.runtime.worker_config import StandaloneConfig


def _config(**extra: str) -> StandaloneConfig:
    return StandaloneConfig({"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                             "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                             "offset.storage.file.filename": "offsets", **extra})


def _folder(config: StandaloneConfig, topics: list[str] | None = None, regex: str | None = None) -> StreamingStateFolder:
    return StreamingStateFolder(config, "search-sink", log_settings(config), topics or ["logs"], regex)


def test_two_workers_started_in_one_folder_keep_their_states_apart(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = _folder(_config(**{"embedded.log.dir": "first-log"})).claim()
    second = _folder(_config(**{"embedded.log.dir": "second-log"})).claim()
    assert first == str(tmp_path / "first-log" / "streaming-state" / "search-sink")
    assert second == str(tmp_path / "second-log" / "streaming-state" / "search-sink")
    recorded = json.loads((tmp_path / "first-log" / "streaming-state" / "search-sink" / SOURCE_FILE).read_text())
    assert recorded == {"log": f"the embedded log at {tmp_path / 'first-log'}", "topics": ["logs"]}


def test_a_folder_written_for_another_log_is_refused_naming_both(tmp_path):
    shared = str(tmp_path / "state")
    first = _config(**{"embedded.log.dir": str(tmp_path / "a"), "streaming.state.dir": shared})
    path = _folder(first).claim()
    (tmp_path / "state" / "search-sink" / "checkpoint").mkdir()
    assert _folder(first).claim() == path  # the same source resumes
    other = _config(**{"embedded.log.dir": str(tmp_path / "b"), "streaming.state.dir": shared})
    with pytest.raises(ConnectException) as refused:
        _folder(other).claim()
    message = str(refused.value)
    assert "\n" not in message
    assert f"the embedded log at {tmp_path / 'a'}" in message and f"the embedded log at {tmp_path / 'b'}" in message
    assert "refusing to resume" in message


def test_other_topics_or_another_kafka_cluster_are_another_source(tmp_path):
    state = str(tmp_path / "state")
    kafka = _config(**{"bootstrap.servers": "127.0.0.1:9092", "streaming.state.dir": state})
    _folder(kafka, ["logs"]).claim()
    with pytest.raises(ConnectException, match="topics logs.*not Kafka at 127.0.0.1:9092 \\(topics audit"):
        _folder(kafka, ["audit"]).claim()
    with pytest.raises(ConnectException, match="Kafka at 127.0.0.1:9093"):
        _folder(_config(**{"bootstrap.servers": "127.0.0.1:9093", "streaming.state.dir": state}), ["logs"]).claim()


def test_state_that_does_not_say_where_it_came_from_is_not_resumed(tmp_path):
    config = _config(**{"embedded.log.dir": str(tmp_path / "log"), "streaming.state.dir": str(tmp_path / "state")})
    (tmp_path / "state" / "search-sink" / "checkpoint").mkdir(parents=True)
    with pytest.raises(ConnectException, match="does not say which log"):
        _folder(config).claim()
    assert not os.path.exists(tmp_path / "state" / "search-sink" / SOURCE_FILE)


def test_state_under_the_former_default_folder_is_pointed_out_not_dropped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "headrace-state" / "search-sink" / "checkpoint").mkdir(parents=True)
    with pytest.raises(ConnectException, match="streaming.state.dir=.*headrace-state to resume from it"):
        _folder(_config(**{"embedded.log.dir": "log"})).claim()
