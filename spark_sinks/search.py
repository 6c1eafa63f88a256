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
(``errors.deadletterqueue.context.headers.enable=true``). Any other 4xx
for a document (a 403 on a write-blocked index, say) fails the task unless
``errors.tolerance=all``, which sends it to the dead-letter topic too.

Retries: each partition sends its actions in bulk requests built from
bytes encoded once per action (``_bulk_items``), and sends the documents the
cluster throttled (429; for Elasticsearch also 5xx, as its bulk helper
would) again up to ``max.retries`` times with exponential backoff from
``retry.backoff.ms``; the client's transport retries a request that got no
answer, timed out or met a 5xx, as often. A request or a document that
still fails then fails the batch, and so the task, without Spark
committing the batch (``RetriableException`` when it was unreachable,
throttled or unavailable, else ``ConnectException``). A bulk request holds
each document id at most once, so every outcome is matched to its record
and the versions of one document are applied in offset order; it stays
under 100 MB.

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
from collections.abc import Collection, Iterator, Mapping
from typing import Any, TypedDict
from urllib.parse import urlparse

import orjson

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
    RetriableException,
    Task,
    Width,
)
from spark_sinks.avro_values import AvroValues, avro_registry_url
from spark_sinks.config import check_timezone, is_truthy, java_to_spark_pattern, spark_sink_def
from spark_sinks.connector import SparkSinkConnector
from spark_sinks.search_mapping import added_properties, index_properties
from spark_sinks.task import SparkSinkTask

__all__ = ["ElasticsearchSparkSink", "ElasticsearchSparkSinkTask", "detect_engine", "engine_of", "probe_cluster"]

log = logging.getLogger(__name__)

CONNECTOR_GROUP = "Connector"
DATA_GROUP = "Data Conversion"

# Statuses worth a retry: throttled (429) or a node unavailable (5xx). The client's transport retries a
# request that failed so (all but 429); ``_bulk_items`` retries the documents (429, and 5xx for Elasticsearch).
RETRIABLE_STATUS = frozenset({429, 500, 502, 503, 504})
TRANSPORT_RETRY_STATUS = RETRIABLE_STATUS - {429}
ENGINES = ("auto", "elasticsearch", "opensearch")
_MAX_BACKOFF_S = 30.0
_MAX_REQUEST_BYTES = 100 << 20
# what the sink reads of a bulk response
_RESPONSE_FIELDS = "errors,items.*.status,items.*.error,items.*._id"


class BulkSettings(TypedDict):
    """What a task's bulk writers need: a plain dict, so Spark pickles it to the executors with ``bulk_partitions``."""

    urls: list[str]
    auth: tuple[str, str] | None
    engine: str  # as configured ("auto"), then as detected at ``prepare``
    key_ignore: bool
    upsert: bool
    null_behavior: str
    batch_size: int
    max_retries: int
    backoff_ms: int
    connect_timeout: float  # seconds
    read_timeout: float  # seconds
    unwrap: bool


