"""TimestampRouter: route records to a topic named from the original topic and the record timestamp."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from connect.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    DataException,
    Importance,
    SinkRecordBatch,
)
from plugins.transforms._base import BuiltinTransformation
from plugins.transforms._config import parse_config
from plugins.transforms._dateformat import JavaDateFormat

__all__ = ["TimestampRouter"]

TOPIC_FORMAT = "topic.format"
TIMESTAMP_FORMAT = "timestamp.format"

CONFIG_DEF = (
    ConfigDef()
    .define(TOPIC_FORMAT, ConfigType.STRING, "${topic}-${timestamp}", importance=Importance.HIGH,
            documentation="Format string which can contain <code>${topic}</code> and <code>${timestamp}</code> as "
            "placeholders for the topic and timestamp, respectively.")
    .define(TIMESTAMP_FORMAT, ConfigType.STRING, "yyyyMMdd", importance=Importance.HIGH,
            documentation="Format string for the timestamp that is compatible with "
            "<code>java.text.SimpleDateFormat</code>.")
)


class TimestampRouter(BuiltinTransformation[ConnectRecord]):
    """Update the record's topic as a function of the original topic value and the record timestamp.

    Mainly useful for sink connectors, whose destination (table, index) follows the topic name.
    """

    CONFIG_DEF = CONFIG_DEF

    _CACHE_SIZE = 1024

    def __init__(self) -> None:
        self._topic_format = "${topic}-${timestamp}"
        self._timestamp_format = JavaDateFormat("yyyyMMdd")
        self._uses_topic = True
        self._uses_timestamp = True
        self._unit_ms = self._timestamp_format.unit_ms
        # (topic, timestamp // unit) -> routed topic: records of one topic and one day (or whatever the
        # format's finest unit is) share the name, so most records cost one lookup
        self._routes: dict[tuple[str, int], str] = {}
        self._last_topic: str | None = None  # the last route made or found, for (topic, unit)
        self._last_unit = -1
        self._last_route = ""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        pattern = config.get_string(TIMESTAMP_FORMAT) or ""
        try:
            self._timestamp_format = JavaDateFormat(pattern)
        except ValueError as exc:
            raise ConfigException(TIMESTAMP_FORMAT, pattern, str(exc)) from None
        self._topic_format = config.get_string(TOPIC_FORMAT) or ""
        self._uses_topic = "${topic}" in self._topic_format
        self._uses_timestamp = "${timestamp}" in self._topic_format
        self._unit_ms = self._timestamp_format.unit_ms if self._uses_timestamp else 0
        self._routes = {}
        self._last_topic, self._last_unit, self._last_route = None, -1, ""

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        timestamp = record.timestamp
        if timestamp is None:
            raise DataException(f"Timestamp missing on record: {record!r}")
        unit = timestamp // self._unit_ms if self._unit_ms else 0
        # consecutive records mostly share topic and unit: checked first, without making a key
        if unit == self._last_unit and record.topic == self._last_topic:
            return record.new_record(topic=self._last_route)
        key = (record.topic, unit)
        topic = self._routes.get(key)
        if topic is None:
            topic = self._route(record.topic, timestamp)
            if len(self._routes) >= self._CACHE_SIZE:
                self._routes.clear()
            self._routes[key] = topic
        self._last_topic, self._last_unit, self._last_route = record.topic, unit, topic
        return record.new_record(topic=topic)

    def apply_batch(self, records: Sequence[ConnectRecord]) -> Sequence[ConnectRecord]:
        if type(records) is not SinkRecordBatch:  # exact: no ABC check per batch
            return super().apply_batch(records)
        # a SinkRecordBatch: the topic column, from one route per distinct (topic, unit); no records made
        maybe_stamps = records.timestamps
        if None in maybe_stamps:  # apply, record by record, names the record
            return super().apply_batch(records)
        stamps = cast(list[int], maybe_stamps)
        if not stamps:
            return records
        unit_ms = self._unit_ms
        topics = records.topics
        lowest = min(stamps)
        unit = lowest // unit_ms if unit_ms else 0
        if (not unit_ms or unit == max(stamps) // unit_ms) and topics.count(topics[0]) == len(topics):
            # the common case, one topic and one unit (one day, say): one route for the whole batch
            return records.with_columns(topics=[self._cached_route((topics[0], unit), lowest)] * len(topics))
        keys = list(zip(topics, [t // unit_ms for t in stamps] if unit_ms else [0] * len(stamps),
                        strict=True))
        routes = {key: self._cached_route(key, stamp) for key, stamp in dict(zip(keys, stamps, strict=True)).items()}
        return records.with_columns(topics=list(map(routes.__getitem__, keys)))

    def _cached_route(self, key: tuple[str, int], timestamp: int) -> str:
        """The routed topic of ``key`` (topic, unit), made from ``timestamp`` (one of that unit) if not cached."""
        topic = self._routes.get(key)
        if topic is None:
            topic = self._route(key[0], timestamp)
            if len(self._routes) >= self._CACHE_SIZE:
                self._routes.clear()
            self._routes[key] = topic
        return topic

    def _route(self, original: str, timestamp: int) -> str:
        topic = self._topic_format
        if self._uses_topic:
            topic = topic.replace("${topic}", original)
        if self._uses_timestamp:
            topic = topic.replace("${timestamp}", self._timestamp_format.format_millis(timestamp))
        return topic
