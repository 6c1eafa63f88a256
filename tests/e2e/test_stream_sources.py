"""TcpJsonSource and SyslogSource in a real connect-standalone, fed by raw sockets and util-linux ``logger``."""

from __future__ import annotations

import datetime
import json
import shutil
import socket
import subprocess

import pytest

from connect.api.log_event import iso_timestamp
from tests.logship import SourceWorker, count_values, read_records
from tests.support import free_port, wait_until

pytestmark = pytest.mark.timeout(120)


@pytest.mark.slow  # the fast suite's time budget: tests/plugins/test_ingest_framing.py has the fast checks
def test_tcp_json_newline_and_nul_frames_bad_frames_kept_or_counted(tmp_path):
    worker = SourceWorker(tmp_path, "TcpJsonSource", max_event_bytes=1024, idle_timeout_ms=500,
                          max_connections=301).start()
    try:
        idle = [socket.create_connection(("127.0.0.1", worker.port)) for _ in range(300)]  # and never send
        with socket.create_connection(("127.0.0.1", worker.port)) as s:
            ecs = {"@timestamp": "2026-01-01T00:00:00Z", "log.level": "ERROR", "message": "ecs",
                   "process.thread.name": "main", "log.logger": "a.B", "error.type": "E", "error.stack_trace": "st"}
            gelf = {"version": "1.1", "host": "h", "short_message": "gelf", "level": 6, "_thread": "t"}
            s.sendall(json.dumps(ecs).encode() + b"\r\n" + json.dumps(gelf).encode() + b"\0")
            s.sendall(b'{"message": "split ')
            s.sendall(b'across writes"}\n')
            s.sendall(b"not json at all\n[1, 2]\n" + b'{"message": "caf\xe9"}\n')
            s.sendall(b'{"message": "' + b"x" * 2000 + b'"}\n')
            s.sendall(b'{"message": "last, without a delimiter"}')
        wait_until(lambda: count_values(tmp_path) >= 7, 20, what="7 events")
        # the idle connections are closed by the server after idle.timeout.ms
        idle[0].settimeout(10)
        assert idle[0].recv(1) == b""
        for s in idle:
            s.close()
    finally:
        log = worker.stop()
    records = read_records(tmp_path)
    messages = [v["message"] for v, _ in records]
    assert messages == ["ecs", "gelf", "split across writes", "not json at all", "[1, 2]", '{"message": "caf\ufffd"}',
                        "last, without a delimiter"]
    ecs_event = records[0][0]
    assert ecs_event["log"]["level"] == "ERROR" and ecs_event["process"]["thread"]["name"] == "main"
    assert ecs_event["error"]["type"] == "E" and records[0][1] == {}
    assert records[1][0]["log"]["level"] == "INFO" and records[1][0]["host"]["hostname"] == "h"
    assert records[3][1]["headrace.parse.error"].startswith("not JSON")
    assert records[3][0]["event"]["original"] == "not json at all"
    assert records[4][1]["headrace.parse.error"] == "a log event must be a JSON object, got an array"
    assert records[5][1]["headrace.parse.error"] == "invalid UTF-8 at byte 16"
    assert "refused_oversized=1" in log and "kept_unparsed=3" in log and "idle_connections_closed=" in log
    assert "skipped a frame from 127.0.0.1" in log and "more than max.event.bytes=1024" in log


