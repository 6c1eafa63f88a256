"""``translate`` of Flume agent configs into Headrace connectors: the netcat and exec sources, the host,
timestamp and regex_filter interceptors and the multiplexing selector, each checked by what the derived
plugins do with records, and the keys it refuses."""

from __future__ import annotations

import textwrap
from pathlib import Path

from connect.api import ConnectHeaders, SourceRecord
from connect.cli.flume_agent import translate
from connect.runtime.properties import load_config_file
from plugins.predicates import HeaderValueMatches, ValueMatches
from plugins.transforms import Filter, InsertHeader, InsertTimestampHeader

PLUGINS = {"Filter": Filter, "InsertHeader": InsertHeader, "InsertTimestampHeader": InsertTimestampHeader,
           "ValueMatches": ValueMatches, "HeaderValueMatches": HeaderValueMatches}


def _translate(tmp_path: Path, text: str):
    conf = tmp_path / "flume.conf"
    conf.write_text(textwrap.dedent(text))
    return translate(load_config_file(str(conf)), "a1", tmp_path / "work")


def _by_name(translation):
    return {c["name"]: c for c in translation.connectors}


def _apply(conn: dict[str, str], record: SourceRecord) -> SourceRecord | None:
    """The connector's transforms and predicates, as the runtime chains them."""
    for name in filter(None, conn.get("transforms", "").split(",")):
        prefix = f"transforms.{name}."
        transform = PLUGINS[conn[prefix + "type"]]()
        transform.configure({k[len(prefix):]: v for k, v in conn.items() if k.startswith(prefix)})
        gate = conn.get(prefix + "predicate")
        if gate:
            pprefix = f"predicates.{gate}."
            predicate = PLUGINS[conn[pprefix + "type"]]()
            predicate.configure({k[len(pprefix):]: v for k, v in conn.items() if k.startswith(pprefix)})
            if predicate.test(record) == (conn.get(prefix + "negate") == "true"):
                continue
        record = transform.apply(record)
        if record is None:
            return None
    return record


def _record(body: bytes, **headers: str) -> SourceRecord:
    h = ConnectHeaders()
    for k, v in headers.items():
        h.add_string(k, v)
    return SourceRecord(None, None, "t", None, None, None, None, body, 1, h)


def test_the_user_guides_netcat_to_logger_example(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.sinks = k1
        a1.channels = c1
        a1.sources.r1.type = netcat
        a1.sources.r1.bind = localhost
        a1.sources.r1.port = 44444
        a1.sources.r1.max-line-length = 1024
        a1.sinks.k1.type = logger
        a1.channels.c1.type = memory
        a1.channels.c1.capacity = 1000
        a1.channels.c1.transactionCapacity = 100
        a1.sources.r1.channels = c1
        a1.sinks.k1.channel = c1
    """)
    assert t.problems == []
    source, sink = _by_name(t)["a1-r1"], _by_name(t)["a1-k1"]
    assert source["connector.class"] == "NetcatSource" and source["listeners"] == "tcp://localhost:44444"
    assert source["max.line.length"] == "1024" and source["topic"] == "a1.r1"
    assert sink["connector.class"] == "LoggerSink" and sink["topics"] == "a1.r1"


def test_an_exec_source_becomes_a_command_the_agent_runs_and_a_file_source(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sources.r1.type = exec
        a1.sources.r1.command = for i in 1 2 3; do echo $i; done
        a1.sources.r1.shell = /bin/bash -c
        a1.sources.r1.restart = true
        a1.sources.r1.restartThrottle = 500
        a1.sources.r1.logStdErr = true
        a1.sources.r1.batchSize = 20
        a1.sources.r1.channels = c1
        a1.channels.c1.type = memory
    """)
    assert t.problems == []
    [command] = t.commands
    assert command.argv == ["/bin/bash", "-c", "for i in 1 2 3; do echo $i; done"]
    assert command.restart and command.restart_throttle_s == 0.5 and command.log_stderr
    source = _by_name(t)["a1-r1"]
    assert source["connector.class"] == "FileStreamSource" and source["file"] == str(command.output)
    assert command.output.parent == tmp_path / "work" / "exec"


