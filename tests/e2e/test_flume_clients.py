"""FlumeAvroSource in a real ``connect-standalone`` against Flume's own Java clients from Maven Central:
flume-ng-sdk 1.11.0's RpcClient (batches of 100 and of 1, deflate), a real Flume 1.11.0 agent forwarding
through its Avro sink, Log4j 2's FlumeAppender, and a kill -9 of the worker while the client sends."""

from __future__ import annotations

import collections
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from services.flume import FlumeAgentService, classpath, compile_java, flume_sender
from tests.flume_support import count_topic, read_topic
from tests.support import connect_standalone, free_port, wait_until, worker_properties, write_properties

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SINGLES = 20_000  # events the RPC client sends one per call


def _worker(tmp: Path, sources: dict[str, dict[str, str]]):
    cfg = worker_properties(tmp, value_converter="org.apache.kafka.connect.converters.ByteArrayConverter")
    files = [write_properties(tmp / f"{name}.properties", {
        "name": name, "connector.class": "FlumeAvroSource", "producer.override.linger.ms": "0", **props})
        for name, props in sources.items()]
    worker = connect_standalone(tmp, cfg, *files)
    wait_until(lambda: worker.log().count("|task-0] listening on") >= len(files) or not worker.alive(), 60,
               what="the Avro sources listening")
    assert worker.alive(), worker.log()
    return worker, files, cfg


def _send(cp: str, port: int, lo: int, hi: int, batch: int, compression: str = "none", threads: int = 1,
          retry: bool = False) -> subprocess.Popen[str]:
    args = ["java", "-cp", cp, "FlumeSend", "127.0.0.1", str(port), str(lo), str(hi), str(batch), compression,
            str(threads)] + (["retry"] if retry else [])
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str], timeout: float = 400) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return out


def _check_once(tmp: Path, topic: str, expected: range) -> None:
    records = read_topic(tmp, topic)
    seqs = collections.Counter(int(h["seq"]) for _, h in records)
    assert len(records) == len(expected) and set(seqs) == set(expected) and max(seqs.values()) == 1
    for body, headers in records:
        seq = int(headers["seq"])
        assert body == f"event {seq}".encode() and headers["app"] == "shop"
        assert headers.get("city") == ("Zürich 東京" if seq % 7 == 0 else None)


def test_flume_rpc_client_batches_of_100_and_of_1_and_deflate_arrive_once_with_headers(tmp_path):
    cp = flume_sender(tmp_path / "java")
    plain, zipped = free_port(), free_port()
    worker, _, _ = _worker(tmp_path, {
        "avro-in": {"topic": "flume", "listeners": f"tcp://127.0.0.1:{plain}"},
        "avro-deflate": {"topic": "flume-z", "listeners": f"tcp://127.0.0.1:{zipped}", "compression.type": "deflate"},
    })
    try:
        batches = _send(cp, plain, 0, 100_000, 100)
        # One event per call is the costly path (a round trip each, 100,000 of them took most of this test); 16
        # threads of 1,250 calls each still interleave with each other and with the batching client above.
        singles = _send(cp, plain, 100_000, 100_000 + SINGLES, 1, threads=16)
        deflated = _send(cp, zipped, 0, 20_000, 100, "deflate")
        outputs = [_finish(p) for p in (batches, singles, deflated)]
    finally:
        assert worker.terminate() == 0, worker.log()
    for out in outputs:  # every call was acknowledged OK (the client throws on FAILED)
        assert "failed" not in out and "rate " in out
    _check_once(tmp_path, "flume", range(100_000 + SINGLES))
    _check_once(tmp_path, "flume-z", range(20_000))


AGENT = textwrap.dedent("""
    a1.sources = r1
    a1.channels = c1
    a1.sinks = k1
    a1.sources.r1.type = avro
    a1.sources.r1.bind = 127.0.0.1
    a1.sources.r1.port = {port}
    a1.sources.r1.channels = c1
    a1.channels.c1.type = memory
    a1.channels.c1.capacity = 10000
    a1.channels.c1.transactionCapacity = 1000
    a1.sinks.k1.type = avro
    a1.sinks.k1.channel = c1
    a1.sinks.k1.hostname = 127.0.0.1
    a1.sinks.k1.port = HEADRACE_PORT
    a1.sinks.k1.batch-size = 100
    a1.sinks.k1.compression-type = deflate
""")