def _logger(*args: str) -> None:
    done = subprocess.run(["logger", *args], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr


def test_syslog_from_logger_and_raw_sockets_over_udp_and_tcp(tmp_path):
    assert shutil.which("logger"), "util-linux logger is needed (apt-get install bsdutils)"
    port = free_port()
    worker = SourceWorker(tmp_path, "SyslogSource", listeners=f"udp://127.0.0.1:{port},tcp://127.0.0.1:{port}",
                          max_event_bytes=512).start()
    try:
        target = ["-n", "127.0.0.1", "-P", str(port)]
        _logger(*target, "-d", "--rfc5424", "-t", "billing", "-p", "local4.err", "--msgid", "ID7",
                "--sd-id", "order@32473", "--sd-param", 'id="o-1"', "udp 5424")
        wait_until(lambda: count_values(tmp_path) == 1, 20, what="the first message")
        _logger(*target, "-T", "--rfc3164", "-t", "cron", "-p", "cron.warning", "tcp 3164")
        wait_until(lambda: count_values(tmp_path) == 2, 20, what="the second message")
        _logger(*target, "-T", "--octet-count", "-t", "octets", "tcp octet-counted")
        wait_until(lambda: count_values(tmp_path) == 3, 20, what="the third message")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(b"garbage without a priority", ("127.0.0.1", port))
            udp.sendto(b"<13>1 2026-01-01T00:00:00Z host app - - [broken sd", ("127.0.0.1", port))
            udp.sendto(b"<13>" + b"x" * 600, ("127.0.0.1", port))  # more than max.event.bytes: dropped, counted
        wait_until(lambda: count_values(tmp_path) == 5, 20, what="the malformed datagrams")
        with socket.create_connection(("127.0.0.1", port)) as tcp:
            framed = b"<14>1 2026-01-01T00:00:00Z h a p m - counted\n\nwith a newline inside"
            tcp.sendall(str(len(framed)).encode() + b" " + framed)
            tcp.sendall(b"<11>Jan  5 10:00:00 web01 nginx[12]: newline framed\n")
            tcp.sendall(b"999999 " + b"y" * 100 + b"\n")  # declares more than max.event.bytes: skipped
        wait_until(lambda: count_values(tmp_path) == 7, 20, what="the TCP messages")
    finally:
        log = worker.stop()
    records = read_records(tmp_path)
    (udp5424, _), (tcp3164, _), (octets, _) = records[:3]
    assert udp5424["message"] == "udp 5424"
    syslog = udp5424["log"]["syslog"]
    assert syslog["appname"] == "billing" and syslog["msgid"] == "ID7" and syslog["version"] == 1
    assert syslog["facility"] == {"code": 20, "name": "local4"} and syslog["severity"] == {"code": 3, "name": "err"}
    assert syslog["structured_data"]["order@32473"] == {"id": "o-1"}
    assert udp5424["log"]["level"] == "ERROR"
    assert tcp3164["message"] == "tcp 3164" and tcp3164["log"]["syslog"]["appname"] == "cron"
    assert tcp3164["log"]["syslog"]["severity"]["name"] == "warning" and tcp3164["log"]["level"] == "WARN"
    assert tcp3164["log"]["syslog"]["version"] is None and tcp3164["host"]["hostname"]
    assert octets["message"] == "tcp octet-counted" and octets["log"]["syslog"]["appname"] == "octets"
    (garbage, h1), (broken, h2) = records[3:5]
    assert garbage["message"] == "garbage without a priority" and garbage["event"]["original"] == garbage["message"]
    assert h1 == {"headrace.parse.error": "no <PRI> at the start"}
    assert "[broken" in h2["headrace.parse.error"]
    (counted, _), (bsd, _) = records[5:7]
    assert counted["message"] == "counted\n\nwith a newline inside" and counted["@timestamp"] == "2026-01-01T00:00:00Z"
    assert bsd["host"]["hostname"] == "web01" and bsd["log"]["syslog"]["procid"] == "12"
    assert bsd["log"]["syslog"]["appname"] == "nginx" and bsd["message"] == "newline framed"
    now = datetime.datetime.now()
    year = now.year if datetime.datetime(now.year, 1, 5, 10) - now < datetime.timedelta(days=2) else now.year - 1
    # RFC 3164 has no year and no zone: this year (or last), in the worker's zone
    assert bsd["@timestamp"] == iso_timestamp(datetime.datetime(year, 1, 5, 10).astimezone().timestamp())
    assert "refused_oversized=2" in log and "kept_unparsed=2" in log
