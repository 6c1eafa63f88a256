"""Forwarding a request to the leader when the herder says this worker is not it.

Kafka Connect does this in its REST layer, so the herder never deals with HTTP: the first worker
forwards with ``forward=true``, the next one may forward once more with ``forward=false``, and a
worker receiving ``forward=false`` gives up with 409 (two hops at most, so a request cannot loop
while leadership moves during a rebalance).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from flask import Response, request

from connect.runtime.herder import NO_LEADER_MESSAGE, NotLeaderError
from rest.access_log import printable
from rest.responses import RestError

if TYPE_CHECKING:  # imported with the first forward: a standalone worker never forwards, and httpx costs its start
    import httpx

__all__ = ["FORWARD_TIMEOUT_S", "forward_to_leader"]

log = logging.getLogger(__name__)

# A rebalance can take a whole session timeout before the leader answers (Kafka waits 90 s too).
FORWARD_TIMEOUT_S = 90.0

# Credentials and the internal signature travel with the request; the next worker checks them again.
_RELAYED_REQUEST_HEADERS = {"content-type", "accept", "authorization", "x-connect-authorization",
                            "x-connect-request-signature-algorithm"}
# Hop-by-hop and length headers are recomputed by each server; everything else is relayed.
_DROPPED_RESPONSE_HEADERS = {"connection", "content-length", "transfer-encoding", "keep-alive", "server", "date"}


_client: httpx.Client | None = None
_client_lock = threading.Lock()


def _http() -> httpx.Client:
    """One pooled client for the process: a new client per request would pay for a TLS context and a
    connection each time, more than the forwarded request itself costs."""
    global _client
    with _client_lock:
        if _client is None:
            import httpx

            _client = httpx.Client(timeout=FORWARD_TIMEOUT_S)
        return _client


def _next_forward_flag() -> str:
    flag = request.args.get("forward")
    if flag is None:
        return "true"
    if flag.strip().lower() == "true":
        return "false"
    raise RestError(409, "Cannot complete request because of a conflicting operation (e.g. worker rebalance)")


def forward_to_leader(error: NotLeaderError, *, timeout: float = FORWARD_TIMEOUT_S, target: str = "the leader",
                      unreachable_status: int = 500) -> Response:
    """Relays the request to ``error.leader_url`` (``target`` names that worker in the error when it cannot be
    reached, answered with ``unreachable_status``)."""
    next_flag = _next_forward_flag()
    if not error.leader_url:
        raise RestError(409, NO_LEADER_MESSAGE)
    query = [(k, v) for k, v in request.args.items(multi=True) if k != "forward"]
    query.append(("forward", next_flag))
    url = f"{error.leader_url.rstrip('/')}{request.path}?{urlencode(query)}"
    headers = {k: v for k, v in request.headers.items() if k.lower() in _RELAYED_REQUEST_HEADERS}
    log.debug("Forwarding %s %s to the leader at %s", request.method, printable(request.path), printable(url))
    import httpx

    try:
        upstream = _http().request(request.method, url, content=request.get_data(cache=True), headers=headers,
                                   timeout=timeout)
    except httpx.HTTPError as e:
        # one line: an unreachable worker is an expected event in a cluster, not a defect to trace
        log.warning("Could not forward %s %s to %s: %s", request.method, printable(request.path), printable(url),
                    printable(str(e) or type(e).__name__))
        raise RestError(unreachable_status,
                        f"Could not forward the request to {target} at {error.leader_url}: {e}") from None
    response = Response(upstream.content, status=upstream.status_code)
    response.headers.pop("Content-Type", None)
    for name, value in upstream.headers.items():
        if name.lower() not in _DROPPED_RESPONSE_HEADERS:
            response.headers[name] = value
    return response