def test_a_real_flume_agent_forwards_through_its_avro_sink(tmp_path):
    cp = flume_sender(tmp_path / "java")
    port = free_port()
    worker, _, _ = _worker(tmp_path, {"avro-in": {"topic": "flume", "listeners": f"tcp://127.0.0.1:{port}",
                                                  "compression.type": "deflate"}})
    agent = FlumeAgentService(AGENT.replace("HEADRACE_PORT", str(port)), work_dir=tmp_path / "agent")
    try:
        agent.start()
        _finish(_send(cp, agent.port, 0, 20_000, 100))
        wait_until(lambda: count_topic(tmp_path, "flume") >= 20_000, 120, what="the agent's events in the log")
    finally:
        agent.stop()
        assert worker.terminate() == 0, worker.log()
    _check_once(tmp_path, "flume", range(20_000))


EMIT = textwrap.dedent("""
    import org.apache.logging.log4j.LogManager;
    import org.apache.logging.log4j.Logger;
    import org.apache.logging.log4j.ThreadContext;

    public class EmitFlume {
        public static void main(String[] args) {
            Logger log = LogManager.getLogger("shop.orders");
            int n = Integer.parseInt(args[0]);
            for (int i = 0; i < n; i++) {
                ThreadContext.put("user", "u" + (i % 10));
                ThreadContext.put("order", Integer.toString(i));
                log.info("event {}", i);
                ThreadContext.clearMap();
            }
            LogManager.shutdown();
        }
    }
""")

LOG4J_CONFIG = textwrap.dedent("""
    <Configuration status="warn">
      <Appenders>
        <Flume name="flume" type="Avro" compress="false" batchSize="100" maxDelayMillis="500" requestTimeoutMillis="20000">
          <Agent host="127.0.0.1" port="{port}"/>
          <PatternLayout pattern="%m"/>
        </Flume>
      </Appenders>
      <Loggers><Root level="info"><AppenderRef ref="flume"/></Root></Loggers>
    </Configuration>
""")


def test_log4j2_flume_appender_delivers_every_event_with_mdc_headers(tmp_path):
    cp = compile_java(EMIT, "EmitFlume", tmp_path / "java", classpath("log4j-flume"))
    port = free_port()
    (tmp_path / "log4j2.xml").write_text(LOG4J_CONFIG.format(port=port))
    worker, _, _ = _worker(tmp_path, {"avro-in": {"topic": "app-logs", "listeners": f"tcp://127.0.0.1:{port}"}})
    try:
        done = subprocess.run(["java", "-cp", cp, f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.xml'}",
                               "EmitFlume", "10000"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "ERROR" not in done.stderr, done.stderr[-3000:]
        wait_until(lambda: count_topic(tmp_path, "app-logs") >= 10_000, 60, what="10,000 events")
    finally:
        assert worker.terminate() == 0, worker.log()
    records = read_topic(tmp_path, "app-logs")
    assert sorted(int(body.split()[1]) for body, _ in records) == list(range(10_000))
    for body, headers in records:
        i = int(body.split()[1])
        # the appender puts each MDC field in a header of its own name, beside its timeStamp and guId
        assert headers["order"] == str(i) and headers["user"] == f"u{i % 10}", headers
        assert headers["timeStamp"].isdigit() and len(headers["guId"]) == 36


def test_kill9_while_the_client_sends_every_acknowledged_event_is_in_the_log(tmp_path):
    cp = flume_sender(tmp_path / "java")
    port = free_port()
    worker, files, cfg = _worker(tmp_path, {"avro-in": {"topic": "flume", "listeners": f"tcp://127.0.0.1:{port}"}})
    sender = _send(cp, port, 0, 60_000, 100, threads=2, retry=True)
    lines: list[str] = []
    try:
        assert sender.stdout is not None
        for line in sender.stdout:  # read on until a good part was acknowledged, then crash the worker
            lines.append(line)
            if len(lines) >= 150:
                break
        worker.kill9()
        for line in sender.stdout:
            lines.append(line)
            if line.startswith("failed"):
                break
        worker = connect_standalone(tmp_path, cfg, *files)
        out = _finish(sender)
        lines += out.splitlines()
    finally:
        sender.kill()
        assert worker.terminate() == 0, worker.log()
    acked = {seq for line in lines if line.startswith("acked")
             for lo, hi in [map(int, line.split()[1:3])] for seq in range(lo, hi)}
    assert acked == set(range(60_000))  # the client resent every failed batch until it was acknowledged
    assert any(line.startswith("failed") for line in lines)
    seqs = collections.Counter(int(h["seq"]) for _, h in read_topic(tmp_path, "flume"))
    missing = acked - set(seqs)
    assert not missing, f"{len(missing)} acknowledged events are not in the log"
    duplicates = sum(c - 1 for c in seqs.values())
    print(f"kill -9: {len(acked)} acknowledged, {len(seqs)} distinct in the log, {duplicates} duplicates")
    assert re.search(r"\|task-0\] listening on", worker.log())
