"""``headrace flume-agent`` with the Flume User Guide's hdfs sink: avro → hdfs and http → hdfs (with the
Guide's host, timestamp and static interceptors) run unchanged, Flume's own client (or HTTP POSTs) send, and
every event lands in HDFS in the folders the config's path escapes name, read back over WebHDFS.

Marked ``spark`` by the ``hdfs`` fixture (tests/conftest.py): each runs a real HDFS and a Spark query."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
import textwrap
import time
import zoneinfo
from pathlib import Path

import httpx
import pytest

from connect.flume.hdfs import _local_zone
from connect.flume.translate import _host_value
from services.flume import flume_sender
from tests.flume_support import read_sequence_file
from tests.support import CliProcess, free_port, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

AVRO_TO_HDFS = textwrap.dedent("""
    # The User Guide's avro source (but for the port) with its timestamp interceptor example, a memory
    # channel, and its HDFS sink example as it is (Flume's default file type: SequenceFile)
    a1.sources = r1
    a1.sinks = k1
    a1.channels = c1

    a1.sources.r1.type = avro
    a1.sources.r1.channels = c1
    a1.sources.r1.bind = 0.0.0.0
    a1.sources.r1.port = {port}
    a1.sources.r1.interceptors = i1
    a1.sources.r1.interceptors.i1.type = timestamp

    a1.channels.c1.type = memory
    a1.channels.c1.capacity = 1000
    a1.channels.c1.transactionCapacity = 100

    a1.sinks.k1.type = hdfs
    a1.sinks.k1.channel = c1
    a1.sinks.k1.hdfs.path = /flume/events/%y-%m-%d/%H%M/%S
    a1.sinks.k1.hdfs.filePrefix = events-
    a1.sinks.k1.hdfs.round = true
    a1.sinks.k1.hdfs.roundValue = 10
    a1.sinks.k1.hdfs.roundUnit = minute
""")

HTTP_TO_HDFS = textwrap.dedent("""
    # The User Guide's http source and its interceptor examples (host and timestamp by their Builder
    # classes, static with Flume's default preserveExisting), into HDFS by a header and the hour
    a1.sources = r1
    a1.channels = c1
    a1.sinks = k1

    a1.sources.r1.type = http
    a1.sources.r1.port = {port}
    a1.sources.r1.channels = c1
    a1.sources.r1.handler = org.apache.flume.source.http.JSONHandler
    a1.sources.r1.interceptors = i1 i2 i3
    a1.sources.r1.interceptors.i1.type = org.apache.flume.interceptor.HostInterceptor$Builder
    a1.sources.r1.interceptors.i1.preserveExisting = false
    a1.sources.r1.interceptors.i1.hostHeader = hostname
    a1.sources.r1.interceptors.i2.type = org.apache.flume.interceptor.TimestampInterceptor$Builder
    a1.sources.r1.interceptors.i3.type = static
    a1.sources.r1.interceptors.i3.key = datacenter
    a1.sources.r1.interceptors.i3.value = NEW_YORK

    a1.channels.c1.type = memory

    a1.sinks.k1.type = hdfs
    a1.sinks.k1.channel = c1
    a1.sinks.k1.hdfs.path = /flume/http/%{{datacenter}}/%{{hostname}}/%Y-%m-%d/%H
    a1.sinks.k1.hdfs.fileType = CompressedStream
    a1.sinks.k1.hdfs.codeC = gzip
    a1.sinks.k1.hdfs.rollInterval = 2
