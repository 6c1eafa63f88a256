"""The REST front process: the worker's listeners, served apart from the tasks' GIL (``rest.separate.process``).

In one Python process, tasks moving records at full speed hold the GIL nearly all the time, and each REST
request waits behind them several times (accept, hand-off, read, write). Here the listeners live in a
process of their own. It answers ``GET /connectors?expand=status`` and ``GET /connectors/{name}/status``
from the statuses the worker sends it (rest.status_mirror), after the same host, size, authentication and
CORS checks the worker makes, and passes every other request to the worker's REST server on a private Unix
socket (rest.worker_proxy).

Started by the worker (rest.front_process) as ``python -m rest.front FD``, with FD one end of a socketpair
(rest.front_channel) on which the worker's settings arrive first. It stops when the channel closes: the
worker stopped, or died.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

import orjson
from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from connect.runtime.gc_policy import settle_heap
from rest.access_log import AccessLogMiddleware, WsgiApp, printable
from rest.auth import install_basic_auth
from rest.context import ConfigSource, setting
from rest.cors import install_cors
from rest.front_channel import FAILED, READY, SERVING, SETTINGS, SNAPSHOT, WANT, ChannelClosed, FrontChannel
from rest.guards import install_guards, max_body_bytes
from rest.json_provider import OrjsonProvider
from rest.readiness import HEALTH_PATH, STARTING_MESSAGE, under_schema_registry
from rest.reason_phrases import StandardReasonPhrases
from rest.responses import (
    INTERNAL_ERROR_MESSAGE,
    RestConfigError,
    RestError,
    error_response,
    starting_response,
)
from rest.server import RestServer
from rest.status_mirror import StatusMirror
from rest.url_rules import LazyBuildRule

__all__ = ["FrontApp", "create_status_app", "main"]

log = logging.getLogger(__name__)

# set in a front forked from the worker (rest.front_process.ForkedFront), which starts with the worker's heap
FORKED_FROM_WORKER = False

# the two reads the front answers itself; everything else (and these, when it cannot) goes to the worker
_STATUS_READ = re.compile(r"^/connectors(?:/[^/]+/status)?/?$")
# reads the worker answers that show statuses or counters: the front's older snapshots must not follow them
_SHOWS_STATUSES = re.compile(r"^/(?:connectors/[^/]+/(?:tasks/[^/]+/)?status|metrics)/?$")
_READS = ("GET", "HEAD", "OPTIONS")


def _shows_statuses(environ: dict[str, Any]) -> bool:
    path = environ.get("PATH_INFO", "")
    if path.rstrip("/") == "/connectors":
        return "status" in environ.get("QUERY_STRING", "")
    return _SHOWS_STATUSES.match(path) is not None


def _is_status_listing(query: str) -> bool:
    """``?expand=status`` and nothing else: the listing the front answers (other expansions need configs)."""
    return parse_qs(query) == {"expand": ["status"]}


def _is_front_read(environ: dict[str, Any]) -> bool:
    """One of the two reads the front answers itself, passed on only because its snapshot could not."""
    path = environ.get("PATH_INFO", "")
    if path.rstrip("/") == "/connectors":
        return _is_status_listing(environ.get("QUERY_STRING", ""))
    return _STATUS_READ.match(path) is not None


def _note_answer(environ: dict[str, Any], sent_at: float, mirror: StatusMirror) -> None:
    """A request the worker answered, sent to it at ``sent_at``: snapshots older than a write's answer, or than
    a status read's sending, may show less than the client has seen."""
    if environ.get("REQUEST_METHOD") not in _READS:
        mirror.answered()
    elif _shows_statuses(environ) and not _is_front_read(environ):
        # what it showed was gathered after the request was sent, so snapshots taken since show as much but
        # for changes in the moments the worker took to answer; waiting for snapshots newer than the answers
        # instead made each slow answer under load discard the snapshot that came meanwhile. The front's own
        # reads, passed on while its snapshot is missing or stale, do not count, for the same reason: each
        # would discard the snapshot asked for meanwhile, and every read went to the worker
        mirror.answered(sent_at)


def _starting_response(path: str) -> Response:
    """What the worker itself answers while it starts (rest.app): /health its KIP-1017 body, the rest 503."""
    if path.rstrip("/") == HEALTH_PATH:
        return Response(orjson.dumps({"status": "starting", "message": STARTING_MESSAGE}), status=503,
                        mimetype="application/json")
    return starting_response()


