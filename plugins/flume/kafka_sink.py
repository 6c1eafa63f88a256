"""FlumeKafkaSink: Flume's Kafka sink. Records' values (Flume event bodies) are produced to a Kafka cluster,
routed as Flume's sink routes them.

- topic: ``kafka.topic``, or the event's ``topic.header`` header (default ``topic``) with
  ``allow.topic.override`` (default true, as in Flume);
- key: the event's ``key`` header, if any;
- partition: the event's ``partition.id.header`` header, else ``default.partition.id``, else the producer's
  partitioner;
- value: the body, or with ``flume.event.format`` the event (headers and body) in Flume's Avro binary
  ``AvroFlumeEvent``, which Flume's Kafka source and channel read with ``parseAsFlumeEvent``.

``kafka.producer.*`` settings go to the producer (librdkafka's names, most of which are the Java client's too).
The records a worker hands to ``put`` are flushed to Kafka and acknowledged by it before the worker commits
their offsets (``flush``), so a crash resends at most what was not committed: at least once. A record Kafka
refuses (an unknown topic, a partition out of range) fails the task naming it.
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import fastavro

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectException,
    Importance,
    NonEmptyString,
    Range,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Task,
    TopicPartition,
)
from connect.api.version import distribution_version

if TYPE_CHECKING:  # imported where it is used: the Kafka client costs every worker start 0.05 CPU-s
    from confluent_kafka import KafkaError

__all__ = ["FlumeKafkaSinkConnector", "FlumeKafkaSinkTask", "producer_settings_problems"]

log = logging.getLogger(__name__)

TOPIC_CONFIG = "kafka.topic"
BOOTSTRAP_CONFIG = "kafka.bootstrap.servers"
EVENT_FORMAT_CONFIG = "flume.event.format"
DEFAULT_PARTITION_CONFIG = "default.partition.id"
PARTITION_HEADER_CONFIG = "partition.id.header"
ALLOW_OVERRIDE_CONFIG = "allow.topic.override"
TOPIC_HEADER_CONFIG = "topic.header"
FLUSH_TIMEOUT_CONFIG = "flush.timeout.ms"
PRODUCER_PREFIX = "kafka.producer."

CONFIG_DEF = (
    ConfigDef()
    .define(BOOTSTRAP_CONFIG, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
            documentation="The Kafka cluster to produce to (host:port, comma-separated).")
    .define(TOPIC_CONFIG, ConfigType.STRING, "default-flume-topic", NonEmptyString(), importance=Importance.HIGH,
            documentation="The topic records go to, unless a header names another (allow.topic.override).")
    .define(ALLOW_OVERRIDE_CONFIG, ConfigType.BOOLEAN, True, importance=Importance.MEDIUM,
            documentation="Whether a record's topic.header header names its topic.")
    .define(TOPIC_HEADER_CONFIG, ConfigType.STRING, "topic", NonEmptyString(), importance=Importance.LOW,
            documentation="The header naming a record's topic.")
    .define(DEFAULT_PARTITION_CONFIG, ConfigType.INT, -1, Range.at_least(-1), importance=Importance.LOW,
            documentation="The partition of records without partition.id.header (-1: the producer's choice).")
    .define(PARTITION_HEADER_CONFIG, ConfigType.STRING, "", importance=Importance.LOW,
            documentation="A header holding a record's partition number.")
    .define(EVENT_FORMAT_CONFIG, ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
            documentation="Write each record as Flume's Avro AvroFlumeEvent (headers and body) instead of its body.")
    .define(FLUSH_TIMEOUT_CONFIG, ConfigType.INT, 30_000, Range.at_least(1), importance=Importance.LOW,
            documentation="How long a commit waits for Kafka to acknowledge the records before it fails.")
)
CONFIG_DEF.allow_prefix(PRODUCER_PREFIX, "Settings of the Kafka producer, as Flume's Kafka sink takes them.")
# producer settings that are secrets: declared as passwords, so the worker never logs or returns them
for _secret in ("sasl.password", "ssl.key.password", "ssl.keystore.password"):
    CONFIG_DEF.define(PRODUCER_PREFIX + _secret, ConfigType.PASSWORD, None, importance=Importance.LOW,
                      documentation=f"The producer's {_secret} (use a config provider to keep it out of the file).")

_EVENT_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "AvroFlumeEvent", "namespace": "org.apache.flume.source.avro",
    "fields": [{"name": "headers", "type": {"type": "map", "values": "string"}}, {"name": "body", "type": "bytes"}],
})


def producer_settings(props: Mapping[str, str]) -> dict[str, str]:
    """The producer's settings: ``kafka.producer.*`` keys without the prefix, and the bootstrap servers."""
    out = {k[len(PRODUCER_PREFIX):]: v for k, v in props.items() if k.startswith(PRODUCER_PREFIX)}
    out["bootstrap.servers"] = str(props.get(BOOTSTRAP_CONFIG, ""))
    return out


