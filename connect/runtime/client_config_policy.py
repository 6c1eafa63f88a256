"""``connector.client.config.override.policy``: which Kafka client settings a connector config may override.

A connector config may carry ``producer.override.*``, ``consumer.override.*``
and ``admin.override.*`` keys for the clients the worker makes for its tasks.
As in Kafka Connect, the worker's policy decides which of them are allowed:
``All`` (Kafka's default since 3.0) allows every key, ``None`` allows none
and ``Principal`` only the keys that name who the client is
(``sasl.jaas.config``, ``sasl.mechanism``, ``security.protocol``). A refused
key makes the config invalid (400 over REST, one line on the CLI); the worker
checks again before a task starts, since a config stored under a laxer policy
may still be in the config topic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["OVERRIDE_PREFIXES", "POLICY_NAMES", "ClientConfigOverridePolicy", "override_policy"]

OVERRIDE_PREFIXES = ("producer.override.", "consumer.override.", "admin.override.")
_KAFKA_PACKAGE = "org.apache.kafka.connect.connector.policy."
_PRINCIPAL_KEYS = frozenset({"sasl.jaas.config", "sasl.mechanism", "security.protocol"})


class ClientConfigOverridePolicy:
    """One policy: its name and the client keys it lets a connector override (None: all of them)."""

    def __init__(self, name: str, allowed: frozenset[str] | None) -> None:
        self.name = name
        self._allowed = allowed

    def allows(self, client_key: str) -> bool:
        return self._allowed is None or client_key in self._allowed

    def refusals(self, connector_config: Mapping[str, Any]) -> list[tuple[str, str]]:
        """``(connector key, message)`` for every override key of ``connector_config`` this policy refuses."""
        out = []
        for key in connector_config:
            prefix = next((p for p in OVERRIDE_PREFIXES if key.startswith(p)), None)
            if prefix is not None and not self.allows(key[len(prefix):]):
                out.append((key, f"The '{self.name}' policy does not allow '{key[len(prefix):]}' to be overridden "
                                 "in the connector configuration."))
        return out

    def __repr__(self) -> str:
        return f"ClientConfigOverridePolicy({self.name})"


_POLICIES = {
    "All": ClientConfigOverridePolicy("All", None),
    "None": ClientConfigOverridePolicy("None", frozenset()),
    "Principal": ClientConfigOverridePolicy("Principal", _PRINCIPAL_KEYS),
}
# what a worker file may say: the alias, or Kafka Connect's class name (with or without its package)
POLICY_NAMES = {
    **{name: name for name in _POLICIES},
    **{f"{name}ConnectorClientConfigOverridePolicy": name for name in _POLICIES},
    **{f"{_KAFKA_PACKAGE}{name}ConnectorClientConfigOverridePolicy": name for name in _POLICIES},
}


def override_policy(name: str) -> ClientConfigOverridePolicy:
    """The policy a worker setting names (an alias or Kafka Connect's class name)."""
    try:
        return _POLICIES[POLICY_NAMES[name]]
    except KeyError:
        raise ValueError(f"unknown connector client config override policy {name!r}") from None
