"""Spark sinks without Spark: config keys, validation, path formats, engine detection, offsets arithmetic."""

from __future__ import annotations

import pytest

from connect.api import ConnectException
from connect.runtime.connector_validation import ConnectorConfigValidator
from connect.runtime.plugins import PluginRegistry
from services.base import free_port
from spark_sinks.config import java_to_spark_pattern
from spark_sinks.hdfs import HdfsSparkSink, HdfsSparkSinkTask, check_reachable
from spark_sinks.hdfs_config import parse_path_format
from spark_sinks.logsource import _cap
from spark_sinks.search import ElasticsearchSparkSink, engine_of, outcome, request_failure


@pytest.fixture(scope="module")
def validator() -> ConnectorConfigValidator:
    return ConnectorConfigValidator(PluginRegistry())


def _errors(validator: ConnectorConfigValidator, config: dict[str, str]) -> dict[str, list[str]]:
    result = validator.validate(config)
    return {name: cv.errors for name, cv in result.values.items() if cv.errors}


def test_connectors_resolve_by_alias_and_are_sinks() -> None:
    registry = PluginRegistry()
    assert registry.lookup("HdfsSparkSink").cls is HdfsSparkSink
    assert registry.lookup("ElasticsearchSparkSink").cls is ElasticsearchSparkSink
    assert registry.lookup("HdfsSparkSink").type == "sink"


def test_hdfs_sink_config_is_validated(validator: ConnectorConfigValidator) -> None:
    ok = {"name": "h", "connector.class": "HdfsSparkSink", "topics": "t", "hdfs.url": "hdfs://127.0.0.1:8020",
          "path.format": "dt=YYYY-MM-dd/hour=HH", "format": "avro", "timezone": "Europe/Paris"}
    assert _errors(validator, ok) == {}
    errors = _errors(validator, {**ok, "topics": "", "path.format": "YYYY/MM", "format": "orc",
                                 "hdfs.url": "http://x", "timezone": "Mars/Base"})
    assert "Must configure one of topics or topics.regex" in errors["topics"]
    assert "is not name=pattern" in errors["path.format"][0]
    assert "format" in errors and "hdfs.url" in errors and "timezone" in errors
    missing = _errors(validator, {"name": "h", "connector.class": "HdfsSparkSink", "topics": "t"})
    assert "hdfs.url" in missing
    needs_format = _errors(validator, {**ok, "path.format": "", "partitioner.class": "time"})
    assert needs_format["path.format"] == ["A time-based partitioner needs path.format"]


def test_search_sink_config_is_validated(validator: ConnectorConfigValidator) -> None:
    ok = {"name": "s", "connector.class": "ElasticsearchSparkSink", "topics": "t",
          "connection.url": "http://127.0.0.1:9200", "write.method": "upsert",
          "behavior.on.null.values": "delete", "behavior.on.malformed.documents": "warn"}
    assert _errors(validator, ok) == {}
    errors = _errors(validator, {**ok, "write.method": "merge", "behavior.on.null.values": "drop",
                                 "connection.url": "127.0.0.1:9200", "batch.size": "0"})
    assert set(errors) >= {"write.method", "behavior.on.null.values", "connection.url", "batch.size"}


def test_path_format_segments_become_columns_and_spark_patterns() -> None:
    assert parse_path_format("dt=YYYY-MM-dd/hour=HH") == [("dt", "yyyy-MM-dd"), ("hour", "HH")]
    assert parse_path_format("'year'=YYYY/'month'=MM/'day'=dd") == [("year", "yyyy"), ("month", "MM"), ("day", "dd")]
    for bad in ("YYYY/MM", "dt=YYYY/dt=MM", "", "1x=YYYY"):
        with pytest.raises(ValueError):
            parse_path_format(bad)
    assert java_to_spark_pattern("YYYY.MM.dd'Y'") == "yyyy.MM.dd'Y'"