def test_without_a_shell_the_command_is_split_as_flume_splits_it(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sources.r1.type = exec
        a1.sources.r1.command = tail -F /var/log/secure
        a1.sources.r1.channels = c1
        a1.channels.c1.type = memory
    """)
    assert t.commands[0].argv == ["tail", "-F", "/var/log/secure"] and not t.commands[0].restart


def test_host_timestamp_and_regex_filter_interceptors_act_as_flumes(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sources.r1.type = netcat
        a1.sources.r1.port = 44444
        a1.sources.r1.channels = c1
        a1.sources.r1.interceptors = h t f
        a1.sources.r1.interceptors.h.type = host
        a1.sources.r1.interceptors.h.hostHeader = hostname
        a1.sources.r1.interceptors.h.useIP = false
        a1.sources.r1.interceptors.t.type = timestamp
        a1.sources.r1.interceptors.f.type = regex_filter
        a1.sources.r1.interceptors.f.regex = ^DEBUG
        a1.sources.r1.interceptors.f.excludeEvents = true
        a1.channels.c1.type = memory
    """)
    assert t.problems == []
    conn = _by_name(t)["a1-r1"]
    out = _apply(conn, _record(b"INFO kept"))
    assert out is not None and out.headers.last_with_name("hostname").value
    assert int(out.headers.last_with_name("timestamp").value) > 1_600_000_000_000
    assert _apply(conn, _record(b"DEBUG dropped")) is None


def test_regex_filter_without_exclude_keeps_only_matching_events(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sources.r1.type = netcat
        a1.sources.r1.port = 44444
        a1.sources.r1.channels = c1
        a1.sources.r1.interceptors = f
        a1.sources.r1.interceptors.f.type = regex_filter
        a1.sources.r1.interceptors.f.regex = ERROR|WARN
        a1.channels.c1.type = memory
    """)
    conn = _by_name(t)["a1-r1"]
    assert _apply(conn, _record(b"x WARN y")) is not None and _apply(conn, _record(b"INFO")) is None


MULTIPLEXING = """
    a1.sources = r1
    a1.sinks = k1 k2 k3
    a1.channels = c1 c2 c3
    a1.sources.r1.type = avro
    a1.sources.r1.port = 41414
    a1.sources.r1.channels = c1 c2 c3
    a1.sources.r1.selector.type = multiplexing
    a1.sources.r1.selector.header = state
    a1.sources.r1.selector.mapping.CZ = c1
    a1.sources.r1.selector.mapping.US = c2 c3
    a1.sources.r1.selector.default = c3
    a1.channels.c1.type = memory
    a1.channels.c2.type = memory
    a1.channels.c3.type = file
    a1.sinks.k1.type = logger
    a1.sinks.k1.channel = c1
    a1.sinks.k2.type = logger
    a1.sinks.k2.channel = c2
    a1.sinks.k3.type = logger
    a1.sinks.k3.channel = c3
"""


def test_a_multiplexing_selector_routes_by_header_as_flumes_does(tmp_path):
    t = _translate(tmp_path, MULTIPLEXING)
    assert t.problems == []
    sinks = _by_name(t)
    events = {"CZ": _record(b"1", state="CZ"), "US": _record(b"2", state="US"), "DE": _record(b"3", state="DE"),
              "none": _record(b"4")}
    kept = {name: sorted(k for k, r in events.items() if _apply(sinks[name], r) is not None)
            for name in ("a1-k1", "a1-k2", "a1-k3")}
    # c1 gets CZ; c2 gets US; c3 gets US and the default (what no mapping names, and no header)
    assert kept == {"a1-k1": ["CZ"], "a1-k2": ["US"], "a1-k3": ["DE", "US", "none"]}


def test_keys_it_cannot_honour_are_refused_naming_them(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1 r2
        a1.channels = c1
        a1.sources.r1.type = exec
        a1.sources.r1.channels = c1
        a1.sources.r1.charset = ISO-8859-1
        a1.sources.r2.type = netcat
        a1.sources.r2.port = 44444
        a1.sources.r2.channels = c1
        a1.sources.r2.interceptors = u
        a1.sources.r2.interceptors.u.type = uuid
        a1.sources.r2.selector.type = multiplexing
        a1.sources.r2.selector.mapping.X = c9
        a1.channels.c1.type = memory
    """)
    problems = "\n".join(t.problems)
    for key in ("a1.sources.r1.command = (missing)", "a1.sources.r1.charset = ISO-8859-1",
                "a1.sources.r2.interceptors.u.type = uuid", "a1.sources.r2.selector.mapping.X = c9: channel 'c9'"):
        assert key in problems, problems
