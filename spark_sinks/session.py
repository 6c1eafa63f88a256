"""The Spark session the sinks of one process share, with the extra jars Spark needs and our data source.

One process has one SparkContext: the first Spark sink to start creates the
session from the worker config's ``spark.*`` settings (the operator's) and its
connector config's (``spark.master`` and the other ``spark.*`` keys the
worker's ``spark.conf.override.policy`` let through), the connector's taking
precedence; later ones reuse it and get a warning when they ask for a
different master. Under ``spark-submit`` the session (master, jars) is the
one spark-submit set up, unless the connector names ``spark.master`` itself.

Spark's Python workers run the interpreter ``PYSPARK_PYTHON`` names, else the
first ``python3`` on PATH, which need not see this project (a worker started
from a venv that is not activated): unless the operator chose one
(``PYSPARK_PYTHON``, or ``spark.pyspark.python`` in the worker config), the
session hands them this process's own interpreter.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["extra_jars", "log_source_for", "spark_session"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_registered: set[int] = set()

# What the sinks need unless the connector says otherwise.
DEFAULTS: dict[str, str] = {
    "spark.app.name": "headrace-spark-sinks",
    # the driver listens on loopback, not on whatever address the host name resolves to
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    # time partitions and index dates are computed in the connector's timezone, from UTC instants
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.log.level": "WARN",
    "spark.driver.memory": "1g",
    "spark.sql.streaming.stopTimeout": "60s",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # An HDFS client closing a file asks the name node to complete it, usually before the data node has reported
    # the last block, and then sleeps 400 ms before asking again: every small file (each checkpoint entry, each
    # committed file) cost 0.4 s. Asking again after 20 ms, with more tries, keeps the same patience (about 20 s
    # in all, against Hadoop's 12.4 s) at a fraction of the wait.
    "spark.hadoop.dfs.client.block.write.locateFollowingBlock.initial.delay.ms": "20",
    "spark.hadoop.dfs.client.block.write.locateFollowingBlock.retries": "10",
}


def _jars_dir() -> Path | None:
    env = os.environ.get("HEADRACE_SPARK_JARS")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("HEADRACE_SERVICES_CACHE")
    root = Path(cache).expanduser() if cache else Path(__file__).resolve().parent.parent / ".cache" / "services"
    folder = root / "spark-kafka-lib"
    return folder if folder.is_dir() else None


_VERSIONED = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


def extra_jars() -> list[str]:
    """Jars of Spark's Kafka connector and Avro module (``python -m services fetch spark-kafka``), minus the ones
    PySpark already ships (same artifact, any version), so nothing is on the class path twice."""
    folder = _jars_dir()
    if folder is None:
        return []
    import pyspark

    shipped_dir = Path(pyspark.__file__).resolve().parent / "jars"
    shipped = {m.group("artifact") for j in shipped_dir.glob("*.jar") if (m := _VERSIONED.match(j.name))}
    out = []
    for jar in sorted(folder.glob("*.jar")):
        m = _VERSIONED.match(jar.name)
        if m is None or m.group("artifact") not in shipped:
            out.append(str(jar))
    return out


def _under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _spark_keys(settings: Mapping[str, Any]) -> dict[str, str]:
    return {key: str(value) for key, value in settings.items()
            if key.startswith("spark.") and value not in (None, "")}


def _python_workers_interpreter(operator: Mapping[str, str], settings: dict[str, str]) -> None:
    """Make Spark's Python workers run this process's interpreter unless the operator chose one.

    PySpark reads ``PYSPARK_PYTHON`` from the environment when its context starts (a ``spark.pyspark.python``
    setting alone does not reach the workers of a session started in-process), and falls back to the first
    ``python3`` on PATH.
    """
    chosen = os.environ.get("PYSPARK_PYTHON") or operator.get("spark.pyspark.python") or sys.executable
    os.environ["PYSPARK_PYTHON"] = chosen
    settings.setdefault("spark.pyspark.python", chosen)
    settings.setdefault("spark.pyspark.driver.python", sys.executable)


def spark_session(config: Mapping[str, Any], operator_settings: Mapping[str, str] | None = None) -> Any:
    """The process's SparkSession, created if there is none yet from ``operator_settings`` (the worker
    config's ``spark.*``) and ``config`` (a connector config, checked by the worker's policy), the latter's
    ``spark.*`` keys taking precedence."""
    from pyspark.sql import SparkSession

    from spark_sinks.logsource import HeadraceLogDataSource

    operator = _spark_keys(operator_settings or {})
    with _lock:
        master = str(config.get("spark.master") or operator.get("spark.master") or "").strip()
        existing = SparkSession.getActiveSession()
        if existing is None:
            from pyspark import SparkContext

            if SparkContext._active_spark_context is not None:  # created elsewhere in-process
                existing = SparkSession.builder.getOrCreate()
        if existing is not None:
            running = existing.sparkContext.master
            if master and master != running and not _under_spark_submit():
                log.warning("spark.master=%s ignored: this process already runs a Spark session on %s", master,
                            running)
            spark = existing
        else:
            builder = SparkSession.builder
            settings = {**DEFAULTS, **operator, **_spark_keys(config)}
            settings.pop("spark.master", None)  # given to the builder below
            _python_workers_interpreter(operator, settings)
            if not _under_spark_submit():
                builder = builder.master(master or "local[*]")
                jars = extra_jars()
                if jars:
                    given = settings.get("spark.jars", "")
                    settings["spark.jars"] = ",".join([j for j in (given,) if j] + jars)
            elif master:
                builder = builder.master(master)
            for key, value in settings.items():
                builder = builder.config(key, value)
            if settings.get("spark.driver.bindAddress") == "127.0.0.1":
                os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            log.info("Starting a Spark session (master %s)",
                     master or ("given by spark-submit" if _under_spark_submit() else "local[*]"))
            spark = builder.getOrCreate()
        if id(spark) not in _registered:
            spark.dataSource.register(HeadraceLogDataSource)
            _registered.add(id(spark))
        return spark


def log_source_for(spark: Any, connector: str) -> str:
    """The name of an embedded-log data source of ``connector``'s own, registered on first use.

    Spark plans a Python data source on the driver with the registered
    function object, and serialises that object into every task; two queries
    sharing one registration can catch it being changed mid-serialisation
    (the task then dies of java.io.OptionalDataException). One registration
    per connector keeps concurrent queries apart.
    """
    from spark_sinks.logsource import NAME, source_class

    name = f"{NAME}-{re.sub(r'[^A-Za-z0-9_-]', '_', connector)}"
    with _lock:
        manager = spark._jsparkSession.sessionState().dataSourceManager()
        if not manager.dataSourceExists(name):
            spark.dataSource.register(source_class(name))
    return name
