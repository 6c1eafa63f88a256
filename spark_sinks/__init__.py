"""Spark sinks: connectors that land topics in HDFS and in Elasticsearch/OpenSearch through PySpark.

Each connector (``HdfsSparkSink``, ``ElasticsearchSparkSink``) runs one
Spark Structured Streaming query, managed by the worker like any connector
(properties file or REST: status, pause/resume, restart, progress). Its task
is a ``StreamingSinkTask``: it reads its topics itself, from Kafka with
Spark's Kafka source or from the embedded log with the ``headrace-log``
Python streaming data source, and writes each micro-batch. The same job runs
without a worker: ``python -m spark_sinks connector.properties [--worker
worker.properties]``, or ``spark-submit spark_sinks/__main__.py ...`` on a
Spark cluster.

Dependencies: ``connect.api`` only, except ``spark_sinks.logsource``, the
log data source, which imports ``connect.log``'s public read interface
(``open_log_reader``): it runs in Spark's Python workers, away from any
Headrace worker, and reads the log as a client of its own. Nothing here
imports PySpark until a query starts, so the connectors validate and list
without it. ``__main__`` (the standalone runner) runs a job with the
runtime's Worker.

Modules: ``config`` (keys every Spark sink shares), ``session`` (the shared
Spark session and its extra jars), ``source`` (topics as a streaming
DataFrame), ``logsource`` (the ``headrace-log`` data source), ``task`` (the
query's life cycle and progress), ``hdfs`` and ``search`` (the sinks),
``hdfs_config`` (the HDFS sink's keys, format and partitioner),
``__main__`` (the standalone runner).
"""

from spark_sinks.hdfs import HdfsSparkSink, HdfsSparkSinkTask
from spark_sinks.search import ElasticsearchSparkSink, ElasticsearchSparkSinkTask

__all__ = ["ElasticsearchSparkSink", "ElasticsearchSparkSinkTask", "HdfsSparkSink", "HdfsSparkSinkTask"]
