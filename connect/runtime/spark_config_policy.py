"""``spark.conf.override.policy``: which ``spark.*`` keys a connector config may hand the worker's Spark session.

The Spark sinks pass a connector's ``spark.*`` keys to the Spark session they
start in the worker's process. Many Spark settings load code (``spark.jars``,
``spark.extraListeners``, ``spark.plugins``, serializer and codec class names),
set JVM or environment options (``*.extraJavaOptions``, ``spark.executorEnv.*``,
``spark.pyspark.python``) or name files (``spark.local.dir``,
``spark.eventLog.dir``, ``spark.sql.warehouse.dir``): from a connector config,
which anyone who can call the REST API writes, each ran code as the worker's
user. As ``connector.client.config.override.policy`` does for client settings,
the worker's policy decides which keys a connector config may carry:

- ``None``: none; every Spark setting comes from the worker config.
- ``Tuning`` (the default): only ``TUNING_KEYS``, each with a plain value of its
  kind (a size, a count, a boolean, a duration, one of a few names), and a
  ``spark.master`` that runs Spark in the worker's process (``local[...]``).
  None of them can name a class, a file, an option string or a host.
- ``All``: every key, as before the policy existed, for workers whose every
  REST caller is trusted with the worker's account.

The worker config's own ``spark.*`` settings are the operator's and are not
restricted. A refused key makes the config invalid (400 over REST, one line on
the CLI); the worker checks again before a connector or task starts, since a
config stored under a laxer policy may still be in the config topic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["POLICY_CONFIG", "POLICY_NAMES", "TUNING_KEYS", "SparkConfigOverridePolicy", "spark_override_policy"]

POLICY_CONFIG = "spark.conf.override.policy"
POLICY_NAMES = ("None", "Tuning", "All")

_SIZE = re.compile(r"\d{1,12}[kmgtp]?b?", re.IGNORECASE)
_COUNT = re.compile(r"\d{1,9}")
_DURATION = re.compile(r"\d{1,12}(?:us|ms|s|m|min|h|d)?", re.IGNORECASE)
_LOCAL_MASTER = re.compile(r"local(?:\[(?:\d{1,4}|\*)(?:,\s*\d{1,4})?\])?")


class _Kind:
    """What a tuning key's value may be: checked before it reaches Spark, so no value can smuggle more in."""

    def __init__(self, description: str, accepts: Callable[[str], bool]) -> None:
        self.description = description
        self.accepts = accepts


def _matching(pattern: re.Pattern[str], description: str) -> _Kind:
    return _Kind(description, lambda value: pattern.fullmatch(value) is not None)


def _one_of(*names: str) -> _Kind:
    return _Kind("one of " + ", ".join(names), lambda value: value.lower() in {n.lower() for n in names})


def _fraction(value: str) -> bool:
    try:
        return 0.0 <= float(value) <= 1.0
    except ValueError:
        return False


SIZE = _matching(_SIZE, "a size such as 512m or 2g")
COUNT = _matching(_COUNT, "a whole number")
SIZE_OR_OFF = _Kind("a size such as 10m, or -1 (off)", lambda value: value == "-1" or _SIZE.fullmatch(value) is not None)
BOOLEAN = _one_of("true", "false")
DURATION = _matching(_DURATION, "a duration such as 120s or 500ms")
FRACTION = _Kind("a number from 0 to 1", _fraction)

