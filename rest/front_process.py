"""The worker's side of the REST front process: starts it, feeds it statuses, serves what it passes on.

With ``rest.separate.process=true`` the worker does not listen on ``listeners`` itself. It serves its REST
app on a Unix socket in a directory only its user can enter, starts the front (``rest.front``, which binds
the listeners: a fork of the worker while it is one thread, else ``python -m rest.front``) and sends it every
change of the status listing (rest.status_publisher). If the front process dies, the worker is told through
``on_exit`` and stops: an operator would otherwise have a worker that runs connectors but cannot be reached.
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from werkzeug.middleware.proxy_fix import ProxyFix

from connect.runtime.herder import Herder
from rest.access_log import WsgiApp
from rest.front_channel import FAILED, READY, SERVING, SETTINGS, WANT, ChannelClosed, FrontChannel
from rest.server import DEFAULT_THREADS, RequestObserver, RestServer
from rest.status_publisher import StatusPublisher

__all__ = ["ForkedFront", "FrontLaunch", "RestFrontProcess"]

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 60.0
_STOP_TIMEOUT_S = 10.0
# how often the worker looks whether its herder can take requests yet, while it starts: a client waiting for
# GET / waits at most this much longer than it must
_READY_POLL_S = 0.05


class ForkedFront:
    """The front process as a fork of this one, made while the worker is still one thread: it starts with the
    modules the worker already has (Flask, cheroot), where ``python -m rest.front`` paid a new interpreter and
    imported them again, about a third of a CPU-second of every worker start. It then runs what
    ``python -m rest.front FD`` runs, with the same file descriptors: standard output and error, ``/dev/null``
    as input and the channel's end. The ``wait`` and ``kill`` of ``subprocess.Popen``, with its exit codes."""

    def __init__(self, channel_fd: int) -> None:
        import rest.front
        import rest.worker_proxy  # noqa: F401  (imported by the front once it runs: here, once for both)

        sys.stdout.flush()
        sys.stderr.flush()
        # What both processes hold now is out of the collector's walks in both (as Python's gc.freeze documents
        # for a fork): a collection in either would otherwise write to every object's header, and so copy each
        # page the two still share. The worker's collector is held back while it starts (gc_policy).
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the front: never returns to the worker's code
            code = 1
            try:
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                # as Popen's close_fds: the worker's end of the channel above all, or the front would never
                # see it close when the worker dies
                os.closerange(3, channel_fd)
                os.closerange(channel_fd + 1, os.sysconf("SC_OPEN_MAX"))
                # its lines name the logger as under ``python -m rest.front``
                rest.front.log = logging.getLogger("__main__")
                rest.front.FORKED_FROM_WORKER = True
                code = rest.front.main([str(channel_fd)])
                logging.shutdown()
            finally:
                os._exit(code)
        self.pid = pid
        self.returncode: int | None = None
        # the channel's reader and the worker's stop may both wait: only one may reap the process
        self._reaping = threading.Lock()

    def poll(self) -> int | None:
        with self._reaping:
            if self.returncode is None:
                done, status = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"rest.front (pid {self.pid})", timeout or 0.0)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class FrontLaunch:
    """The front process, started and sent its settings as soon as the worker has read its config: it binds
    the listeners while the worker loads its plugins and state, and ``RestFrontProcess.start`` then only
    waits for its answer. Requests that reach it before the worker can take them get 503 (rest.front)."""

    def __init__(self, worker_config: Mapping[str, Any], threads: int = DEFAULT_THREADS) -> None:
        self.threads = threads
        self.directory = tempfile.mkdtemp(prefix="headrace-rest-")  # 0700: only this user reaches the socket
        self.socket_path = os.path.join(self.directory, "worker.sock")
        ours, theirs = socket.socketpair()
        # The front inherits this thread's signal mask: with SIGINT and SIGTERM blocked from before the fork
        # until it ignores them (rest.front.main), a Ctrl-C to the process group never reaches it while it
        # starts (a KeyboardInterrupt traceback, or a front killed under a worker that goes on). Here they are
        # only held back for the fork: the worker's handlers run once they are unblocked.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))
        try:
            self.process: subprocess.Popen[bytes] | ForkedFront = (
                ForkedFront(theirs.fileno()) if threading.active_count() == 1 else
                subprocess.Popen([sys.executable, "-m", "rest.front", str(theirs.fileno())],
                                 pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            theirs.close()
        self.channel = FrontChannel(ours)
        self._socket = ours
        try:
            # secrets among the settings (TLS passwords) stay on this private channel: no file, no argument
            self.channel.send(SETTINGS, orjson.dumps({"config": dict(worker_config), "socket": self.socket_path,
                                                      "threads": threads}, default=str))
        except OSError:
            pass  # the front died at once: its answer, read in wait_ready, says so

    def wait_ready(self, timeout: float = _START_TIMEOUT_S) -> list[str]:
        """The front's listener URLs once it listens; OSError with its reason if it cannot."""
        self._socket.settimeout(timeout)
        try:
            kind, payload = self.channel.receive()
        except (ChannelClosed, OSError) as e:
            raise OSError(f"The REST front process did not start: {e}") from e
        finally:
            self._socket.settimeout(None)
        if kind != READY:
            raise OSError(payload.decode("utf-8", "replace") if kind == FAILED
                          else f"The REST front process sent {kind!r} instead of READY")
        urls: list[str] = orjson.loads(payload)["urls"]
        return urls

    def close(self) -> None:
        """Stop the front: it finishes the requests under way and exits when its channel closes. Idempotent."""
        self.channel.close()
        try:
            self.process.wait(_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.warning("The REST front process did not stop within %.0f s; killing it", _STOP_TIMEOUT_S)
            self.process.kill()
            self.process.wait()

    def remove_directory(self) -> None:
        """Once nothing serves the worker's socket any more."""
        shutil.rmtree(self.directory, ignore_errors=True)


class RestFrontProcess:
    """``start()`` returns once the front listens (OSError with its reason if it cannot); ``stop()`` ends it."""

    def __init__(self, herder: Herder, app: WsgiApp, launch: FrontLaunch, on_exit: Callable[[str], None],
                 request_observer: RequestObserver | None = None) -> None:
        self._launch = launch
        self._herder = herder
        self._on_exit = on_exit
        # the front passes the client's address and scheme; they are believed on this private socket only
        self._server = RestServer(ProxyFix(app, x_for=1, x_proto=1), {}, threads=launch.threads,
                                  request_observer=request_observer, unix_socket=launch.socket_path)
        self._publisher: StatusPublisher | None = None
        self._reader: threading.Thread | None = None
        self._stopping = threading.Event()
        self.urls: list[str] = []

    def start(self) -> None:
        self._server.start()
        try:
            self.urls = self._launch.wait_ready()
        except OSError:
            self.stop()
            raise
        self._publisher = StatusPublisher(self._herder, self._launch.channel.send_snapshot)
        self._reader = threading.Thread(target=self._read, name="rest-front-channel", daemon=True)
        self._reader.start()
        threading.Thread(target=self._announce_serving, name="rest-front-readiness", daemon=True).start()
        log.info("REST front process %d listening on %s; it passes requests on to this worker at %s",
                 self._launch.process.pid, ", ".join(self.urls), self._launch.socket_path)

    def _announce_serving(self) -> None:
        """Once the herder can take requests: tell the front, which refuses them until then, and only then
        start sending statuses, so that none is answered from a worker still starting."""
        assert self._publisher is not None
        while not self._herder.is_ready():
            if self._stopping.wait(_READY_POLL_S):
                return
        try:
            self._launch.channel.send(SERVING)
        except ChannelClosed:
            return  # the front is gone: _read reports it
        self._publisher.start()

    def _read(self) -> None:
        assert self._publisher is not None
        try:
            while True:
                kind, _ = self._launch.channel.receive()
                if kind == WANT:
                    self._publisher.want()
        except ChannelClosed:
            pass
        if not self._stopping.is_set():
            code = self._launch.process.wait()
            self._on_exit(f"The REST front process exited (code {code}); the worker stops, as nothing can "
                          "reach its REST API")

    def stop(self) -> None:
        """Stop the front (its requests under way finish first), then the worker's own server. Idempotent."""
        self._stopping.set()
        if self._publisher is not None:
            self._publisher.stop()
        self._launch.close()
        self._server.stop()
        self._launch.remove_directory()
