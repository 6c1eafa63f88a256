"""Real Log4j 2 (2.24.3 from Maven Central) appenders against the ingestion sources: a small Java program,
compiled here, logs through HttpAppender, SocketAppender with JsonTemplateLayout and SyslogAppender (RFC 5424)."""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from services.maven import fetch_artifacts
from tests.logship import count_values, read_values
from tests.support import connect_standalone, free_port, wait_until, worker_properties, write_properties

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LOG4J = ["org.apache.logging.log4j:log4j-core:2.24.3", "org.apache.logging.log4j:log4j-layout-template-json:2.24.3"]

EMIT = textwrap.dedent("""
    import org.apache.logging.log4j.LogManager;
    import org.apache.logging.log4j.Logger;

    public class Emit {
        public static void main(String[] args) throws Exception {
            Logger log = LogManager.getLogger(args[0]);
            int n = Integer.parseInt(args[1]);
            Thread t = new Thread(() -> {
                for (int i = 0; i < n; i++) {
                    if (i % 1000 == 0) {
                        log.error("event " + i, new IllegalStateException("broken " + i));
                    } else {
                        log.info("event {}", i);
                    }
                }
            }, "emitter-7");
            t.start();
            t.join();
            LogManager.shutdown();
        }
    }
""")

CONFIG = textwrap.dedent("""
    <Configuration status="warn">
      <Appenders>
        <Http name="http" url="http://127.0.0.1:{http}/">
          <JsonTemplateLayout eventTemplateUri="classpath:EcsLayout.json"/>
        </Http>
        <Socket name="socket" host="127.0.0.1" port="{tcp}" protocol="TCP">
          <JsonTemplateLayout eventTemplateUri="classpath:EcsLayout.json" nullEventDelimiterEnabled="true"/>
        </Socket>
        <Syslog name="syslog" host="127.0.0.1" port="{syslog}" protocol="TCP" format="RFC5424" appName="shop"
                facility="LOCAL0" newLine="true" newLineEscape="\\n" exceptionPattern="%throwable{{full}}"
                id="App" enterpriseNumber="18060" messageId="Audit" includeMDC="false"/>
      </Appenders>
      <Loggers>
        <Logger name="via.http" level="info" additivity="false"><AppenderRef ref="http"/></Logger>
        <Logger name="via.socket" level="info" additivity="false"><AppenderRef ref="socket"/></Logger>
        <Logger name="via.syslog" level="info" additivity="false"><AppenderRef ref="syslog"/></Logger>
        <Root level="warn"/>
      </Loggers>
    </Configuration>
""")


def _connector(tmp: Path, name: str, cls: str, topic: str, listeners: str, **extra: str) -> Path:
    # the events as plain JSON documents, which the test reads back (the shipped worker's JSON converter would
    # wrap each in a schema envelope); per connector, as Kafka Connect users set it
    return write_properties(tmp / f"{name}.properties", {"name": name, "connector.class": cls, "topic": topic,
                                                         "listeners": listeners,
                                                         "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                                                         "value.converter.schemas.enable": "false", **extra})


def test_log4j2_http_socket_and_syslog_appenders_deliver_every_event_intact(tmp_path):
    for tool in ("java", "javac", "mvn"):
        assert shutil.which(tool), f"{tool} is needed for the Log4j 2 tests (Java 17 and Maven)"
    lib = fetch_artifacts("log4j2-appenders", LOG4J)
    classpath = ":".join(str(p) for p in sorted(lib.glob("*.jar")))
    (tmp_path / "Emit.java").write_text(EMIT)
    subprocess.run(["javac", "-cp", classpath, "-d", str(tmp_path), str(tmp_path / "Emit.java")], check=True,
                   timeout=120)
    ports = {"http": free_port(), "tcp": free_port(), "syslog": free_port()}
    (tmp_path / "log4j2.xml").write_text(CONFIG.format(**ports))
    cfg = worker_properties(tmp_path)
    worker = connect_standalone(
        tmp_path, cfg,
        _connector(tmp_path, "http-in", "HttpSource", "http-logs", f"http://127.0.0.1:{ports['http']}",
                   **{"producer.override.linger.ms": "1"}),
        _connector(tmp_path, "tcp-in", "TcpJsonSource", "tcp-logs", f"tcp://127.0.0.1:{ports['tcp']}"),
        _connector(tmp_path, "syslog-in", "SyslogSource", "syslog-logs", f"tcp://127.0.0.1:{ports['syslog']}"))
    counts = {"http": 10_000, "socket": 10_000, "syslog": 10_000}
    try:
        wait_until(lambda: worker.log().count("|task-0] listening on") == 3 or not worker.alive(), 60,
                   what="three sources listening")
        for via, n in counts.items():
            done = subprocess.run(["java", "-cp", f"{classpath}:{tmp_path}",
                                   f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.xml'}", "Emit", f"via.{via}",
                                   str(n)], capture_output=True, text=True, timeout=240)
            assert done.returncode == 0, done.stderr
            assert "ERROR" not in done.stderr and "Exception" not in done.stderr.split("\n")[0], done.stderr
        for topic in ("http-logs", "tcp-logs", "syslog-logs"):
            wait_until(lambda t=topic: count_values(tmp_path, t) >= 10_000, 60, what=topic)
    finally:
        assert worker.terminate() == 0, worker.log()
    for topic in ("http-logs", "tcp-logs"):
        events = read_values(tmp_path, topic)
        assert sorted(int(e["message"].split()[1]) for e in events) == list(range(10_000)), topic
        error = next(e for e in events if e["message"] == "event 1000")
        assert error["log"]["level"] == "ERROR" and error["log"]["logger"].startswith("via.")
        assert error["process"]["thread"]["name"] == "emitter-7"
        assert error["error"]["type"] == "java.lang.IllegalStateException"
        assert error["error"]["message"] == "broken 1000"
        assert "at Emit.lambda$main$0(Emit.java" in error["error"]["stack_trace"]
        info = next(e for e in events if e["message"] == "event 1")
        assert info["log"]["level"] == "INFO" and info["@timestamp"].endswith("Z")
    syslog = read_values(tmp_path, "syslog-logs")
    assert sorted(int(re.match(r"event (\d+)", e["message"]).group(1)) for e in syslog) == list(range(10_000))
    error = next(e for e in syslog if e["message"].startswith("event 1000"))
    assert error["log"]["syslog"]["appname"] == "shop" and error["log"]["syslog"]["msgid"] == "Audit"
    assert error["log"]["syslog"]["severity"]["name"] == "err" and error["log"]["level"] == "ERROR"
    assert error["log"]["syslog"]["facility"]["name"] == "local0"
    # the stack trace rides in the message, its newlines escaped as \n (newLineEscape) for the newline framing
    assert "\\njava.lang.IllegalStateException: broken 1000\\n\tat Emit.lambda$main$0" in error["message"]
