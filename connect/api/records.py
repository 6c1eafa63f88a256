"""Records as connectors see them: SourceRecord (produced) and SinkRecord (consumed)."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

from connect.api.headers import ConnectHeaders, Header
from connect.api.schema import Schema
from connect.api.topic_partition import TopicPartition

__all__ = ["ConnectRecord", "SinkRecord", "SourceRecord", "TimestampType", "TopicPartition"]

_UNSET: Any = object()
_new = object.__new__


def _headers_for_copy(headers: Any) -> ConnectHeaders | None:
    """Headers given to ``new_record``, as the constructor would store them."""
    return headers if headers is None or isinstance(headers, ConnectHeaders) else ConnectHeaders(headers)


class TimestampType(enum.Enum):
    NO_TIMESTAMP_TYPE = "NoTimestampType"
    CREATE_TIME = "CreateTime"
    LOG_APPEND_TIME = "LogAppendTime"


class ConnectRecord:
    """Fields common to source and sink records. ``new_record`` makes a changed copy (for transforms)."""

    __slots__ = (
        "topic",
        "kafka_partition",
        "key_schema",
        "key",
        "value_schema",
        "value",
        "timestamp",
        "_headers",
    )

    def __init__(
        self,
        topic: str,
        kafka_partition: int | None,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        timestamp: int | None = None,
        headers: ConnectHeaders | Iterable[Header] | None = None,
    ) -> None:
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        # made on first use: most records never carry headers, and this is the per-record hot path
        self._headers: ConnectHeaders | None = (
            headers if headers is None or isinstance(headers, ConnectHeaders) else ConnectHeaders(headers)
        )

    @property
    def headers(self) -> ConnectHeaders:
        if self._headers is None:
            self._headers = ConnectHeaders()
        return self._headers

    @headers.setter
    def headers(self, value: ConnectHeaders) -> None:
        self._headers = value

    def has_headers(self) -> bool:
        return bool(self._headers)

    def new_record(
        self,
        topic: str | None = None,
        kafka_partition: int | None = _UNSET,
        key_schema: Schema | None = _UNSET,
        key: Any = _UNSET,
        value_schema: Schema | None = _UNSET,
        value: Any = _UNSET,
        timestamp: int | None = _UNSET,
        headers: ConnectHeaders | Iterable[Header] | None = _UNSET,
    ) -> ConnectRecord:
        raise NotImplementedError

    def _copy_base_into(self, r: ConnectRecord, topic: Any, kafka_partition: Any, key_schema: Any, key: Any,
                        value_schema: Any, value: Any, timestamp: Any, headers: Any) -> None:
        """Fill ``r``'s common slots from this record, with the changed fields (``_UNSET`` keeps the old one)."""
        r.topic = self.topic if topic is None else topic
        r.kafka_partition = self.kafka_partition if kafka_partition is _UNSET else kafka_partition
        r.key_schema = self.key_schema if key_schema is _UNSET else key_schema
        r.key = self.key if key is _UNSET else key
        r.value_schema = self.value_schema if value_schema is _UNSET else value_schema
        r.value = self.value if value is _UNSET else value
        r.timestamp = self.timestamp if timestamp is _UNSET else timestamp
        if headers is _UNSET:
            own = self._headers
            r._headers = own.duplicate() if own is not None else None
        else:
            r._headers = _headers_for_copy(headers)

    def _base_repr(self) -> str:
        return (
            f"topic={self.topic!r}, kafka_partition={self.kafka_partition}, key={self.key!r}, "
            f"key_schema={self.key_schema!r}, value={self.value!r}, value_schema={self.value_schema!r}, "
            f"timestamp={self.timestamp}, headers={self.headers!r}"
        )

    def _base_eq(self, other: ConnectRecord) -> bool:
        return (
            self.topic == other.topic
            and self.kafka_partition == other.kafka_partition
            and self.key_schema == other.key_schema
            and self.key == other.key
            and self.value_schema == other.value_schema
            and self.value == other.value
            and self.timestamp == other.timestamp
            and (self._headers or ConnectHeaders()) == (other._headers or ConnectHeaders())
        )

    __hash__ = None  # type: ignore[assignment]