def producer_settings_problems(settings: Mapping[str, str]) -> list[tuple[str, str]]:
    """(key, reason) for each producer setting the Kafka client refuses (checked without connecting)."""
    from confluent_kafka import KafkaError, KafkaException, Producer

    problems = []
    for key, value in settings.items():
        if key == "bootstrap.servers":
            continue
        try:
            # the client checks its settings when it is made; it connects only once asked to send
            Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0, key: value})
        except (KafkaException, ValueError, TypeError) as exc:
            reason = exc.args[0] if exc.args else exc
            problems.append((key, reason.str() if isinstance(reason, KafkaError) else str(reason)))
    return problems


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _body(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return str(value).encode("utf-8")


class FlumeKafkaSinkTask(SinkTask):
    def __init__(self) -> None:
        self._producer: Any = None
        self._errors: list[str] = []
        self._lock = threading.Lock()
        self.name = "FlumeKafkaSink"

    def version(self) -> str:
        return distribution_version(__name__)

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(CONFIG_DEF, props)
        self.name = f"FlumeKafkaSink[{props.get('name', '?')}]"
        self._topic = str(config.get_string(TOPIC_CONFIG))
        self._override = bool(config.get(ALLOW_OVERRIDE_CONFIG))
        self._topic_header = str(config.get_string(TOPIC_HEADER_CONFIG))
        default_partition = config.get_int(DEFAULT_PARTITION_CONFIG)
        self._default_partition = -1 if default_partition is None else int(default_partition)
        self._partition_header = str(config.get_string(PARTITION_HEADER_CONFIG) or "")
        self._event_format = bool(config.get(EVENT_FORMAT_CONFIG))
        self._flush_timeout = int(config.get_int(FLUSH_TIMEOUT_CONFIG) or 1) / 1000.0
        from confluent_kafka import Producer

        settings = producer_settings(props)
        for key, reason in producer_settings_problems(settings):
            raise ConnectException(f"{self.name}: {PRODUCER_PREFIX}{key}: {reason}")
        self._producer = Producer(settings)
        log.info("%s producing to %s at %s%s", self.name, self._topic, settings["bootstrap.servers"],
                 " as Flume Avro events" if self._event_format else "")

    def put(self, records: Sequence[SinkRecord]) -> None:
        produce = self._producer.produce
        for record in records:
            headers = {h.key: _text(h.value) for h in record.headers} if record.headers is not None else {}
            topic = headers.get(self._topic_header) if self._override else None
            partition = self._default_partition
            if self._partition_header and self._partition_header in headers:
                try:
                    partition = int(headers[self._partition_header])
                except ValueError:
                    raise ConnectException(f"{self.name}: {record.topic}-{record.kafka_partition}@"
                                           f"{record.kafka_offset}: header {self._partition_header}="
                                           f"{headers[self._partition_header]!r} is not a partition number") from None
            body = _body(record.value)
            if self._event_format:
                out = io.BytesIO()
                fastavro.schemaless_writer(out, _EVENT_SCHEMA, {"headers": headers, "body": body or b""})
                body = out.getvalue()
            key = headers.get("key")
            where = f"{record.topic}-{record.kafka_partition}@{record.kafka_offset}"
            kwargs: dict[str, Any] = {"key": key.encode() if key is not None else None,
                                      "on_delivery": self._delivered(where)}
            if partition >= 0:
                kwargs["partition"] = partition
            while True:
                try:
                    produce(topic or self._topic, body, **kwargs)
                    break
                except BufferError:  # the producer's queue is full: let it send, then try again
                    self._producer.poll(0.1)
        self._producer.poll(0)
        self._raise_errors()

    def _delivered(self, where: str) -> Any:
        def done(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                with self._lock:
                    self._errors.append(f"{where} could not be written to {msg.topic()}: {err.str()}")
        return done

    def _raise_errors(self) -> None:
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise ConnectException(f"{self.name}: {errors[0]}" + (f" (and {len(errors) - 1} more)"
                                                                   if len(errors) > 1 else ""))

    def flush(self, offsets: Mapping[TopicPartition, Any]) -> None:
        # the offsets are committed only after this returns: every record put so far must be in Kafka
        left = self._producer.flush(self._flush_timeout)
        self._raise_errors()
        if left:
            raise ConnectException(f"{self.name}: Kafka did not acknowledge {left} record(s) within "
                                   f"{self._flush_timeout:g} s")

    def stop(self) -> None:
        if self._producer is not None:
            self._producer.flush(self._flush_timeout)
            self._producer = None


class FlumeKafkaSinkConnector(SinkConnector):
    """Flume's Kafka sink: records' bodies (or Flume Avro events) produced to a Kafka cluster."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return distribution_version(__name__)

    def config(self) -> ConfigDef:
        return ConfigDef(CONFIG_DEF)

    def start(self, props: Mapping[str, str]) -> None:
        AbstractConfig(CONFIG_DEF, props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return FlumeKafkaSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max(1, max_tasks))]

    def stop(self) -> None:
        pass
