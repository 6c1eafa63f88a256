"""ElasticsearchSparkSink: topics into Elasticsearch or OpenSearch with bulk requests, through Spark.

The engine is told from the cluster's root response (``GET /``): OpenSearch
says ``"distribution": "opensearch"``; anything else answering like
Elasticsearch is Elasticsearch, which must be 7.14 or newer: the
``elasticsearch`` client (8.x/9.x) needs the ``X-Elastic-Product`` header
those send (7.17 is tested; it takes the client's ``compatible-with=8``/``9``
media types as they are). Writes go through the engine's official client
(``opensearch-py`` or ``elasticsearch``), from Spark's executors: each
partition of a micro-batch sends bulk requests of at most ``batch.size``
actions.

Document ids (Confluent's Elasticsearch sink): ``<topic>+<partition>+<offset>``
with ``key.ignore=true``, so a replayed record overwrites itself and a crash
never duplicates; otherwise the record key, written with external versioning
(version = offset) in insert mode, so an older replay never wins.
``write.method=upsert`` merges the value into the document
(``doc_as_upsert``). A tombstone (null value) follows
``behavior.on.null.values``: ``ignore``, ``delete`` (the document of its key)
or ``fail``. A document the cluster rejects as malformed (a 400: mapping or
parsing errors) follows ``behavior.on.malformed.documents``: ``fail``, ``warn``
(logged) or ``ignore``; with warn or ignore it also goes to the connector's
dead-letter topic with the error in its headers
(``errors.deadletterqueue.context.headers.enable=true``). Throttling (429),
unavailable nodes (5xx) and connection failures are retried ``max.retries``
times with exponential backoff from ``retry.backoff.ms`` and jitter; then the
batch fails, and so the task, without Spark committing the batch.

Index names: ``index.name.format`` (default ``${topic}``) may hold
``${topic}`` and ``${timestamp}``, the record date as ``index.timestamp.format``
(``yyyy.MM.dd``) in ``timezone``, e.g. ``logs-${topic}-${timestamp}``;
names are lower-cased.
"""

from __future__ import annotations

import functools
import json
import logging
import random
import re
import time
import zoneinfo
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlparse

import httpx

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    ConnectException,
    DataException,
    Importance,
    LambdaValidator,
    Range,
    Task,
    Width,
)
from spark_sinks.config import is_truthy, java_to_spark_pattern, spark_sink_def
from spark_sinks.connector import SparkSinkConnector
from spark_sinks.task import SparkSinkTask

__all__ = ["ElasticsearchSparkSink", "ElasticsearchSparkSinkTask", "detect_engine", "engine_of", "probe_cluster"]

log = logging.getLogger(__name__)

CONNECTOR_GROUP = "Connector"
DATA_GROUP = "Data Conversion"

RETRIABLE_STATUS = frozenset({429, 500, 502, 503, 504})
ENGINES = ("auto", "elasticsearch", "opensearch")
_MAX_BACKOFF_S = 30.0


def _check_urls(name: str, value: Any) -> str | None:
    urls = value if isinstance(value, list) else [u.strip() for u in str(value or "").split(",") if u.strip()]
    for url in urls:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            return f"Invalid value {url} for configuration {name}: expected http(s)://host:port"
    return None


def _check_timezone(name: str, value: Any) -> str | None:
    try:
        zoneinfo.ZoneInfo(str(value))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"Invalid value {value} for configuration {name}: unknown time zone"
    return None


