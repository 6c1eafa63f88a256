"""``headrace flume-agent`` through the real CLI: a Flume agent config (avro source → memory channel →
file_roll sink) runs unchanged, Flume's own client sends to it, and the files hold every event; configs it
cannot honour are refused at start with one line per key."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from services.flume import flume_sender
from tests.support import CliProcess, free_port, run_cli, wait_until

AVRO_TO_FILE_ROLL = textwrap.dedent("""
    # from the Flume User Guide's examples: an avro source, a memory channel, a file_roll sink
    a1.sources = r1
    a1.sinks = k1
    a1.channels = c1

    a1.sources.r1.type = avro
    a1.sources.r1.bind = 127.0.0.1
    a1.sources.r1.port = {port}
    a1.sources.r1.channels = c1
    a1.sources.r1.interceptors = i1
    a1.sources.r1.interceptors.i1.type = static
    a1.sources.r1.interceptors.i1.key = datacenter
    a1.sources.r1.interceptors.i1.value = NEW_YORK
    a1.sources.r1.interceptors.i1.preserveExisting = false

    a1.channels.c1.type = memory
    a1.channels.c1.capacity = 1000
    a1.channels.c1.transactionCapacity = 100

    a1.sinks.k1.type = file_roll
    a1.sinks.k1.channel = c1
    a1.sinks.k1.sink.directory = {out}
    a1.sinks.k1.sink.rollInterval = 2
""")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_avro_memory_file_roll_agent_runs_and_every_event_lands_in_the_rolled_files(tmp_path):
    cp = flume_sender(tmp_path / "java")
    port = free_port()
    conf = tmp_path / "flume.conf"
    conf.write_text(AVRO_TO_FILE_ROLL.format(port=port, out=tmp_path / "out"))
    exe = Path(sys.executable).with_name("headrace")
    agent = CliProcess([str(exe), "flume-agent", "--conf-file", str(conf), "--name", "a1", "--work-dir",
                        str(tmp_path / "work")], tmp_path, "agent.log").start()
    try:
        wait_until(lambda: "[a1-r1|task-0] listening on" in agent.log() or not agent.alive(), 60,
                   what="the agent's avro source")
        assert agent.alive(), agent.log()
        done = subprocess.run(["java", "-cp", cp, "FlumeSend", "127.0.0.1", str(port), "0", "20000", "100", "none",
                               "1"], capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]

        def lines() -> list[str]:
            return [ln for f in sorted((tmp_path / "out").glob("*-*")) for ln in f.read_text().splitlines()]

        wait_until(lambda: len(lines()) >= 20_000, 60, what="20,000 lines in the rolled files")
    finally:
        assert agent.terminate() == 0, agent.log()
    assert sorted(int(ln.split()[1]) for ln in lines()) == list(range(20_000))
    assert all(ln.startswith("event ") for ln in lines())
    assert len(list((tmp_path / "out").glob("*-*"))) >= 1


def test_print_connectors_shows_the_derived_configs(tmp_path):
    conf = tmp_path / "flume.conf"
    conf.write_text(AVRO_TO_FILE_ROLL.format(port=41414, out=tmp_path / "out"))
    done = run_cli(["headrace", "flume-agent", "--conf-file", str(conf), "--name", "a1", "--print-connectors"])
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode()
    configs = [json.loads(part) for part in text.replace("}\n{", "}\x00{").split("\x00")]
    source, sink = (c["config"] for c in configs)
    assert source["connector.class"] == "FlumeAvroSource" and source["topic"] == "a1.r1"
    assert source["listeners"] == "tcp://127.0.0.1:41414"
    assert source["transforms"] == "i1" and source["transforms.i1.type"] == "InsertHeader"
    assert source["transforms.i1.header"] == "datacenter" and source["transforms.i1.value.literal"] == "NEW_YORK"
    assert sink == {"name": "a1-k1", "topics": "a1.r1", "value.converter": "org.apache.kafka.connect.converters."
                    "ByteArrayConverter", "connector.class": "FileRollSink", "directory": str(tmp_path / "out"),
                    "roll.interval.ms": "2000"}


def test_keys_it_cannot_honour_are_refused_at_start_one_line_each(tmp_path):
    text = AVRO_TO_FILE_ROLL.format(port=41414, out=tmp_path / "out")
    for right, wrong in [("a1.channels.c1.capacity = 1000", "a1.channels.c1.capactiy = 1000"),
                         ("a1.sinks.k1.type = file_roll", "a1.sinks.k1.type = null")]:
        text = text.replace(right, wrong)
    conf = tmp_path / "flume.conf"
    conf.write_text(text + "a1.sources.r2.type = thrift\na1.sources = r1 r2\na1.sources.r2.channels = c1\n")
    done = run_cli(["headrace", "flume-agent", "--conf-file", str(conf), "--name", "a1", "--work-dir",
                    str(tmp_path / "work")])
    err = done.stderr.decode()
    assert done.returncode != 0, err
    for line in ["a1.channels.c1.capactiy = 1000: not a key Headrace knows for a memory channel",
                 "a1.sources.r2.type = thrift: Headrace speaks Flume's Avro RPC, not Thrift",
                 "a1.sinks.k1.type = null: drop the sink"]:
        assert sum(line in ln for ln in err.splitlines()) == 1, err
    assert "Traceback" not in err and not (tmp_path / "work").exists()


NETCAT_TO_LOGGER = textwrap.dedent("""
    # the Flume User Guide's first example, as it is there (but for the port)
    a1.sources = r1
    a1.sinks = k1
    a1.channels = c1

    # Describe/configure the source
    a1.sources.r1.type = netcat
    a1.sources.r1.bind = localhost
    a1.sources.r1.port = {port}

    # Describe the sink
    a1.sinks.k1.type = logger

    # Use a channel which buffers events in memory
    a1.channels.c1.type = memory
    a1.channels.c1.capacity = 1000
    a1.channels.c1.transactionCapacity = 100

    # Bind the source and sink to the channel
    a1.sources.r1.channels = c1
    a1.sinks.k1.channel = c1
