"""The cluster's session key: how workers prove to each other that a request comes from the cluster (KIP-507).

The leader writes a fresh random key to the config topic every ``inter.worker.key.ttl.ms``; every worker
reads it from there. A worker sending task configs to the leader signs the request body with it; the leader
checks the signature in constant time. Only the ``sessioned`` protocol turns verification on, so a cluster
with an older worker in it keeps working as Kafka Connect's does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

import attrs

from connect.runtime.herder import BadRequestError, ForbiddenError, InternalRequestSignature

__all__ = ["ALGORITHM", "ALGORITHM_HEADER", "SIGNATURE_HEADER", "SessionKey"]

ALGORITHM = "HmacSHA256"
SIGNATURE_HEADER = "X-Connect-Authorization"
ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
_DIGESTS = {ALGORITHM: hashlib.sha256}
_KEY_BYTES = 32


@attrs.frozen(repr=False)
class SessionKey:
    key: bytes
    algorithm: str
    created_ms: int

    def __repr__(self) -> str:  # never the key itself: reprs end up in logs
        return f"SessionKey(algorithm={self.algorithm!r}, created_ms={self.created_ms})"

    @classmethod
    def generate(cls, now_ms: int) -> SessionKey:
        return cls(secrets.token_bytes(_KEY_BYTES), ALGORITHM, now_ms)

    def expired(self, now_ms: int, ttl_ms: int) -> bool:
        return now_ms >= self.created_ms + ttl_ms

    def sign(self, body: bytes) -> dict[str, str]:
        """The headers that authenticate ``body`` as a request from this cluster."""
        digest = hmac.new(self.key, body, _DIGESTS[self.algorithm]).digest()
        return {SIGNATURE_HEADER: base64.b64encode(digest).decode("ascii"), ALGORITHM_HEADER: self.algorithm}

    def verify(self, request: InternalRequestSignature) -> None:
        """Raise 400 for a missing signature or unknown algorithm, 403 for a wrong one (Kafka Connect's texts)."""
        if request.signature is None:
            raise BadRequestError("Internal request missing required signature")
        algorithm = request.algorithm or ALGORITHM
        if algorithm not in _DIGESTS:
            raise BadRequestError(f"This worker does not support the signature algorithm '{algorithm}' "
                                  f"(it supports {ALGORITHM})")
        if algorithm != self.algorithm:
            raise ForbiddenError("Internal request contained invalid signature.")
        expected = self.sign(request.body)[SIGNATURE_HEADER]
        if not hmac.compare_digest(expected.encode("ascii"), request.signature.encode("ascii", "replace")):
            raise ForbiddenError("Internal request contained invalid signature.")