def _check_urls(name: str, value: Any) -> str | None:
    urls = value if isinstance(value, list) else [u.strip() for u in str(value or "").split(",") if u.strip()]
    for url in urls:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            return f"Invalid value {url} for configuration {name}: expected http(s)://host:port"
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
             "Retries of a bulk request (by the client) and of its throttled documents (by the sink) "
             "before the batch fails.", CONNECTOR_GROUP, 7)
    d.define("retry.backoff.ms", ConfigType.LONG, 100, Range.at_least(0), Importance.LOW,
             "First backoff before a throttled document is sent again, ms; doubled each time (at most 30 s).",
             CONNECTOR_GROUP, 8)
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
    d.define("timezone", ConfigType.STRING, "UTC", LambdaValidator(check_timezone), Importance.LOW,
             "Time zone of ${timestamp} in index names.", DATA_GROUP, 7)
    d.define("schema.ignore", ConfigType.BOOLEAN, False, importance=Importance.LOW, group=DATA_GROUP,
             order_in_group=8, documentation="With the AvroConverter: true leaves field types to the cluster's "
             "dynamic mapping; false (the default) puts the index mapping derived from the registered schema "
             "before the first document, and adds the fields a schema evolution adds.")
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
    found = root.get("version")
    version = found if isinstance(found, dict) else {}
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
    import httpx  # here, not at module level: every worker start imports this plugin module

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
    "kind string, topic string, partition int, offset long, key binary, value binary, error string, "
    "written long, deleted long, skipped long"
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
        self.tolerate = str(props.get("errors.tolerance", "none")).strip().lower() == "all"
        engine = str(cfg.get("engine")).lower()
        self.settings: BulkSettings = {
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
        registry = avro_registry_url(props)
        self.avro = AvroValues(registry, self.tolerate) if registry else None
        if self.avro is not None:
            self.settings["unwrap"] = False  # the documents are the decoded values' JSON
        self.map_fields = self.avro is not None and not bool(cfg.get("schema.ignore"))
        self._mapped: dict[str, str] = {}  # index -> the properties last put there, as JSON

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
        if self.avro is not None:
            df = self._avro_documents(df)
        # The headers go only to the dead-letter topic, with the few documents the cluster refuses: a nested
        # column handed to mapInArrow for every record (even a null one) tripled the JVM's CPU per batch. A
        # refused document's headers are read again afterwards (_headers_of).
        rows = (df.select("topic", "partition", "offset", "key", "value", self._index_column().alias("_index"))
                .mapInArrow(functools.partial(bulk_partitions, self.settings), OUT_SCHEMA)
                .collect())
        failed: dict[str, list[Any]] = {"malformed": [], "rejected": []}
        for r in rows:
            if r["kind"] == "stats":
                self.count("documents_written", r["written"])
                self.count("documents_deleted", r["deleted"])
                self.count("tombstones_ignored", r["skipped"])
            else:
                failed[r["kind"]].append(r)
        if failed["malformed"] or failed["rejected"]:
            self._failed(failed["malformed"], failed["rejected"], batch_id, df)

    def _avro_documents(self, df: Any) -> Any:
        """``df`` with each Avro value replaced by its decoded value's JSON (tombstones kept), the indexes of the
        batch mapped first (unless ``schema.ignore``)."""
        from pyspark.sql import functions as F

        tombstones = df.where(F.col("value").isNull())
        decoded = self.decode_avro(df, self.avro)
        if decoded is None:
            return tombstones
        if self.map_fields:
            properties = index_properties(decoded.schema["_v"].dataType)
            indexes = [r[0] for r in decoded.select(self._index_column()).distinct().collect()]
            self._map_indexes(indexes, properties)
        documents = decoded.withColumn("value", F.to_json("_v").cast("binary")).drop("_v")
        return documents.unionByName(tombstones)

    def _map_indexes(self, indexes: list[str], properties: dict[str, Any]) -> None:
        """Puts ``properties`` on each index not yet given them: the whole mapping on a new index, only the
        missing fields on an existing one."""
        wanted = json.dumps(properties, sort_keys=True)
        todo = [i for i in indexes if self._mapped.get(i) != wanted]
        if not todo:
            return
        client = _client(self.settings)
        opensearch = self.settings["engine"] == "opensearch"
        index = todo[0]
        try:
            for index in todo:
                if not client.indices.exists(index=index):
                    try:
                        if opensearch:
                            client.indices.create(index=index, body={"mappings": {"properties": properties}})
                        else:
                            client.indices.create(index=index, mappings={"properties": properties})
                        log.info("%s: created index %s with the mapping of the value schema (%d fields)", self.name,
                                 index, len(properties))
                        self._mapped[index] = wanted
                        continue
                    except Exception as exc:  # another task may have created it meanwhile
                        if "resource_already_exists" not in str(exc):
                            raise
                found = client.indices.get_mapping(index=index)
                found = found.body if hasattr(found, "body") else found
                index_mapping: dict[str, Any] = next(iter(found.values()), {})  # the one index asked for, by name
                existing = index_mapping.get("mappings", {}).get("properties", {})
                added = added_properties(properties, existing)
                if added:
                    if opensearch:
                        client.indices.put_mapping(index=index, body={"properties": added})
                    else:
                        client.indices.put_mapping(index=index, properties=added)
                    log.info("%s: added %s to the mapping of index %s (fields of the value schema it lacked)", self.name,
                             ", ".join(sorted(added)), index)
                self._mapped[index] = wanted
        except Exception as exc:
            failure = request_failure(exc, self.settings)
            raise type(failure)(f"Mapping index {index} from the value schema: {failure}") from exc
        finally:
            client.close()

    def _failed(self, malformed: list[Any], rejected: list[Any], batch_id: int, df: Any) -> None:
        """Documents the cluster refused: malformed ones (400) per behavior.on.malformed.documents, others (a 4xx
        such as 403 on a write-blocked index) per errors.tolerance; kept ones go to the dead-letter topic, with
        their headers read again from the batch ``df``."""
        for rows, allowed, setting, what in ((malformed, self.malformed_behavior != "fail",
                                              "behavior.on.malformed.documents=fail", "rejected as malformed"),
                                             (rejected, self.tolerate, "errors.tolerance=none", "rejected")):
            if rows and not allowed:
                first = rows[0]
                raise DataException(
                    f"{len(rows)} document(s) of batch {batch_id} were {what}, first "
                    f"{first['topic']}-{first['partition']}@{first['offset']}: {first['error']} ({setting})")
        dlq = self.context.dead_letter_queue()
        headers = _headers_of(df, malformed + rejected) if dlq is not None else {}
        for r in malformed + rejected:
            if self.malformed_behavior == "warn" or r["kind"] == "rejected":
                log.warning("%s: %s-%d@%d %s: %s", self.name, r["topic"], r["partition"], r["offset"],
                            "rejected as malformed" if r["kind"] == "malformed" else "rejected", r["error"])
            if dlq is not None:
                dlq.report(r["topic"], r["partition"], r["offset"], r["key"], r["value"],
                           headers.get((r["topic"], r["partition"], r["offset"]), []), DataException(r["error"]))
        if dlq is not None:
            dlq.flush(30.0)  # durable before Spark commits the batch
        self.count("documents_malformed", len(malformed))
        if rejected:
            self.count("documents_rejected", len(rejected))


def _headers_of(df: Any, rows: list[Any]) -> dict[tuple[str, int, int], list[tuple[str, bytes | None]]]:
    """The headers of the records of ``rows`` (by topic, partition and offset), read from the batch ``df``: one
    more pass over the batch, paid only when documents go to the dead-letter topic."""
    from pyspark.sql import functions as F

    keys = df.sparkSession.createDataFrame([(r["topic"], r["partition"], r["offset"]) for r in rows],
                                           "topic string, partition int, offset long")
    found = (df.join(F.broadcast(keys), ["topic", "partition", "offset"])
             .select("topic", "partition", "offset", "headers").collect())
    return {(h["topic"], h["partition"], h["offset"]): [(x["key"], x["value"]) for x in h["headers"] or ()]
            for h in found}


# --- executor side: one Spark partition of a micro-batch -----------------------------------------------------------
def _client(settings: BulkSettings) -> Any:
    """The engine's client; its transport retries a failed request (connection failure, timeout, 5xx) itself."""
    retry_status = tuple(sorted(TRANSPORT_RETRY_STATUS))
    if settings["engine"] == "opensearch":
        from opensearchpy import OpenSearch

        return OpenSearch(hosts=settings["urls"], http_auth=settings["auth"], timeout=settings["read_timeout"],
                          max_retries=settings["max_retries"], retry_on_timeout=True, retry_on_status=retry_status)
    from elasticsearch import Elasticsearch

    return Elasticsearch(settings["urls"], basic_auth=settings["auth"], request_timeout=settings["read_timeout"],
                         max_retries=settings["max_retries"], retry_on_timeout=True, retry_on_status=retry_status)


def _bulk_items(client: Any, settings: BulkSettings, actions: list[_Action]) -> list[tuple[str, dict]]:
    """Each of ``actions`` sent in one bulk request, and the (op, response item) it ended with, in order.

    Documents the cluster throttled (429; for Elasticsearch 5xx too, as its bulk helper does) are sent again
    with exponential backoff, up to ``max.retries`` times; so is a request throttled as a whole. The body is
    built here from bytes encoded once per action: the clients' bulk helpers encode and measure every action
    again on the way, which doubled the executors' Python time per document."""
    retry_status = {429} if settings["engine"] == "opensearch" else RETRIABLE_STATUS
    outcomes: dict[int, tuple[str, dict]] = {}
    todo = list(range(len(actions)))
    attempt = 0
    while True:
        body = b"".join(part for i in todo for part in actions[i].lines())
        try:
            if settings["engine"] == "opensearch":
                response = client.bulk(body=body, params={"filter_path": _RESPONSE_FIELDS})
            else:
                response = client.bulk(operations=body, filter_path=_RESPONSE_FIELDS)
        except Exception as exc:
            if attempt >= settings["max_retries"] or _http_status(exc) not in retry_status:
                raise
            again = todo  # throttled as a whole
        else:
            again = _throttled(actions, todo, response["items"], retry_status,
                               attempt < settings["max_retries"], outcomes)
        if not again:
            return [outcomes[i] for i in range(len(actions))]
        todo = again
        attempt += 1
        time.sleep(_backoff_s(settings, attempt))


def _throttled(actions: list[_Action], sent: list[int], items: list[dict], retry_status: Collection[int],
               may_retry: bool, outcomes: dict[int, tuple[str, dict]]) -> list[int]:
    """The indexes of ``sent`` to send again (throttled, while ``may_retry``); the others' outcomes go into
    ``outcomes``."""
    if len(items) != len(sent):
        raise ConnectException(f"Bulk response has {len(items)} items for {len(sent)} documents sent")
    again: list[int] = []
    for i, item in zip(sent, items, strict=True):
        ((op, info),) = item.items()
        if str(info.get("_id")) != actions[i].doc_id:
            raise ConnectException(f"Bulk response names document {info.get('_id')!r} where "
                                   f"{actions[i].doc_id!r} was sent")
        if may_retry and int(info.get("status", 0)) in retry_status:
            again.append(i)
        else:
            outcomes[i] = (op, info)
    return again


def _backoff_s(settings: BulkSettings, attempt: int) -> float:
    """The pause before retry ``attempt`` (1, 2, ...): ``retry.backoff.ms`` doubled each time, at most 30 s, with
    jitter, so partitions throttled together do not all come back together."""
    return min(_MAX_BACKOFF_S, settings["backoff_ms"] / 1000 * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)


def _http_status(exc: BaseException) -> int | None:
    """The HTTP status of a client exception, None when no answer came (opensearch-py says "N/A")."""
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(getattr(exc, "meta", None), "status", None)
    return status if isinstance(status, int) else None


def _no_answer_errors(engine: str) -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """The client's exception types for a request that got no answer: (connection failures and timeouts, TLS
    failures among them, which a retry does not mend)."""
    if engine == "opensearch":
        from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
        from opensearchpy.exceptions import SSLError

        return (OpenSearchConnectionError,), (SSLError,)
    from elastic_transport import ConnectionError as TransportConnectionError
    from elastic_transport import ConnectionTimeout, TlsError

    return (TransportConnectionError, ConnectionTimeout), (TlsError,)


def request_failure(exc: BaseException, settings: BulkSettings) -> ConnectException:
    """A bulk request that failed as a whole, after the client's and the helper's retries, classified by
    exception type and HTTP status: no answer, throttled (429) or unavailable (5xx) is a RetriableException;
    any other answer (a 4xx: bad credentials, no such index, ...) or a TLS failure a ConnectException."""
    where = ", ".join(settings["urls"])
    status = _http_status(exc)
    unreachable, tls = _no_answer_errors(settings["engine"])
    if status is not None and status not in RETRIABLE_STATUS and status < 500:
        return ConnectException(f"Bulk request to {where} was refused with HTTP {status}: {exc}")
    if isinstance(exc, tls):
        return ConnectException(f"Bulk request to {where} failed: TLS: {exc}")
    if status is not None or isinstance(exc, unreachable):
        answer = f"HTTP {status}" if status is not None else type(exc).__name__
        return RetriableException(f"Bulk request to {where} failed after {settings['max_retries']} retries "
                                  f"({answer}): {exc}")
    return ConnectException(f"Bulk request to {where} failed: {type(exc).__name__}: {exc}")


class _Action:
    """One bulk action: its action line, its source line (None for a delete), both encoded, and the record
    it is for."""

    __slots__ = ("header", "body", "row", "op", "doc_id")

    def __init__(self, op: str, meta: dict[str, Any], body: bytes | None, row: tuple) -> None:
        self.op = op
        self.header = orjson.dumps({op: meta}) + b"\n"
        self.body = body
        self.row = row
        self.doc_id = meta["_id"]

    def lines(self) -> tuple[bytes, ...]:
        return (self.header,) if self.body is None else (self.header, self.body, b"\n")

    def size(self) -> int:
        """Bytes of the bulk body this action takes."""
        return len(self.header) + (0 if self.body is None else len(self.body) + 1)


def _source(value: bytes, unwrap: bool) -> bytes:
    """The document's JSON text: the value as it is (checked to be UTF-8), or the payload of a JSON envelope."""
    text = value.decode("utf-8")
    if not unwrap:
        return value
    doc = json.loads(text)
    payload = doc.get("payload") if isinstance(doc, dict) and "payload" in doc and "schema" in doc else doc
    return json.dumps(payload, separators=(",", ":")).encode("utf-8")


def _action(settings: BulkSettings, row: tuple) -> _Action | str | None:
    """The bulk action of one record; None to skip it; a string: why it is malformed before sending."""
    topic, partition, offset, key, value, index = row
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
        return _Action("delete", meta, None, row)
    try:
        source = _source(value, settings["unwrap"])
        if settings["upsert"]:
            json.loads(source)  # an update body that is not JSON would fail the whole bulk request
            return _Action("update", meta, b'{"doc":' + source + b',"doc_as_upsert":true}', row)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"The value is not JSON: {exc}"
    if b"\n" in source:  # one line per document in the bulk body (JSON allows no raw newline but in spaces)
        source = source.replace(b"\r\n", b" ").replace(b"\n", b" ")
    return _Action("index", meta, source, row)


def bulk_partitions(settings: BulkSettings, batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body: send the rows of one partition in bulk requests; yield the failed ones and a stats row."""
    import pyarrow as pa

    client = _client(settings)
    stats = {"written": 0, "deleted": 0, "skipped": 0}
    failed: list[tuple[str, tuple, str]] = []  # (kind, row, error)
    pending: list[_Action] = []
    pending_bytes = 0
    ids: set[str] = set()
    try:
        for batch in batches:
            cols = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
            for row in zip(*cols, strict=True):
                action = _action(settings, row)
                if action is None:
                    stats["skipped"] += 1
                    continue
                if isinstance(action, str):
                    failed.append(("malformed", row, action))
                    continue
                # A request holds each document id once, so each outcome names its action, and the versions of
                # one document are applied in order (a throttled action is sent again after the others). A
                # request stays under the clusters' default limit of 100 MB (http.max_content_length).
                size = action.size()
                if pending and (action.doc_id in ids or len(pending) >= settings["batch_size"]
                                or pending_bytes + size > _MAX_REQUEST_BYTES):
                    _send(client, settings, pending, stats, failed)
                    pending, pending_bytes, ids = [], 0, set()
                pending.append(action)
                pending_bytes += size
                ids.add(action.doc_id)
        if pending:
            _send(client, settings, pending, stats, failed)
    finally:
        client.close()
    out: dict[str, list[Any]] = {k: [] for k in ("kind", "topic", "partition", "offset", "key", "value", "error",
                                                 "written", "deleted", "skipped")}

    def add(kind: str, row: tuple | None, error: str | None, counts: Mapping[str, int] | None) -> None:
        topic, partition, offset, key, value, _ = row if row is not None else (None,) * 6
        for name, v in (("kind", kind), ("topic", topic), ("partition", partition), ("offset", offset),
                        ("key", key), ("value", value), ("error", error)):
            out[name].append(v)
        for name in ("written", "deleted", "skipped"):
            out[name].append((counts or {}).get(name, 0))

    for kind, row, error in failed:
        add(kind, row, error, None)
    add("stats", None, None, stats)
    schema = pa.schema([
        ("kind", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
        ("key", pa.binary()), ("value", pa.binary()), ("error", pa.string()),
        ("written", pa.int64()), ("deleted", pa.int64()), ("skipped", pa.int64()),
    ])
    yield pa.RecordBatch.from_pydict(out, schema=schema)


def outcome(op: str, status: int) -> str:
    """What a bulk item's HTTP status means for its record: ``done``, ``retriable`` (throttled or unavailable
    after the helper's retries), ``malformed`` (400: mapping or parsing) or ``rejected`` (another 4xx)."""
    if 200 <= status < 300 or (status == 409 and op != "update") or (status == 404 and op == "delete"):
        return "done"  # 409: an older replay lost to the external version; 404: already deleted
    if status in RETRIABLE_STATUS or status >= 500 or status == 0:
        return "retriable"
    return "malformed" if status == 400 else "rejected"


def _send(client: Any, settings: BulkSettings, actions: list[_Action], stats: dict[str, int],
          failed: list[tuple[str, tuple, str]]) -> None:
    """One bulk request (with its retries); documents that fail go to ``failed``, retriable failures that
    outlived the retries raise (the batch fails and Spark does not commit it)."""
    try:
        results = _bulk_items(client, settings, actions)
    except ConnectException:
        raise
    except Exception as exc:
        raise request_failure(exc, settings) from exc
    for action, (op, item) in zip(actions, results, strict=True):
        status = int(item.get("status", 0))
        result = outcome(op, status)
        if result == "done":
            stats["deleted" if op == "delete" else "written"] += 1
            continue
        topic, partition, offset = action.row[:3]
        error = f"HTTP {status}: {_error_text(item.get('error'))}"
        if result == "retriable":
            raise RetriableException(f"{op} of {topic}-{partition}@{offset} still failed with {error} after "
                                     f"{settings['max_retries']} retries")
        failed.append((result, action.row, error if result == "rejected" else _error_text(item.get("error"))))


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        text = f"{error.get('type')}: {error.get('reason')}"
        cause = error.get("caused_by")
        if isinstance(cause, dict):
            text += f" (caused by {cause.get('type')}: {cause.get('reason')})"
        return text
    return str(error)
