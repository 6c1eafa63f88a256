"""The standalone worker, its REST API and the ``headrace`` tools on a real Kafka broker.

Everything runs as real processes (``connect-standalone``, ``headrace``,
Debian's ``kcat``, Kafka's own consumer-group tool) against the session's
single-node broker. Each test keeps its connectors in a config topic of its
own, so that a worker never restores another test's connectors.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_backend
from services.kafka import KafkaService
from tests.support import (
    STRING_CONVERTERS,
    connect_standalone,
    free_port,
    line_count,
    rest_ready,
    run_cli,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(180)

STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"


def _worker(tmp: Path, kafka: KafkaService, unique_topic: Callable[..., str], rest_port: int | None = None,
            **extra: object) -> Path:
    """A worker config on the session broker, with a config topic of its own.

    Sink consumers get a short group session: a worker killed with -9 leaves
    its member behind until the session expires, and the restarted worker's
    consumer waits for that before it gets the partitions. The records are
    the lines themselves (STRING_CONVERTERS): kcat reads and writes them raw.
    """
    settings: dict[str, object] = {
        **STRING_CONVERTERS,
        "bootstrap_servers": kafka.bootstrap_servers,
        "config_storage_topic": unique_topic("configs"),
        "consumer_session_timeout_ms": 6000,
        "consumer_heartbeat_interval_ms": 500,
    }
    settings.update(extra)
    return worker_properties(tmp, rest_port, **settings)


def _source(tmp: Path, topic: str, name: str = "file-source", file: str = "test.txt", **extra: object) -> Path:
    props: dict[str, object] = {"name": name, "connector.class": "FileStreamSource", "tasks.max": 1,
                                "file": tmp / file, "topic": topic}
    props.update(extra)
    return write_properties(tmp / f"{name}.properties", props)


def _sink(tmp: Path, topics: str, name: str = "file-sink", file: str = "test.sink.txt", **extra: object) -> Path:
    props: dict[str, object] = {"name": name, "connector.class": "FileStreamSink", "tasks.max": 1,
                                "file": tmp / file, "topics": topics}
    props.update(extra)
    return write_properties(tmp / f"{name}.properties", props)


def _kcat(*args: str, input: bytes | None = None, timeout: float = 30) -> bytes:
    res = subprocess.run(["kcat", *args], input=input, capture_output=True, timeout=timeout)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    return res.stdout


_KCAT_HEADER = re.compile(rb"(\d+) (\d+) (-?\d+) (-?\d+):")


def _kcat_read(kafka: KafkaService, topic: str) -> list[tuple[int, int, int, bytes]]:
    """Every record of ``topic`` as read by kcat: (partition, offset, key length or -1, value bytes).

    Values are taken by their length, so any byte sequence comes back as it is.
    """
    out = _kcat("-b", kafka.bootstrap_servers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-Z",
                "-f", "%p %o %K %S:%s")
    records = []
    pos = 0
    while pos < len(out):
        m = _KCAT_HEADER.match(out, pos)
        assert m is not None, out[pos:pos + 200]
        size = int(m.group(4))
        start = m.end()
        records.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), out[start:start + size]))
        pos = start + size
    return records


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _status(port: int, name: str) -> dict:
    r = httpx.get(f"http://127.0.0.1:{port}/connectors/{name}/status", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def _wait_rest(port: int, worker) -> None:  # a CliProcess
    wait_until(lambda: rest_ready(port) or not worker.alive(), 60, what="REST /health")
    assert worker.alive(), worker.log()


# --- the quickstart ----------------------------------------------------------------------------------------------
def test_file_quickstart_through_kafka_keeps_order_per_partition(tmp_path, kcat, kafka, unique_topic):
    topic = unique_topic("quickstart")
    source_file = tmp_path / "test.txt"
    source_file.write_text("".join(f"line-{i:05d}\n" for i in range(2000)))
    port = free_port()
    cfg = _worker(tmp_path, kafka, unique_topic, port)
    # the topic does not exist: the source creates it per topic.creation.*, with the settings of the first
    # group that includes it (three partitions, a retention of its own)
    src = _source(tmp_path, topic, **{"topic.creation.groups": "quick",
                                      "topic.creation.quick.include": "quickstart-.*",
                                      "topic.creation.quick.partitions": 3,
                                      "topic.creation.quick.retention.ms": 7200000,
                                      "topic.creation.default.partitions": 1,
                                      "topic.creation.default.replication.factor": -1})
    worker = connect_standalone(tmp_path, cfg, src, _sink(tmp_path, topic))
    try:
        _wait_rest(port, worker)
        wait_until(lambda: line_count(tmp_path / "test.sink.txt") >= 2000, 60, what="first 2000 lines")
        with open(source_file, "a") as fh:
            fh.write("".join(f"line-{i:05d}\n" for i in range(2000, 3000)))
        wait_until(lambda: line_count(tmp_path / "test.sink.txt") >= 3000, 60, what="all 3000 lines")
        root = httpx.get(f"http://127.0.0.1:{port}/", timeout=10).json()
        assert root["kafka_cluster_id"] == kafka.cluster_id
        for name in ("file-source", "file-sink"):
            status = _status(port, name)
            assert status["connector"]["state"] == "RUNNING"
            assert [t["state"] for t in status["tasks"]] == ["RUNNING"], status
        assert worker.alive()
    finally:
        assert worker.terminate() == 0, worker.log()

    expected = [f"line-{i:05d}" for i in range(3000)]
    sunk = _lines(tmp_path / "test.sink.txt")
    assert sorted(sunk) == expected, "lines lost or duplicated"
    # order per partition: what kcat reads of each partition is in file order, and the sink wrote each
    # partition's lines in that same order
    records = _kcat_read(kafka, topic)
    assert len(records) == 3000
    partition_of: dict[str, int] = {}
    by_partition: dict[int, list[str]] = {}
    for partition, _offset, key_len, value in records:
        assert key_len == -1  # FileStreamSource records have no key
        line = value.decode()
        partition_of[line] = partition
        by_partition.setdefault(partition, []).append(line)
    for partition, lines in by_partition.items():
        assert lines == sorted(lines), f"partition {partition} out of file order"
        assert [s for s in sunk if partition_of[s] == partition] == lines, f"sink reordered partition {partition}"

    # the topic was created with three partitions; the config topic lives in Kafka, compacted
    res = run_cli(["headrace", "topics", "describe", "-c", str(cfg), "--topic", topic])
    assert res.returncode == 0, res.stderr
    assert "PartitionCount: 3" in res.stdout.decode() and "retention.ms=7200000" in res.stdout.decode()
    config_topic = re.search(r"config\.storage\.topic=(.*)", cfg.read_text()).group(1)
    res = run_cli(["headrace", "topics", "describe", "-c", str(cfg), "--topic", config_topic])
    assert res.returncode == 0, res.stderr
    assert "cleanup.policy=compact" in res.stdout.decode()
    assert "PartitionCount: 1" in res.stdout.decode()


def test_topic_and_console_tools_on_kafka(tmp_path, kcat, kafka, unique_topic):
    cfg = _worker(tmp_path, kafka, unique_topic)
    topic = unique_topic("tools")

    def tool(*args: str, input: bytes | None = None) -> str:
        res = run_cli(["headrace", *args, "-c", str(cfg)], input=input)
        assert res.returncode == 0, res.stderr.decode()
        return res.stdout.decode()

    assert "Created topic" in tool("topics", "create", "--topic", topic, "--partitions", "2")
    assert topic in tool("topics", "list").split()
    data = "".join(f"k{i % 4}:v{i}\n" for i in range(200)).encode()
    tool("console-producer", "--topic", topic, "--property", "parse.key=true", "--property", "key.separator=:",
         input=data)
    out = tool("console-consumer", "--topic", topic, "--from-beginning", "--timeout-ms", "3000", "--group",
               "tools-group", "--property", "print.key=true", "--property", "key.separator=:")
    got = out.splitlines()
    assert sorted(got) == sorted(f"k{i % 4}:v{i}" for i in range(200))
    # one key, one partition (murmur2 as in Java clients): each key's values keep their order
    for k in range(4):
        values = [int(line.split(":v")[1]) for line in got if line.startswith(f"k{k}:")]
        assert values == sorted(values)
    # kcat agrees with what the console producer wrote, keys included
    by_kcat = _kcat("-b", kafka.bootstrap_servers, "-C", "-t", topic, "-e", "-q", "-f", "%k:%s\n")
    assert sorted(by_kcat.decode().splitlines()) == sorted(got)
    offsets = json.loads(tool("group-offsets", "--group", "tools-group"))
    assert sum(offsets.values()) == 200 and set(offsets) <= {f"{topic}-0", f"{topic}-1"}
    describe = tool("topics", "describe", "--topic", topic)
    ends = [int(m) for m in re.findall(r"EndOffset: (\d+)", describe)]
    assert "PartitionCount: 2" in describe and sum(ends) == 200
    assert "Deleted topic" in tool("topics", "delete", "--topic", topic)
    wait_until(lambda: topic not in tool("topics", "list").split(), 15, what="topic deleted")


# --- interoperability ------------------------------------------------------------------------------------------------
def test_json_records_are_byte_identical_to_kafka_connect_and_kcat_records_reach_a_sink(tmp_path, kcat, kafka,
                                                                                         unique_topic):
    out_topic, in_topic = unique_topic("json-out"), unique_topic("json-in")
    lines = ["plain", 'quotes "and" back\\slash', "tab\there", "ünïcödé ✓ 😀", "", "/slash/ <tag> &amp;"]
    (tmp_path / "test.txt").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    cfg = _worker(tmp_path, kafka, unique_topic, key_converter=JSON, value_converter=JSON,
                  key_converter_schemas_enable="true", value_converter_schemas_enable="true")
    # kcat writes records in Kafka Connect's JSON envelope; a Headrace sink writes their payloads out
    produced = [("k1", "from kcat"), ("k2", "ünïcödé too"), ("k3", 'with "quotes"')]
    envelope = "".join(
        f'{k}|{{"schema":{{"type":"string","optional":false}},"payload":{json.dumps(v, ensure_ascii=False)}}}\n'
        for k, v in produced)
    _kcat("-b", kafka.bootstrap_servers, "-P", "-t", in_topic, "-K", "|", input=envelope.encode())
    worker = connect_standalone(tmp_path, cfg, _source(tmp_path, out_topic),
                                _sink(tmp_path, in_topic, **{"key.converter": STRING}))
    try:
        wait_until(lambda: len(_kcat_read(kafka, out_topic)) >= len(lines) if _topic_exists(kafka, out_topic)
                   else False, 60, interval=0.5, what="source records in Kafka")
        wait_until(lambda: line_count(tmp_path / "test.sink.txt") >= len(produced), 60, what="kcat records sunk")
    finally:
        assert worker.terminate() == 0, worker.log()
    records = _kcat_read(kafka, out_topic)
    assert len(records) == len(lines)
    # What Kafka Connect's JsonConverter writes for a STRING value: no spaces, UTF-8 as is, JSON escapes only
    # where JSON needs them, and (as Jackson does) a character beyond the BMP as its escaped surrogate pair, as
    # tests/compat/test_data_side_by_side.py saw Java Kafka Connect 4.1 write it; the key (FileStreamSource
    # sets none) is null.
    expected = [b'{"schema":{"type":"string","optional":false},"payload":'
                + _jackson_text(line) + b"}" for line in lines]
    assert sorted(v for *_, v in records) == sorted(expected)
    assert {key_len for _, _, key_len, _ in records} == {-1}
    assert b'"payload":"tab\\there"' in expected[2] and b"\\uD83D\\uDE00" in expected[3]
    assert _lines(tmp_path / "test.sink.txt") == [v for _, v in produced]


def _jackson_text(text: str) -> bytes:
    """A JSON string as Jackson writes it in UTF-8: characters beyond the BMP as escaped surrogate pairs."""
    out = []
    for ch in json.dumps(text, ensure_ascii=False):
        if ord(ch) > 0xFFFF:
            high, low = divmod(ord(ch) - 0x10000, 0x400)
            out.append(f"\\u{0xD800 + high:04X}\\u{0xDC00 + low:04X}")
        else:
            out.append(ch)
    return "".join(out).encode("utf-8")


def _topic_exists(kafka: KafkaService, topic: str) -> bool:
    res = subprocess.run(["kcat", "-b", kafka.bootstrap_servers, "-L", "-t", topic, "-J"], capture_output=True,
                         timeout=30)
    if res.returncode != 0:
        return False
    meta = json.loads(res.stdout)
    return any(t["topic"] == topic and not t.get("error") and t["partitions"] for t in meta["topics"])


def test_sink_offsets_are_visible_to_kafka_tools_as_group_connect_name(tmp_path, kcat, kafka, unique_topic):
    topic = unique_topic("offsets")
    _kcat("-b", kafka.bootstrap_servers, "-P", "-t", topic, input="".join(f"r{i}\n" for i in range(500)).encode())
    port = free_port()
    cfg = _worker(tmp_path, kafka, unique_topic, port)
    worker = connect_standalone(tmp_path, cfg, _sink(tmp_path, topic, name="offsets-sink"))
    try:
        _wait_rest(port, worker)
        wait_until(lambda: line_count(tmp_path / "test.sink.txt") >= 500, 60, what="sink lines")
        wait_until(lambda: httpx.get(f"http://127.0.0.1:{port}/connectors/offsets-sink/offsets").json()["offsets"],
                   30, what="committed offsets over REST")
        body = httpx.get(f"http://127.0.0.1:{port}/connectors/offsets-sink/offsets").json()
        assert body == {"offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0},
                                     "offset": {"kafka_offset": 500}}]}
        # Kafka's own kafka-consumer-groups tool, while the worker runs
        res = kafka.consumer_groups("--describe", "--group", "connect-offsets-sink")
        assert res.returncode == 0, res.stderr
        rows = [line.split() for line in res.stdout.splitlines() if topic in line]
        assert len(rows) == 1, res.stdout
        header = next(line.split() for line in res.stdout.splitlines() if "CURRENT-OFFSET" in line)
        row = dict(zip(header, rows[0], strict=False))
        assert row["GROUP"] == "connect-offsets-sink"
        assert (row["PARTITION"], row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"]) == ("0", "500", "500",
                                                                                                  "0")
    finally:
        assert worker.terminate() == 0, worker.log()
    res = run_cli(["headrace", "group-offsets", "-c", str(cfg), "--group", "connect-offsets-sink"])
    assert json.loads(res.stdout) == {f"{topic}-0": 500}


# --- the config topic in Kafka -------------------------------------------------------------------------------------
def test_connectors_created_over_rest_live_in_the_kafka_config_topic(tmp_path, kcat, kafka, unique_topic):
    topic = unique_topic("rest")
    (tmp_path / "in.txt").write_text("".join(f"a{i}\n" for i in range(50)))
    port = free_port()
    cfg = _worker(tmp_path, kafka, unique_topic, port)
    config_topic = re.search(r"config\.storage\.topic=(.*)", cfg.read_text()).group(1)
    worker = connect_standalone(tmp_path, cfg)
    try:
        _wait_rest(port, worker)
        r = httpx.post(f"http://127.0.0.1:{port}/connectors", timeout=30, json={"name": "rest-src", "config": {
            "connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": topic}})
        assert r.status_code == 201, r.text
        wait_until(lambda: _topic_exists(kafka, topic) and len(_kcat_read(kafka, topic)) >= 50, 30, interval=0.5,
                   what="records of the REST-created connector")
    finally:
        assert worker.terminate() == 0, worker.log()
    # Kafka Connect's formats, read back by kcat from the compacted config topic
    raw = _kcat("-b", kafka.bootstrap_servers, "-C", "-t", config_topic, "-e", "-q", "-f", "%k\t%s\n")
    entries = dict(line.split("\t", 1) for line in raw.decode().splitlines())
    assert json.loads(entries["connector-rest-src"])["properties"]["topic"] == topic
    assert json.loads(entries["target-state-rest-src"])["state.v2"] == "STARTED"
    assert json.loads(entries["commit-rest-src"]) == {"tasks": 1}
    assert json.loads(entries["task-rest-src-0"])["properties"]["topic"] == topic
    # a restarted worker (no connector files) restores it from Kafka, and resumes from the offsets file
    with open(tmp_path / "in.txt", "a") as fh:
        fh.write("".join(f"a{i}\n" for i in range(50, 60)))
    worker = connect_standalone(tmp_path, cfg)
    try:
        _wait_rest(port, worker)
        assert httpx.get(f"http://127.0.0.1:{port}/connectors", timeout=10).json() == ["rest-src"]
        wait_until(lambda: len(_kcat_read(kafka, topic)) >= 60, 30, interval=0.5, what="records after restart")
    finally:
        assert worker.terminate() == 0, worker.log()
    assert sorted(v.decode() for *_, v in _kcat_read(kafka, topic)) == sorted(f"a{i}" for i in range(60))
    offsets = json.loads((tmp_path / "connect.offsets").read_text())["offsets"]
    assert any(json.loads(k)[0] == "rest-src" for k in offsets), "source offsets belong in offset.storage.file"


def test_a_second_standalone_worker_on_the_cluster_runs_nothing_of_the_first(tmp_path, kafka, unique_topic):
    """Without config.storage.topic each worker keeps its connectors in a topic of its own; a topic another
    worker has claimed is refused with one line."""
    topic = unique_topic("isolated")
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir()
    b_dir.mkdir()
    (a_dir / "in.txt").write_text("a0\n")
    port_a, port_b = free_port(), free_port()
    cfg_a = worker_properties(a_dir, port_a, bootstrap_servers=kafka.bootstrap_servers)
    worker = connect_standalone(a_dir, cfg_a)
    try:
        _wait_rest(port_a, worker)
        r = httpx.post(f"http://127.0.0.1:{port_a}/connectors", timeout=30, json={"name": "a-src", "config": {
            "connector.class": "FileStreamSource", "file": str(a_dir / "in.txt"), "topic": topic}})
        assert r.status_code == 201, r.text
    finally:
        assert worker.terminate() == 0, worker.log()
    # worker B: same cluster, no connector files, its own state directory
    cfg_b = worker_properties(b_dir, port_b, bootstrap_servers=kafka.bootstrap_servers)
    worker = connect_standalone(b_dir, cfg_b)
    try:
        _wait_rest(port_b, worker)
        assert httpx.get(f"http://127.0.0.1:{port_b}/connectors", timeout=10).json() == []
    finally:
        assert worker.terminate() == 0, worker.log()
    assert "a-src" not in worker.log()
    a_id = (a_dir / "connect.offsets.worker-id").read_text().strip()
    a_topic = f"connect-configs-standalone-{a_id}"
    assert a_topic in run_cli(["headrace", "topics", "list", "-c", str(cfg_a)]).stdout.decode()
    # worker B pointed at A's topic: refused, one line naming both workers
    cfg_b = worker_properties(b_dir, port_b, bootstrap_servers=kafka.bootstrap_servers, config_storage_topic=a_topic)
    res = run_cli(["connect-standalone", str(cfg_b)], cwd=b_dir, timeout=90)
    err = res.stderr.decode()
    errors = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert res.returncode != 0 and len(errors) == 1 and "Traceback" not in err, err
    assert a_topic in errors[0] and a_id in errors[0], errors[0]
    assert "a-src" not in err
    # worker A restarted still has its connector
    worker = connect_standalone(a_dir, cfg_a)
    try:
        _wait_rest(port_a, worker)
        assert httpx.get(f"http://127.0.0.1:{port_a}/connectors", timeout=10).json() == ["a-src"]
    finally:
        assert worker.terminate() == 0, worker.log()


# --- crashes and outages -------------------------------------------------------------------------------------------------
def _committed_source_lines(tmp: Path, source_file: Path, connector: str) -> int:
    offsets = json.loads((tmp / "connect.offsets").read_text())["offsets"]
    position = 0
    for key, value in offsets.items():
        name, partition = json.loads(key)
        if name == connector and partition["filename"] == str(source_file):
            position = json.loads(value)["position"]
    return source_file.read_bytes()[:position].count(b"\n")


class _Writer:
    """Appends numbered lines to a file from a thread, ``per_tick`` lines every ``tick`` seconds."""

    def __init__(self, path: Path, total: int | None, per_tick: int, tick: float) -> None:
        self.path, self.total, self.per_tick, self.tick = path, total, per_tick, tick
        self.written = 0
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with open(self.path, "a") as fh:
            while not self.stop_event.is_set() and (self.total is None or self.written < self.total):
                end = self.written + self.per_tick if self.total is None else min(self.written + self.per_tick,
                                                                                   self.total)
                fh.write("".join(f"line-{i:06d}\n" for i in range(self.written, end)))
                fh.flush()
                self.written = end
                time.sleep(self.tick)

    def start(self) -> _Writer:
        self.thread.start()
        return self

    def stop(self) -> int:
        self.stop_event.set()
        return self.finish()

    def finish(self) -> int:
        self.thread.join()
        return self.written


def test_kill_9_mid_stream_on_kafka_loses_nothing_and_bounds_duplicates(tmp_path, kafka, unique_topic):
    topic = unique_topic("kill9")
    source_file = tmp_path / "test.txt"
    source_file.write_text("")
    total = 40_000
    cfg = _worker(tmp_path, kafka, unique_topic)
    src, snk = _source(tmp_path, topic), _sink(tmp_path, topic)
    worker = connect_standalone(tmp_path, cfg, src, snk)
    writer = _Writer(source_file, total, 200, 0.02).start()
    try:
        wait_until(lambda: line_count(tmp_path / "test.sink.txt") > 10_000 and (tmp_path / "connect.offsets").exists(),
                   90, what="sink to pass 10000 lines and a source offset commit")
        worker.kill9()
        backend = open_log_backend({"bootstrap.servers": kafka.bootstrap_servers})
        admin = backend.admin()
        try:
            # what the dead process left in its sockets may still reach the broker: read the end once it
            # holds still across two reads half a second apart
            ends: list[int] = []

            def end_settled() -> bool:
                ends.append(admin.describe_topic(topic).offsets[0][1])
                return len(ends) >= 2 and ends[-1] == ends[-2]
            wait_until(end_settled, 30, interval=0.5, what="the topic end to hold still")
            topic_end = ends[-1]
            sink_committed = admin.list_group_offsets("connect-file-sink").get(TopicPartition(topic, 0), 0)
        finally:
            admin.close()
            backend.close()
        source_committed = _committed_source_lines(tmp_path, source_file, "file-source")
        sink_lines_at_kill = line_count(tmp_path / "test.sink.txt")
        bound = (topic_end - source_committed) + (sink_lines_at_kill - sink_committed)
        assert 0 < source_committed <= topic_end
        assert 0 <= sink_committed <= sink_lines_at_kill
    finally:
        assert writer.finish() == total
    expected = {f"line-{i:06d}" for i in range(total)}
    worker = connect_standalone(tmp_path, cfg, src, snk)
    try:
        # Every distinct line may be in the file already (a kill before the sink's first commit): done only
        # once the restarted worker runs and its sink has committed the topic's end, i.e. its replay is over
        # (a stop during the replay would leave the file short of it, and a SIGTERM during start-up, exit -15).
        wait_until(lambda: worker.log().count("standalone worker started") == 2 or not worker.alive(), 60,
                   what="the restarted worker")
        backend = open_log_backend({"bootstrap.servers": kafka.bootstrap_servers})
        admin = backend.admin()
        try:
            def sink_caught_up() -> bool:
                end = admin.describe_topic(topic).offsets[0][1]
                committed = admin.list_group_offsets("connect-file-sink").get(TopicPartition(topic, 0), 0)
                return end > 0 and committed == end and expected <= set(_lines(tmp_path / "test.sink.txt"))
            wait_until(sink_caught_up, 120, interval=0.5, what="every line and the sink's commit of the topic end")
        finally:
            admin.close()
            backend.close()
    finally:
        # a clean stop ends every write, so a straggling duplicate is in the file before the count
        assert worker.terminate() == 0, worker.log()
    lines = _lines(tmp_path / "test.sink.txt")
    assert expected <= set(lines), f"lost {len(expected - set(lines))} lines"
    duplicates = len(lines) - len(set(lines))
    assert duplicates <= bound, f"{duplicates} duplicates exceed the flush-interval bound {bound}"
    last_seen = {line: i for i, line in enumerate(lines)}
    assert sorted(last_seen, key=last_seen.get) == sorted(expected), "order not kept outside the replayed stretch"


def test_broker_outage_of_20s_is_ridden_out_without_a_worker_restart(tmp_path, kafka, unique_topic):
    topic = unique_topic("outage")
    source_file = tmp_path / "test.txt"
    source_file.write_text("")
    port = free_port()
    cfg = _worker(tmp_path, kafka, unique_topic, port)
    worker = connect_standalone(tmp_path, cfg, _source(tmp_path, topic), _sink(tmp_path, topic))
    writer = _Writer(source_file, None, 50, 0.05).start()
    try:
        _wait_rest(port, worker)
        wait_until(lambda: line_count(tmp_path / "test.sink.txt") > 1000, 60, what="records flowing")
        pid = worker.proc.pid
        kafka.stop()
        stopped = time.monotonic()
        try:
            def outage_shown() -> bool:
                tasks = [_status(port, n)["tasks"][0] for n in ("file-source", "file-sink")]
                return all(t["state"] == "RUNNING" and "unreachable" in t.get("trace", "") for t in tasks)

            wait_until(outage_shown, 15, interval=0.5, what="status to show the outage")
            during = _status(port, "file-source")
            # the outage itself: the broker stays down 20 s whatever the worker does
            time.sleep(max(0.0, 20 - (time.monotonic() - stopped)))
            for name in ("file-source", "file-sink"):
                status = _status(port, name)
                assert status["connector"]["state"] == "RUNNING"
                assert status["tasks"][0]["state"] == "RUNNING", status
        finally:
            kafka.start()
        restarted = time.monotonic()
        wait_until(lambda: line_count(tmp_path / "test.sink.txt") > writer.written - 100 > 0, 60,
                   what="sink to catch up after the outage")
        written = writer.stop()
        wait_until(lambda: {f"line-{i:06d}" for i in range(written)} <= set(_lines(tmp_path / "test.sink.txt")),
                   60, interval=0.5, what="every line written before, during and after the outage")

        def recovered() -> bool:
            return all("trace" not in t and t["state"] == "RUNNING"
                       for n in ("file-source", "file-sink") for t in _status(port, n)["tasks"])

        wait_until(recovered, 15, interval=0.5, what="status to clear after the outage")
        assert worker.alive() and worker.proc.pid == pid
        assert time.monotonic() - restarted < 60
    finally:
        writer.stop()
        assert worker.terminate() == 0, worker.log()
    trace = during["tasks"][0]["trace"]
    assert kafka.bootstrap_servers in trace, trace
    log = worker.log()
    assert "Task threw" not in log and log.count("Starting task") == 2, log[-5000:]
    lines = _lines(tmp_path / "test.sink.txt")
    assert {f"line-{i:06d}" for i in range(written)} <= set(lines)


# --- bad input ------------------------------------------------------------------------------------------------------------
@pytest.mark.kafka  # the Kafka backend's client, without a broker: part of the Kafka suite
@pytest.mark.beside_services  # but nothing of the session's services: beside their group
def test_unreachable_bootstrap_servers_fail_fast_with_one_error_line(tmp_path, unique_topic):
    cfg = worker_properties(tmp_path, free_port(), bootstrap_servers="127.0.0.1:1", request_timeout_ms=3000,
                            config_storage_topic=unique_topic("configs"))
    src = _source(tmp_path, "never")
    started = time.monotonic()
    res = run_cli(["connect-standalone", str(cfg), str(src)], cwd=tmp_path, timeout=60)
    took = time.monotonic() - started
    err = res.stderr.decode()
    assert res.returncode != 0, err
    assert took < 3 + 10, f"took {took:.1f}s with request.timeout.ms=3000"
    errors = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, err
    assert "127.0.0.1:1" in errors[0] and "bootstrap.servers" in errors[0], errors[0]
    assert "Traceback" not in err
    # the tools too, with their own timeout
    cfg_tools = write_properties(tmp_path / "tools.properties", {"bootstrap.servers": "127.0.0.1:1",
                                                                 "request.timeout.ms": 2000})
    for args in (["topics", "list"], ["console-consumer", "--topic", "x", "--timeout-ms", "1000"]):
        started = time.monotonic()
        res = run_cli(["headrace", *args, "-c", str(cfg_tools)], timeout=60)
        took = time.monotonic() - started
        err = res.stderr.decode()
        assert res.returncode != 0, err
        assert took < 2 + 10, f"headrace {args[0]} took {took:.1f}s"
        errors = [line for line in err.splitlines() if line.startswith("ERROR")]
        assert len(errors) == 1 and "127.0.0.1:1" in errors[0], err
        assert "Traceback" not in err
