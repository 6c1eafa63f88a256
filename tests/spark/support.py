"""Helpers of the Spark sink tests: topics of JSON records, a worker process, reading what landed in HDFS,
and a task run in the test process."""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from tests.support import (
    CliProcess,
    connect_standalone,
    free_port,
    rest_ready,
    wait_until,
    worker_properties,
    write_properties,
)

HOUR_MS = 3_600_000
BASE_TS = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def produce_json(log_dir: Path | str, topic: str, count: int, partitions: int = 2, start: int = 0,
                 hours: int = 1, keyed: bool = False, chunk: int = 5000, doc: Any = None) -> None:
    """``count`` JSON records {"id", "n", "name"} with ids start..start+count-1, record times spread over
    ``hours`` hours from BASE_TS, round-robin over the partitions, into the embedded log."""
    from connect.log.api import NewTopic
    from connect.log.embedded.backend import EmbeddedBackend

    backend = EmbeddedBackend(str(log_dir))
    try:
        backend.admin().create_topic(NewTopic(topic, partitions, 1), exist_ok=True)
        producer = backend.producer()
        for lo in range(start, start + count, chunk):
            ids = range(lo, min(lo + chunk, start + count))
            for p in range(partitions):
                mine = [i for i in ids if i % partitions == p]
                if not mine:
                    continue
                values = [json.dumps(doc(i) if doc else {"id": i, "n": i, "name": f"user-{i}"}).encode()
                          for i in mine]
                stamps = [BASE_TS + (i * hours * HOUR_MS) // max(count + start, 1) for i in mine]
                keys = [f"k{i}".encode() for i in mine] if keyed else None
                producer.send_batch(topic, p, values, keys=keys, timestamps=stamps)
        assert producer.flush(30) == 0
        producer.close()
    finally:
        backend.close()


def produce_records(log_dir: Path | str, topic: str, records: list[tuple[bytes | None, bytes | None]],
                    headers: list[list[tuple[str, bytes]]] | None = None) -> None:
    """(key, value) records, in order, into partition 0 of a one-partition topic; a None value is a tombstone;
    ``headers``: each record's headers."""
    from connect.log.api import NewTopic
    from connect.log.embedded.backend import EmbeddedBackend

    backend = EmbeddedBackend(str(log_dir))
    try:
        backend.admin().create_topic(NewTopic(topic, 1, 1), exist_ok=True)
        producer = backend.producer()
        producer.send_batch(topic, 0, [v for _, v in records], keys=[k for k, _ in records], headers=headers)
        assert producer.flush(10) == 0
        producer.close()
    finally:
        backend.close()


def read_topic(log_dir: Path | str, topic: str) -> list[Any]:
    """Every record of a topic of the embedded log (all partitions)."""
    from connect.api.topic_partition import TopicPartition
    from connect.log.embedded.backend import EmbeddedBackend

    backend = EmbeddedBackend(str(log_dir))
    try:
        parts = backend.admin().describe_topic(topic).partitions
        consumer = backend.consumer(None, {"auto.offset.reset": "earliest"})
        tps = [TopicPartition(topic, p) for p in range(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning(tps)
        ends = consumer.end_offsets(tps)
        out: list[Any] = []
        while sum(consumer.position(tp) for tp in tps) < sum(ends.values()):
            for batch in consumer.poll(1.0, 10000):
                out.extend(batch.records())
        consumer.close()
        return out
    finally:
        backend.close()


_NAME = re.compile(r"^(?P<topic>.+)\+(?P<partition>\d+)\+(?P<start>\d+)\+(?P<end>\d+)\.(?P<ext>\w+)$")


def hdfs_files(client: Any, root: str) -> list[str]:
    """Paths of the committed files under ``root`` (hdfs dfs -ls -R style, through WebHDFS)."""
    if client.status(root, strict=False) is None:
        return []
    return sorted(f"{folder}/{name}" for folder, _, names in client.walk(root) for name in names
                  if _NAME.match(name))


def hdfs_records(client: Any, root: str) -> list[dict[str, Any]]:
    """Every record of the committed Parquet or JSON files under ``root``, read over WebHDFS."""
    import pyarrow.parquet as pq

    out: list[dict[str, Any]] = []
    for path in hdfs_files(client, root):
        with client.read(path) as fh:
            data = fh.read()
        if path.endswith(".parquet"):
            out.extend(pq.read_table(io.BytesIO(data)).to_pylist())
        elif path.endswith(".json"):
            out.extend(json.loads(line) for line in data.decode().splitlines() if line)
    return out


class Worker:
    """A real ``connect-standalone`` with REST, in its own process group (kill -9 takes Spark's JVM too)."""

    def __init__(self, tmp: Path, *connector_files: Path, **extra: Any) -> None:
        self.tmp = tmp
        self.port = free_port()
        # Spark takes a while to stop a query; the worker must wait for it on shutdown
        spark = {"streaming_state_dir": tmp / "state", "task_shutdown_graceful_timeout_ms": 30000}
        self.config = worker_properties(tmp, self.port, **{**spark, **extra})
        self.connector_files = connector_files
        self.proc: CliProcess | None = None

    @property
    def log_dir(self) -> Path:
        return self.tmp / "data"

    def start(self) -> Worker:
        self.proc = connect_standalone(self.tmp, self.config, *self.connector_files)
        wait_until(lambda: rest_ready(self.port) or not self.proc.alive(), 120, what="REST /health")
        assert self.proc.alive(), self.proc.log()[-5000:]
        return self

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill9()

    def stop(self) -> None:
        if self.proc is not None and self.proc.alive():
            self.proc.terminate(60)

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60)

    def status(self, name: str) -> dict[str, Any]:
        with self.http() as c:
            r = c.get(f"/connectors/{name}/status")
            assert r.status_code == 200, r.text
            return r.json()

    def metrics(self, name: str) -> dict[str, Any]:
        """The task's metrics; {} while the connector or its task does not exist yet."""
        with self.http() as c:
            r = c.get(f"/connectors/{name}/status")
        if r.status_code == 404:
            return {}
        assert r.status_code == 200, r.text
        tasks = r.json()["tasks"]
        return tasks[0].get("metrics", {}) if tasks else {}

    def wait_landed(self, name: str, count: int, timeout: float = 240) -> dict[str, Any]:
        """Until the connector's task reports ``count`` records moved and no lag; fails fast on FAILED."""

        def check() -> dict[str, Any] | None:
            if not self.metrics(name):
                return None
            status = self.status(name)
            states = [status["connector"]["state"]] + [t["state"] for t in status["tasks"]]
            if "FAILED" in states:
                raise AssertionError(f"{name} failed: {status}\n{self.proc.log()[-4000:] if self.proc else ''}")
            m = status["tasks"][0].get("metrics", {}) if status["tasks"] else {}
            return m if m.get("records_total", 0) >= count and m.get("lag", 1) == 0 else None

        return wait_until(check, timeout, interval=1.0, what=f"{name} to land {count} records")

    def log(self) -> str:
        return self.proc.log() if self.proc else ""


def connector_file(tmp: Path, name: str, **props: Any) -> Path:
    return write_properties(tmp / f"{name}.properties", {"name": name, **{k.replace("__", "."): v
                                                                          for k, v in props.items()}})


def spark_props(**extra: Any) -> dict[str, Any]:
    """Settings that keep a test's Spark small: two cores, a small driver heap, short micro-batch interval."""
    props = {"spark.master": "local[2]", "spark.driver.memory": "768m", "trigger.interval.ms": 500,
             "spark.sql.shuffle.partitions": 4}
    props.update(extra)
    return props


class InProcessTask:
    """Runs a Spark sink task in this process (shared session), as a worker would, with a simple context."""

    def __init__(self, task_cls: type, props: Mapping[str, str], log_dir: Path, state_dir: Path) -> None:
        from connect.api import StreamingSinkTaskContext

        class Context(StreamingSinkTaskContext):
            def configs(self) -> Mapping[str, str]:
                return props

            def log_settings(self) -> Mapping[str, str]:
                return {"embedded.log.dir": str(log_dir)}

            def state_dir(self) -> str:
                state_dir.mkdir(parents=True, exist_ok=True)
                return str(state_dir)

            def dead_letter_queue(self) -> None:
                return None

        self.task = task_cls()
        self.task.initialize(Context())
        self.task.start(dict(props))
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.task.run()
        except BaseException as exc:  # the test reports it
            self.error = exc

    def __enter__(self) -> InProcessTask:
        self.thread.start()
        return self

    def wait_records(self, count: int, timeout: float = 120) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            if self.error is not None:
                raise AssertionError(f"task failed: {self.error}")
            p = dict(self.task.progress())
            return p if p.get("records_total", 0) >= count else None

        return wait_until(check, timeout, interval=0.5, what=f"{count} records")

    def __exit__(self, *exc: object) -> None:
        self.task.stop()
        self.thread.join(60)
        assert not self.thread.is_alive(), "the task did not stop"
