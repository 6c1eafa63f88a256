"""``headrace-log``: a PySpark streaming data source that reads topics of the embedded log directly.

This module is the one place in ``spark_sinks`` that imports ``connect.log``:
its reader runs in Spark's Python workers (and in Spark's planner process),
far from any Headrace worker, so it opens the log's partition files itself,
read-only, the way another process sharing the log would. It also carries
the small helpers that need the same files: end offsets (for lag) and a
dead-letter writer for jobs started with ``spark-submit`` instead of by a worker.

Offsets are the log's own: ``{"<topic>": {"<partition>": <next offset>}}``,
the same JSON as Spark's Kafka source. Rows have the Kafka source's columns
(``timestamp`` as epoch milliseconds in ``timestamp_ms``; ``source.py``
adds the ``timestamp`` column). Options:

``log.dir``             the embedded log directory (required)
``subscribe``           comma-separated topics, or
``subscribePattern``    a regular expression of topics
``startingOffsets``     ``earliest`` (default), ``latest`` or a JSON offsets map
``maxOffsetsPerTrigger`` at most this many records per micro-batch (see ``latestOffset``)
``knownStart``          where the query resumes, if the sink knows: ``initial`` or an offsets map
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

__all__ = ["NAME", "HeadraceLogDataSource", "LogDeadLetterWriter", "end_offsets", "initial_offsets",
           "partition_counts"]

log = logging.getLogger(__name__)

NAME = "headrace-log"
SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp_ms long, "
    "timestampType int, headers array<struct<key: string, value: binary>>"
)
_ROWS_PER_ARROW_BATCH = 8192
_READ_BYTES = 4 << 20

Offsets = dict[str, dict[str, int]]


def _store(log_dir: str):  # noqa: ANN202 - connect.log.embedded.topics.TopicStore
    from connect.log.embedded.topics import TopicStore

    return TopicStore(log_dir, {}, lambda: None, lambda: None)


def partition_counts(log_dir: str, topics: Sequence[str] = (), pattern: str = "") -> dict[str, int]:
    """Partition count of each topic of the log that the subscription matches."""
    from connect.log.embedded.topics import topic_partition_counts

    try:
        counts = topic_partition_counts(log_dir)
    except FileNotFoundError:
        return {}
    if pattern:
        rx = re.compile(pattern)
        return {t: n for t, n in counts.items() if rx.fullmatch(t) and not t.startswith("__")}
    return {t: counts[t] for t in topics if t in counts}


def _bounds(store: Any, counts: Mapping[str, int]) -> dict[str, dict[str, tuple[int, int]]]:
    from connect.log.api import UnknownTopicError

    out: dict[str, dict[str, tuple[int, int]]] = {}
    for topic, n in counts.items():
        for p in range(n):
            with contextlib.suppress(UnknownTopicError):
                plog = store.partition_log(topic, p)
                out.setdefault(topic, {})[str(p)] = (plog.start_offset(), plog.end_offset())
    return out


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
        for t, parts in given.items():  # partitions not created yet keep the given offsets
            for p, o in parts.items():
                offsets.setdefault(t, {}).setdefault(p, max(o, 0))
        return offsets
    if starting.lower() == "latest":
        return {t: {p: end for p, (_, end) in parts.items()} for t, parts in bounds.items()}
    return {t: {p: first for p, (first, _) in parts.items()} for t, parts in bounds.items()}


def initial_offsets(log_dir: str, starting: str, topics: Sequence[str] = (), pattern: str = "") -> Offsets:
    """What ``startingOffsets`` resolves to now, as an explicit offsets map (see ``_resolve_start``)."""
    store = _store(log_dir)
    try:
        return _resolve_start(_bounds(store, partition_counts(log_dir, topics, pattern)), starting)
    finally:
        store.close()


def end_offsets(log_dir: str, topics: Sequence[str] = (), pattern: str = "") -> Offsets:
    """The log end offset of every matched partition (for lag)."""
    store = _store(log_dir)
    try:
        bounds = _bounds(store, partition_counts(log_dir, topics, pattern))
    finally:
        store.close()
    return {t: {p: end for p, (_, end) in parts.items()} for t, parts in bounds.items()}


@dataclass(frozen=True)
class LogRange(InputPartition):
    log_dir: str
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


def source_class(name: str) -> type[HeadraceLogDataSource]:
    """HeadraceLogDataSource under another name (see ``spark_sinks.session.log_source_for``)."""
    return type("HeadraceLogDataSource", (HeadraceLogDataSource,), {"name": classmethod(lambda cls: name)})


class HeadraceLogStreamReader(DataSourceStreamReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        options = {str(k).lower(): v for k, v in options.items()}  # Spark hands the options over lower-cased
        self.log_dir = options.get("log.dir") or ""
        if not self.log_dir:
            raise ValueError(f"{NAME}: the option log.dir (the embedded log directory) is required")
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
        self._store = None

    # -- the files ------------------------------------------------------------------------------
    def _bounds(self) -> dict[str, dict[str, tuple[int, int]]]:
        if self._store is None:
            self._store = _store(self.log_dir)
        counts = partition_counts(self.log_dir, self.topics, self.pattern)
        return _bounds(self._store, counts)

    # -- DataSourceStreamReader ----------------------------------------------------------------------
    def initialOffset(self) -> dict:
        self._position = self._initial_offsets()
        return self._position

    def _initial_offsets(self) -> Offsets:
        """Computed once, so that a batch capped from them and the query's recorded start agree."""
        if self._initial is not None:
            return self._initial
        offsets = _resolve_start(self._bounds(), self.starting)
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
        ends = {t: {p: end for p, (_, end) in parts.items()} for t, parts in bounds.items()}
        base = start if start is not None else self._position
        if base is None and self.known_start == "initial":
            base = self._initial_offsets()
        elif base is None and self.known_start.startswith("{"):
            base = {t: {str(p): int(o) for p, o in parts.items()} for t, parts in json.loads(self.known_start).items()}
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
                    out.append(LogRange(self.log_dir, topic, int(p), int(begin), int(stop)))
        self._position = end
        return out

    def commit(self, end: dict) -> None:
        self._position = end

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, LogRange)
        yield from read_range(partition)

    def stop(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


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


def read_range(r: LogRange) -> Iterator[Any]:
    """The records of ``r`` as Arrow record batches of the source's schema."""
    import pyarrow as pa

    from connect.log.embedded.partition import OffsetOutOfRange
    from connect.log.embedded.reader import PartitionReader

    schema = _arrow_schema()
    store = _store(r.log_dir)
    try:
        plog = store.partition_log(r.topic, r.partition)
        reader = PartitionReader(plog)
        offset = r.start
        first = plog.start_offset()
        if offset < first:
            log.warning("%s-%d: offsets %d..%d were deleted by retention; reading from %d", r.topic, r.partition,
                        offset, first - 1, first)
            offset = first
        cols: dict[str, list[Any]] = {"key": [], "value": [], "offset": [], "ts": [], "hdr": []}
        ts_types: list[int] = []
        any_headers = False
        while offset < r.end:
            try:
                batches = reader.read(offset, _READ_BYTES)
            except OffsetOutOfRange:
                offset = plog.start_offset()
                continue
            if not batches:
                log.warning("%s-%d: the log ends at %d, before the planned end %d (deleted or truncated?)",
                            r.topic, r.partition, offset, r.end)
                break
            for b in batches:
                offsets = b.offsets
                n = len(offsets)
                if offsets[-1] >= r.end:  # trim to the planned range
                    n = sum(1 for o in offsets if o < r.end) if not isinstance(offsets, range) else r.end - offsets[0]
                if n <= 0:
                    offset = r.end
                    break
                cols["key"].extend(b.keys[:n])
                cols["value"].extend(b.values[:n])
                cols["offset"].extend(offsets[:n])
                cols["ts"].extend(b.timestamps[:n])
                ts_types.extend([b.timestamp_type] * n)
                if b.headers is not None:
                    any_headers = True
                    cols["hdr"].extend([[{"key": k, "value": v} for k, v in h] if h else None
                                        for h in b.headers[:n]])
                else:
                    cols["hdr"].extend([None] * n)
                offset = offsets[n - 1] + 1
                if len(cols["offset"]) >= _ROWS_PER_ARROW_BATCH:
                    yield _arrow_batch(pa, schema, r, cols, ts_types, any_headers)
                    cols = {k: [] for k in cols}
                    ts_types = []
            else:
                offset = max(offset, reader.next_offset)
        if cols["offset"]:
            yield _arrow_batch(pa, schema, r, cols, ts_types, any_headers)
    finally:
        store.close()


def _arrow_schema():  # noqa: ANN202 - pyarrow.Schema
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
    headers = (pa.array(cols["hdr"], type=schema.field("headers").type) if any_headers
               else pa.nulls(n, type=schema.field("headers").type))
    return pa.RecordBatch.from_arrays([
        pa.array(cols["key"], type=pa.binary()),
        pa.array(cols["value"], type=pa.binary()),
        pa.array([r.topic] * n, type=pa.string()),
        pa.array([r.partition] * n, type=pa.int32()),
        pa.array(cols["offset"], type=pa.int64()),
        pa.array(cols["ts"], type=pa.int64()),
        pa.array(ts_types, type=pa.int32()),
        headers,
    ], schema=schema)


class LogDeadLetterWriter:
    """Appends dead-letter records to a topic of the embedded log (for jobs run without a worker)."""

    def __init__(self, log_dir: str) -> None:
        from connect.log.embedded.backend import EmbeddedBackend

        self._backend = EmbeddedBackend(log_dir)
        self._producer = self._backend.producer({"acks": "all"})
        self._errors: list[str] = []

    def send(self, topic: str, key: bytes | None, value: bytes | None,
             headers: Sequence[tuple[str, bytes | None]]) -> None:
        def on_delivery(err: Exception | None, _md: object) -> None:
            if err is not None:
                self._errors.append(str(err))

        self._producer.send(topic, value, key=key, headers=tuple(headers), on_delivery=on_delivery)

    def flush(self, timeout: float | None = None) -> list[str]:
        remaining = self._producer.flush(timeout)
        errors, self._errors = self._errors, []
        if remaining:
            errors.append(f"{remaining} record(s) unacknowledged")
        return errors

    def close(self) -> None:
        self._producer.close(5.0)
        self._backend.close()
