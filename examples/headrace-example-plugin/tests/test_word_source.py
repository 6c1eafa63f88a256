from __future__ import annotations

import threading
import time

import pytest
from connect.api import ConnectException, SourceRecordBatch

from headrace_example import WordSourceConnector, WordSourceTask
from headrace_example.source import SOURCE_PARTITION

PROPS = {"name": "words", "topic": "words", "words": "red,green,blue", "batch.size": "4",
         "poll.interval.ms": "0"}


# --8<-- [start:resume-test]
def started_task(props, offsets, source_context) -> WordSourceTask:
    task = WordSourceTask()
    task.initialize(source_context(props, offsets))
    task.start(props)
    return task


def test_a_restarted_task_resumes_after_the_committed_offset(offsets, source_context):
    offsets.committed[str(dict(SOURCE_PARTITION))] = {"position": 10}
    task = started_task(PROPS, offsets, source_context)
    batch = task.poll()
    assert [(r.key, r.value) for r in batch] == [(10, "green"), (11, "blue"), (12, "red"), (13, "green")]
# --8<-- [end:resume-test]


def errors_of(props: dict[str, str]) -> dict[str, list[str]]:
    return {name: cv.errors for name, cv in WordSourceConnector().validate(props).items() if cv.errors}


def test_a_valid_config_has_no_errors():
    assert errors_of(PROPS) == {}


@pytest.mark.parametrize(("key", "value", "message"), [
    ("topic", None, 'Missing required configuration "topic"'),
    ("words", "red,,blue", "A word cannot be empty"),
    ("words", "", "at least one word"),
    ("batch.size", "0", "at least 1"),
    ("poll.interval.ms", "soon", "Not a number"),
    ("max.records", "-1", "at least 0"),
])
def test_each_bad_setting_is_named_with_the_reason(key, value, message):
    props = {k: v for k, v in PROPS.items() if k != key}
    if value is not None:
        props[key] = value
    errors = errors_of(props)
    assert list(errors) == [key]
    assert message in errors[key][0]


def test_poll_returns_a_batch_of_numbered_words_with_their_offsets(offsets, source_context):
    task = started_task(PROPS, offsets, source_context)
    first, second = task.poll(), task.poll()
    assert isinstance(first, SourceRecordBatch)
    assert [(r.key, r.value) for r in first] == [(0, "red"), (1, "green"), (2, "blue"), (3, "red")]
    assert [r.key for r in second] == [4, 5, 6, 7]
    assert first[-1].source_partition == SOURCE_PARTITION
    assert first[-1].source_offset == {"position": 4}  # the next record to produce



def test_an_unusable_committed_offset_fails_the_task_instead_of_guessing(offsets, source_context):
    offsets.committed[str(dict(SOURCE_PARTITION))] = {"position": "ten"}
    with pytest.raises(ConnectException, match="position"):
        started_task(PROPS, offsets, source_context)


def test_max_records_ends_the_sequence_across_restarts(offsets, source_context):
    offsets.committed[str(dict(SOURCE_PARTITION))] = {"position": 3}
    task = started_task({**PROPS, "max.records": "5"}, offsets, source_context)
    assert [r.key for r in task.poll()] == [3, 4]
    threading.Timer(0.1, task.stop).start()  # the idle poll waits for a stop, not for its whole second
    assert not task.poll()


def test_stop_ends_a_poll_waiting_for_its_interval(offsets, source_context):
    task = started_task({**PROPS, "poll.interval.ms": "60000"}, offsets, source_context)
    assert task.poll()  # the first batch is due at once
    threading.Timer(0.2, task.stop).start()
    started = time.monotonic()
    assert task.poll() is None
    assert time.monotonic() - started < 5  # generous: far below the 60 s interval


def test_one_task_whatever_tasks_max_says():
    connector = WordSourceConnector()
    connector.start(PROPS)
    assert connector.task_configs(3) == [PROPS]


def test_offset_changes_are_checked_before_they_are_written():
    connector = WordSourceConnector()
    partition = tuple(SOURCE_PARTITION.items())
    assert connector.alter_offsets(PROPS, {partition: {"position": 5}}) is True
    assert connector.alter_offsets(PROPS, {partition: None}) is True
    with pytest.raises(ConnectException, match="position"):
        connector.alter_offsets(PROPS, {partition: {"position": -1}})
    with pytest.raises(ConnectException, match="Unknown source partition"):
        connector.alter_offsets(PROPS, {(("file", "x"),): {"position": 1}})
