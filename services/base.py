"""What every local service (Kafka, HDFS, OpenSearch, Redis, ...) has in common.

A service is one child process that listens on loopback ports, writes its
output to a log file and keeps its state in a work folder. ``Service`` owns
that life cycle: prepare the folder once, start the process, wait until it
answers, stop it (politely, then by force), start it again on the same ports
and data. Subclasses say how to fetch, what command to run and how to tell
that the process is ready, and take ``port=`` and ``work_dir=`` keyword
arguments (the command line passes them), then register in
``services.SERVICES``.
"""

from __future__ import annotations

import abc
import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

__all__ = ["Service", "ServiceError", "free_port", "log_tail", "port_is_free", "port_is_open"]


class ServiceError(RuntimeError):
    """A service could not be fetched, started or stopped."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # Same option the JVM servers set, so a port in TIME_WAIT after a
        # restart counts as free, as it does for them.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def port_is_open(port: int, timeout: float = 0.5) -> bool:
    """True if something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read().decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    return "\n".join(data.splitlines()[-lines:])


# Children still running when the interpreter exits (a crashed test run, an
# uncaught exception) would otherwise outlive it and hold ports and memory.
_live: weakref.WeakSet[Service] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    for svc in list(_live):
        try:
            svc.kill()
        except Exception:  # best effort while exiting
            pass


class Service(abc.ABC):
    """One local server process with a work folder, ports and a log file."""

    #: the name used by the CLI and for the jar cache folder
    name: ClassVar[str]
    #: how long ``start`` waits for ``ready`` before giving up
    startup_timeout: float = 60.0
    #: how long ``stop`` waits after SIGTERM before SIGKILL
    stop_timeout: float = 30.0

    def __init__(self, work_dir: str | os.PathLike[str] | None = None) -> None:
        self._owns_work_dir = work_dir is None
        self.work_dir = (
            Path(tempfile.mkdtemp(prefix=f"headrace-{self.name}-")) if work_dir is None else Path(work_dir)
        )
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.work_dir / f"{self.name}.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._prepared = False
        self._lock = threading.Lock()

    # -- what subclasses provide -------------------------------------------

    @classmethod  # noqa: B027 - optional hook
    def fetch(cls) -> None:
        """Download whatever the service needs (jars, ...); a no-op when already there."""

    @abc.abstractmethod
    def ports(self) -> Sequence[int]:
        """The ports this service listens on; ``start`` checks they are free first."""

    def prepare(self) -> None:  # noqa: B027 - optional hook
        """One-time set-up of the work folder before the first start (config, formatting)."""

    @abc.abstractmethod
    def command(self) -> list[str]: ...

    def environment(self) -> Mapping[str, str] | None:
        """Extra environment variables for the child process."""
        return None

    @abc.abstractmethod
    def ready(self) -> bool:
        """True once the process answers clients; called repeatedly until ``startup_timeout``."""

    def describe(self) -> dict[str, Any]:
        """How clients reach the service, for the CLI to print."""
        return {}

    # -- life cycle ------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> Self:
        """Start the process (again, after ``stop``/``kill``: same ports, same data) and wait for it."""
        with self._lock:
            if self.is_running():
                return self
            self.fetch()
            if not self._prepared:
                self.prepare()
                self._prepared = True
            self._wait_ports_free()
            env = dict(os.environ)
            env.update(self.environment() or {})
            with open(self.log_path, "ab") as log:
                log.write(f"\n===== starting {self.name} at {time.ctime()} =====\n".encode())
                log.flush()
                self._proc = subprocess.Popen(
                    self.command(),
                    cwd=self.work_dir,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    # Own session: a Ctrl-C aimed at the Python process does not
                    # also hit the server mid-shutdown, and the test harness can
                    # signal the whole group.
                    start_new_session=True,
                )
            _live.add(self)
        self._wait_ready()
        return self

    def _wait_ports_free(self, timeout: float = 15.0) -> None:
        # After a SIGKILL the kernel may need a moment to release a listener.
        deadline = time.monotonic() + timeout
        busy: list[int] = []
        while True:
            busy = [p for p in self.ports() if not port_is_free(p)]
            if not busy or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if busy:
            raise ServiceError(f"{self.name}: port(s) {busy} on 127.0.0.1 are already in use")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                code = None if proc is None else proc.returncode
                raise ServiceError(
                    f"{self.name} exited during start-up (exit code {code}); "
                    f"log {self.log_path}:\n{log_tail(self.log_path)}"
                )
            try:
                if self.ready():
                    return
            except Exception:  # not ready yet, whatever the reason
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise ServiceError(
                    f"{self.name} did not become ready within {self.startup_timeout:.0f}s; "
                    f"log {self.log_path}:\n{log_tail(self.log_path)}"
                )
            time.sleep(0.25)

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM and wait for a clean exit; SIGKILL if it takes longer than ``timeout``."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            if proc.poll() is None:
                self._signal(proc, signal.SIGTERM)
                try:
                    proc.wait(self.stop_timeout if timeout is None else timeout)
                except subprocess.TimeoutExpired:
                    self._signal(proc, signal.SIGKILL)
                    proc.wait(10)
            self._proc = None
            _live.discard(self)

    def kill(self) -> None:
        """SIGKILL at once, as a crash would (outage tests); ``start`` brings it back."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            self._signal(proc, signal.SIGKILL)
            proc.wait(10)
        self._proc = None
        _live.discard(self)

    @staticmethod
    def _signal(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:
            proc.send_signal(sig)

    def cleanup(self) -> None:
        """Stop, and remove the work folder if this object created it."""
        self.stop()
        if self._owns_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.is_running() else "stopped"
        return f"<{type(self).__name__} {state} ports={list(self.ports())} dir={self.work_dir}>"
