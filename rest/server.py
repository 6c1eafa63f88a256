"""Runs the REST app on cheroot inside the worker process, on the ``listeners`` it is given."""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import queue
import re
import socket
import ssl
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import attrs
import orjson

from connect.api.http_listener import GuardedConnection, GuardedServer, ListenerLimits
from connect.runtime.worker_identity import advertised_host
from rest.access_log import WsgiApp
from rest.auth import basic_auth_enabled
from rest.context import ConfigSource, setting
from rest.responses import RestConfigError
from rest.tls import ssl_adapter

__all__ = ["DEFAULT_LISTENERS", "Listener", "RequestObserver", "RestConfigError", "RestServer", "listener_limits",
           "parse_listeners"]

log = logging.getLogger(__name__)

# Loopback by default, unlike Kafka Connect's http://:8083: an API that creates connectors (and so runs
# code and reads files) is reachable from other hosts only when the operator says so.
DEFAULT_LISTENERS = "http://127.0.0.1:8083"
DEFAULT_THREADS = 8
# On stop, how long requests already being handled get to finish and send their answers.
_DRAIN_TIMEOUT_S = 5
# Request line and headers together (cheroot reads them unbounded by default); Jetty under Kafka
# Connect allows 8 KiB, and an Authorization header or a long query fit well within this.
MAX_REQUEST_HEADER_BYTES = 64 * 1024
_DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024  # rest.request.max.bytes (rest.guards reads it for the app)

# The bounds of each REST listener: (setting, default, least allowed). The request threads never wait for a
# client: a request reaches one only once it has all arrived (connect.api.http_listener).
HEADER_TIMEOUT_CONFIG = "rest.request.header.timeout.ms"
BODY_TIMEOUT_CONFIG = "rest.request.body.timeout.ms"
IDLE_TIMEOUT_CONFIG = "rest.idle.timeout.ms"
MAX_CONNECTIONS_CONFIG = "rest.max.connections"
_BOUNDS = {
    HEADER_TIMEOUT_CONFIG: (10_000, 100),
    BODY_TIMEOUT_CONFIG: (30_000, 100),
    # Jetty's idle timeout under Kafka Connect
    IDLE_TIMEOUT_CONFIG: (30_000, 100),
    MAX_CONNECTIONS_CONFIG: (1000, 1),
}

_LISTENER = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<host>\[[^\]]*\]|[^:/\[\]]*):(?P<port>\d+)/?$")
_SCHEMES = ("http", "https")


@attrs.frozen
class Listener:
    scheme: str
    host: str  # "" means every interface
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def every_interface(self) -> bool:
        return self.host in ("", "0.0.0.0", "::")


def parse_listeners(value: str | Sequence[str]) -> list[Listener]:
    """``listeners`` as Kafka Connect writes it: a comma list of ``http://host:port`` / ``https://host:port``."""
    items = value.split(",") if isinstance(value, str) else list(value)
    listeners = []
    for raw in (str(item).strip() for item in items):
        if not raw:
            continue
        match = _LISTENER.match(raw)
        if match is None:
            raise RestConfigError(f"listeners: {raw!r} is not of the form http://host:port (host may be empty)")
        scheme = match["scheme"].lower()
        if scheme not in _SCHEMES:
            raise RestConfigError(f"listeners: {raw!r} uses protocol {scheme!r}; only http and https are supported")
        port = int(match["port"])
        if port > 65535:
            raise RestConfigError(f"listeners: {raw!r} has port {port}, above 65535")
        listeners.append(Listener(scheme, match["host"].strip("[]"), port))
    if not listeners:
        raise RestConfigError("listeners: no listener given; set e.g. listeners=http://127.0.0.1:8083")
    return listeners


