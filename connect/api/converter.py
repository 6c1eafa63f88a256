"""Converters between Connect data (schema + value) and the bytes stored in topics."""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping
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
    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None: ...

    @abc.abstractmethod
    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: ConnectHeaders | None = None
    ) -> bytes | None: ...

    @abc.abstractmethod
    def to_connect_data(
        self, topic: str, value: bytes | None, headers: ConnectHeaders | None = None
    ) -> SchemaAndValue: ...

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class HeaderConverter(abc.ABC):
    """Turns one header value into bytes and back."""

    @abc.abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None: ...

    @abc.abstractmethod
    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None: ...

    @abc.abstractmethod
    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue: ...

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
