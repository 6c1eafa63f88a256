"""The body of ``GET /connectors?expand=status``, joined from each connector's status encoded once.

The herder hands out one prepared status body per connector, rebuilt only when something it shows changed
(connect.runtime.status_views). Encoding all of them again for each listing was a fifth of the worker's CPU
per listing of 1,000 connectors; so each body is encoded when it is new, and a listing joins the bytes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from rest.json_provider import encode_json

__all__ = ["EncodedStatusListing"]


class EncodedStatusListing:
    """Each connector's ``"name":{"status":…}`` member, kept with the body object it was encoded from.

    Bodies are never changed once handed out (a change makes a new body), so the same object means the same
    bytes: the check is one identity comparison, and the held reference keeps the object's identity unique.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._members: dict[str, tuple[Any, bytes]] = {}
        # the last listing: (bodies, their count, names, bytes); the herder reuses one bodies mapping until
        # something changes and builds a new one then, so the same mapping and names give the same bytes
        self._last: tuple[Mapping[str, Any], int, list[str], bytes] | None = None

    def encode(self, names: Iterable[str], bodies: Mapping[str, Any]) -> bytes:
        """The JSON object of ``names`` (in that order) that have a body, each as ``{"status": body}``.
        ``bodies`` is not changed once handed in (a change is a new mapping)."""
        names = list(names)
        last = self._last  # one read: atomic under the GIL
        if last is not None and last[0] is bodies and last[1] == len(bodies) and last[2] == names:
            return last[3]
        out = self._join(names, bodies)
        self._last = (bodies, len(bodies), names, out)
        return out

    def _join(self, names: list[str], bodies: Mapping[str, Any]) -> bytes:
        members = self._members
        parts: list[bytes] = []
        for name in names:
            body = bodies.get(name)
            if body is None:
                continue  # created or deleted while the listing was made
            held = members.get(name)  # one dict read: atomic under the GIL
            if held is None or held[0] is not body:
                # encoded whole and unwrapped, so the name is escaped exactly as the encoder escapes keys
                held = (body, encode_json({name: {"status": body}})[1:-1])
                members[name] = held
            parts.append(held[1])
        if len(members) > len(bodies):
            with self._lock:  # deleted connectors: their members go
                for gone in [n for n in members if n not in bodies]:
                    members.pop(gone, None)
        return b"{" + b",".join(parts) + b"}"

    def __len__(self) -> int:
        return len(self._members)
