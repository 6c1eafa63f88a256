"""Values resolved from config providers in metrics snapshots and offsets answers (issue #35 item 8).

The end-to-end check on a real worker is tests/edge/test_resolved_secrets.py; these pin the rules: a
resolved name reads ``[hidden]``, series that then share labels add up, and a ``[hidden]`` sent back in an
offsets request is refused instead of being written as a name.
"""

from __future__ import annotations

from typing import Any

import pytest

from connect.runtime.config_transformer import ConfigTransformer
from connect.runtime.herder import BadRequestError, ConnectorOffset
from connect.runtime.metrics_snapshot import ClientMetrics, TaskMetrics, WorkerMetrics, without_secrets
from connect.runtime.offset_admin import check_offsets_with_connector, sink_offset_changes, source_offsets
from connect.runtime.plugins import PluginRegistry
from connect.runtime.worker_config import WorkerConfig

SECRET = "orders-from-vault"


@pytest.fixture
def transformer(tmp_path) -> ConfigTransformer:
    secrets = tmp_path / "s.properties"
    secrets.write_text(f"topic={SECRET}\ntopic2=payments-from-vault\n")
    t = ConfigTransformer(PluginRegistry(), WorkerConfig({"key.converter": "StringConverter",
                                                          "value.converter": "StringConverter",
                                                          "config.providers": "file"}))
    t.transform({"topics": f"${{file:{secrets}:topic}},${{file:{secrets}:topic2}}"})
    return t


def test_the_lag_of_resolved_topics_reads_hidden_and_adds_up(transformer: ConfigTransformer) -> None:
    task = TaskMetrics("snk", 0, "sink", "RUNNING", {}, {(SECRET, 0): 3, ("payments-from-vault", 0): 4,
                                                          ("plain", 0): 5, (SECRET, 1): 1},
                       clients=(ClientMetrics(f"client-{SECRET}", "consumer", 1, 2, None),))
    shown = without_secrets(WorkerMetrics("w", (), (task,), {}), transformer.redact)
    assert dict(shown.tasks[0].partition_lag) == {("[hidden]", 0): 7, ("plain", 0): 5, ("[hidden]", 1): 1}
    assert shown.tasks[0].clients[0].client_id == "client-[hidden]"


def test_a_snapshot_without_resolved_names_is_passed_on_as_it_is(transformer: ConfigTransformer) -> None:
    snapshot = WorkerMetrics("w", (), (TaskMetrics("snk", 0, "sink", "RUNNING", {}, {("plain", 0): 5}),), {})
    assert without_secrets(snapshot, transformer.redact) is snapshot


def test_a_hidden_sink_topic_sent_back_is_refused_with_its_place() -> None:
    offsets = [ConnectorOffset({"kafka_topic": "plain", "kafka_partition": 0}, {"kafka_offset": 1}),
               ConnectorOffset({"kafka_topic": "[hidden]", "kafka_partition": 0}, {"kafka_offset": 1})]
    with pytest.raises(BadRequestError) as refused:
        sink_offset_changes(offsets)
    assert "offsets[1].partition.kafka_topic" in str(refused.value) and "config provider" in str(refused.value)


class _Store:
    def __init__(self, entries: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        self.entries = entries

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return self.entries


def test_source_partitions_show_resolved_values_hidden_and_refuse_them_back(transformer: ConfigTransformer) -> None:
    store = _Store([({"filename": f"/data/{SECRET}.log"}, {"position": 10})])
    shown = source_offsets([store], "src", transformer.redact)  # type: ignore[list-item]
    assert [o.to_json() for o in shown] == [{"partition": {"filename": "/data/[hidden].log"},
                                             "offset": {"position": 10}}]
    connector = PluginRegistry().new_instance("FileStreamSource", ("source",), "connector.class")
    with pytest.raises(BadRequestError) as refused:
        check_offsets_with_connector(connector, "src", {"file": "${file:/s.properties:path}", "topic": "t"}, shown)
    assert "offsets[0]" in str(refused.value) and "config provider" in str(refused.value)
    # without a reference in the config a "[hidden]" cannot stand for a resolved value: left to the connector
    check_offsets_with_connector(connector, "src", {"file": "/data/[hidden].log", "topic": "t"}, shown)
