"""HdfsSparkSink's path.template (folders from the record time in a header, rounded, and a header's value),
file prefix and suffix and text compression, against a real HDFS with local Spark; the template's parsing."""

from __future__ import annotations

import gzip
import uuid

import pytest

from spark_sinks.hdfs import HdfsSparkSinkTask, file_name_pattern
from spark_sinks.path_template import PathTemplate, TemplatePiece
from tests.spark.support import InProcessTask

pytestmark = pytest.mark.timeout(300)

MINUTE = 60_000
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def _produce(log_dir, topic: str, count: int) -> None:
    """``count`` bodies ``event i`` with a ``timestamp`` header one minute apart and an ``app`` header."""
    from connect.log.api import NewTopic
    from connect.log.embedded.backend import EmbeddedBackend

    backend = EmbeddedBackend(str(log_dir))
    try:
        backend.admin().create_topic(NewTopic(topic, 1, 1), exist_ok=True)
        producer = backend.producer()
        headers = [(("timestamp", str(T0 + i * MINUTE).encode()), ("app", b"shop" if i % 2 else b"web"))
                   for i in range(count)]
        producer.send_batch(topic, 0, [f"event {i}".encode() for i in range(count)], headers=headers)
        assert producer.flush(10) == 0
        producer.close()
    finally:
        backend.close()


def test_folders_follow_the_template_from_the_timestamp_header_rounded_and_a_header(tmp_path, hdfs):
    log_dir, topic, root = tmp_path / "data", "flume.r1", f"/tpl-{uuid.uuid4().hex[:8]}"
    _produce(log_dir, topic, 40)
    props = {"name": "tpl", "topics": topic, "hdfs.url": hdfs.url, "spark.master": "local[1]",
             "trigger.interval.ms": "200", "format": "text", "compression": "gzip",
             "path.template": root + "/events/{time:yy-MM-dd}/{time:HHmm}/{header:app}",
             "timestamp.extractor": "Header", "timestamp.round.ms": str(10 * MINUTE), "timezone": "UTC",
             "file.prefix": "events-.", "file.suffix": ".gz", "logs.dir": f"{root}/logs"}
    with InProcessTask(HdfsSparkSinkTask, props, log_dir, tmp_path / "state") as t:
        t.wait_records(40)
    client = hdfs.client()
    got: dict[str, list[str]] = {}
    for folder, _, names in client.walk(f"{root}/events"):
        for name in names:
            assert file_name_pattern("events-.", ".gz").match(name), name
            with client.read(f"{folder}/{name}") as fh:
                got.setdefault(folder[len(root):], []).extend(gzip.decompress(fh.read()).decode().splitlines())
    # 22:13:20 + i minutes, rounded down to ten minutes: 22:10 (i < 7), 22:20 ... 22:50 (i >= 37)
    expected: dict[str, list[str]] = {}
    for i in range(40):
        minute = 13 + i
        hour, minute = 22 + minute // 60, (minute % 60) // 10 * 10
        folder = f"/events/23-11-14/{hour:02d}{minute:02d}/{'shop' if i % 2 else 'web'}"
        expected.setdefault(folder, []).append(f"event {i}")
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in expected.items()}
    assert not client.status(f"{root}/topics", strict=False)  # nothing under topics.dir with a template


def test_a_record_without_the_timestamp_header_fails_the_batch_naming_it(tmp_path, hdfs):
    from connect.log.api import NewTopic
    from connect.log.embedded.backend import EmbeddedBackend

    log_dir, topic, root = tmp_path / "data", "nostamp", f"/tpl-{uuid.uuid4().hex[:8]}"
    backend = EmbeddedBackend(str(log_dir))
    backend.admin().create_topic(NewTopic(topic, 1, 1), exist_ok=True)
    producer = backend.producer()
    producer.send_batch(topic, 0, [b"no time"], headers=[(("host", b"a"),)])
    assert producer.flush(10) == 0
    producer.close()
    backend.close()
    props = {"name": "nostamp", "topics": topic, "hdfs.url": hdfs.url, "spark.master": "local[1]",
             "trigger.interval.ms": "200", "format": "text", "path.template": root + "/{time:yyyy}",
             "timestamp.extractor": "Header", "logs.dir": f"{root}/logs"}
    task = InProcessTask(HdfsSparkSinkTask, props, log_dir, tmp_path / "state")
    with task:
        from tests.support import wait_until

        wait_until(lambda: task.error is not None, 120, what="the task to fail")
    assert "nostamp-0@0: no header timestamp" in str(task.error)