#: What ``Tuning`` lets a connector config set: resources, parallelism, memory, shuffle and adaptive execution,
#: Arrow batches, output codecs, timeouts. Left out on purpose, though harmless-looking: anything taking a class
#: name (spark.serializer, spark.io.compression.codec), spark.sql.files.maxRecordsPerFile and
#: spark.sql.session.timeZone (the sinks' file naming and time folders rely on their defaults), spark.ui.* (a
#: listener), spark.speculation (a batch's writes twice at once) and spark.python.* (the Python workers).
TUNING_KEYS: Mapping[str, _Kind] = {
    "spark.driver.memory": SIZE,
    "spark.driver.cores": COUNT,
    "spark.driver.maxResultSize": SIZE,
    "spark.driver.memoryOverhead": SIZE,
    "spark.executor.memory": SIZE,
    "spark.executor.cores": COUNT,
    "spark.executor.instances": COUNT,
    "spark.executor.memoryOverhead": SIZE,
    "spark.executor.pyspark.memory": SIZE,
    "spark.cores.max": COUNT,
    "spark.task.cpus": COUNT,
    "spark.task.maxFailures": COUNT,
    "spark.default.parallelism": COUNT,
    "spark.dynamicAllocation.enabled": BOOLEAN,
    "spark.dynamicAllocation.minExecutors": COUNT,
    "spark.dynamicAllocation.maxExecutors": COUNT,
    "spark.dynamicAllocation.initialExecutors": COUNT,
    "spark.dynamicAllocation.executorIdleTimeout": DURATION,
    "spark.memory.fraction": FRACTION,
    "spark.memory.storageFraction": FRACTION,
    "spark.memory.offHeap.enabled": BOOLEAN,
    "spark.memory.offHeap.size": SIZE,
    "spark.sql.shuffle.partitions": COUNT,
    "spark.sql.adaptive.enabled": BOOLEAN,
    "spark.sql.adaptive.coalescePartitions.enabled": BOOLEAN,
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": SIZE,
    "spark.sql.adaptive.skewJoin.enabled": BOOLEAN,
    "spark.sql.autoBroadcastJoinThreshold": SIZE_OR_OFF,
    "spark.reducer.maxSizeInFlight": SIZE,
    "spark.shuffle.file.buffer": SIZE,
    "spark.shuffle.compress": BOOLEAN,
    "spark.shuffle.spill.compress": BOOLEAN,
    "spark.sql.execution.arrow.pyspark.enabled": BOOLEAN,
    "spark.sql.execution.arrow.pyspark.fallback.enabled": BOOLEAN,
    "spark.sql.execution.arrow.maxRecordsPerBatch": COUNT,
    "spark.sql.streaming.stopTimeout": DURATION,
    "spark.sql.parquet.compression.codec": _one_of("none", "uncompressed", "snappy", "gzip", "lzo", "brotli",
                                                   "lz4", "lz4_raw", "zstd"),
    "spark.sql.avro.compression.codec": _one_of("uncompressed", "deflate", "snappy", "bzip2", "xz", "zstandard"),
    "spark.network.timeout": DURATION,
    "spark.executor.heartbeatInterval": DURATION,
    "spark.locality.wait": DURATION,
    "spark.log.level": _one_of("ALL", "DEBUG", "ERROR", "FATAL", "INFO", "OFF", "TRACE", "WARN"),
    # the HDFS client's patience when it closes a file (docs/guide/connectors/spark-sinks.md), numbers only
    "spark.hadoop.dfs.client.block.write.locateFollowingBlock.initial.delay.ms": COUNT,
    "spark.hadoop.dfs.client.block.write.locateFollowingBlock.retries": COUNT,
}
_MASTER = "spark.master"


def _is_spark_key(key: str) -> bool:
    # Spark's keys are case-sensitive and the session takes only exact "spark." keys, but a look-alike
    # (" spark.jars", "Spark.jars") is refused too rather than waved through as "not a Spark key"
    return key.strip().lower().startswith("spark.")


class SparkConfigOverridePolicy:
    """One policy: its name and what it lets a connector config set."""

    def __init__(self, name: str, refuse: Callable[[str, str], tuple[str, str] | None], summary: str) -> None:
        self.name = name
        self._refuse = refuse
        self.summary = summary

    def refusal(self, key: str, value: Any) -> str | None:
        """Why this policy refuses ``key`` (a ``spark.*`` key) with ``value`` in a connector config, or None."""
        refused = self._refuse(key, "" if value is None else str(value).strip())
        if refused is None:
            return None
        shown, why = refused
        return (f"The '{self.name}' Spark config override policy ({POLICY_CONFIG}) does not allow {shown} in a "
                f"connector configuration{why}; the worker configuration may set it")

    def refusals(self, connector_config: Mapping[str, Any]) -> list[tuple[str, str]]:
        """``(connector key, message)`` for every ``spark.*`` key of ``connector_config`` this policy refuses."""
        out = []
        for key, value in connector_config.items():
            if _is_spark_key(key):
                message = self.refusal(key, value)
                if message is not None:
                    out.append((key, message))
        return out

    def __repr__(self) -> str:
        return f"SparkConfigOverridePolicy({self.name})"


# (what the message shows of the key, why) for a refused key; None for an allowed one
def _refuse_all(key: str, value: str) -> tuple[str, str] | None:
    return key, ""


def _refuse_none(key: str, value: str) -> tuple[str, str] | None:
    return None


def _tuning(key: str, value: str) -> tuple[str, str] | None:
    if key == _MASTER:
        if _LOCAL_MASTER.fullmatch(value):
            return None
        return f"{key}={value}", ": only local[...] masters, which run Spark inside the worker"
    kind = TUNING_KEYS.get(key)
    if kind is None:
        return key, ": it is not one of the tuning keys (docs/operations/security.md)"
    if kind.accepts(value):
        return None
    return f"{key}={value}", f": expected {kind.description}"


_POLICIES = {
    "None": SparkConfigOverridePolicy("None", _refuse_all, "connector configs may set no spark.* key"),
    "Tuning": SparkConfigOverridePolicy("Tuning", _tuning, "connector configs may set only Spark tuning keys"),
    "All": SparkConfigOverridePolicy("All", _refuse_none, "connector configs may set any spark.* key, including "
                                     "ones that load code, set JVM or environment options or name files"),
}


def spark_override_policy(name: str) -> SparkConfigOverridePolicy:
    """The policy a worker setting names."""
    try:
        return _POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown {POLICY_CONFIG} {name!r}: one of {', '.join(POLICY_NAMES)}") from None
