"""``headrace-log``: a PySpark data source that reads topics of a Headrace log directly, streaming or as a batch.

This module is the one place in ``spark_sinks`` that imports ``connect.log``,
and only its public read interface (``connect.log.open_log_reader``,
``LogReader``): its reader runs in Spark's Python workers (and in Spark's
planner process), far from any Headrace worker, so it opens the log itself,
read-only, as another client of it would. It works on either backend, the
embedded log or Kafka. It also carries the offset helpers the sink task needs
from the same log: where a new query starts, and the end offsets (for lag).

Offsets are the log's own: ``{"<topic>": {"<partition>": <next offset>}}``,
the same JSON as Spark's Kafka source. Rows have the Kafka source's columns
(``timestamp`` as epoch milliseconds in ``timestamp_ms``; ``source.py``
adds the ``timestamp`` column). Options:

``subscribe``           comma-separated topics, or
``subscribePattern``    a regular expression of topics
``startingOffsets``     ``earliest`` (default), ``latest`` or a JSON offsets map
``endingOffsets``       batch reads (``spark.read``) only: ``latest`` (default) or a JSON offsets map
``maxOffsetsPerTrigger`` at most this many records per micro-batch (see ``latestOffset``)
``knownStart``          where the query resumes, if the sink knows: ``initial`` or an offsets map
``isolation.level``     ``read_committed``: only committed transactions' records, and no batch planned past
                        the last stable offset (Kafka's option name; the sink passes the consumer's setting)

Every other option is a setting of the log, as the task's ``log_settings()``
gives them: ``embedded.log.dir``, or ``bootstrap.servers`` with the Kafka
client's ``security.*``/``sasl.*``/``ssl.*`` settings.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.accumulators import AccumulatorParam
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_reader
from connect.log.api import LogReader, UnknownTopicError

__all__ = ["NAME", "HeadraceLogDataSource", "LogBatchPlanner", "RowsByRange", "end_offsets", "initial_offsets", "read_ranges"]

log = logging.getLogger(__name__)

NAME = "headrace-log"
SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp_ms long, "
    "timestampType int, headers array<struct<key: string, value: binary>>"
)
_ROWS_PER_ARROW_BATCH = 8192
_READ_BYTES = 4 << 20
# the options of the source itself (Spark lower-cases option names); the others are log settings
_SOURCE_OPTIONS = frozenset({"subscribe", "subscribepattern", "startingoffsets", "endingoffsets",
                             "maxoffsetspertrigger", "knownstart"})

Offsets = dict[str, dict[str, int]]
Bounds = dict[str, dict[str, tuple[int, int]]]


def _bounds(reader: LogReader, topics: Sequence[str], pattern: str) -> Bounds:
    """(log start, log end) of each partition the subscription matches, by topic and partition (as text)."""
    out: Bounds = {}
    for tp, bounds in reader.partition_offsets(topics, pattern or None).items():
        out.setdefault(tp.topic, {})[str(tp.partition)] = bounds
    return out


def _stable(reader: LogReader, bounds: Bounds, base: Mapping[str, Mapping[str, int]] | None = None) -> Bounds:
    """``bounds`` with each end lowered to the partition's last stable offset when ``reader`` reads
    read_committed (a batch must not reach into transactions still open); ``base``: where reads stand."""
    if not reader.read_committed:
        return bounds
    positions = {TopicPartition(t, int(p)): int((base or {}).get(t, {}).get(p, first))
                 for t, parts in bounds.items() for p, (first, _) in parts.items()}
    stable = reader.stable_offsets(positions)
    return {t: {p: (first, min(end, stable.get(TopicPartition(t, int(p)), end))) for p, (first, end) in parts.items()}
            for t, parts in bounds.items()}


def _needs_end(starting: str) -> bool:
    """Whether ``startingOffsets`` refers to the log end (``latest``, or -1 in a JSON map)."""
    return starting.lower() == "latest" or (starting.startswith("{") and "-1" in starting)


def _resolve_start(bounds: Mapping[str, Mapping[str, tuple[int, int]]], starting: str) -> Offsets:
    """The offsets a new query starts from: ``earliest``, ``latest`` or a JSON map (Kafka's conventions:
    -2 = earliest, -1 = latest; partitions not named start at the earliest)."""
    if starting.startswith("{"):
        given = {t: {str(p): int(o) for p, o in parts.items()} for t, parts in json.loads(starting).items()}
        offsets: Offsets = {}
        for t, parts in bounds.items():
            for p, (first, end) in parts.items():
                o = given.get(t, {}).get(p, -2)
                offsets.setdefault(t, {})[p] = first if o == -2 else end if o == -1 else o
        for t, given_parts in given.items():  # partitions not created yet keep the given offsets
            for p, o in given_parts.items():
                offsets.setdefault(t, {}).setdefault(p, max(o, 0))
        return offsets
    if starting.lower() == "latest":
        return {t: {p: end for p, (_, end) in parts.items()} for t, parts in bounds.items()}
    return {t: {p: first for p, (first, _) in parts.items()} for t, parts in bounds.items()}


def initial_offsets(settings: Mapping[str, str], starting: str, topics: Sequence[str] = (),
                    pattern: str = "") -> Offsets:
    """What ``startingOffsets`` resolves to now, as an explicit offsets map (see ``_resolve_start``)."""
    reader = open_log_reader(settings)
    try:
        bounds = _bounds(reader, topics, pattern)
        return _resolve_start(_stable(reader, bounds) if _needs_end(starting) else bounds, starting)
    finally:
        reader.close()


def end_offsets(settings: Mapping[str, str], topics: Sequence[str] = (), pattern: str = "") -> Offsets:
    """The log end offset of every matched partition (for lag)."""
    reader = open_log_reader(settings)
    try:
        bounds = _bounds(reader, topics, pattern)
    finally:
        reader.close()
    return {t: {p: end for p, (_, end) in parts.items()} for t, parts in bounds.items()}


@dataclass(frozen=True)
class LogRange(InputPartition):
    settings: tuple[tuple[str, str], ...]  # the log settings, as items
    topic: str
    partition: int
    start: int
    end: int


class HeadraceLogDataSource(DataSource):
    """Register with ``spark.dataSource.register(HeadraceLogDataSource)``; read with ``format("headrace-log")``."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return HeadraceLogStreamReader(dict(self.options))

    def reader(self, schema: Any) -> DataSourceReader:
        return HeadraceLogBatchReader(dict(self.options))