def search_def() -> ConfigDef:
    d = ConfigDef(spark_sink_def())
    d.define("connection.url", ConfigType.LIST, validator=LambdaValidator(_check_urls), importance=Importance.HIGH,
             documentation="Elasticsearch or OpenSearch HTTP URLs, comma-separated.", group=CONNECTOR_GROUP,
             order_in_group=1, width=Width.LONG, display_name="Connection URLs")
    d.define("connection.username", ConfigType.STRING, "", importance=Importance.MEDIUM, group=CONNECTOR_GROUP,
             order_in_group=2, documentation="User for HTTP basic authentication.")
    d.define("connection.password", ConfigType.PASSWORD, "", importance=Importance.MEDIUM, group=CONNECTOR_GROUP,
             order_in_group=3, documentation="Password for HTTP basic authentication.")
    d.define("connection.timeout.ms", ConfigType.INT, 1000, Range.at_least(1), Importance.LOW,
             "Timeout to connect, ms.", CONNECTOR_GROUP, 4)
    d.define("read.timeout.ms", ConfigType.INT, 30000, Range.at_least(1), Importance.LOW,
             "Timeout of one request, ms.", CONNECTOR_GROUP, 5)
    d.define("batch.size", ConfigType.INT, 2000, Range.between(1, 1000000), Importance.MEDIUM,
             "Actions per bulk request.", CONNECTOR_GROUP, 6)
    d.define("max.retries", ConfigType.INT, 5, Range.at_least(0), Importance.LOW,
             "Retries of a bulk request or of its throttled actions before the batch fails.", CONNECTOR_GROUP, 7)
    d.define("retry.backoff.ms", ConfigType.LONG, 100, Range.at_least(0), Importance.LOW,
             "First backoff before a retry, ms; doubled each time, with jitter.", CONNECTOR_GROUP, 8)
    d.define("engine", ConfigType.STRING, "auto", CaseInsensitiveValidString.in_(*ENGINES), Importance.LOW,
             "auto (from the cluster's root response), elasticsearch or opensearch.", CONNECTOR_GROUP, 9)
    d.define("key.ignore", ConfigType.BOOLEAN, False, importance=Importance.HIGH, group=DATA_GROUP,
             order_in_group=1, documentation="true: document id <topic>+<partition>+<offset>; false: the record key.")
    d.define("write.method", ConfigType.STRING, "insert", CaseInsensitiveValidString.in_("insert", "upsert"),
             Importance.MEDIUM, "insert (index the whole document) or upsert (merge into it).", DATA_GROUP, 2)
    d.define("behavior.on.null.values", ConfigType.STRING, "fail",
             CaseInsensitiveValidString.in_("ignore", "delete", "fail"), Importance.LOW,
             "A tombstone: ignore it, delete the document of its key, or fail.", DATA_GROUP, 3)
    d.define("behavior.on.malformed.documents", ConfigType.STRING, "fail",
             CaseInsensitiveValidString.in_("ignore", "warn", "fail"), Importance.LOW,
             "A document the cluster rejects (400): ignore it or warn (both send it to the dead-letter topic), "
             "or fail.", DATA_GROUP, 4)
    d.define("index.name.format", ConfigType.STRING, "${topic}", importance=Importance.MEDIUM, group=DATA_GROUP,
             order_in_group=5, documentation="Index of a record: ${topic} and ${timestamp} are replaced.")
    d.define("index.timestamp.format", ConfigType.STRING, "yyyy.MM.dd", importance=Importance.LOW,
             group=DATA_GROUP, order_in_group=6, documentation="Date pattern of ${timestamp} in index names.")
    d.define("timezone", ConfigType.STRING, "UTC", LambdaValidator(_check_timezone), Importance.LOW,
             "Time zone of ${timestamp} in index names.", DATA_GROUP, 7)
    return d


def _urls(config: Mapping[str, Any]) -> list[str]:
    raw = config.get("connection.url")
    urls = raw if isinstance(raw, list) else str(raw or "").split(",")
    return [u.strip().rstrip("/") for u in urls if u.strip()]


def _auth(config: Mapping[str, Any]) -> tuple[str, str] | None:
    user = str(config.get("connection.username") or "")
    password = config.get("connection.password") or ""
    password = password.value() if hasattr(password, "value") else str(password)
    return (user, password) if user else None


def engine_of(root: Any, product_header: str | None = None) -> str | None:
    """``opensearch``/``elasticsearch`` from a cluster's root response (``GET /``), or None if neither."""
    if not isinstance(root, dict):
        return None
    version = root.get("version") if isinstance(root.get("version"), dict) else {}
    if str(version.get("distribution", "")).lower() == "opensearch":
        return "opensearch"
    if product_header == "Elasticsearch" or (version.get("number") and "lucene_version" in version):
        return "elasticsearch"
    return None


def probe_cluster(urls: list[str], auth: tuple[str, str] | None = None, timeout: float = 10.0) -> tuple[str, str]:
    """``(engine, version number)`` from the first URL whose root answers usably; ConnectException if none.

    An Elasticsearch that does not send ``X-Elastic-Product`` (those before
    7.14) is not usable: the ``elasticsearch`` client 8.x/9.x refuses every
    response without it, which would otherwise only show as a failure deep in
    Spark's executors. 7.14+ accepts that client's ``compatible-with=8``/``9``
    media types, so it needs no special headers.
    """
    errors = []
    for url in urls:
        try:
            r = httpx.get(url + "/", auth=auth, timeout=timeout)
        except httpx.HTTPError as exc:
            errors.append(f"{url}: {exc}")
            continue
        if r.status_code != 200:
            errors.append(f"{url}: HTTP {r.status_code} {r.text[:200]}")
            continue
        try:
            body = r.json()
        except ValueError:
            errors.append(f"{url}: the root response is not JSON")
            continue
        product = r.headers.get("x-elastic-product")
        engine = engine_of(body, product)
        version = str((body.get("version") or {}).get("number", "")) if isinstance(body, dict) else ""
        if engine is None:
            errors.append(f"{url}: neither Elasticsearch nor OpenSearch answered")
        elif engine == "elasticsearch" and product != "Elasticsearch":
            errors.append(f"{url}: Elasticsearch {version or '?'} does not send X-Elastic-Product, which the "
                          "elasticsearch client requires; use Elasticsearch 7.14 or newer")
        else:
            return engine, version
    raise ConnectException("Elasticsearch/OpenSearch is not reachable: " + "; ".join(errors))


