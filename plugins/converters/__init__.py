"""Built-in converters: JSON, string, raw bytes, single numbers, and the simple header converter.

Class names are Kafka's, so ``org.apache.kafka.connect.json.JsonConverter`` and
friends in existing worker configs resolve to these; ``io.confluent.connect.avro.AvroConverter`` resolves to
the AvroConverter (Confluent's wire format, schemas in a schema registry).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugins.converters.avro import AvroConverter
    from plugins.converters.bytearray import ByteArrayConverter
    from plugins.converters.header import SimpleHeaderConverter
    from plugins.converters.json import JsonConverter
    from plugins.converters.number import (
        BooleanConverter,
        DoubleConverter,
        FloatConverter,
        IntegerConverter,
        LongConverter,
        ShortConverter,
    )
    from plugins.converters.string import StringConverter

# Each converter's module is imported when the converter is first named: a worker on JSON never pays for Avro's
# fastavro and registry client (connect.runtime.plugins imports the module of the class it loads, and with it
# this package).
_MODULE_OF = {
    "AvroConverter": "avro",
    "BooleanConverter": "number",
    "ByteArrayConverter": "bytearray",
    "DoubleConverter": "number",
    "FloatConverter": "number",
    "IntegerConverter": "number",
    "JsonConverter": "json",
    "LongConverter": "number",
    "ShortConverter": "number",
    "SimpleHeaderConverter": "header",
    "StringConverter": "string",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    "AvroConverter",
    "BooleanConverter",
    "ByteArrayConverter",
    "DoubleConverter",
    "FloatConverter",
    "IntegerConverter",
    "JsonConverter",
    "LongConverter",
    "ShortConverter",
    "SimpleHeaderConverter",
    "StringConverter",
]
