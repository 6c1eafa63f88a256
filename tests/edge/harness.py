"""A real standalone worker for the edge tests: started from the shipped configs, measured from /proc.

Every edge test runs a hostile input against a worker a user would run — ``configs/connect-standalone.properties``
with only the REST listener changed, in a fresh working directory so that its relative paths (the embedded
log, the offsets file, ``connector.allowed.paths=.``) land there — and checks three things beside the attack:
the worker's memory (the resident set of the worker and every process it started), the state of the task
under attack, and that a normal request is still answered in time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import httpx

from connect.runtime.properties import load_config_file
from tests.support import (
    REPO,
    CliProcess,
    connect_standalone,
    free_port,
    rest_ready,
    wait_until,
    write_properties,
)

CONFIGS = REPO / "configs"
T = TypeVar("T")


def shipped_config(name: str, /, **changes: Any) -> dict[str, str]:
    """A file of ``configs/`` as a dict, with ``changes`` applied (keys spelt with dots)."""
    props = load_config_file(CONFIGS / name)
    props.update({k: str(v) for k, v in changes.items()})
    return props


def connector_file(tmp: Path, shipped: str, /, **changes: Any) -> Path:
    """A shipped connector config written to ``tmp`` with ``changes``; pass dotted keys as ``**{"a.b": v}``."""
    props = shipped_config(shipped, **changes)
    return write_properties(tmp / f"{props['name']}.properties", props)


def process_tree(pid: int) -> list[int]:
    """``pid`` and every live descendant of it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields after its closing one are fixed.
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(children.get(p, ()))
    return tree


def rss_bytes_of(pid: int) -> int:
    """The resident set of ``pid`` and its descendants, in bytes (VmRSS of each, from /proc)."""
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
    return total


def answered_within(seconds: float, call: Callable[[], T]) -> T:
    """Run ``call`` (a normal request beside an attack) and assert it returned within ``seconds``."""
    start = time.monotonic()
    result = call()
    took = time.monotonic() - start
    assert took <= seconds, f"a normal request took {took:.2f} s beside the attack (bound {seconds} s)"
    return result


class EdgeWorker:
    """``connect-standalone`` from the shipped worker config, its REST API on a free loopback port."""

    def __init__(self, tmp: Path, *connectors: Path, worker_overrides: Mapping[str, Any] | None = None) -> None:
        self.tmp = tmp
        self.connectors = connectors
        self.port = free_port()
        props = shipped_config("connect-standalone.properties", listeners=f"http://127.0.0.1:{self.port}")
        props.update({k: str(v) for k, v in (worker_overrides or {}).items()})
        self.config = write_properties(tmp / "worker.properties", props)
        self.proc: CliProcess | None = None

    def start(self, timeout: float = 60.0) -> EdgeWorker:
        self.proc = connect_standalone(self.tmp, self.config, *self.connectors)
        proc = self.proc
        wait_until(lambda: rest_ready(self.port) or not proc.alive(), timeout, what="REST /health")
        assert proc.alive(), proc.log()
        for path in self.connectors:
            self.wait_running(load_config_file(path)["name"])
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def http(self, timeout: float = 30.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=timeout)

    def create(self, connector: Path | Mapping[str, str]) -> str:
        """POST a connector config (a file or a dict with ``name``) and wait for its task 0 to be RUNNING."""
        config = dict(load_config_file(connector) if isinstance(connector, Path) else connector)
        name = config["name"]
        with self.http() as client:
            answer = client.post("/connectors", json={"name": name, "config": config})
        assert answer.status_code == 201, answer.text
        self.wait_running(name)
        return name

    def status(self, connector: str) -> dict[str, Any]:
        with self.http() as client:
            answer = client.get(f"/connectors/{connector}/status")
        assert answer.status_code == 200, answer.text
        return answer.json()

    def task_state(self, connector: str, task: int = 0) -> str | None:
        for entry in self.status(connector).get("tasks", []):
            if entry["id"] == task:
                return str(entry["state"])
        return None

    def wait_running(self, connector: str, timeout: float = 60.0) -> None:
        def running() -> bool:
            try:
                return self.task_state(connector) == "RUNNING"
            except (AssertionError, httpx.HTTPError):
                return False

        wait_until(running, timeout, what=f"{connector} task 0 RUNNING")

    def assert_running(self, connector: str, task: int = 0) -> None:
        status = self.status(connector)
        assert status["connector"]["state"] == "RUNNING", status
        states = {t["id"]: t for t in status["tasks"]}
        assert states[task]["state"] == "RUNNING", status

    def rss_bytes(self) -> int:
        assert self.proc is not None and self.proc.proc is not None
        return rss_bytes_of(self.proc.proc.pid)

    def log(self) -> str:
        return self.proc.log() if self.proc else ""

    def stop(self) -> str:
        """SIGTERM, which must end the worker cleanly (exit 0); its log, for further checks."""
        assert self.proc is not None
        code = self.proc.terminate()
        assert code == 0, f"exit {code}\n{self.proc.log()[-5000:]}"
        return self.proc.log()
