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
from spark_sinks.search import ElasticsearchSparkSink, _action, _send, engine_of, outcome, request_failure

# no Spark session, broker or service of the session's: beside the services group
pytestmark = pytest.mark.beside_services


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


class _BulkAnswers:
    """A search client's ``bulk`` answering from a script: each call takes the next answer, a function of the
    request's documents (response items, in order) or an exception to raise. It checks the body is NDJSON."""

    def __init__(self, *answers) -> None:
        self.answers = list(answers)
        self.requests: list[list[dict]] = []

    def bulk(self, body=None, operations=None, params=None, filter_path=None):
        import json

        raw = body if body is not None else operations
        assert isinstance(raw, bytes) and raw.endswith(b"\n")
        lines = [json.loads(line) for line in raw.splitlines()]
        docs = [line for line in lines if set(line) & {"index", "delete", "update"}]
        self.requests.append(docs)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return {"errors": True, "items": answer(docs)}


def _item(doc: dict, status: int, error: dict | None = None) -> dict:
    ((op, meta),) = doc.items()
    return {op: {"_id": meta["_id"], "status": status, **({"error": error} if error else {})}}


def test_throttled_documents_are_sent_again_alone_until_they_pass() -> None:
    settings = {"engine": "opensearch", "urls": ["http://os:9200"], "max_retries": 3, "backoff_ms": 0, "key_ignore": True,
                "upsert": False, "unwrap": False, "null_behavior": "delete"}
    rows = [("t", 0, i, None, b'{"n":%d}' % i, "idx") for i in range(4)]
    actions = [_action(settings, row) for row in rows]
    client = _BulkAnswers(
        lambda docs: [_item(d, 429 if i % 2 else 201) for i, d in enumerate(docs)],  # two throttled
        lambda docs: [_item(docs[0], 201), _item(docs[1], 400, {"type": "mapper_parsing_exception", "reason": "x"})])
    stats = {"written": 0, "deleted": 0, "skipped": 0}
    failed: list = []
    _send(client, settings, actions, stats, failed)
    assert [[d["index"]["_id"] for d in r] for r in client.requests] == [
        ["t+0+0", "t+0+1", "t+0+2", "t+0+3"], ["t+0+1", "t+0+3"]], "only the throttled ones again"
    assert stats["written"] == 3
    assert [(kind, row[2]) for kind, row, _ in failed] == [("malformed", 3)]


def test_a_document_still_throttled_after_the_retries_fails_the_batch_as_retriable() -> None:
    from opensearchpy.exceptions import TransportError

    from connect.api import RetriableException

    settings = {"engine": "opensearch", "urls": ["http://os:9200"], "max_retries": 2, "backoff_ms": 0, "key_ignore": True,
                "upsert": False, "unwrap": False, "null_behavior": "delete"}
    actions = [_action(settings, ("t", 0, 7, None, b'{"a":\n1}', "idx"))]
    assert actions[0].body == b'{"a": 1}', "a document is one line of the bulk body"
    throttled = TransportError(429, "es_rejected_execution_exception", {})
    client = _BulkAnswers(throttled, lambda docs: [_item(docs[0], 429)], lambda docs: [_item(docs[0], 429)])
    with pytest.raises(RetriableException, match="t-0@7 still failed with HTTP 429.* after 2 retries"):
        _send(client, settings, actions, {"written": 0, "deleted": 0, "skipped": 0}, [])
    assert len(client.requests) == 3, "the whole request throttled counts as a retry too"


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


class _OffsetLogContext:
    def log_settings(self) -> dict[str, str]:
        return {"bootstrap.servers": "127.0.0.1:9"}


def test_each_batch_reads_one_offset_log_entry() -> None:
    """Batch N starts where batch N-1 ended: the entry read for one batch is not read again for the next."""
    task = HdfsSparkSinkTask()
    task.context = _OffsetLogContext()  # type: ignore[assignment]
    task._offset_log = {}
    entries = {"sources/0/0": 'v1\n{"t":{"0":0,"1":5}}', "offsets/0": 'v1\n{"batchWatermarkMs":0}\n{"t":{"0":10,"1":5}}',
               "offsets/1": 'v1\n{"batchWatermarkMs":0}\n{"t":{"0":12,"1":9}}'}
    reads: list[str] = []

    def read(relative: str, spark: object = None) -> str | None:
        reads.append(relative)
        return entries.get(relative)

    task._read_checkpoint_file = read  # type: ignore[method-assign]
    assert task._ranges_from_offset_log(0) == {("t", 0): (0, 9)}  # partition 1 had nothing in batch 0
    assert task._ranges_from_offset_log(1) == {("t", 0): (10, 11), ("t", 1): (5, 8)}
    assert reads == ["offsets/0", "sources/0/0", "offsets/1"]
    assert sorted(task._offset_log) == [0, 1]  # older entries are let go


