"""What every built-in converter shares: the ``converter.type`` key, config parsing, version, and the
header methods (a built-in converter converts a header value as it converts a record value)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from connect.api import (
    NO_DEFAULT,
    AbstractConfig,
    ConfigDef,
    ConfigType,
    Converter,
    HeaderConverter,
    Importance,
    Schema,
    SchemaAndValue,
    ValidString,
)
from connect.api.version import distribution_version

__all__ = ["CONVERTER_TYPE_CONFIG", "BuiltinConverter", "converter_config_def", "plugin_version", "typed_configs"]

CONVERTER_TYPE_CONFIG = "converter.type"


def plugin_version() -> str:
    return distribution_version(__name__)


def converter_config_def() -> ConfigDef:
    """A ConfigDef holding the ``converter.type`` key that every converter accepts."""
    return ConfigDef().define(
        CONVERTER_TYPE_CONFIG,
        ConfigType.STRING,
        NO_DEFAULT,
        ValidString.in_("key", "value", "header"),
        Importance.LOW,
        "What the converter is used for: record keys, record values or headers. The worker sets it.",
    )


def typed_configs(configs: Mapping[str, Any], is_key: bool | None) -> dict[str, Any]:
    """``configs`` with ``converter.type`` set: key/value when used as a Converter, else header."""
    conf = dict(configs)
    if is_key is not None:
        conf[CONVERTER_TYPE_CONFIG] = "key" if is_key else "value"
    else:
        conf.setdefault(CONVERTER_TYPE_CONFIG, "header")
    return conf


class BuiltinConverter(Converter, HeaderConverter):
    """A Converter that is also a HeaderConverter, configured from ``CONFIG_DEF``.

    A subclass sets ``CONFIG_DEF`` when it has keys of its own and overrides ``_configured`` to read them.
    """

    CONFIG_DEF: ClassVar[ConfigDef] = converter_config_def()

    def version(self) -> str:
        return plugin_version()

    def config(self) -> ConfigDef:
        return ConfigDef(self.CONFIG_DEF)

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        self._configured(AbstractConfig(self.CONFIG_DEF, typed_configs(configs, is_key)))

    def _configured(self, config: AbstractConfig) -> None:
        """Take the parsed settings; the default has none of its own to read."""

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)
