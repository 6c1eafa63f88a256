"""The one place the runtime's errors become HTTP statuses (Kafka Connect's ConnectExceptionMapper).

The herder's errors (``connect.runtime.herder``) say what happened; the status each
is answered with is chosen here, by the nearest class in the error's MRO found in
``HERDER_ERROR_STATUS``. A NotLeaderError is forwarded to ``leader_url`` rather than
answered (``rest.forwarding``); its entry keeps the 409 Kafka Connect would answer.

The schema registry's errors (``connect.schema_registry.api.SchemaRegistryError``)
carry Confluent's error code only; ``registry_status_of`` gives the status it stands for.

The REST layer's own errors are in ``rest.responses``.
"""

from __future__ import annotations

from connect.runtime.herder import (
    AlreadyExistsError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    HerderError,
    NotFoundError,
    NotLeaderError,
    PayloadTooLargeError,
    ServiceUnavailableError,
)
from connect.schema_registry.api import SchemaRegistryError

__all__ = ["HERDER_ERROR_STATUS", "registry_status_of", "status_of"]

HERDER_ERROR_STATUS: dict[type, int] = {
    HerderError: 500,
    BadRequestError: 400,
    ForbiddenError: 403,
    NotFoundError: 404,
    # Kafka Connect answers 409 for a name taken, a rebalance under way and a request for another worker alike
    AlreadyExistsError: 409,
    ConflictError: 409,
    NotLeaderError: 409,
    PayloadTooLargeError: 413,  # as for a request body over rest.request.max.bytes
    ServiceUnavailableError: 503,
}


def status_of(error: HerderError) -> int:
    """The HTTP status a herder's ``error`` is answered with."""
    # HerderError itself is in every error's MRO, so one class always matches
    return next(HERDER_ERROR_STATUS[cls] for cls in type(error).__mro__ if cls in HERDER_ERROR_STATUS)


# 50003, the registry shutting down: a 503, which clients retry elsewhere or later, not a 500
_REGISTRY_CODE_STATUS = {50003: 503}


def registry_status_of(error: SchemaRegistryError) -> int:
    """The HTTP status ``error`` is answered with: as Confluent's registry, its code's first three digits
    (40401 is a 404) or the code itself when it is a status already (409, an incompatible schema)."""
    code = error.error_code
    if code in _REGISTRY_CODE_STATUS:
        return _REGISTRY_CODE_STATUS[code]
    return code if code < 1000 else code // 100