class _FakePath:
    def __init__(self, text: str) -> None:
        self.text = text

    def getName(self) -> str:  # noqa: N802 - Hadoop's Path API
        return self.text.rsplit("/", 1)[-1]

    def getParent(self) -> _FakePath:  # noqa: N802
        return _FakePath(self.text.rsplit("/", 1)[0])

    def toUri(self) -> _FakePath:  # noqa: N802
        return self

    def getPath(self) -> str:  # noqa: N802 - the path part of the URI
        from urllib.parse import urlparse

        return urlparse(self.text).path

    def toString(self) -> str:  # noqa: N802
        return self.text


class _FakeFileSystem:
    """What a batch's commit asks of Hadoop's FileSystem, on a set of file names (thread-safe, as HDFS is)."""

    def __init__(self, files: set[str]) -> None:
        import threading

        self.files, self.lock, self.renamed, self.folders = set(files), threading.Lock(), [], set()

    def exists(self, path: _FakePath) -> bool:
        with self.lock:
            return path.text in self.files or any(f.startswith(path.text + "/") for f in self.files)

    def listFiles(self, root: _FakePath, recursive: bool) -> object:  # noqa: N802
        found = iter(sorted(f for f in self.files if f.startswith(root.text + "/")))

        class Statuses:
            def __init__(self) -> None:
                self.next_one = next(found, None)

            def hasNext(self) -> bool:  # noqa: N802
                return self.next_one is not None

            def next(self) -> object:
                current, self.next_one = self.next_one, next(found, None)
                status = type("Status", (), {})()
                status.getPath = lambda: _FakePath(current)  # type: ignore[attr-defined]
                return status

        return Statuses()

    def mkdirs(self, path: _FakePath) -> bool:
        with self.lock:
            self.folders.add(path.text)
        return True

    def rename(self, src: _FakePath, dst: _FakePath) -> bool:
        with self.lock:
            if dst.text in self.files or src.text not in self.files:
                return False
            self.files.remove(src.text)
            self.files.add(dst.text)
            self.renamed.append(dst.text)
            return True

    def delete(self, path: _FakePath, recursive: bool) -> bool:
        with self.lock:
            self.files = {f for f in self.files if f != path.text and not f.startswith(path.text + "/")}
        return True


def test_a_commit_renames_every_folder_and_skips_names_an_earlier_run_committed() -> None:
    task = HdfsSparkSinkTask()
    task.url, task.topics_dir, task.pad, task.partitioner = "hdfs://nn:1", "/topics", 3, "time"
    task.prefix, task.suffix, task.template, task.name = "", ".parquet", None, "c"
    tmp = "hdfs://nn:1/topics/+tmp/c/4"
    hours = [f"dt=2024-01-02/hour={h:02d}" for h in range(6)]
    written = {f"{tmp}/topic=t/partition={p}/{h}/part-{p}.parquet" for p in (0, 1) for h in hours}
    written.add(f"{tmp}/_SUCCESS")
    # an earlier run of batch 4 committed this one before it was stopped
    earlier = "hdfs://nn:1/topics/t/dt=2024-01-02/hour=03/t+1+020+029.parquet"
    task._fs = fs = _FakeFileSystem(written | {earlier})
    task._path = _FakePath  # type: ignore[method-assign,assignment]
    ranges = {("t", 0): (0, 9), ("t", 1): (20, 29)}
    assert task._commit(tmp, 4, ranges) == 11
    expected = {f"hdfs://nn:1/topics/t/{h}/t+{p}+{s:03d}+{e:03d}.parquet" for p, (s, e) in ((0, (0, 9)), (1, (20, 29)))
                for h in hours}
    assert fs.files == expected  # the temporary folder is gone, every file has its final name once
    assert sorted(fs.renamed) == sorted(expected - {earlier})
    assert fs.folders == {f"hdfs://nn:1/topics/t/{h}" for h in hours}


def test_a_bulk_request_stays_under_the_clusters_size_limit(monkeypatch) -> None:
    import pyarrow as pa

    import spark_sinks.search as search

    monkeypatch.setattr(search, "_MAX_REQUEST_BYTES", 1000)
    sent: list[int] = []

    class Client:
        def bulk(self, body=None, params=None):
            import json

            sent.append(len(body))
            docs = [json.loads(line) for line in body.splitlines()[::2]]
            return {"items": [_item(d, 201) for d in docs]}

        def close(self) -> None:
            pass

    monkeypatch.setattr(search, "_client", lambda settings: Client())
    settings = {"engine": "opensearch", "urls": ["http://os:9200"], "max_retries": 0, "backoff_ms": 0, "key_ignore": True,
                "upsert": False, "unwrap": False, "null_behavior": "delete", "batch_size": 2000}
    value = b'{"text":"' + b"x" * 180 + b'"}'
    batch = pa.RecordBatch.from_pydict({"topic": ["t"] * 20, "partition": [0] * 20, "offset": list(range(20)),
                                        "key": [None] * 20, "value": [value] * 20, "_index": ["idx"] * 20})
    (out,) = search.bulk_partitions(settings, iter([batch]))
    assert out.column("written").to_pylist()[-1] == 20
    assert len(sent) > 1 and max(sent) <= 1000, sent