def _bound(config: ConfigSource, key: str) -> int:
    default, least = _BOUNDS[key]
    value = setting(config, key, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise RestConfigError(f"{key}: {value!r} is not a whole number") from None
    if number < least:
        raise RestConfigError(f"{key}: {number} is below the least allowed, {least}")
    return number


def listener_limits(config: ConfigSource) -> ListenerLimits:
    """The bounds of the REST listeners from the worker config (RestConfigError naming a bad setting)."""
    body_value = setting(config, "rest.request.max.bytes", _DEFAULT_MAX_BODY_BYTES)
    try:
        max_body = int(body_value)
    except (TypeError, ValueError):
        raise RestConfigError(f"rest.request.max.bytes: {body_value!r} is not a number of bytes") from None
    return ListenerLimits(
        header_timeout=_bound(config, HEADER_TIMEOUT_CONFIG) / 1000,
        body_timeout=_bound(config, BODY_TIMEOUT_CONFIG) / 1000,
        idle_timeout=_bound(config, IDLE_TIMEOUT_CONFIG) / 1000,
        max_connections=_bound(config, MAX_CONNECTIONS_CONFIG),
        max_header_bytes=MAX_REQUEST_HEADER_BYTES,
        max_body_bytes=max(1, max_body),
        keys={"header_timeout": HEADER_TIMEOUT_CONFIG, "body_timeout": BODY_TIMEOUT_CONFIG,
              "max_connections": MAX_CONNECTIONS_CONFIG, "idle_timeout": IDLE_TIMEOUT_CONFIG},
    )


class RequestObserver(Protocol):
    """Told when a request arrives (before a pool thread picks it up) and when it has been answered."""

    def request_started(self) -> None: ...

    def request_finished(self) -> None: ...


class _ObservedConnection(GuardedConnection):
    """A connection that tells the server's observer when the request it was handed for is done."""

    def communicate(self) -> bool:
        try:
            return bool(super().communicate())
        finally:
            observer = getattr(self.server, "request_observer", None)
            if observer is not None:
                observer.request_finished()


class _CherootServer(GuardedServer):
    """The guarded cheroot server, reporting its own errors through logging instead of stderr, and answering
    the refusals it makes itself (408, 503) in the REST API's JSON."""

    ConnectionClass = _ObservedConnection
    request_observer: RequestObserver | None = None

    def error_log(self, msg: str = "", level: int = logging.INFO, traceback: bool = False) -> None:
        log.log(level, "REST server: %s", msg, exc_info=traceback)

    def refusal(self, status: int, message: str) -> tuple[str, bytes]:
        return "application/json", orjson.dumps({"error_code": status, "message": message})

    def process_conn(self, conn: Any) -> None:
        """A connection with a whole request to serve: to the pool."""
        observer = self.request_observer
        if observer is None:
            super().process_conn(conn)
            return
        observer.request_started()
        try:
            self.requests.put(conn)
        except queue.Full:  # cheroot answers it 503 on another thread; no request of ours runs
            observer.request_finished()
            self._unservicable_conns.put(conn)  # type: ignore[attr-defined]


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind_addresses(listener: Listener) -> list[tuple[str, int]]:
    if listener.host and not listener.every_interface:
        return [(listener.host, listener.port)]
    if listener.host == "0.0.0.0":
        return [("0.0.0.0", listener.port)]
    # Every interface: dual-stack IPv6 when the host has it (cheroot turns IPV6_V6ONLY off), else IPv4.
    if socket.has_ipv6:
        return [("::", listener.port), ("0.0.0.0", listener.port)]
    return [("0.0.0.0", listener.port)]


def _bind_error(listener: Listener) -> int | None:
    """Why ``listener`` cannot be bound, as an errno: cheroot's error keeps only a text."""
    for host, port in _bind_addresses(listener):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as cheroot binds
                probe.bind((host, port))
        except OSError as e:
            return e.errno
    return None


def _listen_failure(listener: Listener, error: OSError) -> str:
    """The line a listener that cannot be bound becomes, naming the setting to change."""
    code = _bind_error(listener)
    if code == errno.EADDRINUSE:
        return f"listeners={listener}: the port is in use by another process; choose another port in listeners"
    if code == errno.EACCES:
        return (f"listeners={listener}: this user may not listen on port {listener.port}; choose a port above "
                "1023 in listeners")
    if code == errno.EADDRNOTAVAIL:
        return (f"listeners={listener}: {listener.host} is not an address of this host; choose one of its "
                "addresses, or 0.0.0.0, in listeners")
    return f"Cannot listen on {listener} for the REST API: {error.strerror or error}"


class RestServer:
    """Serves ``app`` on every listener from ``worker_config``, one cheroot server per listener.

    Usage: ``server = RestServer(app, config); server.start(); ... server.stop()``. Port 0 binds a
    free port; ``port`` and ``url`` then give the one bound.
    """

    def __init__(self, app: WsgiApp, worker_config: ConfigSource, threads: int = DEFAULT_THREADS,
                 request_observer: RequestObserver | None = None, unix_socket: str | None = None,
                 announce: bool = True) -> None:
        """``unix_socket``: serve on that socket path only (made readable by this user alone), not on the
        listeners: the worker's server behind a REST front process. ``announce=False``: ``start`` does not
        log the listening line (the REST front process binds before the worker has accepted its config, and
        the worker logs it once it has)."""
        self._app = app
        self._announce = announce
        self._unix_socket = unix_socket
        self._request_observer = request_observer
        self._config = worker_config
        self._threads = threads
        self.listeners = parse_listeners(setting(worker_config, "listeners", DEFAULT_LISTENERS))
        self.limits = listener_limits(worker_config)
        self._advertised_listener = self._read_advertised_listener()
        self._advertised_host: str | None = setting(worker_config, "rest.advertised.host.name") or None
        self._advertised_port = self._read_advertised_port()
        self._ssl_adapter: Any = None
        if any(listener.scheme == "https" for listener in self.listeners):
            self._ssl_adapter = ssl_adapter(worker_config)
        self._servers: list[_CherootServer] = []
        self._threads_serving: list[threading.Thread] = []
        self._bound: list[tuple[str, int]] = []
        self._started = False
        self._stopped = False
        self._lock = threading.Lock()

    def _read_advertised_listener(self) -> str | None:
        value = setting(self._config, "rest.advertised.listener")
        if value is None or not str(value).strip():
            return None
        protocol = str(value).strip().lower()
        if protocol not in _SCHEMES:
            raise RestConfigError(f"rest.advertised.listener: {value!r} is not a protocol; use http or https")
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
    def _server(self, address: Any) -> _CherootServer:
        name = "REST server" if self._unix_socket is None else "REST server (for the REST front)"
        server = _CherootServer(address, self._app, self.limits, name, numthreads=self._threads,
                                server_name="headrace", shutdown_timeout=_DRAIN_TIMEOUT_S)
        server.software = "headrace"
        server.request_observer = self._request_observer
        return server

    def _prepare_unix(self, path: str) -> _CherootServer:
        server = self._server(path)
        server.prepare()
        os.chmod(path, 0o600)
        return server

    def _prepare(self, listener: Listener) -> _CherootServer:
        """A cheroot server bound and listening on ``listener`` (not yet serving)."""
        last: OSError | None = None
        for address in _bind_addresses(listener):
            server = self._server(address)
            if listener.scheme == "https":
                server.ssl_adapter = self._ssl_adapter
            try:
                server.prepare()
                return server
            except OSError as e:
                last = e
        assert last is not None
        # one argument: its text alone is the error line, without an "[Errno n]" before it
        raise OSError(_listen_failure(listener, last)) from last

    def start(self) -> None:
        with self._lock:
            if self._started:
                raise RuntimeError("REST server already started")
            self._started = True
            try:
                if self._unix_socket is not None:
                    self._servers.append(self._prepare_unix(self._unix_socket))
                else:
                    for listener in self.listeners:
                        self._servers.append(self._prepare(listener))
            except BaseException:
                for server in self._servers:
                    server.stop()
                self._servers.clear()
                raise
            if self._unix_socket is None:
                self._bound = [server.bind_addr[:2] for server in self._servers]
            for index, server in enumerate(self._servers):
                thread = threading.Thread(target=self._serve, args=(server,), name=f"rest-server-{index}",
                                          daemon=True)
                self._threads_serving.append(thread)
                thread.start()
        if self._unix_socket is not None:
            # a private detail, logged by the worker with the front's listeners once the front listens
            log.debug("REST server listening on %s, for the REST front process", self._unix_socket)
            return
        if self._announce:
            log.info("REST server listening on %s; advertised URL %s", ", ".join(self.urls), self.advertised_url())
        self._warn_if_exposed()

    def _warn_if_exposed(self) -> None:
        if basic_auth_enabled(self._config):
            return
        # An https listener that requires client certificates authenticates its callers itself.
        mutual_tls = self._ssl_adapter is not None and self._ssl_adapter.context.verify_mode == ssl.CERT_REQUIRED
        exposed = [str(listener) for listener in self.listeners
                   if not _is_loopback(listener.host) and not (listener.scheme == "https" and mutual_tls)]
        if exposed:
            log.warning(
                "The REST API on %s is reachable from other hosts and has no authentication: anyone who "
                "can reach it can create connectors, which read and write files and run plugins on this "
                "host. Listen on 127.0.0.1, or enable basic authentication (rest.extension.classes)",
                ", ".join(exposed),
            )

    @staticmethod
    def _serve(server: _CherootServer) -> None:
        try:
            server.serve()
        except Exception:
            log.exception("REST server loop failed")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, let requests in flight finish (up to 5 s), close every socket. Idempotent."""
        with self._lock:
            if not self._started or self._stopped:
                return
            self._stopped = True
        for server in self._servers:
            server.stop()  # cheroot: closes the listening socket, then waits for requests in flight
        for thread in self._threads_serving:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("REST server thread %s did not stop within %.0f s", thread.name, timeout)
        # the worker's private server behind a REST front was never announced either
        log.log(logging.INFO if self._unix_socket is None else logging.DEBUG, "REST server stopped")

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
        host = "127.0.0.1" if listener.every_interface else listener.host
        return str(Listener(listener.scheme, host, self.port))

    def advertised_url(self) -> str:
        """The URL other workers use to reach this one, as Kafka Connect builds it: protocol from
        rest.advertised.listener (else the first listener), host from rest.advertised.host.name
        (else the listener's, else this machine's name), port from rest.advertised.port (else the
        bound one). Ends with a slash, like Kafka's."""
        protocol = self._advertised_listener or self.listeners[0].scheme
        candidates = [i for i, lst in enumerate(self.listeners) if lst.scheme == protocol] or [0]
        listener = self.listeners[candidates[0]]
        host = advertised_host(self._advertised_host, listener.host)
        if self._advertised_port is not None:
            port = self._advertised_port
        elif self._bound:
            port = self._bound[candidates[0]][1]
        else:
            port = listener.port
        return f"{Listener(protocol, host, port)}/"
