"""Real services (Kafka, Apache Kafka Connect, HDFS, OpenSearch, Elasticsearch, Redis, a Spark cluster) on loopback
for tests and local runs.

``get_service("kafka")`` returns the class; ``python -m services`` is the
command-line front end.
"""

from __future__ import annotations

import importlib

from services.base import Service, ServiceError

__all__ = ["SERVICES", "Service", "ServiceError", "get_service"]

# name -> "module:Class"; imported on demand so that fetching one service
# never needs another's client libraries.
SERVICES: dict[str, str] = {
    "kafka": "services.kafka:KafkaService",
    # Apache Kafka Connect itself (Java), against a broker: the reference the compat suite compares with
    "connect": "services.kafka_connect:JavaConnectService",
    "hdfs": "services.hdfs:HdfsService",
    "opensearch": "services.opensearch:OpenSearchService",
    "elasticsearch": "services.elasticsearch:ElasticsearchService",
    "redis": "services.redis:RedisService",
    # a Spark standalone cluster (a master and two workers) from the installed PySpark's jars
    "spark": "services.spark:SparkCluster",
    # jars only (Spark's Kafka connector and Avro module): 'fetch' works, 'start' says there is nothing to start
    "spark-kafka": "services.spark_kafka:SparkKafkaJars",
    # Apache Flume 1.11.0: "flume" is jars only (client, agent, Log4j 2's FlumeAppender); "flume-agent" a real agent
    "flume": "services.flume:FlumeJars",
    "flume-agent": "services.flume:FlumeAgentService",
    # jars only: Log4j 2 (log4j-core's KafkaAppender, JsonTemplateLayout) and kafka-clients, for a Java app's logs
    "log4j-kafka": "services.log4j_kafka:Log4jKafkaJars",
}


def get_service(name: str) -> type[Service]:
    try:
        target = SERVICES[name]
    except KeyError:
        raise ServiceError(f"unknown service {name!r}; known: {', '.join(sorted(SERVICES))}") from None
    module, _, attr = target.partition(":")
    cls: type[Service] = getattr(importlib.import_module(module), attr)
    return cls
