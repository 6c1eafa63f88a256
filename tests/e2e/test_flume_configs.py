"""The Flume agent configs shipped in configs/flume/ run with ``headrace flume-agent`` as their headers say,
with only ports and paths changed, and the data sent to each arrives where the config sends it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.flume_support import AvroClient, read_topic
from tests.support import REPO, CliProcess, free_port, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

FLUME_CONFIGS = REPO / "configs" / "flume"


def shipped(name: str, changes: dict[str, str]) -> str:
    """The text of ``configs/flume/<name>`` with the value of each key in ``changes`` replaced; every one of
    those keys must be in the file, so a test cannot silently drift from what ships."""
    text = (FLUME_CONFIGS / name).read_text()
    for key, value in changes.items():
        text, found = re.subn(rf"^{re.escape(key)}\s*=.*$", lambda _m, k=key, v=value: f"{k} = {v}", text,
                              flags=re.MULTILINE)
        assert found == 1, f"{key} is not set once in {name}"
    return text


def start_agent(tmp_path: Path, name: str, agent: str, changes: dict[str, str]) -> CliProcess:
    """The command the file's header gives, run in ``tmp_path`` (so the default work dir is there)."""
    conf = tmp_path / name
    conf.write_text(shipped(name, changes))
    exe = Path(sys.executable).with_name("headrace")
    command = [str(exe) if exe.exists() else "headrace", "flume-agent", "--conf-file", str(conf), "--name", agent]
    return CliProcess(command, tmp_path, "agent.log").start()


def header_command(name: str) -> str:
    match = re.search(r"^#\s+(headrace flume-agent .*)$", (FLUME_CONFIGS / name).read_text(), re.MULTILINE)
    assert match, f"{name} has no run command in its header"
    return match.group(1)


def logged_events(log: str, connector: str) -> list[tuple[str, str]]:
    """(headers, body) of each event the logger sink of ``connector`` logged, in order."""
    pattern = rf"LoggerSink\[{re.escape(connector)}\] Event: {{ headers:(.*) body: [0-9a-f ]* b'(.*)' }}"
    return re.findall(pattern, log)


def rolled_lines(directory: Path) -> list[str]:
    return [line for f in sorted(directory.glob("*-*")) for line in f.read_text().splitlines()]


@pytest.mark.parametrize(("name", "agent"), [("avro-memory-file-roll.conf", "a1"), ("taildir-logger.conf", "a2"),
                                             ("exec-fan-out.conf", "a3")])
def test_each_header_says_what_the_config_does_and_gives_the_command_that_runs_it(name, agent):
    text = (FLUME_CONFIGS / name).read_text()
    assert text.startswith(f"# Flume agent {agent}: ") and "What it does:" in text
    assert header_command(name) == f"headrace flume-agent --conf-file configs/flume/{name} --name {agent}"


def test_every_shipped_config_is_tested():
    assert sorted(p.name for p in FLUME_CONFIGS.iterdir()) == [
        "avro-memory-file-roll.conf", "exec-fan-out.conf", "taildir-logger.conf"]


def test_avro_source_to_file_roll_writes_every_event_with_the_interceptors_headers(tmp_path):
    port, out = free_port(), tmp_path / "out"
    agent = start_agent(tmp_path, "avro-memory-file-roll.conf", "a1", {
        "a1.sources.r1.port": str(port), "a1.sinks.k1.sink.directory": str(out)})
    bodies = [f"event {i}" for i in range(500)]
    try:
        wait_until(lambda: "[a1-r1|task-0] listening on" in agent.log() or not agent.alive(), 60,
                   what="the agent's avro source")
        assert agent.alive(), agent.log()
        client = AvroClient(port)
        try:
            for start in range(0, len(bodies), 100):
                batch = [{"headers": {"n": str(i)}, "body": bodies[i].encode()} for i in range(start, start + 100)]
                assert client.append_batch(batch, first=start == 0) == (False, "OK")
        finally:
            client.close()
        wait_until(lambda: len(rolled_lines(out)) >= len(bodies) or not agent.alive(), 90,
                   what="every event in the rolled files")
    finally:
        assert agent.terminate() == 0, agent.log()
    assert sorted(rolled_lines(out), key=lambda line: int(line.split()[1])) == bodies
    records = read_topic(tmp_path / "headrace-flume-a1", "a1.r1")
    assert len(records) == len(bodies)
    for _, headers in records:
        assert headers["datacenter"] == "eu-west" and headers["timestamp"].isdigit(), headers


def test_taildir_source_to_logger_follows_matching_files_and_drops_debug_lines(tmp_path):
    logs = tmp_path / "app-logs"
    logs.mkdir()
    (logs / "app-1.log").write_text("first INFO line\nnoise DEBUG line\n")
    (logs / "other.txt").write_text("not matched\n")
    agent = start_agent(tmp_path, "taildir-logger.conf", "a2", {"a2.sources.r1.filegroups.app": f"{logs}/app.*.log"})
    try:
        wait_until(lambda: logged_events(agent.log(), "a2-k1") or not agent.alive(), 60, what="the first line logged")
        assert agent.alive(), agent.log()
        (logs / "app-2.log").write_text("second INFO line\n")
        with open(logs / "app-1.log", "a") as fh:
            fh.write("third INFO line\n")
        wait_until(lambda: len(logged_events(agent.log(), "a2-k1")) >= 3 or not agent.alive(), 60,
                   what="the new file's and the appended line logged")
    finally:
        assert agent.terminate() == 0, agent.log()
    events = logged_events(agent.log(), "a2-k1")
    # no DEBUG line, nothing from the file that does not match; the new file's line and the appended one
    assert sorted(body for _, body in events) == ["first INFO line", "second INFO line", "third INFO line"]
    for headers, _ in events:
        assert "service" in headers and "app" in headers, headers


def test_exec_source_fans_out_to_both_channels_sinks(tmp_path):
    events, out = tmp_path / "events.log", tmp_path / "out"
    events.write_text("")
    agent = start_agent(tmp_path, "exec-fan-out.conf", "a3", {
        "a3.sources.r1.command": f"tail -F {events}", "a3.sinks.k1.sink.directory": str(out)})
    lines = [f"fan-out line {i}" for i in range(50)]
    try:
        wait_until(lambda: "exec source a3-r1: running" in agent.log() or not agent.alive(), 60,
                   what="the exec source's command")
        assert agent.alive(), agent.log()
        with open(events, "a") as fh:
            fh.write("".join(line + "\n" for line in lines))
        wait_until(lambda: len(rolled_lines(out)) >= len(lines) or not agent.alive(), 60,
                   what="the file_roll sink's lines")
        wait_until(lambda: len(logged_events(agent.log(), "a3-k2")) >= len(lines) or not agent.alive(), 60,
                   what="the logger sink's lines")
    finally:
        assert agent.terminate() == 0, agent.log()
    # each sink got every event, in order
    assert rolled_lines(out) == lines
    assert [body for _, body in logged_events(agent.log(), "a3-k2")] == lines