def detect_engine(urls: list[str], auth: tuple[str, str] | None = None, timeout: float = 10.0) -> str:
    """``opensearch`` or ``elasticsearch``, from the first URL whose root answers; ConnectException if none."""
    return probe_cluster(urls, auth, timeout)[0]


class ElasticsearchSparkSink(SparkSinkConnector):
    """Writes topics to Elasticsearch or OpenSearch through a Spark Structured Streaming query."""

    def config(self) -> ConfigDef:
        return search_def()

    def check(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(search_def(), props)
        engine = str(config.get("engine")).lower()
        detected = detect_engine(_urls(props), _auth(props))
        if engine != "auto" and engine != detected:
            log.warning("engine=%s but the cluster at %s answers as %s; using %s", engine, _urls(props), detected,
                        engine)

    def task_class(self) -> type[Task]:
        return ElasticsearchSparkSinkTask


OUT_SCHEMA = (
    "kind string, topic string, partition int, offset long, key binary, value binary, "
    "headers array<struct<key: string, value: binary>>, error string, written long, deleted long, skipped long"
)


class ElasticsearchSparkSinkTask(SparkSinkTask):
    target = "Elasticsearch/OpenSearch"

    def config_def(self) -> ConfigDef:
        return search_def()

    def start(self, props: Mapping[str, str]) -> None:
        super().start(props)
        cfg = self.config
        self.urls = _urls(props)
        self.null_behavior = str(cfg.get("behavior.on.null.values")).lower()
        self.malformed_behavior = str(cfg.get("behavior.on.malformed.documents")).lower()
        engine = str(cfg.get("engine")).lower()
        self.settings = {
            "urls": self.urls,
            "auth": _auth(props),
            "engine": engine,
            "key_ignore": bool(cfg.get("key.ignore")),
            "upsert": str(cfg.get("write.method")).lower() == "upsert",
            "null_behavior": self.null_behavior,
            "batch_size": int(cfg.get("batch.size")),
            "max_retries": int(cfg.get("max.retries")),
            "backoff_ms": int(cfg.get("retry.backoff.ms")),
            "connect_timeout": int(cfg.get("connection.timeout.ms")) / 1000,
            "read_timeout": int(cfg.get("read.timeout.ms")) / 1000,
            "unwrap": is_truthy(props.get("value.converter.schemas.enable", "false")),
        }

    def default_checkpoint(self) -> str:
        return f"{self.context.state_dir()}/checkpoint"

    def prepare(self, spark: Any) -> None:
        detected, version = probe_cluster(self.urls, self.settings["auth"])
        if self.settings["engine"] == "auto":
            self.settings["engine"] = detected
        log.info("%s: writing to %s at %s (%s %s)", self.name, self.settings["engine"], ", ".join(self.urls),
                 detected, version)

    def _index_column(self) -> Any:
        from pyspark.sql import functions as F

        fmt = str(self.config.get("index.name.format") or "${topic}")
        pattern = java_to_spark_pattern(str(self.config.get("index.timestamp.format")))
        tz = str(self.config.get("timezone"))
        pieces = []
        for piece in re.split(r"(\$\{topic\}|\$\{timestamp\})", fmt):
            if piece == "${topic}":
                pieces.append(F.col("topic"))
            elif piece == "${timestamp}":
                pieces.append(F.date_format(F.from_utc_timestamp(F.col("timestamp"), tz), pattern))
            elif piece:
                pieces.append(F.lit(piece))
        return F.lower(F.concat(*pieces))

    def write_batch(self, df: Any, batch_id: int) -> None:
        rows = (df.select("topic", "partition", "offset", "key", "value", "headers",
                          self._index_column().alias("_index"))
                .mapInArrow(functools.partial(bulk_partitions, self.settings), OUT_SCHEMA)
                .collect())
        malformed = [r for r in rows if r["kind"] == "malformed"]
        for r in rows:
            if r["kind"] == "stats":
                self.count("documents_written", r["written"])
                self.count("documents_deleted", r["deleted"])
                self.count("tombstones_ignored", r["skipped"])
        if malformed:
            self._malformed(malformed, batch_id)

    def _malformed(self, rows: list[Any], batch_id: int) -> None:
        first = rows[0]
        where = f"{first['topic']}-{first['partition']}@{first['offset']}"
        if self.malformed_behavior == "fail":
            raise DataException(
                f"{len(rows)} document(s) of batch {batch_id} were rejected as malformed, first {where}: "
                f"{first['error']} (behavior.on.malformed.documents=fail)")
        dlq = self.context.dead_letter_queue()
        for r in rows:
            if self.malformed_behavior == "warn":
                log.warning("%s: %s-%d@%d rejected as malformed: %s", self.name, r["topic"], r["partition"],
                            r["offset"], r["error"])
            if dlq is not None:
                dlq.report(r["topic"], r["partition"], r["offset"], r["key"], r["value"],
                           [(h["key"], h["value"]) for h in r["headers"] or ()], DataException(r["error"]))
        if dlq is not None:
            dlq.flush(30.0)  # durable before Spark commits the batch
        self.count("documents_malformed", len(rows))


# --- executor side: one Spark partition of a micro-batch -----------------------------------------------------------
def _client(settings: Mapping[str, Any]) -> Any:
    timeout = settings["read_timeout"]
    if settings["engine"] == "opensearch":
        from opensearchpy import OpenSearch

        return OpenSearch(hosts=settings["urls"], http_auth=settings["auth"], timeout=timeout, max_retries=0,
                          retry_on_timeout=False)
    from elasticsearch import Elasticsearch

    return Elasticsearch(settings["urls"], basic_auth=settings["auth"], request_timeout=timeout, max_retries=0,
                         retry_on_timeout=False)


def _bulk(client: Any, settings: Mapping[str, Any], body: bytes) -> Mapping[str, Any]:
    fields = "errors,items.*.status,items.*.error"
    if settings["engine"] == "opensearch":
        return client.bulk(body=body, params={"filter_path": fields})
    return client.bulk(operations=body, filter_path=fields)


def _retriable(exc: BaseException) -> bool:
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "meta", None), "status", None)
    if isinstance(status, int):
        return status in RETRIABLE_STATUS
    name = type(exc).__name__
    return "Connection" in name or "Timeout" in name or isinstance(exc, OSError)


