"""The jars Spark needs beyond PySpark's own: its Kafka connector and its Avro module.

Not a server: ``python -m services fetch spark-kafka`` collects
``spark-sql-kafka-0-10`` (and ``spark-avro``, for the HDFS sink's
``format=avro``) with their dependencies into ``.cache/services/spark-kafka-lib``,
where ``spark_sinks`` finds them (``HEADRACE_SPARK_JARS`` overrides). Their
version must be PySpark's; jars that PySpark already ships are skipped at
run time by ``spark_sinks``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from services import maven
from services.base import Service, ServiceError

__all__ = ["SPARK_JAR_ARTIFACTS", "SPARK_VERSION", "SparkKafkaJars"]

# Must equal the pinned pyspark version (pyproject.toml, extra "spark").
SPARK_VERSION = "4.1.1"
SPARK_JAR_ARTIFACTS: tuple[str, ...] = (
    f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_VERSION}",
    f"org.apache.spark:spark-avro_2.13:{SPARK_VERSION}",
)


class SparkKafkaJars(Service):
    """Fetch-only entry of ``python -m services``: there is nothing to start."""

    name = "spark-kafka"

    def __init__(self, port: int | None = None, work_dir: str | None = None) -> None:
        raise ServiceError("spark-kafka is a set of jars for Spark, not a server: use 'fetch', not 'start'")

    @classmethod
    def fetch(cls) -> None:
        _check_pyspark_version()
        maven.fetch_artifacts(cls.name, SPARK_JAR_ARTIFACTS)

    @classmethod
    def lib_dir(cls) -> Path:
        return maven.lib_dir(cls.name)

    def ports(self) -> Sequence[int]:
        return ()

    def command(self) -> list[str]:
        return []

    def ready(self) -> bool:
        return False


def _check_pyspark_version() -> None:
    try:
        import pyspark
    except ImportError:
        return  # fetching ahead of the Python install is fine
    if pyspark.__version__ != SPARK_VERSION:
        raise ServiceError(
            f"pyspark {pyspark.__version__} is installed but the Spark jars are pinned to {SPARK_VERSION}; "
            f"install pyspark=={SPARK_VERSION} (pip install -e '.[spark]')"
        )
