"""What the Redis connectors share: the client configs (Redis Inc.'s names), the connection, the check that a
config can reach its server before anything runs.

The password belongs in ``redis.password`` (a PASSWORD config: hidden over REST and in logs, and it can come
from a config provider); a password written into ``redis.uri`` works too but every message shows the URI
with it masked.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConfigValue,
    FilePath,
    Importance,
    LambdaValidator,
    Range,
    RetriableException,
)

if TYPE_CHECKING:  # imported where it is used: redis costs every worker start a tenth of a CPU-second
    import redis

URI_CONFIG = "redis.uri"
USERNAME_CONFIG = "redis.username"
PASSWORD_CONFIG = "redis.password"
TIMEOUT_CONFIG = "redis.timeout"
TLS_CONFIG = "redis.tls"
INSECURE_CONFIG = "redis.insecure"
CACERT_CONFIG = "redis.cacert"
KEY_CERT_CONFIG = "redis.key.cert"
KEY_FILE_CONFIG = "redis.key.file"
KEY_PASSWORD_CONFIG = "redis.key.password"

_GROUP = "Redis"


def _check_uri(name: str, value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "A Redis URI is needed, e.g. redis://127.0.0.1:6379 (rediss:// for TLS)"
    parsed = urllib.parse.urlsplit(value.strip())
    if parsed.scheme not in ("redis", "rediss", "unix"):
        return f"The scheme must be redis://, rediss:// (TLS) or unix://, not {parsed.scheme or 'none'}://"
    if parsed.scheme != "unix":
        if not parsed.hostname:
            return "The URI names no host"
        try:
            parsed.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError:
            return "The port is not a number"
    return None


def define_client(definition: ConfigDef) -> ConfigDef:
    """Add the client configs to ``definition``."""
    return (
        definition.define(URI_CONFIG, ConfigType.STRING, "redis://localhost:6379",
                          LambdaValidator(_check_uri, "redis://host:port[/db], rediss:// for TLS"),
                          Importance.HIGH,
                          "The server: redis://host:port[/database]; rediss:// for TLS. Put the password in "
                          "redis.password rather than in the URI.", _GROUP, 1)
        .define(USERNAME_CONFIG, ConfigType.STRING, None, None, Importance.MEDIUM,
                "ACL user name (Redis 6+); without it the default user.", _GROUP, 2)
        .define(PASSWORD_CONFIG, ConfigType.PASSWORD, None, None, Importance.MEDIUM,
                "The password (AUTH). Hidden over REST and in logs.", _GROUP, 3)
        .define(TIMEOUT_CONFIG, ConfigType.LONG, 10, Range.at_least(1), Importance.LOW,
                "Seconds a connection attempt or a command may take before it fails.", _GROUP, 4)
        .define(TLS_CONFIG, ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
                "Use TLS even when the URI says redis:// (rediss:// always does).", _GROUP, 5)
        .define(INSECURE_CONFIG, ConfigType.BOOLEAN, False, None, Importance.LOW,
                "With TLS, accept any server certificate (tests only).", _GROUP, 6)
        .define(CACERT_CONFIG, ConfigType.STRING, None, FilePath("read"), Importance.LOW,
                "With TLS, a PEM file of the CA certificates to trust instead of the system's.", _GROUP, 7)
        .define(KEY_CERT_CONFIG, ConfigType.STRING, None, FilePath("read"), Importance.LOW,
                "With TLS, the client certificate (PEM) for mutual TLS.", _GROUP, 8)
        .define(KEY_FILE_CONFIG, ConfigType.STRING, None, FilePath("read"), Importance.LOW,
                "With TLS, the client certificate's private key (PEM).", _GROUP, 9)
        .define(KEY_PASSWORD_CONFIG, ConfigType.PASSWORD, None, None, Importance.LOW,
                "The password of redis.key.file, if it has one.", _GROUP, 10)
    )


def masked_uri(uri: str) -> str:
    """``uri`` with any password in it replaced by ``***``."""
    parsed = urllib.parse.urlsplit(uri)
    if parsed.password is None:
        return uri
    user = parsed.username or ""
    host = parsed.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parsed._replace(netloc=f"{user}:***@{host}"))


def _secret(config: AbstractConfig, name: str) -> str | None:
    value = config.get_password(name)
    return value.value() if value is not None else None


def connect(config: AbstractConfig, timeout: float | None = None, **extra: Any) -> redis.Redis:
    """A client for the configured server; connects lazily (the first command)."""
    import redis

    uri = str(config.get_string(URI_CONFIG)).strip()
    if config.get_boolean(TLS_CONFIG) and uri.startswith("redis://"):
        uri = "rediss://" + uri[len("redis://"):]
    seconds = float(timeout if timeout is not None else config.get_long(TIMEOUT_CONFIG) or 10)
    options: dict[str, Any] = {"socket_timeout": seconds, "socket_connect_timeout": seconds,
                               "health_check_interval": 30}
    if config.get_string(USERNAME_CONFIG):
        options["username"] = config.get_string(USERNAME_CONFIG)
    if _secret(config, PASSWORD_CONFIG) is not None:
        options["password"] = _secret(config, PASSWORD_CONFIG)
    if uri.startswith("rediss://"):
        if config.get_boolean(INSECURE_CONFIG):
            options["ssl_cert_reqs"] = "none"
            options["ssl_check_hostname"] = False
        if config.get_string(CACERT_CONFIG):
            options["ssl_ca_certs"] = config.get_string(CACERT_CONFIG)
        if config.get_string(KEY_CERT_CONFIG):
            options["ssl_certfile"] = config.get_string(KEY_CERT_CONFIG)
        if config.get_string(KEY_FILE_CONFIG):
            options["ssl_keyfile"] = config.get_string(KEY_FILE_CONFIG)
        if _secret(config, KEY_PASSWORD_CONFIG) is not None:
            options["ssl_password"] = _secret(config, KEY_PASSWORD_CONFIG)
    options.update(extra)
    return redis.Redis.from_url(uri, **options)


def describe_error(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())  # one line, whatever the library put in it


def check_server(config: AbstractConfig, values: Mapping[str, ConfigValue]) -> redis.Redis | None:
    """Connect and PING (a short timeout); on failure add one error to the key at fault and return None.

    An unreachable server is reported on ``redis.uri``, refused credentials on ``redis.password``.
    """
    from redis.exceptions import AuthenticationError, AuthorizationError, RedisError, ResponseError

    uri = masked_uri(str(config.get_string(URI_CONFIG)))
    client = connect(config, timeout=min(5.0, float(config.get_long(TIMEOUT_CONFIG) or 5)))
    try:
        client.ping()
        return client
    except (AuthenticationError, AuthorizationError) as exc:
        key = PASSWORD_CONFIG if PASSWORD_CONFIG in values else URI_CONFIG
        values[key].add_error(f"Redis at {uri} refused the credentials: {describe_error(exc)}")
    except ResponseError as exc:
        if "NOAUTH" in str(exc) or "WRONGPASS" in str(exc):
            values[PASSWORD_CONFIG].add_error(f"Redis at {uri} refused the credentials: {describe_error(exc)}")
        else:
            values[URI_CONFIG].add_error(f"Redis at {uri} answered PING with an error: {describe_error(exc)}")
    except (RedisError, OSError) as exc:
        values[URI_CONFIG].add_error(f"Cannot reach Redis at {uri}: {describe_error(exc)}")
    client.close()
    return None


def has_errors(values: Mapping[str, ConfigValue], *names: str) -> bool:
    return any(values[n].errors for n in names if n in values)


def client_names() -> tuple[str, ...]:
    return (URI_CONFIG, USERNAME_CONFIG, PASSWORD_CONFIG, TIMEOUT_CONFIG, TLS_CONFIG, INSECURE_CONFIG, CACERT_CONFIG,
            KEY_CERT_CONFIG, KEY_FILE_CONFIG, KEY_PASSWORD_CONFIG)


class Outage:
    """One WARNING when Redis goes away and one INFO line when it is back, however many attempts fail between."""

    def __init__(self, owner: object, uri: str, logger: logging.Logger) -> None:
        self._owner = owner
        self._uri = uri
        self._log = logger
        self._since: float | None = None

    def down(self, exc: BaseException, consequence: str) -> RetriableException:
        """Note the failure (logged the first time) and return the exception that has the worker try again."""
        if self._since is None:
            self._since = time.monotonic()
            self._log.warning("%s: Redis at %s is unreachable (%s); %s", self._owner, self._uri, describe_error(exc),
                              consequence)
        return RetriableException(f"Redis at {self._uri} is unreachable: {describe_error(exc)}")

    def up(self) -> None:
        if self._since is not None:
            self._log.info("%s: Redis at %s is back after %.1f s", self._owner, self._uri,
                           time.monotonic() - self._since)
            self._since = None