def test_template_parsing():
    t = PathTemplate("/flume/events/{time:yy-MM-dd}/x{header:app}")
    assert t.pieces == [TemplatePiece("text", "/flume/events/"), TemplatePiece("time", "yy-MM-dd"),
                        TemplatePiece("text", "/x"), TemplatePiece("header", "app")]
    assert t.static_root() == "/flume/events" and t.uses_time
    assert PathTemplate("/a/b").static_root() == "/a/b" and not PathTemplate("/a/{header:h}").uses_time
    for bad, why in [("rel/{time:HH}", "must start with /"), ("/a/{time:HH", "braces"),
                     ("/a/{header: x}", "does not name a header"), ("/a/{time:HH%}", "not a date pattern"),
                     ("/a/../{header:h}", "no . or .. folders"), ("/a/./b", "no . or .. folders"),
                     ("/a/{header:h}/..", "no . or .. folders")]:
        with pytest.raises(ValueError, match=why):
            PathTemplate(bad)
    assert PathTemplate("/a/..{header:h}/x.{time:HH}/.b").static_root() == "/a"


@pytest.mark.beside_services  # a local target and the test process's own Spark session: no HDFS
def test_header_values_cannot_lead_a_template_folder_out_of_its_root(tmp_path, spark):
    """A header is anyone's input (an HTTP or syslog client's): ``..`` in it climbed out of the template."""
    from connect.log.api import NewTopic
    from connect.log.embedded.backend import EmbeddedBackend

    log_dir, topic = tmp_path / "data", "hosts"
    hosts = [b"web", b"..", b"../../outside", b"a/b", b".", b"./..", b"/"]
    backend = EmbeddedBackend(str(log_dir))
    backend.admin().create_topic(NewTopic(topic, 1, 1), exist_ok=True)
    producer = backend.producer()
    producer.send_batch(topic, 0, [f"event {i}".encode() for i in range(len(hosts))],
                        headers=[(("host", h), ("app", b".")) for h in hosts])
    assert producer.flush(10) == 0
    producer.close()
    backend.close()
    landed, outside = tmp_path / "landed", tmp_path / "outside"
    props = {"name": "hosts", "topics": topic, "hdfs.url": f"file://{landed}", "spark.master": "local[1]",
             "trigger.interval.ms": "200", "format": "text", "path.template": "/events/{header:host}/{header:app}"}
    with InProcessTask(HdfsSparkSinkTask, props, log_dir, tmp_path / "state") as t:
        t.wait_records(len(hosts))
    folders = {str(f.parent.relative_to(landed)): f.read_text().splitlines()
               for f in landed.rglob("hosts+*") if f.is_file()}
    assert not outside.exists()
    # each . or .. folder a header made became _; other text, slashes included, stays as Flume writes it
    assert folders == {"events/web/_": ["event 0"], "events/_/_": ["event 1", "event 4"],
                       "events/_/_/outside/_": ["event 2"], "events/a/b/_": ["event 3"],
                       "events/_/_/_": ["event 5"], "events/_": ["event 6"]}


def test_sequence_files_hold_the_time_and_body_as_flumes_hdfs_sink_writes_them(tmp_path, hdfs, spark):
    from tests.flume_support import read_sequence_file

    log_dir, topic, root = tmp_path / "data", "flume.seq", f"/seq-{uuid.uuid4().hex[:8]}"
    _produce(log_dir, topic, 30)
    props = {"name": "seq", "topics": topic, "hdfs.url": hdfs.url, "spark.master": "local[1]",
             "trigger.interval.ms": "200", "format": "sequence", "path.template": root + "/{header:app}",
             "file.prefix": "FlumeData.", "file.suffix": "", "logs.dir": f"{root}/logs"}
    with InProcessTask(HdfsSparkSinkTask, props, log_dir, tmp_path / "state") as t:
        t.wait_records(30)
    client = hdfs.client()
    got: dict[str, list[tuple[int, bytes]]] = {}
    for folder, _, names in client.walk(root):
        for name in names:
            if folder.startswith(f"{root}/logs"):
                continue
            assert file_name_pattern("FlumeData.", "").match(name), name
            with client.read(f"{folder}/{name}") as fh:
                key_class, value_class, records = read_sequence_file(fh.read())
            assert (key_class, value_class) == ("org.apache.hadoop.io.LongWritable", "org.apache.hadoop.io.BytesWritable")
            # LongWritable: 8 bytes; BytesWritable: a 4-byte length, then the bytes
            got.setdefault(folder[len(root):], []).extend(
                (int.from_bytes(k, "big"), v[4:4 + int.from_bytes(v[:4], "big")]) for k, v in records)
    expected: dict[str, list[tuple[int, bytes]]] = {}
    for i in range(30):
        expected.setdefault(f"/{'shop' if i % 2 else 'web'}", []).append((T0 + i * MINUTE, f"event {i}".encode()))
    assert {k: sorted(v) for k, v in got.items()} == expected
    # and Hadoop's own reader reads them (through Spark), LongWritable and BytesWritable as Flume wrote them
    read = spark.sparkContext.sequenceFile(f"{hdfs.url}{root}/web").collect()
    assert sorted((k, bytes(v)) for k, v in read) == expected["/web"]
