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
from collections.abc import Mapping
from typing import Any

from connect.log.api import NewTopic

__all__ = ["TopicCreation"]

PREFIX = "topic.creation."
_OWN = ("include", "exclude", "partitions", "replication.factor")


def _patterns(value: Any) -> list[re.Pattern[str]]:
    return [re.compile(p.strip()) for p in str(value or "").split(",") if p.strip()]


class _Group:
    def __init__(self, name: str, config: Mapping[str, Any], partitions: int, replication: int) -> None:
        prefix = f"{PREFIX}{name}."
        own = {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}
        self.name = name
        # the default group takes every topic no other group took
        self.include = _patterns(".*" if name == "default" else own.get("include", ""))
        self.exclude = [] if name == "default" else _patterns(own.get("exclude", ""))
        self.partitions = int(own.get("partitions", partitions))
        self.replication = int(own.get("replication.factor", replication))
        self.configs = {k: str(v) for k, v in own.items() if k not in _OWN}

    def matches(self, topic: str) -> bool:
        return any(p.fullmatch(topic) for p in self.include) and not any(p.fullmatch(topic) for p in self.exclude)


class TopicCreation:
    """The groups of one connector; ``new_topic(name)`` says how to create a topic it writes to."""

    def __init__(self, groups: list[_Group], default: _Group) -> None:
        self.groups = groups
        self.default = default

    @classmethod
    def from_configs(cls, worker_config: Mapping[str, Any], connector_config: Mapping[str, Any]) -> TopicCreation | None:
        """None when the worker or the connector does not use topic creation."""
        if str(worker_config.get("topic.creation.enable", "true")).strip().lower() != "true":
            return None
        default_prefix = f"{PREFIX}default."
        if (default_prefix + "partitions" not in connector_config
                and default_prefix + "replication.factor" not in connector_config):
            return None
        # unset partitions: 1, the broker's usual num.partitions, which the embedded log can take too
        default = _Group("default", connector_config, 1, -1)
        names = [g.strip() for g in str(connector_config.get(f"{PREFIX}groups", "") or "").split(",") if g.strip()]
        groups = [_Group(n, connector_config, default.partitions, default.replication)
                  for n in dict.fromkeys(names) if n != "default"]
        return cls(groups, default)

    def group_for(self, topic: str) -> _Group:
        for group in self.groups:
            if group.matches(topic):
                return group
        return self.default

    def new_topic(self, topic: str) -> NewTopic:
        group = self.group_for(topic)
        return NewTopic(topic, group.partitions, group.replication, dict(group.configs))