def _sleep_backoff(settings: Mapping[str, Any], attempt: int) -> None:
    base = settings["backoff_ms"] / 1000 * (2 ** attempt)
    time.sleep(min(_MAX_BACKOFF_S, base) * random.uniform(0.5, 1.5))


class _Action:
    __slots__ = ("lines", "row", "op")

    def __init__(self, lines: bytes, row: tuple, op: str) -> None:
        self.lines = lines
        self.row = row
        self.op = op


def _source(value: bytes, unwrap: bool) -> bytes:
    if not unwrap:
        return value
    doc = json.loads(value)
    payload = doc.get("payload") if isinstance(doc, dict) and "payload" in doc and "schema" in doc else doc
    return json.dumps(payload, separators=(",", ":")).encode("utf-8")


def _action(settings: Mapping[str, Any], row: tuple) -> _Action | str | None:
    """The bulk lines of one record; None to skip it; a string: why it is malformed before sending."""
    topic, partition, offset, key, value, _headers, index = row
    if settings["key_ignore"]:
        doc_id = f"{topic}+{partition}+{offset}"
        versioned = False
    else:
        if key is None:
            return "The record key is null but key.ignore=false needs it as the document id"
        doc_id = key.decode("utf-8", "replace")
        versioned = not settings["upsert"]
    meta: dict[str, Any] = {"_index": index, "_id": doc_id}
    if versioned:
        meta["version"] = offset
        meta["version_type"] = "external"
    if value is None:
        behavior = settings["null_behavior"]
        if behavior == "ignore":
            return None
        if behavior == "fail":
            raise DataException(f"Tombstone (null value) at {topic}-{partition}@{offset} and "
                                "behavior.on.null.values=fail")
        return _Action(json.dumps({"delete": meta}).encode() + b"\n", row, "delete")
    try:
        source = _source(value, settings["unwrap"])
        if settings["upsert"]:
            json.loads(source)  # an update body that is not JSON would fail the whole bulk request
            body = b'{"doc":' + source + b',"doc_as_upsert":true}'
            return _Action(json.dumps({"update": meta}).encode() + b"\n" + body + b"\n", row, "update")
    except (ValueError, UnicodeDecodeError) as exc:
        return f"The value is not JSON: {exc}"
    if b"\n" in source:
        source = source.replace(b"\r\n", b" ").replace(b"\n", b" ")
    return _Action(json.dumps({"index": meta}).encode() + b"\n" + source + b"\n", row, "index")


