"""How a worker names itself: the host it advertises to other workers, and a standalone worker's lasting
identity, kept beside its offsets file.

The REST worker id (``host:port``) changes with the listener and is shared by
workers on different hosts with the same port; the standalone identity is a random
id made once and kept in ``<offsets file>.worker-id``, so a restarted worker
is recognised as itself and any other worker as another.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

from connect.api.errors import ConfigException

__all__ = ["advertised_host", "identity_file", "standalone_identity"]


def advertised_host(configured: str | None, listener_host: str | None) -> str:
    """The host other workers reach this one at, by Kafka Connect's rule: ``rest.advertised.host.name`` when
    set, else the listener's own host; only a listener on every interface has no host of its own to give,
    and advertises this machine's name."""
    if configured:
        return configured
    if listener_host and listener_host not in ("0.0.0.0", "::"):
        return listener_host
    return socket.getfqdn() or socket.gethostname()


def identity_file(offsets_file: str | Path) -> Path:
    offsets = Path(offsets_file)
    return offsets.with_name(offsets.name + ".worker-id")


def standalone_identity(offsets_file: str | Path) -> str:
    """This worker's id, made on first start."""
    path = identity_file(offsets_file)
    try:
        text = path.read_text("utf-8").strip()
    except FileNotFoundError:
        return _create(path)
    except (OSError, UnicodeError) as exc:
        raise ConfigException(message=f"{path}: cannot read the worker id file: {exc}") from None
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise ConfigException(message=f"{path}: the worker id file does not hold a worker id (a UUID)") from None


def _create(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    ident = str(uuid.uuid4())
    tmp = path.with_name(path.name + ".tmp")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as fh:
        fh.write(ident + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return ident
