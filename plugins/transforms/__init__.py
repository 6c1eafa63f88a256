"""Kafka Connect's built-in single message transforms.

Class names match Kafka's simple names; the ``$Key`` / ``$Value`` variants
are the nested classes ``Key`` and ``Value`` (``InsertField.Value`` for
``org.apache.kafka.connect.transforms.InsertField$Value``). InsertTimestampHeader is Headrace's own (what Flume's
timestamp interceptor adds).
"""

from plugins.transforms.cast import Cast
from plugins.transforms.drop_headers import DropHeaders
from plugins.transforms.extract_field import ExtractField
from plugins.transforms.filter import Filter
from plugins.transforms.flatten import Flatten
from plugins.transforms.header_from import HeaderFrom
from plugins.transforms.hoist_field import HoistField
from plugins.transforms.insert_field import InsertField
from plugins.transforms.insert_header import InsertHeader
from plugins.transforms.insert_timestamp_header import InsertTimestampHeader
from plugins.transforms.mask_field import MaskField
from plugins.transforms.regex_router import RegexRouter
from plugins.transforms.replace_field import ReplaceField
from plugins.transforms.set_schema_metadata import SetSchemaMetadata
from plugins.transforms.timestamp_converter import TimestampConverter
from plugins.transforms.timestamp_router import TimestampRouter
from plugins.transforms.value_to_key import ValueToKey

__all__ = [
    "Cast",
    "DropHeaders",
    "ExtractField",
    "Filter",
    "Flatten",
    "HeaderFrom",
    "HoistField",
    "InsertField",
    "InsertHeader",
    "InsertTimestampHeader",
    "MaskField",
    "RegexRouter",
    "ReplaceField",
    "SetSchemaMetadata",
    "TimestampConverter",
    "TimestampRouter",
    "ValueToKey",
]
