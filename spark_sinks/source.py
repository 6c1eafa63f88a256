"""A sink's topics as a streaming DataFrame, from Kafka or from the embedded log, with the same columns.

Columns: ``key``, ``value`` (binary), ``topic``, ``partition``, ``offset``,
``timestamp`` (a timestamp), ``timestamp_ms`` (epoch ms), ``headers``
(``array<struct<key: string, value: binary>>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spark_sinks.config import topics_of

__all__ = ["read_kafka_range", "read_log_range", "read_stream"]

COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestamp_ms", "headers")
HEADERS_TYPE = "array<struct<key: string, value: binary>>"


def read_stream(spark: Any, config: Mapping[str, Any], log_settings: Mapping[str, str],
                starting_offsets: str, max_offsets_per_trigger: int, known_start: str = "",
                connector: str = "", headers: bool = True) -> Any:
    """``known_start``: where the query resumes, if the caller knows ("initial" for a new query, else the
    offsets JSON of the checkpoint's last batch); the embedded source caps its first batch with it.
    ``connector``: whose query this is (each gets a registration of the embedded source of its own).
    ``headers``: False when the sink never reads them (the column is then null): Spark's Kafka source then
    skips turning every record's headers into an array."""
    from pyspark.sql import functions as F

    topics, regex = topics_of(config)
    servers = log_settings.get("bootstrap.servers")
    if servers:
        reader = (spark.readStream.format("kafka")
                  .option("kafka.bootstrap.servers", servers)
                  .option("startingOffsets", starting_offsets)
                  .option("failOnDataLoss", "false")
                  .option("includeHeaders", "true" if headers else "false"))
        for key, value in log_settings.items():
            if key != "bootstrap.servers":
                reader = reader.option(f"kafka.{key}", value)
        reader = reader.option("subscribePattern", regex) if regex else reader.option("subscribe", ",".join(topics))
        if max_offsets_per_trigger > 0:
            reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
        df = reader.load().withColumn("timestamp_ms", F.unix_millis("timestamp"))
        if not headers:
            df = df.withColumn("headers", F.lit(None).cast(HEADERS_TYPE))
    else:
        from spark_sinks.logsource import NAME
        from spark_sinks.session import log_source_for

        reader = (spark.readStream.format(log_source_for(spark, connector) if connector else NAME)
                  .options(**log_settings)
                  .option("startingOffsets", starting_offsets))
        reader = reader.option("subscribePattern", regex) if regex else reader.option("subscribe", ",".join(topics))
        if max_offsets_per_trigger > 0:
            reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
        if known_start:
            reader = reader.option("knownStart", known_start)
        df = reader.load().withColumn("timestamp", F.timestamp_millis("timestamp_ms"))
    return df.select(*COLUMNS)


def read_kafka_range(spark: Any, log_settings: Mapping[str, str], start: str, end: str) -> Any:
    """The records of Kafka between two offset maps (JSON, ``{"topic": {"partition": offset}}``, the form of a
    Kafka query's offset log) as a batch DataFrame with the streaming columns. Partitions of ``end`` missing
    from ``start`` are read from their beginning."""
    import json

    from pyspark.sql import functions as F

    ends = json.loads(end)
    starts = json.loads(start)
    assign = {t: sorted(int(p) for p in parts) for t, parts in ends.items()}
    first = {t: {p: starts.get(t, {}).get(p, -2) for p in parts} for t, parts in ends.items()}
    reader = (spark.read.format("kafka")
              .option("kafka.bootstrap.servers", log_settings["bootstrap.servers"])
              .option("assign", json.dumps(assign))
              .option("startingOffsets", json.dumps(first))
              .option("endingOffsets", json.dumps(ends))
              .option("failOnDataLoss", "false")
              .option("includeHeaders", "true"))
    for key, value in log_settings.items():
        if key != "bootstrap.servers":
            reader = reader.option(f"kafka.{key}", value)
    return reader.load().withColumn("timestamp_ms", F.unix_millis("timestamp")).select(*COLUMNS)


def read_log_range(spark: Any, log_settings: Mapping[str, str], start: Mapping[str, Mapping[str, int]],
                   end: Mapping[str, Mapping[str, int]], headers: bool = True, rows_read: Any = None) -> Any:
    """The embedded log's records between two offset maps as a batch DataFrame with the streaming columns
    (see ``logsource.read_ranges``)."""
    from pyspark.sql import functions as F

    from spark_sinks.logsource import read_ranges

    df = read_ranges(spark, log_settings, start, end, headers, rows_read)
    return df.withColumn("timestamp", F.timestamp_millis("timestamp_ms")).select(*COLUMNS)