""")

EXEC_TO_FILE_ROLL = textwrap.dedent("""
    a1.sources = r1
    a1.sinks = k1
    a1.channels = c1
    a1.sources.r1.type = exec
    a1.sources.r1.command = for i in $(seq 1 500); do echo "line $i"; done
    a1.sources.r1.shell = /bin/bash -c
    a1.sources.r1.channels = c1
    a1.sources.r1.interceptors = f
    a1.sources.r1.interceptors.f.type = regex_filter
    a1.sources.r1.interceptors.f.regex = 7$
    a1.sources.r1.interceptors.f.excludeEvents = true
    a1.channels.c1.type = file
    a1.sinks.k1.type = file_roll
    a1.sinks.k1.channel = c1
    a1.sinks.k1.sink.directory = {out}
    a1.sinks.k1.sink.rollInterval = 1
""")


def _agent(tmp_path: Path, text: str) -> CliProcess:
    conf = tmp_path / "flume.conf"
    conf.write_text(text)
    exe = Path(sys.executable).with_name("headrace")
    return CliProcess([str(exe), "flume-agent", "--conf-file", str(conf), "--name", "a1", "--work-dir",
                       str(tmp_path / "work")], tmp_path, "agent.log").start()


@pytest.mark.slow
def test_the_user_guides_netcat_to_logger_example_runs_unchanged(tmp_path):
    port = free_port()
    agent = _agent(tmp_path, NETCAT_TO_LOGGER.format(port=port))
    try:
        wait_until(lambda: "[a1-r1|task-0] listening on" in agent.log() or not agent.alive(), 60,
                   what="the agent's netcat source")
        assert agent.alive(), agent.log()
        with socket.create_connection(("localhost", port), timeout=30) as sock:
            sock.sendall(b"Hello world!\r\n")
            assert sock.recv(16) == b"OK\n"  # answered once the log has it
        wait_until(lambda: "Hello world!" in agent.log(), 30, what="the logger sink to log the event")
    finally:
        assert agent.terminate() == 0, agent.log()


@pytest.mark.slow
def test_exec_to_file_roll_runs_the_command_and_filters_its_lines(tmp_path):
    out = tmp_path / "out"
    agent = _agent(tmp_path, EXEC_TO_FILE_ROLL.format(out=out))

    def lines() -> list[str]:
        return [ln for f in sorted(out.glob("*-*")) for ln in f.read_text().splitlines()]

    expected = [f"line {i}" for i in range(1, 501) if not str(i).endswith("7")]
    try:
        wait_until(lambda: len(lines()) >= len(expected) or not agent.alive(), 60, what="the command's lines")
        assert agent.alive(), agent.log()
    finally:
        assert agent.terminate() == 0, agent.log()
    assert lines() == expected
    assert "exec source a1-r1: running" in agent.log() and "the command ended (exit 0)" in agent.log()


SPOOLDIR_TO_FILE_ROLL = textwrap.dedent("""
    # the User Guide's spooldir source example (spoolDir, fileHeader), a file channel, a file_roll sink
    a1.channels = ch-1
    a1.sources = src-1
    a1.sinks = k1

    a1.sources.src-1.type = spooldir
    a1.sources.src-1.channels = ch-1
    a1.sources.src-1.spoolDir = {spool}
    a1.sources.src-1.fileHeader = true

    a1.channels.ch-1.type = file

    a1.sinks.k1.type = file_roll
    a1.sinks.k1.channel = ch-1
    a1.sinks.k1.sink.directory = {out}
    a1.sinks.k1.sink.rollInterval = 1
""")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_spooldir_reads_each_file_once_renames_it_and_survives_kill_9(tmp_path):
    spool, out = tmp_path / "spool", tmp_path / "out"
    spool.mkdir()
    files = 20
    for n in range(files):
        (spool / f"f{n:02d}.log").write_text("".join(f"file {n} line {i}\n" for i in range(5000)))
    text = SPOOLDIR_TO_FILE_ROLL.format(spool=spool, out=out)

    def lines() -> list[str]:
        return [ln for f in sorted(out.glob("*-*")) for ln in f.read_text().splitlines()]

    def completed() -> int:
        return len(list(spool.glob("*.COMPLETED")))

    agent = _agent(tmp_path, text)
    try:
        wait_until(lambda: completed() >= 3 or not agent.alive(), 60, what="three files read and renamed")
        assert agent.alive(), agent.log()
    finally:
        agent.kill9()  # mid-way: some files renamed, one being read, the rest waiting
    renamed_before = completed()
    assert renamed_before < files, "the kill came too late to test anything"
    agent = _agent(tmp_path, text)
    try:
        wait_until(lambda: completed() == files or not agent.alive(), 120, what="every file renamed")
        assert agent.alive(), agent.log()
        wait_until(lambda: len(set(lines())) == files * 5000, 60, what="every line in the rolled files")
    finally:
        assert agent.terminate() == 0, agent.log()
    got = lines()
    expected = {f"file {n} line {i}" for n in range(files) for i in range(5000)}
    assert set(got) == expected  # nothing lost
    # duplicates only from the lines read after the last offset commit before the kill (1 s of reading)
    assert len(got) - len(expected) <= 20_000, len(got) - len(expected)
    assert sorted(p.name for p in spool.iterdir()) == [f"f{n:02d}.log.COMPLETED" for n in range(files)]
    assert agent.log().count("renamed") >= files - renamed_before
