"""Debian's redis-server on a free loopback port, with a data folder of its own.

The append-only file is on (``appendfsync always`` unless asked otherwise), so a
``stop``/``kill`` followed by ``start`` comes back on the same port with the same
data: outage and durability tests restart it mid-run. Nothing is downloaded;
``scripts/install.sh`` installs the ``redis-server`` package. Given a certificate and key it listens with TLS only
(``rediss://``), optionally asking clients for certificates too.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from services.base import Service, ServiceError, free_port

__all__ = ["RedisService"]


def _resp(*parts: str) -> bytes:
    """One command in the Redis protocol (RESP2), so the readiness check needs no client library."""
    out = [f"*{len(parts)}\r\n".encode()]
    for part in parts:
        data = part.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class RedisService(Service):
    """One redis-server; ``uri`` is how clients reach it (``redis://127.0.0.1:<port>``)."""

    name = "redis"
    startup_timeout = 30.0
    stop_timeout = 15.0

    def __init__(
        self,
        port: int | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        password: str | None = None,
        appendfsync: str = "always",
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        tls_ca: str | os.PathLike[str] | None = None,
        tls_auth_clients: bool = False,
    ) -> None:
        super().__init__(work_dir)
        self.port = port or free_port()
        self.password = password
        self.appendfsync = appendfsync
        # with a certificate and key the server speaks only TLS on its port (rediss://)
        self.tls = (tls_cert, tls_key, tls_ca) if tls_cert and tls_key else None
        self.tls_auth_clients = tls_auth_clients
        self.data_dir = self.work_dir / "data"
        self.config_path = self.work_dir / "redis.conf"

    @classmethod
    def executable(cls) -> str:
        path = shutil.which("redis-server") or ("/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists()
                                                 else None)
        if path is None:
            raise ServiceError("redis-server is not installed: apt-get install -y redis-server (scripts/install.sh)")
        return path

    @classmethod
    def fetch(cls) -> None:
        cls.executable()  # nothing to download; only check that Debian's package is there

    def ports(self) -> Sequence[int]:
        return (self.port,)

    @property
    def uri(self) -> str:
        return f"{'rediss' if self.tls else 'redis'}://127.0.0.1:{self.port}"

    def server_config(self) -> dict[str, str]:
        config = {
            "bind": "127.0.0.1",
            "port": str(self.port),
            "protected-mode": "no",
            "daemonize": "no",
            "dir": str(self.data_dir),
            "logfile": '""',  # standard output, which Service sends to redis.log
            "appendonly": "yes",
            "appendfsync": self.appendfsync,
            "save": '""',  # the append-only file is the durability; no RDB snapshots in between
            "databases": "16",
        }
        if self.password:
            config["requirepass"] = self.password
        if self.tls:
            cert, key, ca = self.tls
            config |= {"port": "0", "tls-port": str(self.port), "tls-cert-file": str(cert), "tls-key-file": str(key),
                       "tls-auth-clients": "yes" if self.tls_auth_clients else "no"}
            if ca:
                config["tls-ca-cert-file"] = str(ca)
        return config

    def prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k} {v}\n" for k, v in self.server_config().items()))

    def command(self) -> list[str]:
        return [self.executable(), str(self.config_path)]

    def ready(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as plain:
            sock = plain
            if self.tls:  # only whether it answers: the certificate is the tests' business
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
                if self.tls_auth_clients:
                    context.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
                sock = context.wrap_socket(plain)
            request = _resp("PING")
            if self.password:
                request = _resp("AUTH", self.password) + request
            sock.sendall(request)
            reply = b""
            while b"PONG" not in reply and b"-" not in reply[:1]:
                chunk = sock.recv(256)
                if not chunk:
                    break
                reply += chunk
            # -LOADING while the append-only file is read back after a restart: not ready yet
            return b"+PONG" in reply

    def describe(self) -> dict[str, Any]:
        return {"redis.uri": self.uri, "log": str(self.log_path), "data": str(self.data_dir)}
