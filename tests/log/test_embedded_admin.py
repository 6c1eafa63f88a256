"""Topic administration on the embedded log: create, list, describe, delete, names, cluster id."""

from __future__ import annotations

import os
import re

import pytest

from connect.log.api import InvalidTopicError, LogError, NewTopic, TopicExistsError, UnknownTopicError
from connect.log.embedded.backend import EmbeddedBackend

QUIET = {"log.retention.check.interval.ms": 3_600_000}


def test_create_list_describe_delete(tmp_path, caplog) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    admin = backend.admin()
    with caplog.at_level("INFO", logger="connect.log.embedded"):
        admin.create_topic(NewTopic("orders", 3, configs={"cleanup.policy": "compact", "retention.ms": "1000"}))
    assert any("Created topic orders with 3 partition(s)" in r.getMessage() for r in caplog.records)
    admin.create_topic(NewTopic("__internal", 1))
    assert admin.list_topics() == ["orders"]
    assert admin.list_topics(include_internal=True) == ["__internal", "orders"]
    with pytest.raises(TopicExistsError):
        admin.create_topic(NewTopic("orders", 1))
    admin.create_topic(NewTopic("orders", 1), exist_ok=True)

    producer = backend.producer()
    producer.send_batch("orders", 2, [b"a", b"b", b"c"])
    producer.flush()
    desc = admin.describe_topic("orders")
    assert desc.name == "orders" and desc.partitions == 3
    assert desc.configs["cleanup.policy"] == "compact" and desc.configs["retention.ms"] == "1000"
    assert desc.configs["segment.bytes"] == str(1 << 30)  # defaults are listed too
    assert desc.offsets == {0: (0, 0), 1: (0, 0), 2: (0, 3)}

    admin.delete_topic("orders")
    assert admin.list_topics() == []
    assert not [e for e in os.listdir(tmp_path) if e.startswith("orders")]
    with pytest.raises(UnknownTopicError):
        admin.describe_topic("orders")
    with pytest.raises(UnknownTopicError):
        admin.delete_topic("orders")
    # a re-created topic starts empty, also for a producer that had the old one open
    admin.create_topic(NewTopic("orders", 1))
    producer.send_batch("orders", 0, [b"new"])
    producer.flush()
    assert admin.describe_topic("orders").offsets == {0: (0, 1)}
    backend.close()


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "has space", "slash/name", "ümlaut", "a:b"])
def test_illegal_topic_names_are_rejected(tmp_path, name: str) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    with pytest.raises(InvalidTopicError):
        backend.admin().create_topic(NewTopic(name, 1))
    assert backend.admin().list_topics(include_internal=True) == []
    backend.close()


def test_legal_edge_names_and_bad_settings(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    admin = backend.admin()
    for name in ("a" * 249, "A.b_c-9", "..."):
        admin.create_topic(NewTopic(name, 1))
    assert len(admin.list_topics()) == 3
    with pytest.raises(LogError, match="partitions"):
        admin.create_topic(NewTopic("zero", 0))
    with pytest.raises(LogError, match="cleanup.policy"):
        admin.create_topic(NewTopic("bad", 1, configs={"cleanup.policy": "shred"}))
    with pytest.raises(LogError, match="segment.bytes"):
        admin.create_topic(NewTopic("bad", 1, configs={"segment.bytes": "lots"}))
    assert "bad" not in admin.list_topics()
    backend.close()


def test_cluster_id_is_generated_once_and_kept(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    cid = backend.admin().cluster_id()
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", cid)
    assert backend.admin().cluster_id() == cid
    backend.close()
    backend = EmbeddedBackend(str(tmp_path), QUIET)
    assert backend.admin().cluster_id() == cid
    assert f"cluster.id={cid}" in (tmp_path / "meta.properties").read_text()
    backend.close()
    assert EmbeddedBackend(str(tmp_path / "other"), QUIET).admin().cluster_id() != cid


def test_worker_defaults_shape_new_topics(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), {**QUIET, "log.segment.bytes": "4096", "log.retention.hours": "1"})
    backend.admin().create_topic(NewTopic("t", 1, configs={"retention.bytes": "10"}))
    configs = backend.admin().describe_topic("t").configs
    assert configs["segment.bytes"] == "4096"
    assert configs["retention.ms"] == "3600000"
    assert configs["retention.bytes"] == "10"
    backend.close()


def test_deletion_by_another_backend_is_noticed(tmp_path) -> None:
    writer = EmbeddedBackend(str(tmp_path), QUIET)
    other = EmbeddedBackend(str(tmp_path), QUIET)  # separate files and locks, as another process has
    writer.admin().create_topic(NewTopic("t", 1))
    producer = writer.producer()
    producer.send_batch("t", 0, [b"old"] * 3)
    producer.flush()
    other.admin().delete_topic("t")
    other.admin().create_topic(NewTopic("t", 1))
    producer.send_batch("t", 0, [b"new"])  # lands in the new topic, not in the deleted files
    producer.flush()
    assert other.admin().describe_topic("t").offsets == {0: (0, 1)}
    strict = writer.producer({"auto.create.topics.enable": "false"})
    other.admin().delete_topic("t")
    with pytest.raises(UnknownTopicError):
        strict.send_batch("t", 0, [b"lost?"])
    writer.close()
    other.close()
