"""Built-in converters: JSON, string, raw bytes, single numbers, and the simple header converter.

Class names are Kafka's, so ``org.apache.kafka.connect.json.JsonConverter`` and
friends in existing worker configs resolve to these.
"""

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

__all__ = [
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
