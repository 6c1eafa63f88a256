"""A WSGI app that passes each request to the worker's own REST server on its private Unix socket.

The REST front process answers status reads itself and hands everything else to the worker through this:
method, path, query, headers and body as they came, plus who asked (``X-Forwarded-For``) and over which
scheme (``X-Forwarded-Proto``), which the worker trusts on that socket alone. The answer is streamed back
as it comes.

It speaks HTTP/1.1 with the standard library's client on kept-alive connections: one local hop needs no
more, and httpx with httpcore (and the trio and anyio they import when installed) cost the front a fifth
of a CPU-second at every worker start.
"""

from __future__ import annotations

import http.client
import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from rest.json_provider import encode_json

__all__ = ["WorkerProxy"]

log = logging.getLogger(__name__)

# RFC 9110 7.6.1: meaningful for one connection only, never passed on
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                         "trailers", "transfer-encoding", "upgrade"})
_CHUNK = 64 * 1024
# Some requests take long in the worker (a restart that waits, offsets altered on the log); Kafka Connect's
# REST requests time out after 90 s, so the front waits a little longer for the worker's own answer.
_READ_TIMEOUT_S = 120.0
_CONNECT_TIMEOUT_S = 10.0
# a kept-alive connection the worker closed meanwhile fails a request sent on it before any answer: such a
# request is sent again on a new connection, if it had no body (a body may be read only once)
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def _request_headers(environ: dict[str, Any]) -> list[tuple[str, str]]:
    headers = []
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            name = key[5:].replace("_", "-").title()
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            name = key.replace("_", "-").title()
        else:
            continue
        if value and name.lower() not in _HOP_BY_HOP and not name.lower().startswith("x-forwarded-"):
            headers.append((name, value))
    headers.append(("X-Forwarded-For", environ.get("REMOTE_ADDR") or ""))
    headers.append(("X-Forwarded-Proto", environ.get("wsgi.url_scheme", "http")))
    return headers


def _body(environ: dict[str, Any], limit: int) -> Iterator[bytes]:
    """The request body as it arrives, cut after ``limit + 1`` bytes: the worker refuses a chunked body
    over its limit once it has read one byte more, and nothing beyond is worth reading or sending."""
    stream = environ["wsgi.input"]
    left = limit + 1
    while left > 0:
        chunk = stream.read(min(_CHUNK, left))
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


def _too_large(length: int, limit: int, start_response: Callable[..., Any]) -> list[bytes]:
    # the worker's own answer (rest.guards), given here so that the body is never read
    body = encode_json({"error_code": 413, "message": f"The request body has {length} bytes, more than the {limit} "
                                                      "this worker accepts (rest.request.max.bytes)"})
    start_response("413 Payload Too Large", [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                             ("Connection", "close")])
    return [body]


class _WorkerConnection(http.client.HTTPConnection):
    """HTTP/1.1 to the worker's Unix socket."""

    def __init__(self, socket_path: str) -> None:
        super().__init__("worker", timeout=_READ_TIMEOUT_S)
        self._socket_path = socket_path
        self.reused = False

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(_CONNECT_TIMEOUT_S)
            sock.connect(self._socket_path)
            sock.settimeout(_READ_TIMEOUT_S)
        except BaseException:
            sock.close()
            raise
        self.sock = sock

    def closed_by_worker(self) -> bool:
        """Whether the idle connection has something to read: the worker closed it (or sent what no request
        asked for), so it cannot carry another request."""
        if self.sock is None:
            return True
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)


