"""Config keys every Spark sink shares: where Spark runs, how its query reads, where it keeps its checkpoint."""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigType,
    FilePath,
    Importance,
    LambdaValidator,
    Range,
    Width,
)

__all__ = ["SPARK_GROUP", "check_timezone", "is_truthy", "java_to_spark_pattern", "spark_sink_def", "topics_of"]

SPARK_GROUP = "Spark"

SPARK_MASTER = "spark.master"
CHECKPOINT_LOCATION = "checkpoint.location"
TRIGGER_INTERVAL_MS = "trigger.interval.ms"
MAX_OFFSETS_PER_TRIGGER = "max.offsets.per.trigger"
STARTING_OFFSETS = "starting.offsets"


def _starting_offsets(name: str, value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    if text.lower() in ("earliest", "latest") or text.startswith("{"):
        return None
    return f"Invalid value {value} for configuration {name}: must be earliest, latest or a JSON offsets map"


def spark_sink_def() -> ConfigDef:
    """Keys of every Spark sink connector (plus the ``spark.*`` settings the worker's policy allows, passed to the
    Spark session)."""
    d = ConfigDef()
    d.define(SPARK_MASTER, ConfigType.STRING, "local[*]", importance=Importance.HIGH, group=SPARK_GROUP,
             order_in_group=1, width=Width.MEDIUM, display_name="Spark master",
             documentation="Where the Spark query runs: local[N], spark://host:port, yarn, ... All Spark sinks of "
                           "one worker share one Spark session; the first one to start decides its master. The "
                           "other spark.* keys are passed to the session as they are (spark.driver.memory, ...), "
                           "as far as the worker's spark.conf.override.policy allows (by default, Tuning: "
                           "tuning keys only, and only a local[...] master); the worker config's own spark.* "
                           "settings come first.")
    d.define(CHECKPOINT_LOCATION, ConfigType.STRING, "", FilePath("write", url=True), Importance.MEDIUM,
             group=SPARK_GROUP, order_in_group=2, width=Width.LONG, display_name="Checkpoint location",
             documentation="Where the query keeps its offsets and commits (any Hadoop URL or local path; a "
                           "local path or file: URL must be within the worker's connector.allowed.paths). "
                           "Default: chosen by the sink, one per connector.")
    d.define(TRIGGER_INTERVAL_MS, ConfigType.LONG, 1000, Range.at_least(0), Importance.MEDIUM,
             "How often a micro-batch starts, in ms (0: as soon as the previous one ends).", SPARK_GROUP, 3)
    d.define(MAX_OFFSETS_PER_TRIGGER, ConfigType.LONG, 0, Range.at_least(0), Importance.MEDIUM,
             "At most this many records per micro-batch, over all partitions (0: no limit).", SPARK_GROUP, 4)
    d.define(STARTING_OFFSETS, ConfigType.STRING, "earliest", LambdaValidator(_starting_offsets),
             Importance.MEDIUM, "Where a new query starts: earliest, latest or a JSON map "
             '{"topic": {"0": offset}}. A restarted query resumes from its checkpoint.', SPARK_GROUP, 5)
    d.allow_prefix("spark.", "Settings of the worker's Spark session (spark.driver.memory, ...), as far as the "
                             "worker's spark.conf.override.policy allows.")
    return d


def is_truthy(value: Any) -> bool:
    return str(value).strip().lower() == "true"


def topics_of(config: Mapping[str, Any]) -> tuple[list[str], str]:
    """(topics, topics.regex) of a sink config; exactly one is non-empty."""
    topics = [t.strip() for t in str(config.get("topics") or "").split(",") if t.strip()]
    regex = str(config.get("topics.regex") or "").strip()
    return topics, regex


# Joda/Java date pattern letters that mean the same to Spark's formatter, except the year: Confluent's
# path.format examples use YYYY (year of era in Joda), which is Spark's yyyy ('Y' is the week-based year).
def java_to_spark_pattern(pattern: str) -> str:
    out = []
    for quoted, text in _pattern_pieces(pattern):
        out.append(f"'{text}'" if quoted else text.replace("Y", "y"))
    return "".join(out)


def _pattern_pieces(pattern: str) -> list[tuple[bool, str]]:
    """Split a date pattern into (quoted?, text) pieces; '' is a literal quote."""
    pieces: list[tuple[bool, str]] = []
    for m in re.finditer(r"'((?:[^']|'')*)'|([^']+)", pattern):
        if m.group(1) is not None:
            pieces.append((True, m.group(1)))
        else:
            pieces.append((False, m.group(2)))
    return pieces


def check_timezone(name: str, value: Any) -> str | None:
    """The error for a ``timezone`` setting that names no IANA time zone, or None."""
    try:
        zoneinfo.ZoneInfo(str(value))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"Invalid value {value} for configuration {name}: unknown time zone"
    return None