def bulk_partitions(settings: Mapping[str, Any], batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body: send the rows of one partition in bulk requests; yield the malformed ones and a stats row."""
    import pyarrow as pa

    client = _client(settings)
    stats = {"written": 0, "deleted": 0, "skipped": 0}
    malformed: list[tuple[tuple, str]] = []
    pending: list[_Action] = []
    try:
        for batch in batches:
            cols = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
            for row in zip(*cols, strict=True):
                action = _action(settings, row)
                if action is None:
                    stats["skipped"] += 1
                elif isinstance(action, str):
                    malformed.append((row, action))
                else:
                    pending.append(action)
                    if len(pending) >= settings["batch_size"]:
                        _send(client, settings, pending, stats, malformed)
                        pending = []
        if pending:
            _send(client, settings, pending, stats, malformed)
    finally:
        client.close()
    out: dict[str, list[Any]] = {k: [] for k in ("kind", "topic", "partition", "offset", "key", "value", "headers",
                                                 "error", "written", "deleted", "skipped")}

    def add(kind: str, row: tuple | None, error: str | None, counts: Mapping[str, int] | None) -> None:
        topic, partition, offset, key, value, headers, _ = row if row is not None else (None,) * 7
        for name, v in (("kind", kind), ("topic", topic), ("partition", partition), ("offset", offset),
                        ("key", key), ("value", value), ("headers", headers), ("error", error)):
            out[name].append(v)
        for name in ("written", "deleted", "skipped"):
            out[name].append((counts or {}).get(name, 0))

    for row, error in malformed:
        add("malformed", row, error, None)
    add("stats", None, None, stats)
    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    schema = pa.schema([
        ("kind", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
        ("key", pa.binary()), ("value", pa.binary()), ("headers", pa.list_(header)), ("error", pa.string()),
        ("written", pa.int64()), ("deleted", pa.int64()), ("skipped", pa.int64()),
    ])
    yield pa.RecordBatch.from_pydict(out, schema=schema)


def _send(client: Any, settings: Mapping[str, Any], actions: list[_Action], stats: dict[str, int],
          malformed: list[tuple[tuple, str]]) -> None:
    """One bulk request, retrying what is retriable; malformed documents are collected, other failures raise."""
    attempt = 0
    while True:
        try:
            response = _bulk(client, settings, b"".join(a.lines for a in actions))
        except Exception as exc:
            if _retriable(exc) and attempt < settings["max_retries"]:
                _sleep_backoff(settings, attempt)
                attempt += 1
                continue
            raise ConnectException(f"Bulk request to {', '.join(settings['urls'])} failed after {attempt} "
                                   f"retries: {exc}") from exc
        items = response.get("items") or []
        if len(items) != len(actions):
            raise ConnectException(f"Bulk response has {len(items)} items for {len(actions)} actions")
        retry: list[_Action] = []
        for action, item in zip(actions, items, strict=True):
            result = next(iter(item.values()))
            status = int(result.get("status", 0))
            if status < 300 or (status == 409 and action.op != "update") or (status == 404 and action.op == "delete"):
                stats["deleted" if action.op == "delete" else "written"] += 1
            elif status in RETRIABLE_STATUS:
                retry.append(action)
            elif status == 400:
                malformed.append((action.row, _error_text(result.get("error"))))
            else:
                row = action.row
                raise ConnectException(f"{action.op} of {row[0]}-{row[1]}@{row[2]} failed with HTTP {status}: "
                                       f"{_error_text(result.get('error'))}")
        if not retry:
            return
        if attempt >= settings["max_retries"]:
            first = retry[0].row
            raise ConnectException(f"{len(retry)} action(s) still throttled or unavailable after {attempt} retries, "
                                   f"first {first[0]}-{first[1]}@{first[2]}")
        _sleep_backoff(settings, attempt)
        attempt += 1
        actions = retry


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        text = f"{error.get('type')}: {error.get('reason')}"
        cause = error.get("caused_by")
        if isinstance(cause, dict):
            text += f" (caused by {cause.get('type')}: {cause.get('reason')})"
        return text
    return str(error)