def create_status_app(worker_config: ConfigSource, mirror: StatusMirror, worker: WsgiApp,
                      serving: threading.Event | None = None) -> Flask:
    """The status reads over ``mirror``, behind the worker's own guards, authentication and CORS; a read the
    mirror cannot answer goes to ``worker``. Until ``serving`` is set, every request is answered as the worker
    answers while it starts (rest.readiness)."""
    app = Flask("rest.front")
    app.url_rule_class = LazyBuildRule
    app.url_map.strict_slashes = False
    app.url_map.merge_slashes = False
    app.json = OrjsonProvider(app)
    install_guards(app, worker_config)
    install_basic_auth(app, worker_config)
    install_cors(app, str(setting(worker_config, "access.control.allow.origin", "")),
                 str(setting(worker_config, "access.control.allow.methods", "")))

    @app.before_request
    def refuse_until_serving() -> Response | None:
        # the front listens while the worker still loads; nothing may look ready before the worker is
        if serving is None or serving.is_set():
            return None
        return _starting_response(request.path)

    def answer(body: bytes | None) -> Any:
        if body is None:
            return worker  # Flask runs a returned WSGI app as the response
        return app.response_class(body, mimetype="application/json")

    @app.get("/connectors")
    def listing() -> Any:
        if _is_status_listing(request.query_string.decode("latin-1")):
            return answer(mirror.listing())
        return worker

    @app.get("/connectors/<connector>/status")
    def status(connector: str) -> Any:
        return answer(mirror.status(connector))

    @app.errorhandler(RestError)
    def rest_error(e: RestError) -> Response:
        return error_response(e.status, e.message)

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException) -> Response:
        return error_response(e.code or 500, f"{e.name}: {e.description}" if e.description else e.name)

    @app.errorhandler(Exception)
    def unexpected_error(e: Exception) -> Response:
        log.error("Unexpected error in REST request %s %s", request.method, printable(request.path), exc_info=e)
        return error_response(500, INTERNAL_ERROR_MESSAGE)

    return app


class FrontApp:
    """Status reads to ``status_app``, the rest straight to ``worker``; everything to ``status_app`` until
    ``serving`` is set (the worker can take requests)."""

    def __init__(self, status_app: WsgiApp, worker: WsgiApp, serving: threading.Event | None = None) -> None:
        self._status_app = AccessLogMiddleware(StandardReasonPhrases(status_app))
        self._worker = worker
        self._serving = serving

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if self._serving is not None and not self._serving.is_set() and not under_schema_registry(path):
            # answered as the worker answers while it starts, after the guards; /health too, as the worker
            # may not even listen on its socket yet
            return self._status_app(environ, start_response)
        if environ.get("REQUEST_METHOD") == "GET" and _STATUS_READ.match(path):
            return self._status_app(environ, start_response)
        return self._worker(environ, start_response)


def _serve(channel: FrontChannel) -> int:
    worker_pid = os.getppid()
    kind, payload = channel.receive()
    if kind != SETTINGS:
        log.error("The worker sent %r before its settings; stopping", kind)
        return 1
    settings = orjson.loads(payload)
    config: dict[str, Any] = settings["config"]
    def want() -> None:
        try:
            channel.send(WANT)
        except ChannelClosed:
            pass  # the worker is gone or stopping: this process stops too, once its main loop sees it

    mirror = StatusMirror(want=want)
    from rest.worker_proxy import WorkerProxy

    try:
        proxy = WorkerProxy(settings["socket"],
                            on_answer=lambda environ, sent_at: _note_answer(environ, sent_at, mirror),
                            max_body_bytes=max_body_bytes(config))
        serving = threading.Event()
        app = FrontApp(create_status_app(config, mirror, proxy, serving), proxy, serving)
        # the worker logs where it listens, once it has accepted its config (rest.front_process)
        server = RestServer(app, config, threads=int(settings["threads"]), announce=False)
        server.start()
    except (RestConfigError, OSError) as e:
        channel.send(FAILED, str(e).encode())
        return 1
    # the front's heap is its modules: out of the collector's walks, as in the worker. A fork's heap is mostly
    # the worker's, shared page by page until written: a collection would write to every object's header and
    # copy all those pages (half of the fork's start-up CPU), for the little garbage the worker's start left
    settle_heap(collect=not FORKED_FROM_WORKER)
    channel.send(READY, orjson.dumps({"urls": server.urls}))
    try:
        while True:
            kind, payload = channel.receive()
            if kind == SNAPSHOT:
                mirror.update(*FrontChannel.snapshot_parts(payload))
            elif kind == SERVING:
                serving.set()
                log.info("The worker can take requests; the REST front passes them on")
    except ChannelClosed:
        log.info("The worker closed the REST front's channel; stopping")
    finally:
        server.stop()
        proxy.close()
        if os.getppid() != worker_pid:
            # the worker died (kill -9) and this process was handed to another parent: the worker cannot
            # remove its socket's directory, as it does when it stops, so this does
            shutil.rmtree(os.path.dirname(settings["socket"]), ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    from connect.logging_setup import configure_logging

    args = sys.argv[1:] if argv is None else argv
    configure_logging(tag="rest-front")
    # Ctrl-C reaches the whole process group, and a service manager's SIGTERM may too: the worker stops first
    # and then closes the channel, which ends this process. The worker started it with both signals blocked
    # (rest.front_process), so none came before they were ignored; one pending now is dropped.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))
    channel = FrontChannel(socket.socket(fileno=int(args[0])))
    threading.current_thread().name = "rest-front"
    try:
        return _serve(channel)
    except ChannelClosed:
        return 1
    finally:
        channel.close()


if __name__ == "__main__":
    code = main()
    logging.shutdown()
    # everything the front opened is closed by now; the kernel frees its heap faster than the interpreter's
    # teardown (a tenth of a second here, on every worker stop)
    os._exit(code)
