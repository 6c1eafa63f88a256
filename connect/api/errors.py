"""Exceptions that plugins raise and the runtime understands.

The SDK's tree, with Kafka Connect's names (``org.apache.kafka.connect.errors``)::

    ConnectException                any failure of a connector, task, converter or transform
     ├── RetriableException         may clear by itself: the runtime retries the operation
     ├── DataException              a record cannot be converted, validated or transformed
     │    └── SchemaBuilderException   a SchemaBuilder used wrongly (a field set twice, ...)
     ├── ConfigException            a configuration value missing or invalid; ``name`` is the key
     ├── NotFoundException          no connector or task of that name
     └── AlreadyExistsException     a connector of that name exists already

The runtime's own errors derive from ConnectException too (the herder's are in
``connect.runtime.herder``); the topic layer's root is ``connect.log.api.LogError``.
"""

from __future__ import annotations


class ConnectException(Exception):
    """Any failure of a connector, task, converter or transform."""


class RetriableException(ConnectException):
    """A failure that may clear by itself; the runtime retries the operation."""


class DataException(ConnectException):
    """A record cannot be converted, validated or transformed."""


class SchemaBuilderException(DataException):
    """A SchemaBuilder call that contradicts an earlier one (a name or default set twice, ...)."""


class NotFoundException(ConnectException):
    """No connector or task of that name. Kept from Kafka Connect's SDK, where the herder raises it and tools
    written against the SDK catch it: the herder's NotFoundError is one."""


class AlreadyExistsException(ConnectException):
    """A connector of that name exists already. Kept from Kafka Connect's SDK, where the herder raises it and
    tools written against the SDK catch it: the herder's AlreadyExistsError is one."""


class ConfigException(ConnectException):
    """A configuration value is missing or invalid; ``name`` is the key at fault."""

    def __init__(self, name: str | None = None, value: object = None, message: str | None = None) -> None:
        self.name = name
        self.value = value
        self.reason = message
        if name is None:
            text = message or "Invalid configuration"
        elif message is None:
            text = f"Invalid value {value!r} for configuration {name}"
        else:
            text = f"Invalid value {value!r} for configuration {name}: {message}"
        super().__init__(text)
