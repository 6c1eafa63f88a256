"""Configuration of the HdfsSparkSink: its keys, their checks, and the file format and partitioner they select."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from connect.api import (
    CaseInsensitiveValidString,
    CompositeValidator,
    ConfigDef,
    ConfigException,
    ConfigType,
    FilePath,
    Importance,
    LambdaValidator,
    Range,
    Width,
)
from spark_sinks.config import check_timezone, java_to_spark_pattern, spark_sink_def
from spark_sinks.path_template import PathTemplate

__all__ = ["COMPRESSIONS", "EXTRACTORS", "FORMATS", "PARTITIONERS", "format_of", "hdfs_def", "parse_path_format", "partitioner_of"]

HDFS_GROUP = "HDFS"
STORAGE_GROUP = "Storage"
PARTITIONER_GROUP = "Partitioner"

FORMATS = {"parquet": "parquet", "avro": "avro", "json": "json", "text": "txt", "sequence": "seq"}
PARTITIONERS = {
    "default": "default", "field": "field", "time": "time", "hourly": "hourly", "daily": "daily",
    "io.confluent.connect.storage.partitioner.DefaultPartitioner": "default",
    "io.confluent.connect.storage.partitioner.FieldPartitioner": "field",
    "io.confluent.connect.storage.partitioner.TimeBasedPartitioner": "time",
    "io.confluent.connect.storage.partitioner.HourlyPartitioner": "hourly",
    "io.confluent.connect.storage.partitioner.DailyPartitioner": "daily",
}
_FIXED_FORMATS = {"hourly": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH", "daily": "'year'=YYYY/'month'=MM/'day'=dd"}
EXTRACTORS = ("Record", "RecordField", "Wallclock", "Header")
# codecs of text and JSON files, with the extension each adds to a file name
COMPRESSIONS = {"none": "", "gzip": ".gz", "bzip2": ".bz2", "deflate": ".deflate", "snappy": ".snappy",
                "lz4": ".lz4"}


def parse_path_format(path_format: str) -> list[tuple[str, str]]:
    """``dt=YYYY-MM-dd/hour=HH`` -> [("dt", "yyyy-MM-dd"), ("hour", "HH")] (names unquoted, Spark patterns).

    Raises ValueError for a segment that is not ``name=pattern``: Spark and
    Hive only read ``name=value`` folders back as columns.
    """
    out: list[tuple[str, str]] = []
    for segment in [s for s in path_format.strip().strip("/").split("/") if s]:
        m = re.fullmatch(r"\s*('(?:[^']|'')+'|[A-Za-z_][A-Za-z0-9_]*)\s*=(.+)", segment)
        if m is None:
            raise ValueError(f"segment {segment!r} is not name=pattern (e.g. dt=YYYY-MM-dd/hour=HH)")
        name = m.group(1).strip("'").replace("''", "'")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"segment {segment!r}: {name!r} is not a usable column name")
        out.append((name, java_to_spark_pattern(m.group(2).strip())))
    if not out:
        raise ValueError("it is empty")
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"names repeat: {names}")
    return out


def _check_path_format(name: str, value: Any) -> str | None:
    if value in (None, ""):
        return None
    try:
        parse_path_format(str(value))
    except ValueError as exc:
        return f"Invalid value {value} for configuration {name}: {exc}"
    return None


def _check_template(name: str, value: Any) -> str | None:
    if value in (None, ""):
        return None
    try:
        PathTemplate(str(value))
    except ValueError as exc:
        return f"Invalid value {value} for configuration {name}: {exc}"
    return None


def _check_file_part(name: str, value: Any) -> str | None:
    if value and ("/" in str(value) or "+" in str(value)):
        return f"Invalid value {value} for configuration {name}: no / or + in a part of a file name"
    return None


def _check_url(name: str, value: Any) -> str | None:
    if value in (None, ""):
        return None
    parsed = urlparse(str(value))
    if parsed.scheme not in ("hdfs", "webhdfs", "file", "viewfs") or (parsed.scheme != "file" and not parsed.netloc):
        return f"Invalid value {value} for configuration {name}: expected hdfs://host:port"
    return None


def _check_partitioner(name: str, value: Any) -> str | None:
    if str(value) in PARTITIONERS:
        return None
    return (f"Invalid value {value} for configuration {name}: one of default, field, time, hourly, daily "
            "(or Confluent's partitioner class names)")


def hdfs_def() -> ConfigDef:
    d = ConfigDef(spark_sink_def())
    d.define("hdfs.url", ConfigType.STRING,
             validator=CompositeValidator.of(LambdaValidator(_check_url), FilePath("write", url=True)),
             importance=Importance.HIGH, group=HDFS_GROUP, order_in_group=1, width=Width.MEDIUM,
             display_name="HDFS URL",
             documentation="The file system to write to, e.g. hdfs://namenode:8020 (a file: URL must be within "
                           "the worker's connector.allowed.paths, with topics.dir, logs.dir and path.template "
                           "below it).")
    d.define("topics.dir", ConfigType.STRING, "/topics", FilePath("write", under="hdfs.url"), Importance.HIGH,
             group=HDFS_GROUP, order_in_group=2,
             documentation="Top folder of the committed files (one folder per topic below it).")
    d.define("logs.dir", ConfigType.STRING, "/logs", FilePath("write", under="hdfs.url"), Importance.HIGH,
             group=HDFS_GROUP, order_in_group=3, documentation="Top folder of the connectors' Spark checkpoints.")
    d.define("format", ConfigType.STRING, "parquet", CaseInsensitiveValidString.in_(*FORMATS), Importance.HIGH,
             "File format: parquet, avro, json (the JSON values, one per line), text, or sequence (Hadoop "
             "SequenceFiles of LongWritable time and the value, as Flume's HDFS sink writes them).", STORAGE_GROUP, 1)
    d.define("format.class", ConfigType.STRING, "", importance=Importance.LOW, group=STORAGE_GROUP,
             order_in_group=2, documentation="Confluent's format class (…ParquetFormat, …AvroFormat, …JsonFormat, "
                                             "…StringFormat); used when format is not given.")
    d.define("value.schema", ConfigType.STRING, "", importance=Importance.MEDIUM, group=STORAGE_GROUP,
             order_in_group=3, documentation="Spark DDL of the JSON values (a b BIGINT, c STRING) for Parquet and "
                                             "Avro; empty: inferred from each micro-batch.")
    d.define("flush.size", ConfigType.LONG, 0, Range.at_least(0), Importance.HIGH,
             "At most this many records per micro-batch, hence per file (0: no limit; overrides "
             "max.offsets.per.trigger).", STORAGE_GROUP, 4)
    d.define("rotate.interval.ms", ConfigType.LONG, -1, Range.at_least(-1), Importance.HIGH,
             "How often files are committed, as the micro-batch interval (-1: trigger.interval.ms).",
             STORAGE_GROUP, 5)
    d.define("filename.offset.zero.pad.width", ConfigType.INT, 10, Range.at_least(0), Importance.LOW,
             "Width the offsets in file names are zero-padded to.", STORAGE_GROUP, 6)
    d.define("partitioner.class", ConfigType.STRING, "default", LambdaValidator(_check_partitioner),
             Importance.HIGH, "default (partition=N), field, time (path.format), hourly or daily; a time-based one "
             "when only path.format is given.", PARTITIONER_GROUP, 1)
    d.define("path.format", ConfigType.STRING, "", LambdaValidator(_check_path_format), Importance.MEDIUM,
             "Time-based folders, each segment name=pattern: dt=YYYY-MM-dd/hour=HH.", PARTITIONER_GROUP, 2)
    d.define("partition.field.name", ConfigType.LIST, [], importance=Importance.MEDIUM, group=PARTITIONER_GROUP,
             order_in_group=3, documentation="Fields of the value for the field partitioner (folders field=value).")
    d.define("timestamp.extractor", ConfigType.STRING, "Record", CaseInsensitiveValidString.in_(*EXTRACTORS),
             Importance.MEDIUM, "Time of a record for time-based folders: Record (its timestamp), RecordField "
             "(timestamp.field of the value), Header (epoch ms in the header timestamp.header; a record "
             "without it fails the batch, naming the record) or Wallclock.", PARTITIONER_GROUP, 4)
    d.define("timestamp.field", ConfigType.STRING, "timestamp", importance=Importance.MEDIUM,
             group=PARTITIONER_GROUP, order_in_group=5,
             documentation="Field with the record time (epoch ms, or an ISO-8601 string) for RecordField.")
    d.define("timezone", ConfigType.STRING, "UTC", LambdaValidator(check_timezone), Importance.MEDIUM,
             "Time zone of the time-based folders.", PARTITIONER_GROUP, 6)
    d.define("timestamp.header", ConfigType.STRING, "timestamp", importance=Importance.LOW, group=PARTITIONER_GROUP,
             order_in_group=8, documentation="Header with the record time in epoch ms, for the Header extractor.")
    d.define("timestamp.round.ms", ConfigType.LONG, 0, Range.at_least(0), Importance.LOW,
             "Round the record time down to a multiple of this many ms since midnight in timezone, before it "
             "is formatted into folders (0: no rounding).", PARTITIONER_GROUP, 9)
    d.define("path.template", ConfigType.STRING, "",
             CompositeValidator.of(LambdaValidator(_check_template), FilePath("write", under="hdfs.url")),
             Importance.MEDIUM,
             "Folders exactly as given below hdfs.url instead of <topics.dir>/<topic>/<partition path>: "
             "literal text with {time:PATTERN} (the record time, a date pattern) and {header:NAME} (a header's "
             "value), e.g. /flume/events/{time:yy-MM-dd}/{header:host}.", PARTITIONER_GROUP, 10)
    d.define("file.prefix", ConfigType.STRING, "", LambdaValidator(_check_file_part), Importance.LOW,
             "Text before <topic>+<partition>+<start>+<end> in file names.", STORAGE_GROUP, 7)
    d.define("file.suffix", ConfigType.STRING, None, LambdaValidator(_check_file_part), Importance.LOW,
             "Text after the offsets in file names (default: . and the format's extension, then the "
             "compression's).", STORAGE_GROUP, 8)
    d.define("compression", ConfigType.STRING, "none", CaseInsensitiveValidString.in_(*COMPRESSIONS),
             Importance.LOW, "Codec of text and JSON files: none, gzip, bzip2, deflate, snappy or lz4.",
             STORAGE_GROUP, 9)
    d.define("sequence.value", ConfigType.STRING, "bytes", CaseInsensitiveValidString.in_("bytes", "text"),
             Importance.LOW, "The value class of sequence files: bytes (BytesWritable, Flume's writeFormat "
             "Writable) or text (Text, writeFormat Text).", STORAGE_GROUP, 10)
    d.define("locale", ConfigType.STRING, "", importance=Importance.LOW, group=PARTITIONER_GROUP, order_in_group=7,
             documentation="Accepted for compatibility; folder names use the ISO calendar.")
    return d


_FORMAT_CLASSES = {"ParquetFormat": "parquet", "AvroFormat": "avro", "JsonFormat": "json", "StringFormat": "text"}


def format_of(config: Mapping[str, Any]) -> str:
    given = str(config.get("format") or "").strip().lower()
    cls = str(config.get("format.class") or "").strip()
    if cls and not given:
        for suffix, fmt in _FORMAT_CLASSES.items():
            if cls.endswith(suffix):
                return fmt
    return given or "parquet"


def partitioner_of(config: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    kind = PARTITIONERS.get(str(config.get("partitioner.class") or "default"), "default")
    path_format = str(config.get("path.format") or "").strip()
    if kind == "default" and path_format:
        kind = "time"
    if kind in _FIXED_FORMATS:
        return "time", parse_path_format(_FIXED_FORMATS[kind])
    if kind == "time":
        if not path_format:
            raise ConfigException("path.format", path_format, "a time-based partitioner needs path.format")
        return "time", parse_path_format(path_format)
    return kind, []
