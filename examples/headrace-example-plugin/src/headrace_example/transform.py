"""PrefixValue: a single-message transform that puts a fixed text before every string value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    DataException,
    Importance,
    NonNullValidator,
    Transformation,
)
from connect.api.version import distribution_version

__all__ = ["PrefixValue"]

PREFIX_CONFIG = "prefix"

CONFIG_DEF = ConfigDef().define(
    PREFIX_CONFIG,
    ConfigType.STRING,
    validator=NonNullValidator(),
    importance=Importance.HIGH,
    documentation="The text put before each string value.",
)


class PrefixValue(Transformation[ConnectRecord]):
    """``transforms=tag`` and ``transforms.tag.type=PrefixValue``, ``transforms.tag.prefix=...``."""

    def __init__(self) -> None:
        self._prefix = ""

    def configure(self, configs: Mapping[str, Any]) -> None:
        # a ConfigException from here names the key; the worker reports it as transforms.<alias>.prefix
        self._prefix = str(AbstractConfig(CONFIG_DEF, configs).get_string(PREFIX_CONFIG))

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = record.value
        if value is None:
            return record  # a tombstone stays one
        if not isinstance(value, str):
            # DataException: the record follows the connector's errors.tolerance (and the DLQ of a sink)
            raise DataException(f"PrefixValue needs a string value; the record for topic {record.topic} "
                                f"has a {type(value).__name__}")
        # records are never changed in place: a transform returns a new one
        return record.new_record(value=self._prefix + value)

    def config(self) -> ConfigDef:
        return ConfigDef(CONFIG_DEF)

    def version(self) -> str:
        return distribution_version(__name__)
