from __future__ import annotations

import pytest
from connect.api import DataException, SinkRecord, TopicPartition

from headrace_example import TextFileSinkConnector, TextFileSinkTask


def record(offset: int, value, key=None) -> SinkRecord:
    return SinkRecord("words", 0, None, key, None, value, offset)


def started_task(props, sink_context, reporter) -> TextFileSinkTask:
    task = TextFileSinkTask()
    task.initialize(sink_context(props, reporter))
    task.start(props)
    return task


def test_lines_follow_line_format_and_are_on_disk_after_flush(tmp_path, sink_context, kept_errors):
    out = tmp_path / "out.txt"
    props = {"file": str(out), "line.format": "{offset} {key}={value}"}
    task = started_task(props, sink_context, kept_errors)
    task.put([record(0, "red", key=0), record(1, None, key=1), record(2, b"blue", key=2)])
    task.flush({TopicPartition("words", 0): 3})
    assert out.read_text() == "0 0=red\n2 2=blue\n"  # the tombstone at offset 1 writes nothing
    task.stop()


def test_a_record_it_cannot_write_goes_to_the_error_handling_and_the_rest_are_written(
        tmp_path, sink_context, kept_errors):
    out = tmp_path / "out.txt"
    task = started_task({"file": str(out)}, sink_context, kept_errors)
    task.put([record(0, "red"), record(1, {"a": 1}), record(2, b"\xff"), record(3, "blue")])
    task.stop()
    assert out.read_text() == "red\nblue\n"
    assert [(r.kafka_offset, str(e)) for r, e in kept_errors.reported] == [
        (1, "Record words-0@1: its value is a dict, which TextFileSink cannot write as text; "
            "put a converter or transform before it"),
        (2, "Record words-0@2: its value is not UTF-8 text (invalid start byte at byte 0)"),
    ]


def test_without_an_errant_record_reporter_a_bad_record_fails_the_put(tmp_path, sink_context):
    task = started_task({"file": str(tmp_path / "out.txt")}, sink_context, None)
    with pytest.raises(DataException, match="words-0@0"):
        task.put([record(0, ["a", "list"])])


@pytest.mark.parametrize(("line_format", "message"), [
    ("{value} {colour}", "Unknown field {colour}"),
    ("{value", "Not a format string"),
])
def test_a_bad_line_format_is_refused_naming_the_key(line_format, message):
    values = TextFileSinkConnector().validate({"file": "out.txt", "line.format": line_format})
    assert message in values["line.format"].errors[0]
    assert not values["file"].errors


def test_file_is_required():
    values = TextFileSinkConnector().validate({})
    assert values["file"].errors == ['Missing required configuration "file" which has no default value.']
