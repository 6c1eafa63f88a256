"""Kafka Connect's built-in predicates, which gate transforms (``transforms.<t>.predicate``), and Headrace's
ValueMatches and HeaderValueMatches (what Flume's regex_filter interceptor and multiplexing selector test)."""

from plugins.predicates.has_header_key import HasHeaderKey
from plugins.predicates.header_value_matches import HeaderValueMatches
from plugins.predicates.record_is_tombstone import RecordIsTombstone
from plugins.predicates.topic_name_matches import TopicNameMatches
from plugins.predicates.value_matches import ValueMatches

__all__ = ["HasHeaderKey", "HeaderValueMatches", "RecordIsTombstone", "TopicNameMatches", "ValueMatches"]
