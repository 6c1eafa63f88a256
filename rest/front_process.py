"""The worker's side of the REST front process: starts it, feeds it statuses, serves what it passes on.

With ``rest.separate.process=true`` the worker does not listen on ``listeners`` itself. It serves its REST
app on a Unix socket in a directory only its user can enter, starts ``python -m rest.front`` (which binds
the listeners) and sends it every change of the status listing (rest.status_publisher). If the front
process dies, the worker is told through ``on_exit`` and stops: an operator would otherwise have a worker
that runs connectors but cannot be reached.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from werkzeug.middleware.proxy_fix import ProxyFix

from connect.runtime.herder import Herder
from rest.access_log import WsgiApp
from rest.front_channel import FAILED, READY, SETTINGS, WANT, ChannelClosed, FrontChannel
from rest.server import DEFAULT_THREADS, RequestObserver, RestServer
from rest.status_publisher import StatusPublisher

__all__ = ["FrontLaunch", "RestFrontProcess"]

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 60.0
_STOP_TIMEOUT_S = 10.0


class FrontLaunch:
    """The front process started ahead of the worker's own start-up, so that its imports (Flask, httpx) run
    beside the worker's; it waits for its settings until ``RestFrontProcess.start`` sends them."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self.process = subprocess.Popen([sys.executable, "-m", "rest.front", str(theirs.fileno())],
                                            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self.socket = ours

    def close(self) -> None:
        """The front was never used (the worker failed to start): it exits when its channel closes."""
        self.socket.close()
        try:
            self.process.wait(_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class RestFrontProcess:
    """``start()`` returns once the front listens (OSError with its reason if it cannot); ``stop()`` ends it."""

    def __init__(self, herder: Herder, app: WsgiApp, worker_config: Mapping[str, Any],
                 on_exit: Callable[[str], None], request_observer: RequestObserver | None = None,
                 threads: int = DEFAULT_THREADS, launch: FrontLaunch | None = None) -> None:
        self._launch = launch
        self._herder = herder
        self._config = dict(worker_config)
        self._on_exit = on_exit
        self._threads = threads
        self._dir = tempfile.mkdtemp(prefix="headrace-rest-")  # 0700: only this user reaches the socket
        self._socket_path = os.path.join(self._dir, "worker.sock")
        # the front passes the client's address and scheme; they are believed on this private socket only
        self._server = RestServer(ProxyFix(app, x_for=1, x_proto=1), worker_config, threads=threads,
                                  request_observer=request_observer, unix_socket=self._socket_path)
        self._process: subprocess.Popen[bytes] | None = None
        self._channel: FrontChannel | None = None
        self._publisher: StatusPublisher | None = None
        self._reader: threading.Thread | None = None
        self._stopping = threading.Event()
        self.urls: list[str] = []

    def start(self) -> None:
        self._server.start()
        launch, self._launch = self._launch or FrontLaunch(), None
        self._process, ours = launch.process, launch.socket
        self._channel = channel = FrontChannel(ours)
        ours.settimeout(_START_TIMEOUT_S)
        try:
            channel.send(SETTINGS, orjson.dumps({"config": self._config, "socket": self._socket_path,
                                                 "threads": self._threads}, default=str))
            kind, payload = channel.receive()
        except (ChannelClosed, OSError) as e:
            self.stop()
            raise OSError(f"The REST front process did not start: {e}") from e
        if kind != READY:
            self.stop()
            raise OSError(payload.decode("utf-8", "replace") if kind == FAILED
                          else f"The REST front process sent {kind!r} instead of READY")
        ours.settimeout(None)
        self.urls = orjson.loads(payload)["urls"]
        self._publisher = StatusPublisher(self._herder, channel.send_snapshot)
        self._publisher.start()
        self._reader = threading.Thread(target=self._read, name="rest-front-channel", daemon=True)
        self._reader.start()
        log.info("REST front process %d listening on %s", self._process.pid, ", ".join(self.urls))

    def _read(self) -> None:
        assert self._channel is not None and self._publisher is not None
        try:
            while True:
                kind, _ = self._channel.receive()
                if kind == WANT:
                    self._publisher.want()
        except ChannelClosed:
            pass
        if not self._stopping.is_set():
            code = self._process.wait() if self._process is not None else None
            self._on_exit(f"The REST front process exited (code {code}); the worker stops, as nothing can "
                          "reach its REST API")

    def stop(self) -> None:
        """Stop the front (its requests under way finish first), then the worker's own server. Idempotent."""
        self._stopping.set()
        if self._launch is not None:  # never started
            self._launch.close()
        if self._publisher is not None:
            self._publisher.stop()
        if self._channel is not None:
            self._channel.close()  # the front's signal to stop
        if self._process is not None:
            try:
                self._process.wait(_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                log.warning("The REST front process did not stop within %.0f s; killing it", _STOP_TIMEOUT_S)
                self._process.kill()
                self._process.wait()
        self._server.stop()
        shutil.rmtree(self._dir, ignore_errors=True)
