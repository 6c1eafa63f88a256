"""Topic-level settings of the embedded log, in Kafka's names, with Kafka's defaults.

Values come in three layers, later ones winning: Kafka's defaults, the
worker config's broker-style names (``log.segment.bytes``, ...), and the
topic's own configs given at creation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from connect.log.api import LogError

LONG_MAX = (1 << 63) - 1

# topic config name -> (Kafka default, broker-level name that sets the default)
_TOPIC_KEYS: dict[str, tuple[str, str]] = {
    "segment.bytes": (str(1 << 30), "log.segment.bytes"),
    "segment.ms": ("604800000", "log.roll.ms"),
    "index.interval.bytes": ("4096", "log.index.interval.bytes"),
    "retention.ms": ("604800000", "log.retention.ms"),
    "retention.bytes": ("-1", "log.retention.bytes"),
    "cleanup.policy": ("delete", "log.cleanup.policy"),
    "delete.retention.ms": ("86400000", "log.cleaner.delete.retention.ms"),
    "flush.messages": (str(LONG_MAX), "log.flush.interval.messages"),
    "max.message.bytes": ("1048588", "message.max.bytes"),
    "message.timestamp.type": ("CreateTime", "log.message.timestamp.type"),
}

# Kafka also accepts coarser units for a few broker settings.
_COARSE_UNITS: dict[str, tuple[tuple[str, int], ...]] = {
    "log.retention.ms": (("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
    "log.roll.ms": (("log.roll.hours", 3_600_000),),
}


# Every worker setting the embedded log reads (backend.py lists what the ones beyond the topic defaults do).
WORKER_SETTINGS: frozenset[str] = frozenset(
    {broker_key for _, broker_key in _TOPIC_KEYS.values()}
    | {coarse for units in _COARSE_UNITS.values() for coarse, _ in units}
    | {"embedded.log.fsync", "num.partitions", "auto.create.topics.enable", "log.retention.check.interval.ms"}
)


def _as_int(name: str, raw: Any, minimum: int) -> int:
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise LogError(f"Invalid value {raw!r} for topic config {name}: not an integer") from None
    if value < minimum:
        raise LogError(f"Invalid value {raw!r} for topic config {name}: must be at least {minimum}")
    return value


def broker_defaults(worker_config: Mapping[str, Any]) -> dict[str, str]:
    """Topic config defaults for this worker: Kafka's, overridden by broker-style worker settings."""
    out = {name: default for name, (default, _) in _TOPIC_KEYS.items()}
    for name, (_, broker_key) in _TOPIC_KEYS.items():
        if worker_config.get(broker_key) is not None:
            out[name] = str(worker_config[broker_key])
            continue
        for coarse_key, factor in _COARSE_UNITS.get(broker_key, ()):
            if worker_config.get(coarse_key) is not None:
                value = _as_int(coarse_key, worker_config[coarse_key], -1)
                out[name] = str(value * factor if value >= 0 else -1)
                break
    if str(worker_config.get("embedded.log.fsync", "false")).strip().lower() == "true":
        out["flush.messages"] = "1"
    return out


@attrs.frozen
class TopicConfig:
    segment_bytes: int
    segment_ms: int
    index_interval_bytes: int
    retention_ms: int
    retention_bytes: int
    compact: bool
    delete: bool
    delete_retention_ms: int
    flush_messages: int
    max_message_bytes: int
    log_append_time: bool
    effective: Mapping[str, str]

    @classmethod
    def resolve(cls, overrides: Mapping[str, Any], defaults: Mapping[str, str]) -> TopicConfig:
        """Validate ``overrides`` over ``defaults``; raises LogError naming a bad key."""
        merged: dict[str, str] = dict(defaults)
        merged.update({str(k): str(v) for k, v in overrides.items()})
        policy = {p.strip() for p in merged["cleanup.policy"].split(",") if p.strip()}
        if not policy or not policy <= {"delete", "compact"}:
            raise LogError(f"Invalid value {merged['cleanup.policy']!r} for topic config cleanup.policy")
        ts_type = merged["message.timestamp.type"].strip()
        if ts_type not in ("CreateTime", "LogAppendTime"):
            raise LogError(f"Invalid value {ts_type!r} for topic config message.timestamp.type")
        return cls(
            segment_bytes=_as_int("segment.bytes", merged["segment.bytes"], 64),
            segment_ms=_as_int("segment.ms", merged["segment.ms"], 1),
            index_interval_bytes=_as_int("index.interval.bytes", merged["index.interval.bytes"], 0),
            retention_ms=_as_int("retention.ms", merged["retention.ms"], -1),
            retention_bytes=_as_int("retention.bytes", merged["retention.bytes"], -1),
            compact="compact" in policy,
            delete="delete" in policy,
            delete_retention_ms=_as_int("delete.retention.ms", merged["delete.retention.ms"], 0),
            flush_messages=_as_int("flush.messages", merged["flush.messages"], 1),
            max_message_bytes=_as_int("max.message.bytes", merged["max.message.bytes"], 0),
            log_append_time=ts_type == "LogAppendTime",
            effective=merged,
        )


def client_int(config: Mapping[str, Any], key: str, default: int) -> int:
    """An integer client setting (Kafka's names), accepting strings as .properties files give them."""
    raw = config.get(key)
    if raw is None or raw == "":
        return default
    try:
        return int(str(raw).strip())
    except ValueError:
        raise LogError(f"Invalid value {raw!r} for {key}: not an integer") from None


def client_bool(config: Mapping[str, Any], key: str, default: bool) -> bool:
    raw = config.get(key)
    if raw is None or raw == "":
        return default
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise LogError(f"Invalid value {raw!r} for {key}: expected true or false")
    return text == "true"
