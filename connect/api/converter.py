"""Converters between Connect data (schema + value) and the bytes stored in topics."""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.config import ConfigDef
from connect.api.headers import ConnectHeaders
from connect.api.schema import Schema, SchemaAndValue

__all__ = ["Converter", "ConverterType", "HeaderConverter"]


class ConverterType(enum.Enum):
    KEY = "key"
    VALUE = "value"
    HEADER = "header"


class Converter(abc.ABC):
    """Turns a record key or value into bytes and back."""

    @abc.abstractmethod
    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Configure with the ``key.converter.*`` / ``value.converter.*`` settings (prefix removed).

        Called once, on the worker's thread, before the task starts. Raise ConfigException to fail the task
        with the key and reason.
        """

    @abc.abstractmethod
    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: ConnectHeaders | None = None
    ) -> bytes | None:
        """Serialize a Connect value of ``schema`` (None: schemaless) to the bytes stored in ``topic``.

        Called on the task's thread for every record of a source task. Raise DataException for a value it
        cannot convert: the record then follows ``errors.tolerance``.
        """

    @abc.abstractmethod
    def to_connect_data(
        self, topic: str, value: bytes | None, headers: ConnectHeaders | None = None
    ) -> SchemaAndValue:
        """Deserialize bytes read from ``topic`` into a schema and a Connect value.

        Called on the task's thread for every record of a sink task. Raise DataException for bytes it
        cannot parse: the record then follows ``errors.tolerance`` and the DLQ.
        """

    def from_connect_batch(self, topic: str, schema: Schema | None, values: Sequence[Any]) -> list[bytes | None]:
        """Many values of one schema, without headers, each as ``from_connect_data`` would convert it.

        The runtime converts whole batches through this (also the values and keys of a
        SourceRecordBatch that carries headers: a converter whose output depends on the headers
        overrides it to raise); a converter that can do the work in bulk overrides it. An exception means "convert these one by one": the runtime then does, with its
        per-record error handling.
        """
        convert = self.from_connect_data
        return [convert(topic, schema, value, None) for value in values]

    def to_connect_batch(
        self, topic: str, values: Sequence[bytes | None]
    ) -> tuple[list[Schema | None], Sequence[Any]]:
        """Many values without headers: their schemas and Connect values, as ``to_connect_data`` gives each.
        The values may come as any sequence (a ``MapColumns`` of maps, say), read in order.

        Overridden by converters that can do the work in bulk; an exception has the runtime convert
        the batch one by one instead, with its per-record error handling.
        """
        schemas: list[Schema | None] = []
        out: list[Any] = []
        for value in values:
            converted = self.to_connect_data(topic, value, None)
            schemas.append(converted.schema)
            out.append(converted.value)
        return schemas, out

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class HeaderConverter(abc.ABC):
    """Turns one header value into bytes and back."""

    @abc.abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Configure with the ``header.converter.*`` settings (prefix removed); once, before the task starts."""

    @abc.abstractmethod
    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        """Serialize one header value; on the task's thread. Raise DataException when it cannot."""

    @abc.abstractmethod
    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        """Deserialize one header value; on the task's thread. Raise DataException when it cannot."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