def source_class(name: str) -> type[HeadraceLogDataSource]:
    """HeadraceLogDataSource under another name (see ``spark_sinks.session.log_source_for``)."""
    return type("HeadraceLogDataSource", (HeadraceLogDataSource,), {"name": classmethod(lambda cls: name)})


class HeadraceLogStreamReader(DataSourceStreamReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        options = {str(k).lower(): v for k, v in options.items()}  # Spark hands the options over lower-cased
        self.settings = {k: str(v) for k, v in options.items() if k not in _SOURCE_OPTIONS}
        if not (self.settings.get("bootstrap.servers") or self.settings.get("embedded.log.dir")):
            raise ValueError(f"{NAME}: the log is not named: give the option embedded.log.dir or "
                             "bootstrap.servers (with the Kafka client's settings)")
        self.topics = [t.strip() for t in (options.get("subscribe") or "").split(",") if t.strip()]
        self.pattern = (options.get("subscribepattern") or "").strip()
        if not self.topics and not self.pattern:
            raise ValueError(f"{NAME}: one of the options subscribe or subscribePattern is required")
        self.starting = (options.get("startingoffsets") or "earliest").strip()
        self.max_per_trigger = int(options.get("maxoffsetspertrigger") or 0)
        # where the next batch starts, as the sink knows it: "initial" (a new query) or the offsets JSON of
        # the last batch in the query's checkpoint; lets maxOffsetsPerTrigger cap the first batch too
        self.known_start = (options.get("knownstart") or "").strip()
        # where the last planned or committed batch ended; None until this reader learns it
        self._position: Offsets | None = None
        self._initial: Offsets | None = None
        self._reader: LogReader | None = None

    def _bounds(self) -> Bounds:
        if self._reader is None:
            self._reader = open_log_reader(self.settings)
        return _bounds(self._reader, self.topics, self.pattern)

    # -- DataSourceStreamReader ----------------------------------------------------------------------
    def initialOffset(self) -> dict:
        self._position = self._initial_offsets()
        return self._position

    def _initial_offsets(self) -> Offsets:
        """Computed once, so that a batch capped from them and the query's recorded start agree."""
        if self._initial is not None:
            return self._initial
        bounds = self._bounds()
        if _needs_end(self.starting):
            assert self._reader is not None
            bounds = _stable(self._reader, bounds)
        offsets = _resolve_start(bounds, self.starting)
        self._initial = offsets
        return offsets

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        """Every matched partition's end offset, capped by ``maxOffsetsPerTrigger``.

        PySpark 4.1 does not tell a Python source where the next batch starts,
        so the cap applies from where this reader saw the last batch end (set
        by ``initialOffset``, ``partitions`` and ``commit``), or before that from
        the ``knownStart`` option the sink derives from its checkpoint. (Newer
        PySpark passes ``start`` and a read limit, which are used when given.)
        """
        bounds = self._bounds()
        base = start if start is not None else self._position
        if base is None and self.known_start == "initial":
            base = self._initial_offsets()
        elif base is None and self.known_start.startswith("{"):
            base = {t: {str(p): int(o) for p, o in parts.items()} for t, parts in json.loads(self.known_start).items()}
        assert self._reader is not None
        bounds = _stable(self._reader, bounds, base)  # read_committed: no batch reaches an open transaction
        ends = {t: {p: end for p, (_, end) in parts.items()} for t, parts in bounds.items()}
        max_rows = self.max_per_trigger
        limit_rows = getattr(limit, "max_rows", None)
        if limit is not None:
            max_rows = int(limit_rows) if limit_rows is not None else 0
        if max_rows > 0 and base is not None:
            ends = _cap(base, ends, bounds, max_rows)
        return ends

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        out: list[InputPartition] = []
        bounds = self._bounds()
        for topic, parts in end.items():
            for p, stop in parts.items():
                begin = start.get(topic, {}).get(p)
                if begin is None:  # a partition that appeared after the query started: from its beginning
                    begin = bounds.get(topic, {}).get(p, (0, 0))[0]
                if int(stop) > int(begin):
                    out.append(LogRange(tuple(sorted(self.settings.items())), topic, int(p), int(begin),
                                        int(stop)))
        self._position = end
        return out

    def commit(self, end: dict) -> None:
        self._position = end

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, LogRange)
        yield from read_range(partition)

    def stop(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


class HeadraceLogBatchReader(DataSourceReader):
    """``spark.read.format("headrace-log")``: the records between ``startingOffsets`` (default earliest) and
    ``endingOffsets`` (default latest, as the log ends when the read is planned), as Spark's Kafka source reads
    a batch; one partition per topic-partition."""

    def __init__(self, options: Mapping[str, str]) -> None:
        lowered = {str(k).lower(): v for k, v in options.items()}
        self.ending = str(lowered.pop("endingoffsets", "") or "latest").strip()
        self.stream = HeadraceLogStreamReader(lowered)

    def partitions(self) -> Sequence[InputPartition]:
        stream = self.stream
        try:
            bounds = stream._bounds()
            start = stream._initial_offsets()
            if self.ending.lower() == "latest":
                assert stream._reader is not None
                end = {t: {p: e for p, (_, e) in parts.items()}
                       for t, parts in _stable(stream._reader, bounds, start).items()}
            else:
                end = _resolve_start(bounds, self.ending)
            return stream.partitions(start, end)
        finally:
            stream.stop()

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, LogRange)
        yield from read_range(partition)