""")


def _agent(tmp_path: Path, text: str, default_fs: str) -> CliProcess:
    conf = tmp_path / "flume.conf"
    conf.write_text(text)
    exe = Path(sys.executable).with_name("headrace")
    return CliProcess([str(exe), "flume-agent", "--conf-file", str(conf), "--name", "a1", "--work-dir",
                       str(tmp_path / "work"), "--default-fs", default_fs], tmp_path, "agent.log").start()


def _files(client, root: str) -> dict[str, bytes]:
    """Every committed file below ``root`` (path -> bytes), over WebHDFS."""
    if client.status(root, strict=False) is None:
        return {}
    out = {}
    for folder, _, names in client.walk(root):
        for name in names:
            with client.read(f"{folder}/{name}") as fh:
                out[f"{folder}/{name}"] = fh.read()
    return out


def _local(ms: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, zoneinfo.ZoneInfo(_local_zone()))


def test_avro_to_hdfs_from_the_user_guide_lands_every_event_in_its_time_folder(tmp_path, hdfs):
    client = hdfs.client()
    client.delete("/flume/events", recursive=True)
    cp = flume_sender(tmp_path / "java")
    port = free_port()
    agent = _agent(tmp_path, AVRO_TO_HDFS.format(port=port), hdfs.url)
    started = time.time() * 1000
    try:
        wait_until(lambda: "[a1-r1|task-0] listening on" in agent.log() or not agent.alive(), 90,
                   what="the agent's avro source")
        assert agent.alive(), agent.log()
        done = subprocess.run(["java", "-cp", cp, "FlumeSend", "127.0.0.1", str(port), "0", "20000", "100", "none",
                               "1"], capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]

        def lines() -> int:
            return sum(len(read_sequence_file(data)[2]) for data in _files(client, "/flume/events").values())

        wait_until(lambda: lines() >= 20_000 or not agent.alive(), 300, interval=2,
                   what="20,000 lines in HDFS")
        assert agent.alive(), agent.log()[-5000:]
    finally:
        assert agent.terminate(90) == 0, agent.log()[-5000:]
    ended = time.time() * 1000
    files = _files(client, "/flume/events")
    assert all(read_sequence_file(d)[:2] == ("org.apache.hadoop.io.LongWritable", "org.apache.hadoop.io.BytesWritable")
               for d in files.values())
    records = [r for data in files.values() for r in read_sequence_file(data)[2]]
    # LongWritable event time (the timestamp interceptor's header), BytesWritable body (length, then bytes)
    stamps = [int.from_bytes(k, "big") for k, _ in records]
    bodies = [v[4:].decode() for _, v in records]
    assert sorted(int(b.split()[1]) for b in bodies) == list(range(20_000))
    assert all(b.startswith("event ") for b in bodies) and all(started <= t <= ended for t in stamps)
    # folders: %y-%m-%d/%H%M/%S of the event's timestamp header, rounded down to ten minutes
    lo = _local(started).replace(minute=_local(started).minute // 10 * 10, second=0, microsecond=0)
    for path in files:
        m = re.fullmatch(r"/flume/events/(\d\d-\d\d-\d\d)/(\d\d)(\d0)/00/events-\.[\w-]+\.a1\.r1\+0\+\d{10}\+\d{10}",
                         path)
        assert m, path
        folder = dt.datetime.strptime(f"{m.group(1)} {m.group(2)}:{m.group(3)}", "%y-%m-%d %H:%M").replace(
            tzinfo=lo.tzinfo)
        assert lo <= folder <= _local(ended), (path, lo)
    assert "HdfsSparkSink" in agent.log() or "a1-k1" in agent.log()


def test_http_to_hdfs_with_the_user_guides_interceptors_lands_by_header_and_hour(tmp_path, hdfs):
    client = hdfs.client()
    client.delete("/flume/http", recursive=True)
    port = free_port()
    agent = _agent(tmp_path, HTTP_TO_HDFS.format(port=port), hdfs.url)
    started = time.time() * 1000
    try:
        wait_until(lambda: "[a1-r1|task-0] listening on" in agent.log() or not agent.alive(), 90,
                   what="the agent's http source")
        assert agent.alive(), agent.log()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            for n in range(10):
                events = [{"headers": {"n": str(i)}, "body": f"request {n} event {i}"} for i in range(100)]
                if n == 0:  # an event with its own datacenter keeps it (static's preserveExisting)
                    events[0]["headers"]["datacenter"] = "LONDON"
                r = http.post("/", json=events)
                assert r.status_code == 200, r.text
            bad = http.post("/", content=b'[{"headers": {"n": 1}, "body": "x"}]')
            assert bad.status_code == 400 and "element 0: headers must be an object of strings" in bad.text

        def count() -> int:
            import gzip

            return sum(gzip.decompress(d).count(b"\n") for d in _files(client, "/flume/http").values())

        wait_until(lambda: count() >= 1000 or not agent.alive(), 300, interval=2, what="1,000 lines in HDFS")
        assert agent.alive(), agent.log()[-5000:]
    finally:
        assert agent.terminate(90) == 0, agent.log()[-5000:]
    ended = time.time() * 1000
    import gzip

    by_folder: dict[str, list[str]] = {}
    for path, data in _files(client, "/flume/http").items():
        folder, name = path.rsplit("/", 1)
        assert re.fullmatch(r"FlumeData\.[\w-]+\.a1\.r1\+0\+\d{10}\+\d{10}\.gz", name), name
        by_folder.setdefault(folder, []).extend(gzip.decompress(data).decode().splitlines())
    host = _host_value(use_ip=True)  # the host interceptor's default useIP = true: the address
    hours = {_local(started).strftime("%Y-%m-%d/%H"), _local(ended).strftime("%Y-%m-%d/%H")}
    london = [f for f in by_folder if f.startswith(f"/flume/http/LONDON/{host}/")]
    ny = [f for f in by_folder if f.startswith(f"/flume/http/NEW_YORK/{host}/")]
    assert len(london) == 1 and by_folder[london[0]] == ["request 0 event 0"]
    assert set(ny) | set(london) == set(by_folder) and {f.split("/", 5)[5] for f in by_folder} <= hours
    assert sorted(ln for f in ny for ln in by_folder[f]) == sorted(
        f"request {n} event {i}" for n in range(10) for i in range(100) if (n, i) != (0, 0))
