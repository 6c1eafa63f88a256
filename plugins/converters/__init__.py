"""Built-in converters: JSON, string, raw bytes, single numbers, and the simple header converter.

Class names are Kafka's, so ``org.apache.kafka.connect.json.JsonConverter`` and
friends in existing worker configs resolve to these; ``io.confluent.connect.avro.AvroConverter`` resolves to
the AvroConverter (Confluent's wire format, schemas in a schema registry).
"""

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
