"""Runs the REST app on waitress inside the worker process, on the ``listeners`` it is given."""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import attrs
from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer, create_server
from waitress.trigger import trigger as WakeTrigger
from waitress.wasyncore import close_all, loop

from rest.access_log import WsgiApp
from rest.context import ConfigSource, setting

__all__ = ["DEFAULT_LISTENERS", "Listener", "RestConfigError", "RestServer", "parse_listeners"]

log = logging.getLogger(__name__)

DEFAULT_LISTENERS = "http://:8083"
DEFAULT_THREADS = 8
# How long the serving loop sleeps in select before noticing a stop request, should the wake-up
# trigger be missed.
_LOOP_TIMEOUT_S = 0.5
# On stop, how long requests already being handled get to finish and send their answers.
_DRAIN_TIMEOUT_S = 5.0

_LISTENER = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<host>\[[^\]]*\]|[^:/\[\]]*):(?P<port>\d+)/?$")


class RestConfigError(ValueError):
    """A REST setting (listeners, rest.advertised.*) that cannot be used; names the key and why."""


@attrs.frozen
class Listener:
    scheme: str
    host: str  # "" means every interface
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def _refuse_https(key: str, value: str) -> RestConfigError:
    return RestConfigError(
        f"{key}: {value!r} asks for HTTPS, which the Headrace REST server does not serve; "
        "use an http:// listener, behind a TLS-terminating proxy if TLS is needed"
    )


def parse_listeners(value: str | Sequence[str]) -> list[Listener]:
    """``listeners`` as Kafka Connect writes it: a comma list of ``http://host:port``."""
    items = value.split(",") if isinstance(value, str) else list(value)
    listeners = []
    for raw in (str(item).strip() for item in items):
        if not raw:
            continue
        match = _LISTENER.match(raw)
        if match is None:
            raise RestConfigError(f"listeners: {raw!r} is not of the form http://host:port (host may be empty)")
        scheme = match["scheme"].lower()
        if scheme == "https":
            raise _refuse_https("listeners", raw)
        if scheme != "http":
            raise RestConfigError(f"listeners: {raw!r} uses protocol {scheme!r}; only http is supported")
        port = int(match["port"])
        if port > 65535:
            raise RestConfigError(f"listeners: {raw!r} has port {port}, above 65535")
        listeners.append(Listener(scheme, match["host"].strip("[]"), port))
    if not listeners:
        raise RestConfigError("listeners: no listener given; set e.g. listeners=http://:8083")
    return listeners


def _bind(listener: Listener) -> socket.socket:
    try:
        if listener.host:
            return socket.create_server((listener.host, listener.port))
        if socket.has_dualstack_ipv6():
            try:
                return socket.create_server(("::", listener.port), family=socket.AF_INET6, dualstack_ipv6=True)
            except OSError:
                pass  # IPv6 present but unusable here (e.g. disabled in a container): IPv4 only.
        return socket.create_server(("0.0.0.0", listener.port))
    except OSError as e:
        raise OSError(e.errno, f"Cannot listen on {listener} for the REST API: {e.strerror or e}") from e


