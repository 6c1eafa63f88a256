"""The preflight checks of KIP-618: can this source connector run exactly once as configured?

Run during validation, so a config that asks for more than the connector or the worker can give is
refused with a 400 before anything starts. The messages are Kafka Connect's, so tools that look for
them (and operators who searched for them) find the same words.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from connect.api.config import ConfigValue
from connect.api.connector import (
    Connector,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceConnector,
)

__all__ = ["check_exactly_once"]

log = logging.getLogger(__name__)

_WORKER_DISABLED = "This worker does not have exactly-once source support enabled."
_NOT_DECLARED = (
    "The connector does not implement the API required for preflight validation of exactly-once source support. "
    "Please consult the documentation for the connector to determine whether it supports exactly-once semantics, "
    'and then consider reconfiguring the connector to use the value "requested" for this property (which will '
    "disable this preflight check and allow the connector to be created)."
)
_UNSUPPORTED = "The connector does not support exactly-once semantics with the provided configuration."
_BOUNDARIES_NULL = (
    "This connector has returned a null value from its canDefineTransactionBoundaries method, which is not "
    "permitted. The connector will be treated as if it cannot define its own transaction boundaries, and cannot "
    "be configured with 'transaction.boundary' set to 'connector'."
)
_BOUNDARIES_UNSUPPORTED = (
    "The connector does not support connector-defined transaction boundaries with the given configuration. "
    "Please reconfigure it to use a different transaction boundary definition."
)


def _unexpected(exc: BaseException) -> str:
    text = str(exc).strip()
    return ("An unexpected error occurred during validation" + (f": {text}" if text else
            "; please see the worker logs for more details."))


def check_exactly_once(connector_cls: type[Connector], props: Mapping[str, str], values: dict[str, ConfigValue],
                       worker_enabled: bool) -> None:
    """Add Kafka Connect's errors to ``exactly.once.support`` and ``transaction.boundary`` where due.

    Only values that passed their own validation are checked further, as Kafka Connect does.
    """
    support = values.get("exactly.once.support")
    if support is not None and not support.errors and str(support.value).lower() == "required":
        if not worker_enabled:
            support.add_error(_WORKER_DISABLED)
        try:
            answer = _connector(connector_cls).exactly_once_support(dict(props))
            if answer is None:
                support.add_error(_NOT_DECLARED)
            elif answer is not ExactlyOnceSupport.SUPPORTED:
                support.add_error(_UNSUPPORTED)
        except Exception as exc:  # the plugin's failure becomes the message, never a 500
            log.error("Failed while validating connector support for exactly-once semantics", exc_info=exc)
            support.add_error(_unexpected(exc))
    boundary = values.get("transaction.boundary")
    if boundary is not None and not boundary.errors and str(boundary.value).lower() == "connector":
        try:
            can = _connector(connector_cls).can_define_transaction_boundaries(dict(props))
            if can is None:
                boundary.add_error(_BOUNDARIES_NULL)
            elif can is not ConnectorTransactionBoundaries.SUPPORTED:
                boundary.add_error(_BOUNDARIES_UNSUPPORTED)
        except Exception as exc:
            log.error("Failed while validating connector support for defining its own transaction boundaries",
                      exc_info=exc)
            boundary.add_error(_unexpected(exc))


def _connector(cls: type[Connector]) -> SourceConnector:
    connector = cls()
    if not isinstance(connector, SourceConnector):
        raise TypeError(f"{cls.__qualname__} is not a SourceConnector")
    return connector