class SourceRecord(ConnectRecord):
    """A record a SourceTask produced, with the source partition and offset it came from."""

    __slots__ = ("source_partition", "source_offset")

    def __init__(
        self,
        source_partition: Mapping[str, Any] | None,
        source_offset: Mapping[str, Any] | None,
        topic: str,
        kafka_partition: int | None = None,
        key_schema: Schema | None = None,
        key: Any = None,
        value_schema: Schema | None = None,
        value: Any = None,
        timestamp: int | None = None,
        headers: ConnectHeaders | Iterable[Header] | None = None,
    ) -> None:
        # the base fields are set inline: records are made once per message, so the call matters
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        self._headers = headers if headers is None or isinstance(headers, ConnectHeaders) else ConnectHeaders(headers)
        self.source_partition = source_partition
        self.source_offset = source_offset

    def new_record(
        self,
        topic=None,
        kafka_partition=_UNSET,
        key_schema=_UNSET,
        key=_UNSET,  # type: ignore[override]
        value_schema=_UNSET,
        value=_UNSET,
        timestamp=_UNSET,
        headers=_UNSET,
    ) -> SourceRecord:
        # every transform makes one of these per record: fill the slots directly instead of going through
        # __init__ with a dict of fields (same result as SourceRecord(...) with the changed fields)
        r = _new(SourceRecord)
        self._copy_base_into(r, topic, kafka_partition, key_schema, key, value_schema, value, timestamp, headers)
        r.source_partition = self.source_partition
        r.source_offset = self.source_offset
        return r

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SourceRecord)
            and self._base_eq(other)
            and self.source_partition == other.source_partition
            and self.source_offset == other.source_offset
        )

    def __repr__(self) -> str:
        return (
            f"SourceRecord(source_partition={self.source_partition!r}, source_offset={self.source_offset!r}, "
            f"{self._base_repr()})"
        )


class SinkRecord(ConnectRecord):
    """A record consumed from a topic, handed to a SinkTask.

    ``original_*`` keep where the record was read from, even after transforms
    rename its topic, so the runtime commits the right offsets.
    """

    __slots__ = (
        "kafka_offset",
        "timestamp_type",
        "original_topic",
        "original_kafka_partition",
        "original_kafka_offset",
    )

    def __init__(
        self,
        topic: str,
        kafka_partition: int,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        kafka_offset: int,
        timestamp: int | None = None,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        headers: ConnectHeaders | Iterable[Header] | None = None,
        original_topic: str | None = None,
        original_kafka_partition: int | None = None,
        original_kafka_offset: int | None = None,
    ) -> None:
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        self._headers = headers if headers is None or isinstance(headers, ConnectHeaders) else ConnectHeaders(headers)
        self.kafka_offset = kafka_offset
        self.timestamp_type = timestamp_type
        self.original_topic = original_topic if original_topic is not None else topic
        self.original_kafka_partition = (
            original_kafka_partition if original_kafka_partition is not None else kafka_partition
        )
        self.original_kafka_offset = (
            original_kafka_offset if original_kafka_offset is not None else kafka_offset
        )

    def new_record(
        self,
        topic=None,
        kafka_partition=_UNSET,
        key_schema=_UNSET,
        key=_UNSET,  # type: ignore[override]
        value_schema=_UNSET,
        value=_UNSET,
        timestamp=_UNSET,
        headers=_UNSET,
    ) -> SinkRecord:
        # as SourceRecord.new_record: slots filled directly; the original_* coordinates are kept
        r = _new(SinkRecord)
        self._copy_base_into(r, topic, kafka_partition, key_schema, key, value_schema, value, timestamp, headers)
        r.kafka_offset = self.kafka_offset
        r.timestamp_type = self.timestamp_type
        r.original_topic = self.original_topic
        r.original_kafka_partition = self.original_kafka_partition
        r.original_kafka_offset = self.original_kafka_offset
        return r

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SinkRecord)
            and self._base_eq(other)
            and self.kafka_offset == other.kafka_offset
            and self.timestamp_type == other.timestamp_type
        )

    def __repr__(self) -> str:
        return f"SinkRecord(kafka_offset={self.kafka_offset}, timestamp_type={self.timestamp_type.value}, {self._base_repr()})"
