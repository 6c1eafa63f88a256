"""Kafka's class names for the plugins that stand in for Kafka Connect's own.

Tools and UIs written for Kafka Connect look for ``org.apache.kafka.connect.file.FileStreamSinkConnector``
or ``org.apache.kafka.connect.transforms.Cast$Value`` in ``GET /connector-plugins`` and in task configs'
``task.class``; Headrace lists its replacements under those names. The Python names stay accepted
wherever a class is named (the registry resolves both).
"""

from __future__ import annotations

__all__ = ["kafka_class_name", "python_class_name"]

_CONNECT = "org.apache.kafka.connect"


def _pairs() -> dict[str, str]:
    names = {
        "plugins.file.source.FileStreamSourceConnector": f"{_CONNECT}.file.FileStreamSourceConnector",
        "plugins.file.source.FileStreamSourceTask": f"{_CONNECT}.file.FileStreamSourceTask",
        "plugins.file.sink.FileStreamSinkConnector": f"{_CONNECT}.file.FileStreamSinkConnector",
        "plugins.file.sink.FileStreamSinkTask": f"{_CONNECT}.file.FileStreamSinkTask",
        "plugins.converters.bytearray.ByteArrayConverter": f"{_CONNECT}.converters.ByteArrayConverter",
        "plugins.converters.json.JsonConverter": f"{_CONNECT}.json.JsonConverter",
        "plugins.converters.string.StringConverter": f"{_CONNECT}.storage.StringConverter",
        "plugins.converters.header.SimpleHeaderConverter": f"{_CONNECT}.storage.SimpleHeaderConverter",
        "plugins.config_providers.FileConfigProvider": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "plugins.config_providers.DirectoryConfigProvider":
            "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
        "plugins.config_providers.EnvVarConfigProvider": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    }
    for number in ("Boolean", "Double", "Float", "Integer", "Long", "Short"):
        names[f"plugins.converters.number.{number}Converter"] = f"{_CONNECT}.converters.{number}Converter"
    # module -> class; the Key/Value pairs are nested classes, written Outer$Inner in Java
    keyed = {"cast": "Cast", "extract_field": "ExtractField", "flatten": "Flatten", "header_from": "HeaderFrom",
             "hoist_field": "HoistField", "insert_field": "InsertField", "mask_field": "MaskField",
             "replace_field": "ReplaceField", "set_schema_metadata": "SetSchemaMetadata",
             "timestamp_converter": "TimestampConverter"}
    for module, cls in keyed.items():
        for side in ("Key", "Value"):
            names[f"plugins.transforms.{module}.{cls}.{side}"] = f"{_CONNECT}.transforms.{cls}${side}"
    single = {"drop_headers": "DropHeaders", "filter": "Filter", "insert_header": "InsertHeader",
              "regex_router": "RegexRouter", "timestamp_router": "TimestampRouter", "value_to_key": "ValueToKey"}
    for module, cls in single.items():
        names[f"plugins.transforms.{module}.{cls}"] = f"{_CONNECT}.transforms.{cls}"
    for module, cls in {"has_header_key": "HasHeaderKey", "record_is_tombstone": "RecordIsTombstone",
                        "topic_name_matches": "TopicNameMatches"}.items():
        names[f"plugins.predicates.{module}.{cls}"] = f"{_CONNECT}.transforms.predicates.{cls}"
    return names


_KAFKA_BY_PYTHON = _pairs()
_PYTHON_BY_KAFKA = {kafka: python for python, kafka in _KAFKA_BY_PYTHON.items()}


def kafka_class_name(python_name: str) -> str:
    """The name a plugin or task class is shown under: Kafka's for a stand-in, else its Python name."""
    return _KAFKA_BY_PYTHON.get(python_name, python_name)


def python_class_name(name: str) -> str | None:
    """The Python class a Kafka class name stands for, or None when it is not one of Kafka's."""
    return _PYTHON_BY_KAFKA.get(name.strip())
