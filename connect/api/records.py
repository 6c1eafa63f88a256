"""Records as connectors see them: SourceRecord (produced) and SinkRecord (consumed)."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain, groupby, repeat
from typing import Any

from connect.api.headers import ConnectHeaders, Header
from connect.api.map_columns import MapColumns
from connect.api.schema import Schema
from connect.api.topic_partition import TopicPartition

__all__ = [
    "ConnectRecord",
    "SinkRecord",
    "SinkRecordBatch",
    "SourceRecord",
    "SourceRecordBatch",
    "TimestampType",
    "TopicPartition",
]

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


class SourceRecordBatch(Sequence[SourceRecord]):
    """Records of one source partition for one topic, with no set partition, held as columns.

    ``SourceTask.poll`` may return one instead of a list. It reads as a sequence of
    ``SourceRecord`` (each made when it is read), so transforms and the per-record
    paths see ordinary records; when nothing needs them, the runtime converts and
    sends the columns in bulk and never makes the records at all. That saves most of
    the Python work per record of a fast source.

    ``source_offsets`` has one offset per value (any sequence: a source can make
    the mappings lazily, as only the last one of a batch is usually read), or is
    None when the source keeps no offsets. One ``timestamp`` stands for every record,
    unless ``timestamps`` gives one per record.

    Keys and headers are optional columns too: ``keys`` one per value (of ``key_schema``);
    ``headers`` are the same on every record (the runtime converts them once per batch);
    ``header_columns`` are headers that differ per record, each a ``(key, schema, values)``
    with one value per record, added after ``headers`` in the order given.
    """

    __slots__ = ("topic", "values", "value_schema", "source_partition", "source_offsets", "timestamp", "keys",
                 "key_schema", "timestamps", "headers", "header_columns")

    def __init__(
        self,
        topic: str,
        values: Sequence[Any],
        *,
        value_schema: Schema | None = None,
        source_partition: Mapping[str, Any] | None = None,
        source_offsets: Sequence[Mapping[str, Any] | None] | None = None,
        timestamp: int | None = None,
        keys: Sequence[Any] | None = None,
        key_schema: Schema | None = None,
        timestamps: Sequence[int | None] | None = None,
        headers: Iterable[Header] | None = None,
        header_columns: Sequence[tuple[str, Schema | None, Sequence[Any]]] | None = None,
    ) -> None:
        n = len(values)
        if source_offsets is not None and len(source_offsets) != n:
            raise ValueError(f"{n} values but {len(source_offsets)} source offsets")
        if keys is not None and len(keys) != n:
            raise ValueError(f"{n} values but {len(keys)} keys")
        if timestamps is not None and len(timestamps) != n:
            raise ValueError(f"{n} values but {len(timestamps)} timestamps")
        for name, _, column in header_columns or ():
            if len(column) != n:
                raise ValueError(f"{n} values but {len(column)} values of header {name}")
        self.topic = topic
        self.values = values
        self.value_schema = value_schema
        self.source_partition = source_partition
        self.source_offsets = source_offsets
        self.timestamp = timestamp
        self.keys = keys
        self.key_schema = key_schema
        self.timestamps = timestamps
        self.headers: tuple[Header, ...] = tuple(headers) if headers else ()
        self.header_columns = header_columns or ()

    def has_headers(self) -> bool:
        """Whether its records carry any header."""
        return bool(self.headers or self.header_columns)

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            offsets, keys, stamps = self.source_offsets, self.keys, self.timestamps
            return SourceRecordBatch(
                self.topic, self.values[index], value_schema=self.value_schema,
                source_partition=self.source_partition,
                source_offsets=offsets[index] if offsets is not None else None, timestamp=self.timestamp,
                keys=keys[index] if keys is not None else None, key_schema=self.key_schema,
                timestamps=stamps[index] if stamps is not None else None, headers=self.headers,
                header_columns=[(name, schema, column[index]) for name, schema, column in self.header_columns])
        value = self.values[index]  # raises IndexError past the end, as a sequence must
        offset = self.source_offsets[index] if self.source_offsets is not None else None
        key = self.keys[index] if self.keys is not None else None
        stamp = self.timestamps[index] if self.timestamps is not None else self.timestamp
        headers: ConnectHeaders | None = None
        if self.headers or self.header_columns:
            headers = ConnectHeaders(self.headers)
            for name, schema, column in self.header_columns:
                headers.add(name, column[index], schema)
        return SourceRecord(self.source_partition, offset, self.topic, None, self.key_schema, key, self.value_schema,
                            value, stamp, headers)

    def __iter__(self) -> Iterator[SourceRecord]:
        return map(self.__getitem__, range(len(self.values)))

    def __add__(self, other: Iterable[SourceRecord]) -> list[SourceRecord]:
        # as a list of records would: batches and lists join into one list
        return [*self, *other]

    def __radd__(self, other: Iterable[SourceRecord]) -> list[SourceRecord]:
        return [*other, *self]

    @property
    def last_offset(self) -> Mapping[str, Any] | None:
        """The source offset of the last record: what committing the whole batch stores."""
        offsets = self.source_offsets
        return offsets[-1] if offsets else None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"SourceRecordBatch(topic={self.topic!r}, {len(self)} values, "
                f"source_partition={self.source_partition!r}, last_offset={self.last_offset!r})")


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
        # as SourceRecord.new_record: slots filled directly, in this one function (a call per field group
        # costs as much as the copying); the original_* coordinates are kept
        r = _new(SinkRecord)
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


def _column_record(topic: str, partition: int, key_schema: Schema | None, key: Any, value_schema: Schema | None,
                   value: Any, offset: int, timestamp: int | None, timestamp_type: TimestampType,
                   original_topic: str) -> SinkRecord:
    """``SinkRecord(topic, partition, key_schema, key, value_schema, value, offset, timestamp, timestamp_type,
    original_topic=original_topic)`` with the slots filled directly: no headers to convert and no other
    original_* to default, so none of the constructor's checks are needed (made once per record when a batch
    is read as records)."""
    r = _new(SinkRecord)
    r.topic = topic
    r.original_topic = original_topic
    r.kafka_partition = r.original_kafka_partition = partition
    r.key_schema = key_schema
    r.key = key
    r.value_schema = value_schema
    r.value = value
    r.timestamp = timestamp
    r._headers = None
    r.kafka_offset = r.original_kafka_offset = offset
    r.timestamp_type = timestamp_type
    return r


# where each column is in a part of a SinkRecordBatch
_TOPIC, _PARTITION, _OFFSETS, _STAMPS, _TS_TYPE, _KEY_SCHEMAS, _KEYS, _VALUE_SCHEMAS, _VALUES, _ORIGINAL = range(10)


class SinkRecordBatch(Sequence[SinkRecord]):
    """Records consumed without headers, held as columns (one set per run of one topic partition) until read.

    The runtime may hand one to ``SinkTask.put`` instead of a list. Read as a
    sequence it is one: the ``SinkRecord`` objects are all made the first time
    any is read, and the same objects come back on every later read. A task
    that needs only the values (or keys) reads ``values`` (``keys``) and no
    record is ever made, which saves most of the Python work per record of a
    fast sink. A transform's ``apply_batch`` may likewise read the columns and
    return ``with_columns(...)``: a changed copy, still without records. Values
    that are schemaless maps of one key set may be held as a ``MapColumns``
    (JsonConverter reads them so): ``value_maps`` gives it, to be worked on a
    column per key without a map made per record.
    """

    __slots__ = ("_parts", "_records", "_len")

    def __init__(self) -> None:
        self._parts: list[tuple[Any, ...]] = []
        self._records: list[SinkRecord] | None = None
        self._len = 0

    def add(
        self,
        topic: str,
        kafka_partition: int,
        kafka_offsets: Sequence[int],
        timestamps: Sequence[int | None],
        timestamp_type: TimestampType,
        key_schemas: Sequence[Schema | None],
        keys: Sequence[Any],
        value_schemas: Sequence[Schema | None],
        values: Sequence[Any],
    ) -> None:
        """Append the records of one topic partition, as columns of equal length."""
        n = len(kafka_offsets)
        if not len(timestamps) == len(key_schemas) == len(keys) == len(value_schemas) == len(values) == n:
            raise ValueError(f"the columns of {topic}-{kafka_partition} differ in length")
        self._append((topic, kafka_partition, kafka_offsets, timestamps, timestamp_type, key_schemas, keys,
                      value_schemas, values, topic))

    def _append(self, part: tuple[Any, ...]) -> None:
        self._parts.append(part)
        self._records = None
        self._len += len(part[_OFFSETS])

    def extend(self, other: SinkRecordBatch) -> None:
        """Append the records of ``other``, after these."""
        for part in other._parts:
            self._append(part)

    def _column(self, index: int) -> list[Any]:
        parts = self._parts
        if len(parts) == 1:
            return list(parts[0][index])
        return list(chain.from_iterable(part[index] for part in parts))

    @property
    def values(self) -> list[Any]:
        """Every record's value, in order."""
        return self._column(_VALUES)

    @property
    def keys(self) -> list[Any]:
        """Every record's key, in order."""
        return self._column(_KEYS)

    def value_maps(self) -> MapColumns | None:
        """Every record's value as one ``MapColumns`` when each part holds its values so and they join
        into one table (see ``MapColumns.joined``), else None: a transform or sink that works on columns
        reads them without a map made per record."""
        return self._maps(_VALUES)

    def key_maps(self) -> MapColumns | None:
        """Every record's key as one ``MapColumns``, as ``value_maps`` gives the values."""
        return self._maps(_KEYS)

    def _maps(self, index: int) -> MapColumns | None:
        columns = [part[index] for part in self._parts]
        if not columns or not all(type(column) is MapColumns for column in columns):
            return None
        return MapColumns.joined(columns)

    @property
    def value_schemas(self) -> list[Schema | None]:
        """Every record's value schema, in order."""
        return self._column(_VALUE_SCHEMAS)

    @property
    def key_schemas(self) -> list[Schema | None]:
        """Every record's key schema, in order."""
        return self._column(_KEY_SCHEMAS)

    @property
    def timestamps(self) -> list[int | None]:
        """Every record's timestamp, in order."""
        return self._column(_STAMPS)

    @property
    def topics(self) -> list[str]:
        """Every record's topic, in order."""
        return list(chain.from_iterable(repeat(part[_TOPIC], len(part[_OFFSETS])) for part in self._parts))

    def with_columns(
        self,
        *,
        topics: Sequence[str] | None = None,
        key_schemas: Sequence[Schema | None] | None = None,
        keys: Sequence[Any] | None = None,
        value_schemas: Sequence[Schema | None] | None = None,
        values: Sequence[Any] | None = None,
    ) -> SinkRecordBatch:
        """A copy with the given columns (one entry per record, in order) replaced; the others are kept.

        As ``new_record`` per record would: the partition, offsets, timestamps and the ``original_*``
        coordinates stay. Raises ValueError when a column's length is not the batch's.
        """
        columns = ((_TOPIC, topics), (_KEY_SCHEMAS, key_schemas), (_KEYS, keys), (_VALUE_SCHEMAS, value_schemas),
                   (_VALUES, values))
        for _, column in columns:
            if column is not None and len(column) != self._len:
                raise ValueError(f"a column of {len(column)} entries for a batch of {self._len} records")
        out = SinkRecordBatch()
        start = 0
        for part in self._parts:
            end = start + len(part[_OFFSETS])
            changed = list(part)
            for index, column in columns:
                if column is not None and index != _TOPIC:
                    changed[index] = column[start:end]
            part_topics = topics[start:end] if topics is not None else None
            if not part_topics:
                out._append(tuple(changed))
            elif part_topics.count(part_topics[0]) == len(part_topics):  # the common case: one topic still
                changed[_TOPIC] = part_topics[0]
                out._append(tuple(changed))
            else:  # a part holds one topic: split it where the new topic changes
                a = 0
                for topic, run in groupby(part_topics):
                    b = a + len(list(run))
                    out._append((topic, part[_PARTITION], part[_OFFSETS][a:b], part[_STAMPS][a:b], part[_TS_TYPE],
                                 changed[_KEY_SCHEMAS][a:b], changed[_KEYS][a:b], changed[_VALUE_SCHEMAS][a:b],
                                 changed[_VALUES][a:b], part[_ORIGINAL]))
                    a = b
            start = end
        return out

    def _materialized(self) -> list[SinkRecord]:
        if self._records is None:
            records: list[SinkRecord] = []
            for topic, partition, offsets, stamps, ts_type, key_schemas, keys, value_schemas, values, original \
                    in self._parts:
                n = len(offsets)
                # map() with several columns calls the maker from C: no Python loop per record
                records += map(_column_record, repeat(topic, n), repeat(partition, n), key_schemas, keys,
                               value_schemas, values, offsets, stamps, repeat(ts_type, n), repeat(original, n))
            self._records = records
        return self._records

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: Any) -> Any:
        return self._materialized()[index]

    def __iter__(self) -> Iterator[SinkRecord]:
        return iter(self._materialized())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return self._materialized() == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = ", ".join(f"{p[_TOPIC]}-{p[_PARTITION]}" for p in self._parts)
        return f"SinkRecordBatch({self._len} records from {parts or 'no partition'})"
