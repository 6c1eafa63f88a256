"""The shared log event schema: what real senders' JSON shapes become."""

from __future__ import annotations

import pytest

from connect.api.log_event import LOG_EVENT_SCHEMA, LogEventError, from_mapping, syslog_event, to_plain
from plugins.converters.json import JsonConverter


def _plain(obj):
    return to_plain(from_mapping(obj, received=lambda: "now"))


def test_ecs_dotted_as_log4j_ecs_layout_writes_it():
    event = _plain({"@timestamp": "2026-01-01T00:00:00.123Z", "ecs.version": "1.2.0", "log.level": "WARN",
                    "message": "m", "process.thread.name": "main", "log.logger": "a.B", "labels": {"k": "v"},
                    "tags": ["x"], "error.type": "java.io.IOException", "error.message": "disk",
                    "error.stack_trace": "java.io.IOException: disk\n\tat a.B.c(B.java:1)"})
    assert event == {"@timestamp": "2026-01-01T00:00:00.123Z", "message": "m",
                     "log": {"level": "WARN", "logger": "a.B"},
                     "error": {"type": "java.io.IOException", "message": "disk",
                               "stack_trace": "java.io.IOException: disk\n\tat a.B.c(B.java:1)"},
                     "process": {"thread": {"name": "main"}}, "labels": {"k": "v", "tags": '["x"]'}}


def test_gelf_logstash_and_log4j_json_layout():
    gelf = _plain({"version": "1.1", "host": "h", "short_message": "s", "full_message": "trace", "timestamp": 0.5,
                   "level": 3, "_thread": "t", "_logger": "l", "_user": 7})
    assert gelf == {"@timestamp": "1970-01-01T00:00:00.500000Z", "message": "s",
                    "log": {"level": "ERROR", "logger": "l"}, "error": {"stack_trace": "trace"},
                    "process": {"thread": {"name": "t"}}, "host": {"hostname": "h"}, "labels": {"user": "7"}}
    logstash = _plain({"@version": 1, "@timestamp": "t", "message": "m", "logger_name": "l", "thread_name": "t",
                       "level": "INFO", "level_value": 20000,
                       "exception": {"exception_class": "E", "exception_message": "x", "stacktrace": "st"}})
    assert logstash["error"] == {"type": "E", "message": "x", "stack_trace": "st"}
    assert logstash["log"] == {"level": "INFO", "logger": "l"} and "labels" not in logstash
    json_layout = _plain({"instant": {"epochSecond": 1, "nanoOfSecond": 500000000}, "thread": "main",
                          "level": "DEBUG", "loggerName": "x.Y", "message": "hi", "endOfBatch": False,
                          "thrown": {"name": "E", "message": "bad"}, "threadId": 1})
    assert json_layout["@timestamp"] == "1970-01-01T00:00:01.500000Z"
    assert json_layout["error"] == {"type": "E", "message": "bad"}
    assert json_layout["process"] == {"thread": {"name": "main", "id": 1}}


def test_missing_timestamp_is_the_receive_time_and_bad_shapes_are_named():
    assert _plain({"message": "x"})["@timestamp"] == "now"
    for bad, error in [([1], "must be a JSON object, got an array"), ("s", "got str"), (None, "got null"),
                       ({"labels": 3}, "field 'labels' must be an object"),
                       ({"process.pid": "abc"}, "field 'process.pid' must be an integer"),
                       ({"process": {"pid": 1 << 40}}, "field 'process.pid' is out of range"),
                       ({"@timestamp": [1]}, "field '@timestamp' must be text or a number")]:
        with pytest.raises(LogEventError, match=error.replace("(", r"\(").replace(")", r"\)")):
            from_mapping(bad)


def test_every_event_is_valid_for_its_schema_and_converts():
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, False)
    for event in [from_mapping({"message": "m", "process": {"pid": 3, "thread": {"id": 9}}, "context": {"a": 1}}),
                  syslog_event(timestamp="t", message="m", priority=165, version=1, hostname="h", appname="a",
                               procid="p", msgid="ID", structured_data={"x@1": {"k": "v"}})]:
        event.validate()
        assert converter.from_connect_data("t", LOG_EVENT_SCHEMA, event).startswith(b'{"schema":')
    plain = to_plain(syslog_event(timestamp="t", message="m", priority=165, version=1, hostname="h", appname="a",
                                  procid=None, msgid=None, structured_data=None))
    assert plain["log"]["syslog"]["facility"] == {"code": 20, "name": "local4"}
    assert plain["log"]["syslog"]["severity"] == {"code": 5, "name": "notice"} and plain["log"]["level"] == "INFO"


