"""The offsets REST endpoints' work that both herders share: sink offsets live in the connector's consumer
group (``connect-<connector>``), source offsets in the offset store; both may change only while the
connector is STOPPED.

A value a config provider resolved (a sink's topic from ``topics=${file:...}``, a source's file name) is shown
as ``[hidden]``, as ``/topics`` shows it, and an offsets request that sends such a ``[hidden]`` back is refused
rather than read as a topic or partition of that name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from connect.api.config import Password
from connect.api.connector import SinkConnector, SourceConnector
from connect.api.errors import ConnectException
from connect.api.topic_partition import TopicPartition
from connect.log.api import Admin, LogError
from connect.runtime.config_transformer import ConfigTransformer
from connect.runtime.herder import BadRequestError, ConnectorOffset, HerderError
from connect.runtime.storage.offsets import OffsetStore, offset_key

__all__ = ["STOPPED_REQUIRED", "alter_sink_offsets", "alter_source_offsets", "check_offsets_with_connector",
           "check_source_offsets", "reset_sink_offsets", "reset_source_offsets", "sink_offset_changes",
           "sink_offsets", "source_offsets"]

STOPPED_REQUIRED = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the "
    "specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
)


def sink_offsets(admin: Admin, name: str, redact: Callable[[str], str]) -> list[ConnectorOffset]:
    """The committed offsets of the sink's consumer group, topics resolved from a config provider ``redact``-ed."""
    offsets = admin.list_group_offsets(f"connect-{name}")
    return [ConnectorOffset({"kafka_topic": redact(tp.topic), "kafka_partition": tp.partition}, {"kafka_offset": off})
            for tp, off in sorted(offsets.items())]


def _hidden_topic_refusal(index: int) -> BadRequestError:
    return BadRequestError(
        f"offsets[{index}].partition.kafka_topic is \"{Password.HIDDEN}\": a topic name resolved from a config "
        "provider is never shown, so it cannot be sent back; give the topic's name instead")


def sink_offset_changes(offsets: list[ConnectorOffset]) -> dict[TopicPartition, int | None]:
    """The REST body's sink offsets as the consumer group changes they mean; BadRequestError when malformed."""
    changes: dict[TopicPartition, int | None] = {}
    for index, entry in enumerate(offsets):
        topic, partition = entry.partition.get("kafka_topic"), entry.partition.get("kafka_partition")
        if not isinstance(topic, str) or not topic:
            raise BadRequestError("Kafka topic names must be valid strings and may not be null")
        if Password.HIDDEN in topic:  # never a Kafka topic name: brackets are not allowed in one
            raise _hidden_topic_refusal(index)
        if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
            raise BadRequestError("Kafka partitions must be valid numbers and may not be null")
        if entry.offset is None:
            changes[TopicPartition(topic, partition)] = None
            continue
        value = entry.offset.get("kafka_offset")
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise BadRequestError("Kafka offsets must be valid numbers and may not be null or negative")
        changes[TopicPartition(topic, partition)] = value
    return changes


def alter_sink_offsets(admin: Admin, name: str, offsets: list[ConnectorOffset]) -> None:
    changes = sink_offset_changes(offsets)
    try:
        admin.alter_group_offsets(f"connect-{name}", changes)
    except LogError as exc:
        raise HerderError(f"Failed to alter consumer group offsets for connector {name}: {exc}") from exc


def reset_sink_offsets(admin: Admin, name: str) -> None:
    try:
        admin.delete_group(f"connect-{name}")
    except LogError as exc:
        raise HerderError(f"Failed to reset offsets for connector {name}: {exc}") from exc


def check_source_offsets(offsets: list[ConnectorOffset]) -> None:
    for entry in offsets:
        if not isinstance(entry.partition, Mapping) or not entry.partition:
            raise BadRequestError("Source partitions may not be null or empty")
        if entry.offset is not None and not isinstance(entry.offset, Mapping):
            raise BadRequestError("Source offsets must be maps or null")


def source_offsets(stores: list[OffsetStore], name: str, redact: Callable[[str], str]) -> list[ConnectorOffset]:
    """The offsets a source connector's tasks would resume from: each partition's from the first store of
    ``stores`` (see Worker.source_offset_stores) that has one; resolved provider values ``redact``-ed from their
    strings (a FileStreamSource's ``file=${file:...}`` is in its partition)."""
    merged: dict[str, ConnectorOffset] = {}
    for store in reversed(stores):
        for partition, offset in store.connector_offsets(name):
            merged[offset_key(name, partition)] = ConnectorOffset(partition, offset)
    return [ConnectorOffset(_redacted(o.partition, redact), _redacted(o.offset, redact)) for o in merged.values()]


def _redacted(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` (a source partition or offset: JSON) with ``redact`` applied to every string in it."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {_redacted(k, redact): _redacted(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(v, redact) for v in value]
    return value


def _holds_hidden(value: Any) -> bool:
    if isinstance(value, str):
        return Password.HIDDEN in value
    if isinstance(value, Mapping):
        return any(_holds_hidden(k) or _holds_hidden(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_holds_hidden(v) for v in value)
    return False


def alter_source_offsets(stores: list[OffsetStore], name: str, offsets: list[ConnectorOffset]) -> None:
    """Written to every store, so that no store a task falls back to still holds what was changed."""
    check_source_offsets(offsets)
    for store in stores:
        store.put(name, [(e.partition, e.offset) for e in offsets])


def reset_source_offsets(stores: list[OffsetStore], name: str) -> None:
    for store in stores:
        store.reset(name)


def _hashable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    return value


def check_offsets_with_connector(connector: object, name: str, config: Mapping[str, str],
                                 offsets: list[ConnectorOffset]) -> None:
    """Let the connector's ``alter_offsets`` hook refuse offsets it could not resume from, before anything is
    written: BadRequestError naming the connector and its reason. Kafka Connect answers 500 here; an offset
    a user typed wrong is the request's fault.

    A ``[hidden]`` in a source partition or offset of a connector whose config has provider references is
    what GET showed in place of a resolved value: written back, it would name a partition no task reads."""
    if isinstance(connector, SourceConnector) and any(ConfigTransformer.has_references(v) for v in config.values()):
        for index, entry in enumerate(offsets):
            if _holds_hidden(entry.partition) or _holds_hidden(entry.offset):
                raise BadRequestError(
                    f"offsets[{index}] holds \"{Password.HIDDEN}\" in place of a value resolved from a config "
                    f"provider of connector {name}, which is never shown, so it cannot be sent back; give the value")
    try:
        if isinstance(connector, SinkConnector):
            connector.alter_offsets(dict(config), sink_offset_changes(offsets))
        elif isinstance(connector, SourceConnector):
            check_source_offsets(offsets)
            # Source partitions are maps, which cannot be dict keys: the hook gets them as (key, value) pairs
            connector.alter_offsets(dict(config), {_hashable(e.partition): e.offset for e in offsets})
    except BadRequestError:
        raise
    except ConnectException as exc:
        raise BadRequestError(f"Connector {name} cannot use these offsets: {exc}") from exc
    except Exception as exc:  # a broken hook refuses too, but says it is the plugin's fault
        raise BadRequestError(f"Connector {name} failed to check these offsets ({type(exc).__name__}): {exc}") from exc
