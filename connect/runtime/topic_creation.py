"""Which settings a source connector's missing topics are created with (Kafka Connect's KIP-158).

A connector enables topic creation by setting ``topic.creation.default.partitions``
and/or ``.replication.factor`` (and the worker by ``topic.creation.enable``,
true by default). ``topic.creation.groups`` names more groups, each with
``include`` and ``exclude`` lists of regexes (whole-name matches),
``partitions`` and ``replication.factor`` (the default group's when unset;
for the default group 1 and -1, where -1 means the broker's default) and any
other topic config under
``topic.creation.<group>.``. A topic takes the first group of the list that
includes and does not exclude it, else the default group.
"""

from __future__ import annotations

import re

from connect.log.api import NewTopic
from connect.runtime.connector_config import DEFAULT_GROUP, SourceConnectorConfig, TopicCreationGroup

__all__ = ["TopicCreation"]


class _Group:
    def __init__(self, settings: TopicCreationGroup, default: _Group | None = None) -> None:
        """``default``: the default group, whose partitions and replication factor a group inherits."""
        self.name = settings.name
        # the default group takes every topic no other group took
        default_group = settings.name == DEFAULT_GROUP
        self.include = [re.compile(".*")] if default_group else [re.compile(p) for p in settings.include]
        self.exclude = [re.compile(p) for p in settings.exclude]
        partitions, replication = settings.partitions, settings.replication_factor
        if default is not None:  # a named group: what it leaves unset is the default group's
            partitions = default.partitions if partitions is None else partitions
            replication = default.replication if replication is None else replication
        assert partitions is not None and replication is not None  # the default group's keys have defaults
        self.partitions: int = partitions
        self.replication: int = replication
        self.configs = settings.topic_configs

    def matches(self, topic: str) -> bool:
        return any(p.fullmatch(topic) for p in self.include) and not any(p.fullmatch(topic) for p in self.exclude)


class TopicCreation:
    """The groups of one connector; ``new_topic(name)`` says how to create a topic it writes to."""

    def __init__(self, groups: list[_Group], default: _Group) -> None:
        self.groups = groups
        self.default = default

    @classmethod
    def from_config(cls, enabled: bool, config: SourceConnectorConfig) -> TopicCreation | None:
        """None when the worker (``enabled``: its ``topic.creation.enable``) or the connector does not use
        topic creation."""
        if not enabled or not config.uses_topic_creation:
            return None
        default = _Group(config.topic_creation_group(DEFAULT_GROUP))
        groups = [_Group(config.topic_creation_group(name), default) for name in config.topic_creation_groups]
        return cls(groups, default)

    def group_for(self, topic: str) -> _Group:
        for group in self.groups:
            if group.matches(topic):
                return group
        return self.default

    def new_topic(self, topic: str) -> NewTopic:
        group = self.group_for(topic)
        return NewTopic(topic, group.partitions, group.replication, dict(group.configs))
