"""Checks every request passes before a route sees it: Host, body size, and the body's media type.

- Host: a browser tricked by DNS rebinding sends the attacker's domain name in Host, so only names
  this worker is known by are served (listener hosts, ``rest.advertised.host.name``, loopback names,
  this machine's names, ``rest.allowed.hosts``); a listener on every interface also accepts any IP
  address, which no rebinding attack can put in Host. Anything else gets 421.
- Size: a body larger than ``rest.request.max.bytes`` gets 413 before it is read, whether its size
  is announced (Content-Length) or not (chunked: reading stops at the limit).
- Media type: as Kafka Connect, a body must be ``application/json`` (415 otherwise). A form or
  text/plain body is what a cross-site HTML form or a no-CORS fetch can send, so refusing it is what
  stops cross-site request forgery; a write that carries a non-JSON Content-Type is refused even
  with an empty body, since a form can send that too.
"""

from __future__ import annotations

import functools
import ipaddress
import socket

from flask import Flask, request
from werkzeug.exceptions import RequestEntityTooLarge

from rest.access_log import printable
from rest.context import ConfigSource, setting
from rest.responses import RestConfigError, RestError
from rest.server import DEFAULT_LISTENERS, parse_listeners

__all__ = ["DEFAULT_MAX_BODY_BYTES", "MAX_JSON_DEPTH", "allowed_hosts", "install_guards", "max_body_bytes"]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
# Connector configs are flat maps and offsets are maps of scalars: 64 levels is far more than any
# real request, and far less than the depth at which parsing would exhaust the stack.
MAX_JSON_DEPTH = 64

_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "localhost.localdomain", "ip6-localhost"}
_BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
# JSON under the schema registry's own media types (what Confluent's clients send); no form can send these
_JSON_MEDIA_TYPES = frozenset({"application/json", "application/vnd.schemaregistry.v1+json",
                               "application/vnd.schemaregistry+json"})


def max_body_bytes(config: ConfigSource) -> int:
    value = setting(config, "rest.request.max.bytes", DEFAULT_MAX_BODY_BYTES)
    try:
        limit = int(value)
    except (TypeError, ValueError):
        raise RestConfigError(f"rest.request.max.bytes: {value!r} is not a number of bytes") from None
    if limit < 1:
        raise RestConfigError(f"rest.request.max.bytes: {limit} must be at least 1")
    return limit


@functools.cache
def _machine_names() -> frozenset[str]:
    names = {socket.gethostname(), socket.getfqdn()}
    return frozenset(n.lower() for n in names if n)


def allowed_hosts(config: ConfigSource) -> tuple[frozenset[str], bool, bool]:
    """(names accepted in Host, whether any IP literal is accepted, whether the check is off)."""
    listeners = parse_listeners(setting(config, "listeners", DEFAULT_LISTENERS) or DEFAULT_LISTENERS)
    names = set(_LOOPBACK_NAMES)
    names.update(lst.host.lower() for lst in listeners if lst.host)
    advertised = setting(config, "rest.advertised.host.name")
    if advertised:
        names.add(str(advertised).strip().lower())
    every_interface = any(lst.every_interface for lst in listeners)
    if every_interface:
        names.update(_machine_names())
    extra = setting(config, "rest.allowed.hosts", "")
    extra_names = [h.strip().lower() for h in (extra.split(",") if isinstance(extra, str) else extra)]
    names.update(h for h in extra_names if h and h != "*")
    return frozenset(names), every_interface, "*" in extra_names


def _host_name(header: str) -> str:
    """The host part of a Host header, without the port and IPv6 brackets."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def install_guards(app: Flask, config: ConfigSource) -> None:
    """Register the checks; call before any other before_request hook so that they run first."""
    names, any_ip, check_off = allowed_hosts(config)
    limit = max_body_bytes(config)
    # Werkzeug stops reading a body of unannounced size (chunked) there; one byte more than the limit
    # tells a body over the limit from one just at it (werkzeug would truncate silently at the limit).
    app.config["MAX_CONTENT_LENGTH"] = limit + 1

    @app.before_request
    def check_host() -> None:
        if check_off:
            return
        header = request.headers.get("Host", "")
        name = _host_name(header)
        if name in names or (any_ip and _is_ip(name)):
            return
        raise RestError(
            421,
            f"Host {printable(header)!r} is not a name this worker serves; add it to rest.allowed.hosts "
            "(or rest.advertised.host.name) if it is yours",
        )

    @app.before_request
    def check_size() -> None:
        length = request.content_length
        if length is not None and length > limit:
            raise RequestEntityTooLarge(
                f"The request body has {length} bytes, more than the {limit} this worker accepts "
                "(rest.request.max.bytes)"
            )
        if length is None and request.environ.get("wsgi.input_terminated"):
            # Chunked: read it now (at most limit + 1 bytes, cached for the route) to know its size.
            if len(request.get_data(cache=True)) > limit:
                raise RequestEntityTooLarge(
                    f"The request body is larger than the {limit} bytes this worker accepts (rest.request.max.bytes)"
                )

    @app.before_request
    def check_media_type() -> None:
        if request.method not in _BODY_METHODS:
            return
        has_body = bool(request.content_length) or "chunked" in request.headers.get("Transfer-Encoding", "").lower()
        declared = request.headers.get("Content-Type")
        if declared is None and not has_body:
            return
        if request.mimetype in _JSON_MEDIA_TYPES:
            return
        raise RestError(
            415,
            f"The request body must be application/json, not {printable(declared or 'untyped')!r}",
        )