class RestServer:
    """Serves ``app`` on every listener from ``worker_config`` in one daemon thread.

    Usage: ``server = RestServer(app, config); server.start(); ... server.stop()``. Port 0 binds a
    free port; ``port`` and ``url`` then give the one bound.
    """

    def __init__(self, app: WsgiApp, worker_config: ConfigSource, threads: int = DEFAULT_THREADS) -> None:
        self._app = app
        self._config = worker_config
        self._threads = threads
        self.listeners = parse_listeners(setting(worker_config, "listeners", DEFAULT_LISTENERS))
        self._advertised_listener = self._read_advertised_listener()
        self._advertised_host: str | None = setting(worker_config, "rest.advertised.host.name") or None
        self._advertised_port = self._read_advertised_port()
        self._map: dict[int, Any] = {}
        self._server: Any = None
        self._bound: list[tuple[str, int]] = []
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()

    def _read_advertised_listener(self) -> str | None:
        value = setting(self._config, "rest.advertised.listener")
        if value is None or not str(value).strip():
            return None
        protocol = str(value).strip().lower()
        if protocol == "https":
            raise _refuse_https("rest.advertised.listener", str(value))
        if protocol != "http":
            raise RestConfigError(f"rest.advertised.listener: {value!r} is not a protocol; use http")
        return protocol

    def _read_advertised_port(self) -> int | None:
        value = setting(self._config, "rest.advertised.port")
        if value is None or str(value).strip() == "":
            return None
        try:
            port = int(value)
        except (TypeError, ValueError):
            raise RestConfigError(f"rest.advertised.port: {value!r} is not a port number") from None
        if not 0 < port <= 65535:
            raise RestConfigError(f"rest.advertised.port: {port} is not between 1 and 65535")
        return port

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("REST server already started")
            sockets = []
            try:
                for listener in self.listeners:
                    sockets.append(_bind(listener))
            except OSError:
                for sock in sockets:
                    sock.close()
                raise
            self._server = create_server(
                self._app, map=self._map, sockets=sockets, threads=self._threads, ident="headrace"
            )
            self._bound = [sock.getsockname()[:2] for sock in sockets]
            self._thread = threading.Thread(target=self._serve, name="rest-server", daemon=True)
            self._thread.start()
        log.info("REST server listening on %s; advertised URL %s", ", ".join(self.urls), self.advertised_url())

    def _busy(self) -> bool:
        return any(
            isinstance(d, HTTPChannel) and (d.requests or d.total_outbufs_len) for d in list(self._map.values())
        )

    def _serve(self) -> None:
        # Every socket is opened and closed on this thread, so select() never sees a closed descriptor.
        try:
            while not self._stopping.is_set() and self._map:
                loop(timeout=_LOOP_TIMEOUT_S, map=self._map, count=1)
            for dispatcher in list(self._map.values()):
                if isinstance(dispatcher, BaseWSGIServer):
                    dispatcher.close()  # stop accepting; connections already open may finish
            deadline = time.monotonic() + _DRAIN_TIMEOUT_S
            while self._busy() and time.monotonic() < deadline:
                loop(timeout=0.05, map=self._map, count=1)
        except Exception:
            log.exception("REST server loop failed")
        finally:
            close_all(self._map)
            self._server.task_dispatcher.shutdown(cancel_pending=True, timeout=_DRAIN_TIMEOUT_S)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, let requests in flight finish (up to 5 s), close every socket. Idempotent."""
        thread = self._thread
        if thread is None or self._stopping.is_set():
            if thread is not None:
                thread.join(timeout)
            return
        self._stopping.set()
        for dispatcher in list(self._map.values()):
            if isinstance(dispatcher, WakeTrigger):
                try:
                    dispatcher.pull_trigger()
                except OSError:
                    pass  # the loop saw the stop first and has already closed the trigger: nothing to wake
                break
        thread.join(timeout)
        if thread.is_alive():
            log.warning("REST server thread did not stop within %.0f s", timeout)
        else:
            log.info("REST server stopped")

    def __enter__(self) -> RestServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- addresses -------------------------------------------------------------------------
    @property
    def bound_addresses(self) -> list[tuple[str, int]]:
        """(host, port) actually bound for each listener, in ``listeners`` order."""
        if not self._bound:
            raise RuntimeError("REST server not started")
        return list(self._bound)

    @property
    def port(self) -> int:
        """The port bound for the first listener (the real one when it asked for port 0)."""
        return self.bound_addresses[0][1]

    @property
    def urls(self) -> list[str]:
        out = []
        for listener, (_, port) in zip(self.listeners, self.bound_addresses, strict=True):
            out.append(str(Listener(listener.scheme, listener.host or "0.0.0.0", port)))
        return out

    @property
    def url(self) -> str:
        """A URL reaching the first listener from this host (loopback when it binds every interface)."""
        listener = self.listeners[0]
        host = listener.host if listener.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        return str(Listener(listener.scheme, host, self.port))

    def advertised_url(self) -> str:
        """The URL other workers use to reach this one, as Kafka Connect builds it: protocol from
        rest.advertised.listener (else the first listener), host from rest.advertised.host.name
        (else the listener's, else this machine's name), port from rest.advertised.port (else the
        bound one). Ends with a slash, like Kafka's."""
        protocol = self._advertised_listener or self.listeners[0].scheme
        candidates = [i for i, lst in enumerate(self.listeners) if lst.scheme == protocol] or [0]
        listener = self.listeners[candidates[0]]
        host = self._advertised_host or listener.host
        if not host or host in ("0.0.0.0", "::"):
            host = socket.getfqdn() or socket.gethostname()
        if self._advertised_port is not None:
            port = self._advertised_port
        elif self._bound:
            port = self._bound[candidates[0]][1]
        else:
            port = listener.port
        return f"{Listener(protocol, host, port)}/"
