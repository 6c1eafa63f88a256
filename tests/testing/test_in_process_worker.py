"""connect.testing.InProcessWorker: the built-in FileStream connectors and a transform run by config on the
real Worker and StandaloneHerder over the in-memory log, as a plugin author's test would run them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from connect.api import (
    ConfigDef,
    ConfigType,
    ConnectException,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    TopicPartition,
)
from connect.runtime.herder import BadRequestError, State
from connect.testing import InProcessWorker, wait_until


@pytest.fixture
def worker():
    with InProcessWorker() as worker:
        yield worker


def test_a_file_source_started_by_config_writes_its_lines_and_commits_their_offsets(worker, tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("one\ntwo\n")
    status = worker.start_connector("src", {"connector.class": "FileStreamSource", "file": str(path),
                                            "topic": "lines"})
    assert status.connector.state is State.RUNNING and [t.state for t in status.tasks] == [State.RUNNING]
    assert worker.wait_for_values("lines", 2) == ["one", "two"]
    with path.open("a") as f:
        f.write("three\n")  # the running task tails the file
    assert worker.wait_for_values("lines", 3) == ["one", "two", "three"]
    worker.wait_until(lambda: worker.offsets.get("src", {"filename": str(path)}) == {"position": 14},
                      message="the source offset of the third line")


def test_a_file_sink_writes_what_is_produced_to_its_topic_and_commits_the_offsets(worker, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    worker.produce("lines", "a", "b")
    worker.start_connector("snk", {"connector.class": "FileStreamSink", "file": str(out), "topics": "lines"})
    worker.wait_until(lambda: out.read_text() == "a\nb\n", message="a and b in the file")
    worker.produce("lines", "c", None)  # a null value is not written
    worker.wait_until(lambda: worker.committed_offsets("snk") == {TopicPartition("lines", 0): 4},
                      message=lambda: f"offset 4 committed, not {worker.committed_offsets('snk')}")
    assert out.read_text() == "a\nb\nc\n"


def test_a_transform_in_the_connector_config_renames_the_topic_of_every_record(worker, tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("x\ny\n")
    worker.start_connector("src", {
        "connector.class": "FileStreamSource", "file": str(path), "topic": "lines",
        "transforms": "route", "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)", "transforms.route.replacement": "$1-routed"})
    assert worker.wait_for_values("lines-routed", 2) == ["x", "y"]
    assert worker.records("lines") == []


def test_source_to_sink_through_one_worker(worker, tmp_path: Path) -> None:
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("1\n2\n3\n")
    worker.start_connector("src", {"connector.class": "FileStreamSource", "file": str(source), "topic": "n"})
    worker.start_connector("snk", {"connector.class": "FileStreamSink", "file": str(out), "topics": "n"})
    worker.wait_until(lambda: out.exists() and out.read_text() == "1\n2\n3\n", message="the copy")


def test_a_bad_config_is_refused_naming_the_key_and_nothing_runs(worker) -> None:
    with pytest.raises(BadRequestError, match="tasks.max"):
        worker.start_connector("snk", {"connector.class": "FileStreamSink", "topics": "t", "tasks.max": "none"})
    assert worker.herder.connectors() == []


GREETINGS = 3


class GreetingSourceConnector(SourceConnector):
    """A connector of the test's own, not installed: GREETINGS records, then nothing."""

    def version(self) -> str:
        return "1"

    def config(self) -> ConfigDef:
        return ConfigDef().define("fail", ConfigType.STRING, "", documentation="Fail the task's start with this text.")

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[Task]:
        return GreetingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{"fail": self.props.get("fail", "")}]

    def stop(self) -> None:
        pass


class GreetingSourceTask(SourceTask):
    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        if props.get("fail"):
            raise ConnectException(props["fail"])
        self.sent = 0

    def poll(self) -> Sequence[SourceRecord] | None:
        if self.sent == GREETINGS:
            return None
        self.sent += 1
        return [SourceRecord({"p": 0}, {"n": self.sent}, "greetings", value_schema=Schema.STRING_SCHEMA,
                             value=f"hello {self.sent}")]

    def stop(self) -> None:
        pass


def test_a_connector_class_given_to_the_worker_runs_without_being_installed() -> None:
    with InProcessWorker([GreetingSourceConnector]) as worker:
        worker.start_connector("greet", {"connector.class": "GreetingSourceConnector"})
        assert worker.wait_for_values("greetings", GREETINGS) == ["hello 1", "hello 2", "hello 3"]
        worker.delete_connector("greet")
        assert worker.herder.connectors() == []
        assert worker.offsets.get("greet", {"p": 0}) == {"n": GREETINGS}  # committed as the task stopped


def test_a_task_that_fails_to_start_fails_the_wait_at_once_with_its_trace() -> None:
    with InProcessWorker([GreetingSourceConnector]) as worker:
        with pytest.raises(AssertionError, match="(?s)task 0 of greet failed.*no greeting today"):
            worker.start_connector("greet", {"connector.class": "GreetingSourceConnector",
                                             "fail": "no greeting today"}, timeout=60)


def test_only_plugin_classes_are_accepted() -> None:
    with pytest.raises(TypeError, match="not a concrete plugin class"):
        InProcessWorker([str])


def test_wait_until_returns_the_condition_value_or_fails_naming_what_it_waited_for() -> None:
    assert wait_until(lambda: [1], timeout=1) == [1]
    with pytest.raises(AssertionError, match="Waited 0.05 s for the moon"):
        wait_until(lambda: None, timeout=0.05, message="the moon")