def test_final_file_names_hold_topic_partition_and_offsets() -> None:
    task = HdfsSparkSinkTask()
    task.url, task.topics_dir, task.pad, task.partitioner = "hdfs://nn:1", "/topics", 10, "time"
    task.prefix, task.suffix, task.template = "", ".parquet", None
    ranges = {("orders", 3): (17, 42), ("a.b", 0): (0, 9)}
    rel = "topic=orders/partition=3/dt=2024-01-02/hour=05/part-00000-x.snappy.parquet"
    assert task._final_path(rel, ranges, 7) == \
        "hdfs://nn:1/topics/orders/dt=2024-01-02/hour=05/orders+3+0000000017+0000000042.parquet"
    task.partitioner = "default"
    assert task._final_path("topic=a.b/partition=0/part-1.parquet", ranges, 7) == \
        "hdfs://nn:1/topics/a.b/partition=0/a.b+0+0000000000+0000000009.parquet"
    task.prefix, task.suffix = "events-", ".log.gz"  # Flume's hdfs.filePrefix/fileSuffix
    assert task._final_path("topic=a.b/partition=0/part-1.parquet", ranges, 7) == \
        "hdfs://nn:1/topics/a.b/partition=0/events-a.b+0+0000000000+0000000009.log.gz"
    with pytest.raises(ConnectException, match="Batch 7 wrote records of orders-4, which has no offset range"):
        task._final_path("topic=orders/partition=4/part-1.parquet", ranges, 7)


def test_engine_is_told_from_the_root_response() -> None:
    opensearch = {"version": {"distribution": "opensearch", "number": "2.19.1", "lucene_version": "9.12.1"},
                  "tagline": "The OpenSearch Project: https://opensearch.org/"}
    elasticsearch = {"version": {"number": "8.15.0", "build_flavor": "default", "lucene_version": "9.11.1"},
                     "tagline": "You Know, for Search"}
    assert engine_of(opensearch) == "opensearch"
    assert engine_of(elasticsearch) == "elasticsearch"
    assert engine_of({"version": {"number": "1"}}, "Elasticsearch") == "elasticsearch"
    assert engine_of({"hello": "world"}) is None
    assert engine_of(["not", "a", "dict"]) is None


def test_rate_limit_shares_the_cap_in_proportion() -> None:
    ends = {"t": {"0": 1000, "1": 100}}
    bounds = {"t": {"0": (0, 1000), "1": (0, 100)}}
    capped = _cap({"t": {"0": 0, "1": 0}}, ends, bounds, 110)
    assert capped == {"t": {"0": 100, "1": 10}}
    assert _cap({"t": {"0": 990, "1": 100}}, ends, bounds, 110) == ends


def test_unreachable_hdfs_is_named_in_the_error() -> None:
    url = f"hdfs://127.0.0.1:{free_port()}"
    with pytest.raises(ConnectException, match=f"HDFS at {url} is not reachable"):
        check_reachable(url, timeout=2)
    sink = HdfsSparkSink()
    with pytest.raises(ConnectException, match=url):
        sink.start({"name": "h", "topics": "t", "hdfs.url": url})


def test_bulk_item_outcomes_by_http_status() -> None:
    assert [outcome("index", s) for s in (201, 409, 429, 503, 400, 403)] == [
        "done", "done", "retriable", "retriable", "malformed", "rejected"]
    assert outcome("update", 409) == "rejected"  # an upsert has no external version: a conflict is not a replay
    assert outcome("delete", 404) == "done" and outcome("index", 404) == "rejected"


def test_bulk_request_failures_by_exception_type_and_status() -> None:
    from elastic_transport import ApiResponseMeta, ConnectionTimeout, HttpHeaders, NodeConfig
    from elasticsearch import ApiError
    from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
    from opensearchpy.exceptions import SSLError, TransportError

    from connect.api import RetriableException

    opensearch = {"engine": "opensearch", "urls": ["http://os:9200"], "max_retries": 3}
    elastic = {**opensearch, "engine": "elasticsearch"}

    def es_error(status: int) -> ApiError:
        meta = ApiResponseMeta(status, "1.1", HttpHeaders(), 0.1, NodeConfig("http", "es", 9200))
        return ApiError("error", meta, {"error": "x"})

    for exc, settings in ((OpenSearchConnectionError("N/A", "refused", None), opensearch),
                          (TransportError(429, "es_rejected_execution_exception", {}), opensearch),
                          (TransportError(503, "unavailable", {}), opensearch),
                          (ConnectionTimeout("timed out"), elastic), (es_error(429), elastic)):
        failure = request_failure(exc, settings)
        assert isinstance(failure, RetriableException), exc
        assert "after 3 retries" in str(failure)
    for exc, settings in ((TransportError(401, "security_exception", {}), opensearch), (es_error(403), elastic)):
        failure = request_failure(exc, settings)
        assert not isinstance(failure, RetriableException) and "was refused with HTTP 4" in str(failure)
    # a TLS failure is a connection error by type, but no retry mends it
    tls = request_failure(SSLError("N/A", "certificate verify failed", None), opensearch)
    assert not isinstance(tls, RetriableException) and "TLS" in str(tls)
    assert not isinstance(request_failure(ValueError("bad"), elastic), RetriableException)
