"""InsertTimestampHeader (Headrace's): a header holding a time in epoch milliseconds, as text.

What Flume's ``timestamp`` interceptor adds (header ``timestamp``, the time the event passed, as a decimal
string), which Flume's HDFS sink and others read for time-based paths.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from connect.api import (
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Importance,
    NonEmptyString,
)
from plugins.transforms._base import BuiltinTransformation
from plugins.transforms._config import parse_config

__all__ = ["InsertTimestampHeader"]

HEADER = "header"
SOURCE = "timestamp.source"
PRESERVE = "preserve.existing"

CONFIG_DEF = (
    ConfigDef()
    .define(HEADER, ConfigType.STRING, "timestamp", NonEmptyString(), Importance.HIGH,
            "The name of the header.")
    .define(SOURCE, ConfigType.STRING, "wallclock", CaseInsensitiveValidString.in_("wallclock", "record"),
            Importance.MEDIUM, "wallclock: the time the record passes the transform (Flume's); record: the "
            "record's own timestamp (the time now when it has none).")
    .define(PRESERVE, ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
            documentation="true: a record that has the header already keeps it; false: it is replaced.")
)


class InsertTimestampHeader(BuiltinTransformation[ConnectRecord]):
    """Set a header to a time in epoch milliseconds (text)."""

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._header = "timestamp"
        self._from_record = False
        self._preserve = False

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._header = config.get_string(HEADER) or "timestamp"
        self._from_record = str(config.get_string(SOURCE)).lower() == "record"
        self._preserve = bool(config.get_boolean(PRESERVE))

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if self._preserve and record.headers.last_with_name(self._header) is not None:
            return record
        stamp = record.timestamp if self._from_record and record.timestamp is not None else time.time_ns() // 1_000_000
        headers = record.headers.duplicate().remove(self._header).add_string(self._header, str(stamp))
        return record.new_record(headers=headers)
