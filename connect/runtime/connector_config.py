"""Connector configuration: the framework's keys every connector has, defined once and read typed.

As in Kafka Connect, ``ConnectorConfig`` (with ``SinkConnectorConfig`` and
``SourceConnectorConfig``) parses the framework's keys of one connector config
(``name``, ``tasks.max``, converters, transforms, ``errors.*``, topics, topic
creation, client overrides); a plugin's own keys stay in ``originals`` for
the plugin to parse with its ConfigDef. The Worker builds one from the
resolved config of each connector and task and reads the framework's settings
only through its properties; ``ConnectorConfigValidator``
(connector_validation.py) checks configs against the same definitions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from connect.api.config import (
    AbstractConfig,
    CaseInsensitiveValidString,
    CompositeValidator,
    ConfigDef,
    ConfigException,
    ConfigType,
    Importance,
    LambdaValidator,
    NonEmptyString,
    Range,
    ValidString,
    Width,
    parse_type,
)
from connect.api.setting import Setting

__all__ = ["ConnectorConfig", "DeadLetterQueueConfig", "SinkConnectorConfig", "SourceConnectorConfig",
           "TopicCreationGroup", "base_connector_def", "config_class_for", "listed", "sink_connector_def",
           "source_connector_def"]

COMMON_GROUP = "Common"
TRANSFORMS_GROUP = "Transforms"
PREDICATES_GROUP = "Predicates"
ERROR_GROUP = "Error Handling"
TOPIC_CREATION_GROUP = "Topic Creation"
# Kafka Connect's names for the source connector's own groups, which validation answers list
EXACTLY_ONCE_SUPPORT_GROUP = "Exactly Once Support"
OFFSETS_TOPIC_GROUP = "offsets.topic"
TOPIC_CREATION_PREFIX = "topic.creation."
DEFAULT_GROUP = "default"
MAX_POLL_RECORDS_OVERRIDE = "consumer.override.max.poll.records"


def _unique_aliases(name: str, value: Any) -> str | None:
    if value and len(set(value)) != len(value):
        return "Duplicate alias provided."
    return None


# Kafka Connect refuses names with a character for which Java's Character.isISOControl is true; a "/"
# would make the connector unaddressable over REST (and an encoded one is refused there).
_NAME_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f-\x9f/]")


def _connector_name(name: str, value: Any) -> str | None:
    if isinstance(value, str) and value.strip() in (".", ".."):
        # a name is also a folder (streaming state, Spark checkpoints): . or .. would be another one's
        return "Connector name must not be . or .."
    bad = _NAME_FORBIDDEN.search(value) if isinstance(value, str) else None
    if bad is None:
        return None
    if bad.group() == "/":
        return "Connector name must not contain '/'"
    return f"Connector name must not contain ISO control characters (found U+{ord(bad.group()):04X})"


def base_connector_def() -> ConfigDef:
    d = ConfigDef()
    d.define("name", ConfigType.STRING,
             validator=CompositeValidator.of(NonEmptyString(), LambdaValidator(_connector_name, "no control chars or /")),
             importance=Importance.HIGH,
             documentation="Globally unique name to use for this connector.", group=COMMON_GROUP,
             order_in_group=1, width=Width.MEDIUM, display_name="Connector name")
    d.define("connector.class", ConfigType.STRING, importance=Importance.HIGH,
             documentation="Name or alias of the class for this connector.", group=COMMON_GROUP,
             order_in_group=2, width=Width.LONG, display_name="Connector class")
    d.define("tasks.max", ConfigType.INT, 1, Range.at_least(1), Importance.HIGH,
             "Maximum number of tasks to use for this connector.", COMMON_GROUP, 3, Width.SHORT, "Tasks max")
    d.define("tasks.max.enforce", ConfigType.BOOLEAN, True, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=4)
    d.define("key.converter", ConfigType.CLASS, None, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=5, documentation="Converter for keys; overrides the worker's.")
    d.define("value.converter", ConfigType.CLASS, None, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=6, documentation="Converter for values; overrides the worker's.")
    d.define("header.converter", ConfigType.CLASS, None, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=7, documentation="HeaderConverter; overrides the worker's.")
    d.define("config.action.reload", ConfigType.STRING, "restart", ValidString.in_("none", "restart"),
             Importance.LOW, group=COMMON_GROUP, order_in_group=8)
    d.define("transforms", ConfigType.LIST, [], LambdaValidator(_unique_aliases), Importance.LOW,
             "Aliases for the transformations to be applied to records.", TRANSFORMS_GROUP, 1, Width.LONG,
             "Transforms")
    d.define("predicates", ConfigType.LIST, [], LambdaValidator(_unique_aliases), Importance.LOW,
             "Aliases for the predicates used by transformations.", PREDICATES_GROUP, 1, Width.LONG,
             "Predicates")
    d.define("errors.retry.timeout", ConfigType.LONG, 0, importance=Importance.MEDIUM, group=ERROR_GROUP,
             order_in_group=1, documentation="Total time a failed operation is retried, ms; -1 forever.")
    d.define("errors.retry.delay.max.ms", ConfigType.LONG, 60000, Range.at_least(1), Importance.MEDIUM,
             "Maximum delay between consecutive retries, ms.", ERROR_GROUP, 2)
    d.define("errors.tolerance", ConfigType.STRING, "none", ValidString.in_("none", "all"), Importance.MEDIUM,
             "none: an error fails the task; all: problematic records are skipped.", ERROR_GROUP, 3)
    d.define("errors.log.enable", ConfigType.BOOLEAN, False, importance=Importance.MEDIUM, group=ERROR_GROUP,
             order_in_group=4)
    d.define("errors.log.include.messages", ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
             group=ERROR_GROUP, order_in_group=5)
    # Families handed on as they are (to the converters and clients), so never unknown keys
    for converter in ("key.converter.", "value.converter.", "header.converter."):
        d.allow_prefix(converter, f"Settings of the connector's {converter[:-1]}.")
    for client in ("producer", "consumer", "admin"):
        d.allow_prefix(f"{client}.override.", f"Settings of the connector's {client} clients, as the worker's "
                                              "connector.client.config.override.policy allows.")
    return d


def _define_dead_letter_queue(d: ConfigDef) -> None:
    d.define("errors.deadletterqueue.topic.name", ConfigType.STRING, "", importance=Importance.MEDIUM,
             group=ERROR_GROUP, order_in_group=6, documentation="Topic for records that fail; empty: no DLQ.")
    d.define("errors.deadletterqueue.topic.replication.factor", ConfigType.SHORT, 3,
             importance=Importance.MEDIUM, group=ERROR_GROUP, order_in_group=7)
    d.define("errors.deadletterqueue.context.headers.enable", ConfigType.BOOLEAN, False,
             importance=Importance.MEDIUM, group=ERROR_GROUP, order_in_group=8)


def sink_connector_def() -> ConfigDef:
    d = base_connector_def()
    d.define("topics", ConfigType.LIST, [], importance=Importance.HIGH, group=COMMON_GROUP, order_in_group=4,
             documentation="Topics to consume; use this or topics.regex.")
    d.define("topics.regex", ConfigType.STRING, "", importance=Importance.HIGH, group=COMMON_GROUP,
             order_in_group=4, documentation="Regular expression of topics to consume; use this or topics.")
    # the one consumer override the worker reads itself (the others go to the consumer as they are)
    d.define(MAX_POLL_RECORDS_OVERRIDE, ConfigType.INT, None, Range.at_least(1), Importance.LOW,
             "Records a sink task asks for per poll; unset: the worker's consumer.max.poll.records.",
             internal=True)
    _define_dead_letter_queue(d)
    return d


def source_connector_def() -> ConfigDef:
    d = base_connector_def()
    d.define("topic.creation.groups", ConfigType.LIST, [], importance=Importance.LOW,
             group=TOPIC_CREATION_GROUP, order_in_group=1)
    d.define("exactly.once.support", ConfigType.STRING, "requested",
             CaseInsensitiveValidString.in_("requested", "required"), Importance.MEDIUM,
             "requested: the connector runs exactly once when the worker has exactly.once.source.support=enabled, "
             "without asking the connector first; required: validation also asks the connector "
             "(SourceConnector.exactly_once_support) and refuses the config unless it answers SUPPORTED.",
             group=EXACTLY_ONCE_SUPPORT_GROUP, order_in_group=1)
    d.define("transaction.boundary", ConfigType.STRING, "poll",
             CaseInsensitiveValidString.in_("poll", "interval", "connector"), Importance.MEDIUM,
             "Where an exactly-once source task's transactions end: poll (after every poll's records), interval "
             "(every transaction.boundary.interval.ms) or connector (where the task asks, through its "
             "TransactionContext). Ignored unless the worker runs sources exactly once.",
             group=EXACTLY_ONCE_SUPPORT_GROUP, order_in_group=2)
    d.define("transaction.boundary.interval.ms", ConfigType.LONG, None, Range.at_least(0), Importance.LOW,
             "With transaction.boundary=interval, how long a transaction stays open; unset: the worker's "
             "offset.flush.interval.ms.", group=EXACTLY_ONCE_SUPPORT_GROUP, order_in_group=3)
    d.define("offsets.storage.topic", ConfigType.STRING, None, importance=Importance.LOW,
             documentation="A topic of this connector's own for its source offsets (exactly-once tasks write them "
                           "in their transactions); unset: the worker's offset topic. Offsets not found there are "
                           "looked up in the worker's store.", group=OFFSETS_TOPIC_GROUP, order_in_group=1)
    # Headrace extension: a dead-letter topic for source records that fail conversion or a transform
    _define_dead_letter_queue(d)
    _define_topic_creation_group(d, DEFAULT_GROUP)
    return d


def _regexes(name: str, value: Any) -> str | None:
    for pattern in value or ():
        try:
            re.compile(pattern)
        except re.error as exc:
            return f"Invalid regular expression {pattern!r}: {exc}"
    return None


def _define_topic_creation_group(d: ConfigDef, group: str) -> None:
    """The keys of one topic creation group (Kafka Connect's KIP-158); other keys under its prefix are topic
    configs, passed to the topic as they are."""
    prefix = f"{TOPIC_CREATION_PREFIX}{group}."
    d.allow_prefix(prefix, f"Topic configs of the topics group {group} creates.")
    if group == DEFAULT_GROUP:
        d.define(prefix + "partitions", ConfigType.INT, 1, importance=Importance.LOW, group=TOPIC_CREATION_GROUP,
                 documentation="Partitions of the topics the connector creates; -1: the broker's default.")
        d.define(prefix + "replication.factor", ConfigType.SHORT, -1, importance=Importance.LOW,
                 group=TOPIC_CREATION_GROUP,
                 documentation="Replication factor of the topics the connector creates; -1: the broker's default.")
        return
    d.define(prefix + "include", ConfigType.LIST, [], LambdaValidator(_regexes, "regular expressions"),
             Importance.LOW, "Regular expressions of the topic names (whole-name matches) this group creates.",
             TOPIC_CREATION_GROUP)
    d.define(prefix + "exclude", ConfigType.LIST, [], LambdaValidator(_regexes, "regular expressions"),
             Importance.LOW, "Regular expressions of the topic names this group leaves to the next.",
             TOPIC_CREATION_GROUP)
    d.define(prefix + "partitions", ConfigType.INT, None, importance=Importance.LOW, group=TOPIC_CREATION_GROUP,
             documentation="Partitions of this group's topics; unset: the default group's.")
    d.define(prefix + "replication.factor", ConfigType.SHORT, None, importance=Importance.LOW,
             group=TOPIC_CREATION_GROUP, documentation="Replication factor of this group's topics; unset: the "
                                                       "default group's.")


def listed(props: Mapping[str, Any], key: str) -> list[str]:
    """The items of a LIST key as the definitions parse it, empty ones dropped; [] when it does not parse
    (validation then says why)."""
    try:
        return _items(parse_type(key, props.get(key), ConfigType.LIST))
    except ConfigException:
        return []


def _items(values: list[Any] | None) -> list[str]:
    return [str(v) for v in values or () if v != ""]


# --- the typed configs -------------------------------------------------------------------------------------------
class ConnectorConfig(AbstractConfig):
    """The framework's keys of one connector config, parsed once (Kafka Connect's ConnectorConfig).

    Raises ConfigException naming the first missing or invalid key.
    """

    DEFINITION: ClassVar[ConfigDef] = base_connector_def()

    name = Setting[str]("name")
    connector_class = Setting[str]("connector.class")
    tasks_max = Setting[int]("tasks.max")
    tasks_max_enforce = Setting[bool]("tasks.max.enforce")
    errors_retry_timeout_ms = Setting[int]("errors.retry.timeout")
    errors_retry_delay_max_ms = Setting[int]("errors.retry.delay.max.ms")
    errors_log_enable = Setting[bool]("errors.log.enable")
    errors_log_include_messages = Setting[bool]("errors.log.include.messages")

    def __init__(self, props: Mapping[str, Any]) -> None:
        super().__init__(self.definition_for(props), props)

    @classmethod
    def definition_for(cls, props: Mapping[str, Any]) -> ConfigDef:
        """The keys a config of this kind is parsed and validated with (shared: copy it before adding keys)."""
        return cls.DEFINITION

    def converter_class(self, key: str) -> str | None:
        """The connector's ``key.converter``, ``value.converter`` or ``header.converter``; None: the worker's."""
        value = self.get(key)
        return str(value) if value else None

    @property
    def transforms(self) -> list[str]:
        """The transform aliases, in order."""
        return _items(self.get("transforms"))

    @property
    def predicates(self) -> list[str]:
        return _items(self.get("predicates"))

    @property
    def errors_tolerance_all(self) -> bool:
        """``errors.tolerance=all``: failed records are skipped instead of failing the task."""
        return self.get("errors.tolerance") == "all"

    def client_overrides(self, client: str) -> dict[str, Any]:
        """The connector's settings for its ``producer``, ``consumer`` or ``admin`` client
        (``<client>.override.*``)."""
        return self.originals_with_prefix(f"{client}.override.")


class DeadLetterQueueConfig(ConnectorConfig):
    """The ``errors.deadletterqueue.*`` keys sinks have (and sources, as a Headrace extension)."""

    dlq_topic_name = Setting[str]("errors.deadletterqueue.topic.name")  # empty: no dead-letter queue
    dlq_replication_factor = Setting[int]("errors.deadletterqueue.topic.replication.factor")
    dlq_context_headers_enable = Setting[bool]("errors.deadletterqueue.context.headers.enable")


class SinkConnectorConfig(DeadLetterQueueConfig):
    DEFINITION: ClassVar[ConfigDef] = sink_connector_def()

    topics_regex = Setting[str]("topics.regex")  # empty when the connector lists its topics instead
    # None: the worker's consumer.max.poll.records
    max_poll_records = Setting[int | None](MAX_POLL_RECORDS_OVERRIDE)

    @property
    def topics(self) -> list[str]:
        return _items(self.get("topics"))


@attrs.frozen
class TopicCreationGroup:
    """The settings of one topic creation group; None partitions or replication: the default group's."""

    name: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    partitions: int | None
    replication_factor: int | None
    topic_configs: dict[str, str]