class _Pool:
    """At most ``size`` connections at once; idle ones kept for the next request."""

    def __init__(self, socket_path: str, size: int) -> None:
        self._socket_path = socket_path
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[_WorkerConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def take(self) -> _WorkerConnection:
        if not self._slots.acquire(timeout=_CONNECT_TIMEOUT_S):
            raise TimeoutError("every connection to the worker is busy")
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return _WorkerConnection(self._socket_path)
            if not conn.closed_by_worker():
                conn.reused = True
                return conn
            conn.close()

    def give_back(self, conn: _WorkerConnection, reusable: bool) -> None:
        with self._lock:
            kept = reusable and not self._closed
            if kept:
                self._idle.append(conn)
        if not kept:
            conn.close()
        self._slots.release()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class _StreamedAnswer:
    """The worker's answer body. Its connection goes back to the pool once the answer is read to its end, or
    is closed if the server is done with the answer before that."""

    def __init__(self, response: http.client.HTTPResponse, conn: _WorkerConnection, pool: _Pool) -> None:
        self._response = response
        self._conn = conn
        self._pool: _Pool | None = pool

    def __iter__(self) -> Iterator[bytes]:
        while True:
            chunk = self._response.read1(_CHUNK)
            if not chunk:
                self.close()
                return
            yield chunk

    def close(self) -> None:
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        done = self._response.isclosed()  # read to its end: http.client closes it then
        reusable = done and not self._response.will_close
        self._response.close()
        pool.give_back(self._conn, reusable)


class WorkerProxy:
    """Passes requests to the REST server on ``socket_path``; ``on_answer`` gets each request's environ and
    the moment (``time.monotonic()``) it was sent, once the worker has answered it (whatever the answer) or
    failed to."""

    def __init__(self, socket_path: str, on_answer: Callable[[dict[str, Any], float], None], max_body_bytes: int,
                 pool_size: int = 16) -> None:
        self._max_body_bytes = max_body_bytes
        self._pool = _Pool(socket_path, pool_size)
        self._on_answer = on_answer

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        # the path as the client sent it (still percent-encoded), so the worker routes and refuses it alike
        target = str(environ.get("REQUEST_URI") or "")
        if not target.startswith("/"):  # absent, or in absolute form: rebuilt from what the server parsed
            query = environ.get("QUERY_STRING")
            target = environ.get("PATH_INFO", "/") + (f"?{query}" if query else "")
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if length > self._max_body_bytes:
            return _too_large(length, self._max_body_bytes, start_response)
        has_body = length > 0 or environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked"
        headers = _request_headers(environ)
        sent_at = time.monotonic()
        conn: _WorkerConnection | None = None
        try:
            while True:
                conn = self._pool.take()
                try:
                    response = self._send(conn, method, target, headers, environ if has_body else None)
                    break
                except _STALE:
                    if not conn.reused or has_body:
                        raise
                    self._pool.give_back(conn, reusable=False)  # closed by the worker while idle: a new one
                    conn = None
        except (OSError, http.client.HTTPException, ValueError) as e:
            if conn is not None:
                self._pool.give_back(conn, reusable=False)
            log.warning("The worker did not answer %s %s: %s", method, environ.get("PATH_INFO", ""),
                        e or type(e).__name__)
            body = encode_json({"error_code": 503, "message": "The worker did not answer; try again"})
            start_response("503 Service Unavailable", [("Content-Type", "application/json"),
                                                       ("Content-Length", str(len(body)))])
            return [body]
        finally:
            self._on_answer(environ, sent_at)
        answer_headers = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP]
        start_response(f"{response.status} {response.reason}", answer_headers)
        return _StreamedAnswer(response, conn, self._pool)

    def _send(self, conn: _WorkerConnection, method: str, target: str, headers: list[tuple[str, str]],
              environ: dict[str, Any] | None) -> http.client.HTTPResponse:
        """The request as the client sent it: its own headers only (no User-Agent or Accept-Encoding made up),
        its body (``environ``'s, when it has one) with the client's Content-Length, else chunked."""
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        names = {name.lower() for name, _ in headers}
        if "host" not in names:
            conn.putheader("Host", "worker")
        for name, value in headers:
            conn.putheader(name, value)
        chunked = environ is not None and "content-length" not in names
        if chunked:
            conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        if environ is not None:
            for chunk in _body(environ, self._max_body_bytes):
                conn.send(b"%x\r\n%b\r\n" % (len(chunk), chunk) if chunked else chunk)
            if chunked:
                conn.send(b"0\r\n\r\n")
        return conn.getresponse()

    def close(self) -> None:
        self._pool.close()
