"""Headrace workers take over the internal topics of a stopped Apache Kafka Connect 4.1 cluster.

Java Kafka Connect (from Maven Central, started by services/) runs a FileStreamSource and a FileStreamSink
with the same .properties-style configs a user has today, commits their offsets, and stops. Headrace workers
with the same ``group.id`` and topic names then run those connectors from the stored configs: the source
resumes at its stored file position and the sink at its group's committed offsets, so the output file ends
with every input line exactly once.
"""

from __future__ import annotations

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_backend
from connect.runtime.storage.offset_backing_store import offset_partition
from tests.distributed.cluster import DistributedWorker, wait_running
from tests.support import line_count, wait_until

pytestmark = pytest.mark.timeout(300)


class _JavaNames:
    def __init__(self, group: str, configs: str, offsets: str, status: str) -> None:
        self.group, self.configs, self.offsets, self.status = group, configs, offsets, status


def _raw_keys(bootstrap: str, topic: str) -> list[tuple[bytes, int, int]]:
    """(key, partition, partition count) of every record of ``topic``."""
    backend = open_log_backend({"bootstrap.servers": bootstrap})
    admin = backend.admin()
    count = admin.describe_topic(topic).partitions
    admin.close()
    consumer = backend.consumer(None, {"auto.offset.reset": "earliest", "enable.auto.commit": "false"})
    tps = [TopicPartition(topic, p) for p in range(count)]
    consumer.assign(tps)
    consumer.seek_to_beginning(tps)
    ends = consumer.end_offsets(tps)
    out = []
    try:
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for batch in consumer.poll(1.0, 1000):
                out.extend((k, batch.partition, count) for k in batch.keys if k is not None)
    finally:
        consumer.close()
        backend.close()
    return out


def _group_offset_total(bootstrap: str, group: str, topic: str) -> int:
    backend = open_log_backend({"bootstrap.servers": bootstrap})
    admin = backend.admin()
    try:
        offsets = admin.list_group_offsets(group)
    finally:
        admin.close()
        backend.close()
    return sum(o for tp, o in offsets.items() if tp.topic == topic)


def test_headrace_runs_a_stopped_java_clusters_connectors_from_their_stored_state(tmp_path, kafka, java_connect,
                                                                                  unique_topic):
    topic = unique_topic("takeover")
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text("".join(f"java-{i}\n" for i in range(100)))
    java = java_connect()
    status, body = java.request("PUT", "/connectors/src/config", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
        "file": str(source_file), "topic": topic})
    assert status == 201, body
    status, body = java.request("PUT", "/connectors/sink/config", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
        "file": str(sink_file), "topics": topic})
    assert status == 201, body
    wait_until(lambda: line_count(sink_file) == 100, 60, what="Java's sink writing 100 lines")
    size = source_file.stat().st_size
    wait_until(lambda: java.request("GET", "/connectors/src/offsets")[1] == {
        "offsets": [{"partition": {"filename": str(source_file)}, "offset": {"position": size}}]},
        30, what="Java committing the source position")
    wait_until(lambda: _group_offset_total(kafka.bootstrap_servers, "connect-sink", topic) == 100, 30,
               what="Java's sink committing its group offsets")
    cluster = java.cluster_properties()
    java.stop()
    # Java placed each offset key by murmur2 of its bytes: Headrace computes the same partition, so its
    # writes of a key land beside Java's and compaction keeps one offset per key
    java_keys = _raw_keys(kafka.bootstrap_servers, cluster["offset.storage.topic"])
    assert java_keys and all(p == offset_partition(k, n) for k, p, n in java_keys), java_keys

    with source_file.open("a") as fh:
        fh.write("".join(f"headrace-{i}\n" for i in range(50)))
    names = _JavaNames(cluster["group.id"], cluster["config.storage.topic"], cluster["offset.storage.topic"],
                       cluster["status.storage.topic"])
    # the shipped config's JSON converters with schemas read what Java's (the same) wrote
    workers = [DistributedWorker(tmp_path, kafka, names, i) for i in range(2)]  # type: ignore[arg-type]
    try:
        for w in workers:
            w.start()
        ids = {w.worker_id for w in workers}
        wait_running(workers[0], "src", 1, on=ids)
        wait_running(workers[0], "sink", 1, on=ids)
        wait_until(lambda: line_count(sink_file) >= 150, 90, what="the 50 new lines in the sink file")
        lines = sink_file.read_text().splitlines()
        assert lines == [f"java-{i}" for i in range(100)] + [f"headrace-{i}" for i in range(50)]
        # the stored source position moved on from Java's, under the same key
        expected = [{"partition": {"filename": str(source_file)},
                     "offset": {"position": source_file.stat().st_size}}]

        def offsets() -> object:
            with workers[0].http() as http:
                return http.get("/connectors/src/offsets").json()["offsets"]
        wait_until(lambda: offsets() == expected, 30, what="the source position committed by Headrace")
    finally:
        for w in workers:
            w.stop()
