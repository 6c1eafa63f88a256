"""Kafka Connect's built-in predicates, which gate transforms (``transforms.<t>.predicate``)."""

from plugins.predicates.has_header_key import HasHeaderKey
from plugins.predicates.record_is_tombstone import RecordIsTombstone
from plugins.predicates.topic_name_matches import TopicNameMatches

__all__ = ["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"]