def _cap(base: Offsets, ends: Offsets, bounds: Mapping[str, Mapping[str, tuple[int, int]]],
         max_rows: int) -> Offsets:
    """Move each partition from ``base`` towards ``ends`` so that at most ``max_rows`` records are covered,
    shared in proportion to what each partition has waiting (as Spark's Kafka source does)."""
    waiting: dict[tuple[str, str], tuple[int, int]] = {}
    for topic, parts in ends.items():
        for p, end in parts.items():
            begin = base.get(topic, {}).get(p, bounds.get(topic, {}).get(p, (0, 0))[0])
            if end > begin:
                waiting[(topic, p)] = (begin, end)
    total = sum(e - b for b, e in waiting.values())
    if total <= max_rows:
        return ends
    out = {t: dict(parts) for t, parts in ends.items()}
    for (topic, p), (begin, end) in waiting.items():
        share = max(1, (end - begin) * max_rows // total)
        out[topic][p] = min(end, begin + share)
    return out


class LogBatchPlanner:
    """Plans micro-batches of the log in the sink task's own process, for batches the task runs itself.

    A streaming query on this Python source is planned by a Python process Spark starts for the query; that
    start is most of what a query's first batch waits for. Planned here instead, a batch is the same ranges
    the source would plan (``latestOffset`` and ``partitions``), read by ``read_ranges``.
    """

    def __init__(self, settings: Mapping[str, str], topics: Sequence[str], pattern: str, max_rows: int) -> None:
        self.settings = dict(settings)
        self.topics = list(topics)
        self.pattern = pattern
        self.max_rows = max_rows
        self._reader: LogReader | None = None

    def _log(self) -> LogReader:
        if self._reader is None:
            self._reader = open_log_reader(self.settings)
        return self._reader

    def next_batch(self, position: Offsets) -> tuple[Offsets, Offsets]:
        """(start, end) of the next batch from ``position``: every matched partition up to its end (its last
        stable offset when reading committed only), capped at ``max_rows`` records; a partition not in
        ``position`` (created since) starts at its beginning. ``start == end`` when nothing waits."""
        reader = self._log()
        bounds = _stable(reader, _bounds(reader, self.topics, self.pattern), position)
        start = {t: {p: int(position.get(t, {}).get(p, first)) for p, (first, _) in parts.items()}
                 for t, parts in bounds.items()}
        for t, held in position.items():  # partitions no longer listed keep their place
            for p, o in held.items():
                start.setdefault(t, {}).setdefault(p, int(o))
        end = {t: dict(offsets) for t, offsets in start.items()}
        for t, ranges in bounds.items():
            for p, (_, last) in ranges.items():
                end[t][p] = max(start[t][p], last)
        if self.max_rows > 0:
            end = _cap(start, end, bounds, self.max_rows)
        return start, end

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


class RowsByRange(AccumulatorParam):
    """Rows read from each planned range, kept as the largest count seen: a batch the sink reads twice (a schema
    inferred first, or records checked before the write) counts each row once, as Spark's numInputRows does."""

    def zero(self, value: dict[int, int]) -> dict[int, int]:
        return {}

    def addInPlace(self, value1: dict[int, int], value2: dict[int, int]) -> dict[int, int]:  # noqa: N802
        for i, n in value2.items():
            if n > value1.get(i, 0):
                value1[i] = n
        return value1


def read_ranges(spark: Any, settings: Mapping[str, str], start: Mapping[str, Mapping[str, int]],
                end: Mapping[str, Mapping[str, int]], headers: bool = True, rows_read: Any = None) -> Any:
    """The records between two offset maps as a batch DataFrame of the source's schema, one Spark partition per
    topic-partition (as the source plans them), read by Spark's Python workers without a planner process.
    ``headers=False`` leaves the headers column null; ``rows_read``, an accumulator of ``RowsByRange``, gets
    the rows read from each range."""
    import functools

    from pyspark.sql import functions as F

    items = tuple(sorted(settings.items()))
    spans = ((topic, int(p), int(start.get(topic, {}).get(p, 0)), int(stop))
             for topic, parts in sorted(end.items()) for p, stop in sorted(parts.items(), key=lambda i: int(i[0])))
    ranges = tuple(LogRange(items, topic, p, first, stop) for topic, p, first, stop in spans if stop > first)
    read_schema = SCHEMA if headers else SCHEMA.rsplit(", headers", 1)[0]
    if not ranges:
        return spark.createDataFrame([], SCHEMA)
    # spark.range(n, numPartitions=n) puts exactly one id in each partition: one topic-partition per partition
    df = spark.range(0, len(ranges), 1, len(ranges)).mapInArrow(
        functools.partial(_read_indexed_ranges, ranges, headers, rows_read), read_schema)
    if not headers:
        df = df.withColumn("headers", F.lit(None).cast("array<struct<key: string, value: binary>>"))
    return df


def _read_indexed_ranges(ranges: Sequence[LogRange], headers: bool, rows_read: Any,
                         ids: Iterator[Any]) -> Iterator[Any]:
    for batch in ids:
        for i in batch.column(0).to_pylist():
            rows = 0
            for out in read_range(ranges[i], headers):
                rows += out.num_rows
                yield out
            if rows_read is not None:
                rows_read.add({i: rows})


def read_range(r: LogRange, headers: bool = True) -> Iterator[Any]:
    """The records of ``r`` as Arrow record batches of the source's schema (without its headers column when
    ``headers`` is False)."""
    import pyarrow as pa

    schema = _arrow_schema() if headers else _arrow_schema().remove(7)
    reader = open_log_reader(dict(r.settings))
    try:
        cols: dict[str, list[Any]] = {"key": [], "value": [], "offset": [], "ts": [], "hdr": []}
        ts_types: list[int] = []
        any_headers = False
        offset = r.start
        while offset < r.end:
            try:
                got = reader.read(r.topic, r.partition, offset, r.end, _READ_BYTES)
            except UnknownTopicError:
                log.warning("%s-%d: the partition is gone (topic deleted?); offsets %d..%d are not read",
                            r.topic, r.partition, offset, r.end - 1)
                break
            for b in got.batches:
                n = len(b)
                cols["key"].extend(b.keys)
                cols["value"].extend(b.values)
                cols["offset"].extend(b.offsets)
                cols["ts"].extend(b.timestamps)
                ts_types.extend([b.timestamp_type] * n)
                if headers and b.headers is not None:
                    any_headers = True
                    cols["hdr"].extend([[{"key": k, "value": v} for k, v in h] if h else None for h in b.headers])
                elif headers:
                    cols["hdr"].extend([None] * n)
                if len(cols["offset"]) >= _ROWS_PER_ARROW_BATCH:
                    yield _arrow_batch(pa, schema, r, cols, ts_types, any_headers)
                    cols = {k: [] for k in cols}
                    ts_types = []
            if not got.batches and got.next_offset < r.end:
                log.warning("%s-%d: the log ends at %d, before the planned end %d (deleted or truncated, or a "
                            "transaction there is still open?)", r.topic, r.partition, got.next_offset, r.end)
                break
            offset = got.next_offset
        if cols["offset"]:
            yield _arrow_batch(pa, schema, r, cols, ts_types, any_headers)
    finally:
        reader.close()


def _arrow_schema():  # pyarrow.Schema
    import pyarrow as pa

    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    return pa.schema([
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp_ms", pa.int64()),
        pa.field("timestampType", pa.int32()),
        pa.field("headers", pa.list_(header)),
    ])


def _arrow_batch(pa: Any, schema: Any, r: LogRange, cols: dict[str, list[Any]], ts_types: list[int],
                 any_headers: bool) -> Any:
    n = len(cols["offset"])
    columns = [
        pa.array(cols["key"], type=pa.binary()),
        pa.array(cols["value"], type=pa.binary()),
        pa.array([r.topic] * n, type=pa.string()),
        pa.array([r.partition] * n, type=pa.int32()),
        pa.array(cols["offset"], type=pa.int64()),
        pa.array(cols["ts"], type=pa.int64()),
        pa.array(ts_types, type=pa.int32()),
    ]
    if len(schema) > len(columns):
        columns.append(pa.array(cols["hdr"], type=schema.field("headers").type) if any_headers
                       else pa.nulls(n, type=schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