# --- the fast path for the schema's own nested form gives what the general path gives --------------------

_ECS_TREE = {
    "@timestamp": None, "message": None,
    "log": {"level": None, "logger": None, "origin": {"file": {"name": None, "line": None}, "function": None},
            "file": {"path": None}},
    "error": {"type": None, "message": None, "stack_trace": None},
    "process": {"pid": None, "name": None, "thread": {"name": None, "id": None}},
    "host": {"hostname": None}, "service": {"name": None},
    "event": {"sequence": None, "original": None, "dataset": None},
    "labels": "map", "context": "map",
}


def _leaves():
    from hypothesis import strategies as st

    scalars = st.one_of(st.none(), st.text(max_size=5), st.integers(-2**70, 2**70), st.integers(-5, 5),
                        st.booleans(), st.floats(allow_nan=False, width=32), st.sampled_from(["12", "", "0"]))
    odd = st.one_of(st.lists(scalars, max_size=2), st.dictionaries(st.text(max_size=3), scalars, max_size=2))
    # mostly scalars, so that most objects are ones the fast path takes
    return st.integers(0, 19).flatmap(lambda n: odd if n == 0 else scalars)


def _ecs_like(tree, min_keys=0):
    """Objects shaped like ``tree``: its keys, now and then a foreign one (another sender's spelling) or a
    leaf where an object belongs."""
    from hypothesis import strategies as st

    foreign = st.sampled_from(["name", "level", "host", "x", "_gelf", "ecs.version", "labels.k", "mdc"])

    @st.composite
    def build(draw):
        out = {}
        for key in draw(st.lists(st.sampled_from(sorted(tree)), unique=True, min_size=min_keys,
                                              max_size=len(tree))):
            sub = tree[key]
            if isinstance(sub, dict):
                out[key] = draw(_leaves() if draw(st.integers(0, 15)) == 0 else _ecs_like(sub, 1))
            elif sub == "map":
                out[key] = draw(_leaves() if draw(st.integers(0, 10)) == 0
                                else st.dictionaries(st.text(max_size=3), _leaves(), max_size=3))
            else:
                out[key] = draw(_leaves())
        if draw(st.integers(0, 15)) == 0:
            out[draw(foreign)] = draw(_leaves())
        return out

    return build()


def _outcome(fn, obj):
    try:
        return fn(obj, received=lambda: "now")
    except LogEventError as exc:
        return ("raises", str(exc))


def _fast_path_matches(examples, at_least):
    from hypothesis import HealthCheck, given, settings

    from connect.api import log_event

    taken = []

    @settings(max_examples=examples, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(_ecs_like(_ECS_TREE))
    def check(obj):
        general = _outcome(log_event._from_any, obj)
        assert _outcome(from_mapping, obj) == general, obj
        if not obj.keys() <= log_event._ECS_TOP:
            return
        try:
            fast = log_event._from_ecs(obj, lambda: "now")
        except LogEventError:
            return
        taken.append(obj)
        assert fast == general, obj

    check()
    assert len(taken) >= at_least  # the fast path itself was compared, not only the fallback


def test_the_fast_path_for_nested_ecs_gives_the_general_paths_event_or_error():
    _fast_path_matches(60, 8)


@pytest.mark.slow
def test_the_fast_path_for_nested_ecs_gives_the_general_paths_event_or_error_at_length():
    _fast_path_matches(500, 60)


def test_the_fast_path_takes_the_appenders_events():
    from connect.api import log_event

    calls = []
    original = log_event._from_any
    obj = {"@timestamp": "t", "message": "m", "log": {"level": "INFO", "logger": "a",
                                                    "origin": {"file": {"name": "f.py", "line": 3}, "function": "f"}},
           "process": {"pid": 1, "name": "MainProcess", "thread": {"name": "MainThread", "id": 2**40}},
           "host": {"hostname": "h"}, "event": {"sequence": 1}, "labels": {"n": 1}, "context": {"r": "x"}}
    try:
        log_event._from_any = lambda *a, **k: calls.append(a) or original(*a, **k)
        event = from_mapping(obj)
    finally:
        log_event._from_any = original
    assert calls == [] and event == original(obj, None)
    assert to_plain(event)["labels"] == {"n": "1"}


def test_a_timestamp_of_digits_that_are_not_ascii_is_not_taken_for_epoch_seconds():
    # "¹".isdigit() is true but int("¹") fails: found by the property test above with a newer Hypothesis
    for text in ("¹", "²³", "١٢"):
        event = from_mapping({"@timestamp": text, "message": "m"}, received=lambda: "now")
        assert event.get("@timestamp") == text  # kept as the text it is, as any other non-epoch timestamp