class SourceConnectorConfig(DeadLetterQueueConfig):
    DEFINITION: ClassVar[ConfigDef] = source_connector_def()

    exactly_once_support = Setting[str]("exactly.once.support")
    transaction_boundary = Setting[str]("transaction.boundary")
    transaction_boundary_interval_ms = Setting[int | None]("transaction.boundary.interval.ms")
    offsets_storage_topic = Setting[str | None]("offsets.storage.topic")

    @classmethod
    def definition_for(cls, props: Mapping[str, Any]) -> ConfigDef:
        groups = _groups(listed(props, "topic.creation.groups"))
        if not groups:
            return cls.DEFINITION
        definition = ConfigDef(cls.DEFINITION)
        for group in groups:
            _define_topic_creation_group(definition, group)
        return definition

    @property
    def uses_topic_creation(self) -> bool:
        """Whether the connector asks for topic creation (by setting the default group's partitions or
        replication factor)."""
        prefix = f"{TOPIC_CREATION_PREFIX}{DEFAULT_GROUP}."
        return prefix + "partitions" in self.originals or prefix + "replication.factor" in self.originals

    @property
    def topic_creation_groups(self) -> list[str]:
        """The groups besides the default one, in the order a topic tries them."""
        return _groups(self.get_list("topic.creation.groups"))

    def topic_creation_group(self, group: str) -> TopicCreationGroup:
        prefix = f"{TOPIC_CREATION_PREFIX}{group}."
        own = {"include", "exclude", "partitions", "replication.factor"}
        default = group == DEFAULT_GROUP
        return TopicCreationGroup(
            group,
            () if default else tuple(_items(self.get(prefix + "include"))),
            () if default else tuple(_items(self.get(prefix + "exclude"))),
            self.get(prefix + "partitions"),
            self.get(prefix + "replication.factor"),
            {k: str(v) for k, v in self.originals_with_prefix(prefix).items() if k not in own},
        )



def _groups(names: list[str]) -> list[str]:
    return [g for g in dict.fromkeys(names) if g and g != DEFAULT_GROUP]


def config_class_for(kind: str | None) -> type[ConnectorConfig]:
    """The config class of a ``sink`` or ``source`` connector (ConnectorConfig when the kind is unknown)."""
    return {"sink": SinkConnectorConfig, "source": SourceConnectorConfig}.get(kind or "", ConnectorConfig)
