"""Helpers for the log shipping tests: a real worker running an ingestion source, and the topic read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from connect.log import open_log_reader
from tests.support import (
    CliProcess,
    connect_standalone,
    free_port,
    wait_until,
    worker_properties,
    write_properties,
)


class SourceWorker:
    """``connect-standalone`` with one ingestion connector writing JSON (no schemas) to ``topic``."""

    def __init__(self, tmp: Path, connector_class: str = "HttpSource", topic: str = "logs",
                 listeners: str | None = None, rest: bool = False, **props: Any) -> None:
        self.tmp = tmp
        self.topic = topic
        self.port = free_port()
        self.rest_port = free_port() if rest else None  # no REST API unless asked: it costs start-up time
        scheme = "http" if connector_class == "HttpSource" else "tcp"
        self.listeners = listeners or f"{scheme}://127.0.0.1:{self.port}"
        self.cfg = worker_properties(tmp, self.rest_port)
        self.connector = write_properties(tmp / "source.properties", {
            "name": "logs-in", "connector.class": connector_class, "topic": topic, "listeners": self.listeners,
            # the events as plain JSON documents, as a log pipeline reads them (the shipped worker's JSON
            # converter would wrap each in a schema envelope); per connector, as Kafka Connect users set it
            "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
            **{k.replace("_", "."): v for k, v in props.items()},
        })
        self.proc: CliProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, ready: bool = True) -> SourceWorker:
        marker = "[logs-in|task-0] listening on"
        before = self.log().count(marker)  # the log file is appended to across restarts
        self.proc = connect_standalone(self.tmp, self.cfg, self.connector)
        proc = self.proc
        if ready:
            wait_until(lambda: proc.log().count(marker) > before or not proc.alive(), 60,
                       what="the source listening")
            assert proc.alive(), proc.log()
        return self

    def health(self) -> bool:
        try:
            return httpx.get(self.url + "health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill9()

    def stop(self) -> str:
        assert self.proc is not None
        assert self.proc.terminate() == 0, self.proc.log()
        return self.proc.log()

    def log(self) -> str:
        return self.proc.log() if self.proc is not None else ""


def read_values(tmp: Path, topic: str = "logs") -> list[dict[str, Any]]:
    """Every record of ``topic`` in the embedded log under ``tmp/data``, decoded from JSON."""
    return [value for value, _ in read_records(tmp, topic)]


def read_records(tmp: Path, topic: str = "logs") -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Every record of ``topic``: its value decoded from JSON, and its headers as text."""
    reader = open_log_reader({"embedded.log.dir": str(tmp / "data")})
    try:
        offsets = reader.partition_offsets([topic])
        out: list[tuple[dict[str, Any], dict[str, str]]] = []
        for tp, (start, end) in offsets.items():
            position = start
            while position < end:
                found = reader.read(tp.topic, tp.partition, position, end)
                for batch in found.batches:
                    for i, v in enumerate(batch.values):
                        headers = batch.headers[i] if batch.headers is not None else ()
                        out.append((json.loads(v) if v is not None else None,
                                    {k: (h or b"").decode() for k, h in headers}))
                if found.next_offset <= position:
                    break
                position = found.next_offset
        return out
    finally:
        reader.close()


def count_values(tmp: Path, topic: str = "logs") -> int:
    try:
        return len(read_values(tmp, topic))
    except Exception:  # the topic does not exist yet
        return 0
