"""A WSGI app that passes each request to the worker's own REST server on its private Unix socket.

The REST front process answers status reads itself and hands everything else to the worker through this:
method, path, query, headers and body as they came, plus who asked (``X-Forwarded-For``) and over which
scheme (``X-Forwarded-Proto``), which the worker trusts on that socket alone. The answer is streamed back
as it comes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx

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


class _StreamedAnswer:
    """The worker's answer body, closed (and its connection given back) when the server is done with it."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    def __iter__(self) -> Iterator[bytes]:
        yield from self._response.iter_raw(_CHUNK)

    def close(self) -> None:
        self._response.close()


class WorkerProxy:
    """Passes requests to the REST server on ``socket_path``; ``on_answer`` gets each request's environ and
    the moment (``time.monotonic()``) it was sent, once the worker has answered it (whatever the answer) or
    failed to."""

    def __init__(self, socket_path: str, on_answer: Callable[[dict[str, Any], float], None], max_body_bytes: int,
                 pool_size: int = 16) -> None:
        self._max_body_bytes = max_body_bytes
        self._client = httpx.Client(
            # plain HTTP on a Unix socket: no TLS, so no CA bundle to load (a tenth of a second at start)
            transport=httpx.HTTPTransport(uds=socket_path, verify=False,
                                          limits=httpx.Limits(max_connections=pool_size)),
            timeout=httpx.Timeout(_READ_TIMEOUT_S, connect=10.0), follow_redirects=False)
        self._client.headers.clear()  # httpx's own defaults (User-Agent, Accept-Encoding) are not the client's
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
        request = self._client.build_request(method, "http://worker" + target, headers=_request_headers(environ),
                                             content=_body(environ, self._max_body_bytes) if has_body else None)
        sent_at = time.monotonic()
        try:
            response = self._client.send(request, stream=True)
        except httpx.HTTPError as e:
            log.warning("The worker did not answer %s %s: %s", method, environ.get("PATH_INFO", ""), e)
            body = encode_json({"error_code": 503, "message": "The worker did not answer; try again"})
            start_response("503 Service Unavailable", [("Content-Type", "application/json"),
                                                       ("Content-Length", str(len(body)))])
            return [body]
        finally:
            self._on_answer(environ, sent_at)
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _HOP_BY_HOP]
        start_response(f"{response.status_code} {response.reason_phrase}", headers)
        return _StreamedAnswer(response)

    def close(self) -> None:
        self._client.close()
