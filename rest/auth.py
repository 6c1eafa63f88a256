"""HTTP basic authentication, as Kafka Connect's BasicAuthSecurityRestExtension provides it.

Turned on by naming the extension in ``rest.extension.classes`` (Kafka's class name, or the alias
``BasicAuthSecurityRestExtension``). The users live in a properties file, one ``user=secret`` (or
``user: secret``) a line, the file Kafka's PropertyFileLoginModule reads. It is found, in order, from
``rest.basic.auth.credentials.file``, from the ``file="..."`` option of the PropertyFileLoginModule
in the ``KafkaConnect`` section of a JAAS file named by ``rest.basic.auth.jaas.config`` or by
``-Djava.security.auth.login.config=`` in ``KAFKA_OPTS`` (Kafka's way).

A secret should be a bcrypt hash (``$2b$...``); a plain-text secret is accepted for compatibility
with Kafka's files, with a WARNING at start naming the user. Correct credentials are remembered for a
few minutes (keyed by a SHA-256 of them) so that a busy client does not pay bcrypt on every request.

Requests between workers need no user: a forwarded request relays the caller's Authorization header
(the next worker checks it again), and a worker's own internal requests carry an HMAC signature
(see ``sign_internal_request``) made with a key the workers share.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import os
import re
import shlex
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import bcrypt
from flask import Flask, Response, request
from jproperties import Properties

from rest.context import ConfigSource, setting
from rest.responses import RestConfigError, error_response

__all__ = [
    "BASIC_AUTH_ALIASES",
    "INTERNAL_ALGORITHM_HEADER",
    "INTERNAL_SIGNATURE_HEADER",
    "AuthConfigError",
    "BasicAuthenticator",
    "basic_auth_enabled",
    "install_basic_auth",
    "sign_internal_request",
]

log = logging.getLogger(__name__)

BASIC_AUTH_ALIASES = frozenset({
    "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension",
    "BasicAuthSecurityRestExtension",
})
INTERNAL_SIGNATURE_HEADER = "X-Connect-Authorization"
INTERNAL_TIMESTAMP_HEADER = "X-Connect-Request-Timestamp"
# KIP-507: task configs a worker sends the leader are signed with the cluster's session key, which the
# herder checks; like Kafka Connect's basic-auth filter, such signed internal requests need no credentials.
INTERNAL_ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
# the session-key-signed requests between workers: task configs to the leader, zombie fencing (KIP-618)
_INTERNAL_PATH = re.compile(r"^/connectors/[^/]+/(tasks|fence)/?$")
REALM = "Kafka Connect"
_CACHE_TTL_S = 300.0
_CACHE_MAX = 1024
# A signed internal request older than this is refused, so a captured one cannot be replayed later.
_SIGNATURE_MAX_AGE_S = 300.0
_BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")
_JAAS_FILE_OPTION = re.compile(r"""PropertyFileLoginModule\s+\w+[^;]*?\bfile\s*=\s*"([^"]*)\"""", re.S)
_JAAS_SECTION = re.compile(r"KafkaConnect\s*\{(?P<body>.*?)\}\s*;", re.S)


class AuthConfigError(RestConfigError):
    """A REST authentication setting that cannot be used; names the key or file and why."""


def _extension_names(config: ConfigSource) -> list[str]:
    value = setting(config, "rest.extension.classes", "")
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(item).strip() for item in items if str(item).strip()]


def basic_auth_enabled(config: ConfigSource) -> bool:
    """Whether ``rest.extension.classes`` turns basic authentication on; refuses other extensions."""
    names = _extension_names(config)
    unknown = [name for name in names if name not in BASIC_AUTH_ALIASES]
    if unknown:
        raise AuthConfigError(
            f"rest.extension.classes: {', '.join(unknown)} is not a REST extension Headrace has; the one it "
            "has is org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
        )
    return bool(names)


def _jaas_path(config: ConfigSource) -> tuple[str, str] | None:
    value = setting(config, "rest.basic.auth.jaas.config")
    if value:
        return "rest.basic.auth.jaas.config", str(value)
    for arg in shlex.split(os.environ.get("KAFKA_OPTS", "")):
        if arg.startswith("-Djava.security.auth.login.config="):
            return "KAFKA_OPTS -Djava.security.auth.login.config", arg.split("=", 1)[1]
    return None


def credentials_file(config: ConfigSource) -> Path:
    direct = setting(config, "rest.basic.auth.credentials.file")
    if direct:
        return Path(str(direct))
    jaas = _jaas_path(config)
    if jaas is None:
        raise AuthConfigError(
            "rest.extension.classes enables basic authentication, but no users file is given: set "
            "rest.basic.auth.credentials.file (or rest.basic.auth.jaas.config to a JAAS file whose "
            "KafkaConnect section names a PropertyFileLoginModule file)"
        )
    source, path = jaas
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise AuthConfigError(f"{source}: cannot read {path}: {e.strerror or e}") from None
    section = _JAAS_SECTION.search(text)
    option = _JAAS_FILE_OPTION.search(section["body"]) if section else None
    if option is None:
        raise AuthConfigError(f"{source}: {path} has no KafkaConnect section with a PropertyFileLoginModule "
                              'file="..." option')
    return Path(option.group(1))


def load_users(path: Path) -> dict[str, str]:
    props = Properties()
    try:
        with open(path, "rb") as fh:
            props.load(fh, "utf-8")
    except OSError as e:
        raise AuthConfigError(f"basic authentication users file {path}: {e.strerror or e}") from None
    users = {str(user): str(secret.data).strip() for user, secret in props.items()}
    if not users:
        raise AuthConfigError(f"basic authentication users file {path} defines no user")
    plain = sorted(user for user, secret in users.items() if not secret.startswith(_BCRYPT_PREFIXES))
    if plain:
        log.warning("REST users file %s holds plain-text passwords for %s; store bcrypt hashes instead", path,
                    ", ".join(repr(u) for u in plain))
    return users


class BasicAuthenticator:
    """Checks ``Authorization: Basic`` credentials against a users map of bcrypt hashes or plain secrets."""

    def __init__(self, users: Mapping[str, str], clock: Callable[[], float] = time.monotonic) -> None:
        self._users = dict(users)
        self._clock = clock
        self._verified: dict[bytes, float] = {}
        self._lock = threading.Lock()

    def _secret_matches(self, stored: str, password: str) -> bool:
        if stored.startswith(_BCRYPT_PREFIXES):
            try:
                return bcrypt.checkpw(password.encode("utf-8"), stored.encode("ascii"))
            except ValueError:
                return False
        return hmac.compare_digest(stored.encode("utf-8"), password.encode("utf-8"))

    def check(self, header: str | None) -> str | None:
        """The user named by a valid Authorization header, else None."""
        if not header or not header[:6].lower() == "basic ":
            return None
        try:
            decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        user, sep, password = decoded.partition(":")
        stored = self._users.get(user)
        if not sep or stored is None:
            return None
        key = hashlib.sha256(f"{user}\0{password}\0{stored}".encode()).digest()
        now = self._clock()
        with self._lock:
            if self._verified.get(key, 0.0) > now:
                return user
        if not self._secret_matches(stored, password):
            return None
        with self._lock:
            if len(self._verified) >= _CACHE_MAX:
                self._verified.clear()
            self._verified[key] = now + _CACHE_TTL_S
        return user


def _signature_payload(method: str, path: str, timestamp: str, body: bytes) -> bytes:
    return b"\n".join([method.upper().encode(), path.encode("utf-8"), timestamp.encode(), body])


def sign_internal_request(key: bytes, method: str, path: str, body: bytes, now: float | None = None) -> dict[str, str]:
    """Headers that authenticate a request one worker sends another (signed with the shared ``key``)."""
    timestamp = str(int(time.time() if now is None else now))
    mac = hmac.new(key, _signature_payload(method, path, timestamp, body), hashlib.sha256).digest()
    return {INTERNAL_SIGNATURE_HEADER: base64.b64encode(mac).decode("ascii"), INTERNAL_TIMESTAMP_HEADER: timestamp}


def _internal_signature_valid(key: bytes) -> bool:
    signature = request.headers.get(INTERNAL_SIGNATURE_HEADER)
    timestamp = request.headers.get(INTERNAL_TIMESTAMP_HEADER, "")
    if not signature or not (timestamp.isascii() and timestamp.isdigit()) or abs(time.time() - int(timestamp)) > _SIGNATURE_MAX_AGE_S:
        return False
    expected = sign_internal_request(key, request.method, request.path, request.get_data(cache=True),
                                     now=int(timestamp))[INTERNAL_SIGNATURE_HEADER]
    return hmac.compare_digest(expected, signature)


def install_basic_auth(app: Flask, config: ConfigSource, internal_key: bytes | None = None) -> bool:
    """Require credentials on every request when the config enables basic auth; returns whether it does."""
    if not basic_auth_enabled(config):
        return False
    authenticator = BasicAuthenticator(load_users(credentials_file(config)))

    @app.before_request
    def require_credentials() -> Response | None:
        # A CORS preflight carries no credentials by design and changes nothing.
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            return None
        if internal_key is not None and INTERNAL_SIGNATURE_HEADER in request.headers:
            if _internal_signature_valid(internal_key):
                return None
        if (request.method in ("POST", "PUT") and _INTERNAL_PATH.match(request.path)
                and INTERNAL_SIGNATURE_HEADER in request.headers and INTERNAL_TIMESTAMP_HEADER not in request.headers):
            return None  # the herder verifies the session-key signature (400/403/503 when it is wrong)
        if authenticator.check(request.headers.get("Authorization")) is not None:
            return None
        response = error_response(401, "Authentication required: give valid credentials with HTTP basic "
                                       "authentication")
        response.headers["WWW-Authenticate"] = f'Basic realm="{REALM}", charset="UTF-8"'
        return response

    return True
