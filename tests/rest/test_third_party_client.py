"""kafka-connect-py, a client written for Kafka Connect, used as its README shows against our
server: list, create, inspect, pause, resume and delete a connector.

Runs against ``rest_base_url`` (a FakeHerder server, or a real worker via HEADRACE_TEST_REST_URL),
so states are polled rather than assumed to change at once.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from kafka_connect import KafkaConnect
from requests.exceptions import HTTPError

from tests.support import wait_until


def connector_state(client: KafkaConnect, name: str) -> str:
    return client.get_connector_status(name)["connector"]["state"]


def test_kafka_connect_py_manages_a_connector(rest_base_url: str, tmp_path: Path) -> None:
    client = KafkaConnect(url=rest_base_url)
    name = f"kcpy-{uuid.uuid4().hex[:8]}"
    source_file = tmp_path / "input.txt"
    source_file.write_text("one\ntwo\n")

    cluster = client.get_cluster_info()
    assert set(cluster) >= {"version", "commit", "kafka_cluster_id"}
    assert name not in client.list_connectors()
    assert any(p["class"].endswith("FileStreamSourceConnector") for p in client.list_connector_plugins())

    created = client.create_connector({
        "name": name,
        "config": {"connector.class": "FileStreamSource", "tasks.max": "1",
                   "file": str(source_file), "topic": f"{name}-topic"},
    })
    assert created["name"] == name and created["type"] == "source"
    assert created["config"]["file"] == str(source_file)

    assert name in client.list_connectors()
    expanded = client.list_connectors(expand="status")
    assert expanded[name]["status"]["name"] == name
    assert client.list_connectors(expand="info")[name]["info"]["config"]["connector.class"] == "FileStreamSource"
    assert client.get_connector(name)["name"] == name
    assert client.get_connector_config(name)["topic"] == f"{name}-topic"
    wait_until(lambda: connector_state(client, name) == "RUNNING", what="RUNNING")
    tasks = wait_until(lambda: client.list_connector_tasks(name), what="a task")
    assert tasks[0]["id"] == {"connector": name, "task": 0}
    assert client.get_connector_task_status(name, 0)["id"] == 0

    assert client.pause_connector(name) is None
    wait_until(lambda: connector_state(client, name) == "PAUSED", what="PAUSED")
    assert name in client.list_connectors(expand="status", state="paused")
    assert client.resume_connector(name) is None
    wait_until(lambda: connector_state(client, name) == "RUNNING", what="RUNNING after resume")

    # The client sends the flags as Python's "False"/"True"; both spellings must work.
    assert client.restart_connector(name) is None
    restarted = client.restart_connector(name, include_tasks=True)
    assert restarted["name"] == name

    assert client.delete_connector(name) is None
    wait_until(lambda: name not in client.list_connectors(), what="deletion")
    with pytest.raises(HTTPError) as e:
        client.get_connector(name)
    assert e.value.response.status_code == 404
