"""The offsets REST endpoints' work that both herders share: sink offsets live in the connector's consumer
group (``connect-<connector>``), source offsets in the offset store; both may change only while the
connector is STOPPED."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.connector import SinkConnector, SourceConnector
from connect.api.errors import ConnectException
from connect.api.topic_partition import TopicPartition
from connect.log.api import Admin, LogError
from connect.runtime.herder import BadRequestError, ConnectorOffset, HerderError
from connect.runtime.offsets import OffsetStore, offset_key

__all__ = ["STOPPED_REQUIRED", "alter_sink_offsets", "alter_source_offsets", "check_offsets_with_connector",
           "check_source_offsets", "reset_sink_offsets", "reset_source_offsets", "sink_offset_changes",
           "sink_offsets", "source_offsets"]

STOPPED_REQUIRED = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the "
    "specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
)


def sink_offsets(admin: Admin, name: str) -> list[ConnectorOffset]:
    offsets = admin.list_group_offsets(f"connect-{name}")
    return [ConnectorOffset({"kafka_topic": tp.topic, "kafka_partition": tp.partition}, {"kafka_offset": off})
            for tp, off in sorted(offsets.items())]


def sink_offset_changes(offsets: list[ConnectorOffset]) -> dict[TopicPartition, int | None]:
    """The REST body's sink offsets as the consumer group changes they mean; BadRequestError when malformed."""
    changes: dict[TopicPartition, int | None] = {}
    for entry in offsets:
        topic, partition = entry.partition.get("kafka_topic"), entry.partition.get("kafka_partition")
        if not isinstance(topic, str) or not topic:
            raise BadRequestError("Kafka topic names must be valid strings and may not be null")
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


def source_offsets(stores: list[OffsetStore], name: str) -> list[ConnectorOffset]:
    """The offsets a source connector's tasks would resume from: each partition's from the first store of
    ``stores`` (see Worker.source_offset_stores) that has one."""
    merged: dict[str, ConnectorOffset] = {}
    for store in reversed(stores):
        for partition, offset in store.connector_offsets(name):
            merged[offset_key(name, partition)] = ConnectorOffset(partition, offset)
    return list(merged.values())


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
    a user typed wrong is the request's fault."""
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
