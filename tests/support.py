"""Helpers for end-to-end tests: real CLI processes, free ports, waiting."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from connect.runtime.properties import load_config_file

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}; last value {last!r}")


def drain(consumer: Any, count: int, timeout: float = 20.0, max_records: int = 100_000) -> list[Any]:
    """Poll ``consumer`` (of either log backend) until ``count`` records arrived; the batches as returned."""
    got: list[Any] = []

    def arrived() -> bool:
        got.extend(consumer.poll(0.1, max_records))
        return sum(len(b) for b in got) >= count

    wait_until(arrived, timeout, interval=0, what=f"{count} records")
    return got


def write_properties(path: Path, props: dict[str, Any]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


STANDALONE_CONFIG = REPO / "configs" / "connect-standalone.properties"
STRING = "org.apache.kafka.connect.storage.StringConverter"

# Changes to the shipped standalone config that some tests need beyond ports and paths. A test passes one as
# ``**NAME`` to ``worker_properties``/``RestWorker`` and its call says why; nothing applies them by default,
# since a test-only setting can hide a defect of the default.
# - for a test that writes raw bytes or lines to a topic itself, or reads what a source wrote there as raw
#   text: the shipped JsonConverter with schemas would want (and write) JSON envelopes.
STRING_CONVERTERS: dict[str, str] = {"key.converter": STRING, "value.converter": STRING}
# - for a test that waits for a periodic offset commit (not one a clean stop makes): the shipped 10 s.
FAST_OFFSET_FLUSH: dict[str, int] = {"offset.flush.interval.ms": 1000}


def worker_properties(tmp: Path, rest_port: int | None = None, **extra: Any) -> Path:
    """``configs/connect-standalone.properties`` as ``tmp/worker.properties``, with only its paths and listener
    changed: the embedded log, the offsets file and ``connector.allowed.paths`` in ``tmp``, the REST listener on
    ``rest_port`` (none without one, since the shipped port 8083 would collide between tests run at once).

    ``extra``: further changes (``a_b_c`` spells ``a.b.c``), each of which the calling test says why.
    """
    props: dict[str, Any] = dict(load_config_file(STANDALONE_CONFIG))
    props.update({
        "embedded.log.dir": tmp / "data",
        "offset.storage.file.filename": tmp / "connect.offsets",
        "connector.allowed.paths": tmp,
        "listeners": f"http://127.0.0.1:{rest_port}" if rest_port else "",
    })
    props.update({k.replace("_", "."): v for k, v in extra.items()})
    return write_properties(tmp / "worker.properties", props)


class CliProcess:
    """A real ``connect-standalone`` (or other console script) process with its output in a file."""

    def __init__(self, args: Sequence[str], cwd: Path, log_name: str = "worker.log") -> None:
        self.args = list(args)
        self.cwd = cwd
        self.log_path = cwd / log_name
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> CliProcess:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.args, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                         stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        return self

    def kill9(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self, timeout: float = 20.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        return self.proc.returncode

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def connect_standalone(cwd: Path, worker: Path, *connectors: Path) -> CliProcess:
    exe = Path(sys.executable).with_name("connect-standalone")
    cmd = [str(exe)] if exe.exists() else ["connect-standalone"]
    return CliProcess([*cmd, str(worker), *map(str, connectors)], cwd).start()


def run_cli(args: Sequence[str], cwd: Path | None = None, input: bytes | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    exe = Path(sys.executable).with_name(args[0])
    cmd = [str(exe) if exe.exists() else args[0], *args[1:]]
    return subprocess.run(cmd, cwd=cwd, input=input, capture_output=True, timeout=timeout)


def rest_ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def line_count(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


class RestWorker:
    """A ``connect-standalone`` with its REST API on a free loopback port; ``start`` waits for /health."""

    def __init__(self, tmp: Path, *connectors: Path, **extra: Any) -> None:
        self.tmp = tmp
        self.connectors = connectors
        self.port = free_port()
        self.cfg = worker_properties(tmp, self.port, **extra)
        self.proc: CliProcess | None = None

    def start(self) -> RestWorker:
        self.proc = connect_standalone(self.tmp, self.cfg, *self.connectors)
        proc = self.proc
        try:
            wait_until(lambda: rest_ready(self.port) or not proc.alive(), 60, what="REST /health")
        except BaseException:  # never ready: the caller gets no worker to stop, so none may be left running
            proc.kill9()
            raise
        assert proc.alive(), proc.log()
        return self

    def stop(self) -> str:
        """Stop with SIGTERM, which must end the worker cleanly; its log, for further checks."""
        assert self.proc is not None
        assert self.proc.terminate() == 0, self.proc.log()
        return self.proc.log()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)
