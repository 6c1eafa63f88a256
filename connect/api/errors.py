"""Exceptions that plugins raise and the runtime understands."""

from __future__ import annotations


class ConnectException(Exception):
    """Any failure of a connector, task, converter or transform."""


class RetriableException(ConnectException):
    """A failure that may clear by itself; the runtime retries the operation."""


class DataException(ConnectException):
    """A record cannot be converted, validated or transformed."""


class SchemaBuilderException(DataException):
    pass


class SchemaProjectorException(DataException):
    pass


class IllegalWorkerStateException(ConnectException):
    pass


class NotFoundException(ConnectException):
    pass


class AlreadyExistsException(ConnectException):
    pass


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
