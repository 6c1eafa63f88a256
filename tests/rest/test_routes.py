"""Each route's status code and body, field by field, over the in-memory FakeHerder."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from connect.runtime.herder import ConflictError, HerderError, TargetState
from tests.rest.rest_fake_herder import SINK, SOURCE, WORKER_ID, FakeHerder

SOURCE_CONFIG = {"connector.class": "FileStreamSource", "tasks.max": "2", "file": "/tmp/in.txt", "topic": "t"}
SINK_CONFIG = {"connector.class": "FileStreamSinkConnector", "topics": "t", "file": "/tmp/out.txt"}


def create(client: FlaskClient, name: str = "src", config: dict[str, Any] | None = None, **extra: Any) -> Any:
    return client.post("/connectors", json={"name": name, "config": dict(config or SOURCE_CONFIG), **extra})


def assert_error(response: Any, status: int, *fragments: str) -> None:
    assert response.status_code == status
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"error_code", "message"}
    assert body["error_code"] == status
    for fragment in fragments:
        assert fragment in body["message"]


# --- root and health ----------------------------------------------------------------------
def test_root_reports_version_commit_and_cluster(client: FlaskClient) -> None:
    r = client.get("/")
    assert r.status_code == 200
    body = r.get_json()
    assert set(body) == {"version", "commit", "kafka_cluster_id"}
    assert body["version"] == "0.1.0"
    assert body["commit"] == "unknown" or len(body["commit"]) == 16
    assert body["kafka_cluster_id"] == "fake-cluster-id"


def test_health_healthy_starting_unhealthy(client: FlaskClient, fake_herder: FakeHerder) -> None:
    r = client.get("/health")
    assert (r.status_code, r.get_json()) == (
        200,
        {"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."},
    )
    fake_herder.ready = False
    r = client.get("/health")
    assert r.status_code == 503 and r.get_json()["status"] == "starting"
    fake_herder.ready = True
    fake_herder.problem = "the herder thread is stuck"
    r = client.get("/health")
    assert (r.status_code, r.get_json()) == (500, {"status": "unhealthy", "message": "the herder thread is stuck"})


def test_openapi_document_is_served(client: FlaskClient) -> None:
    r = client.get("/openapi.json")
    assert r.status_code == 200 and r.mimetype == "application/json"
    assert r.get_json()["openapi"].startswith("3.0")


# --- creating ---------------------------------------------------------------------------------
def test_create_returns_201_location_and_connector_info(client: FlaskClient, fake_herder: FakeHerder) -> None:
    r = create(client)
    assert r.status_code == 201
    assert r.headers["Location"] == "http://localhost/connectors/src"
    body = r.get_json()
    assert body["name"] == "src"
    assert body["config"] == {**SOURCE_CONFIG, "name": "src"}
    assert body["tasks"] == [{"connector": "src", "task": 0}, {"connector": "src", "task": 1}]
    assert body["type"] == "source"
    assert fake_herder.calls[-1] == ("put", "src", {**SOURCE_CONFIG, "name": "src"}, False, None)


def test_create_trims_the_name_and_quotes_it_in_location(client: FlaskClient) -> None:
    r = create(client, name="  my conn ")
    assert r.status_code == 201
    assert r.get_json()["name"] == "my conn"
    assert r.headers["Location"].endswith("/connectors/my%20conn")


def test_create_turns_numbers_and_booleans_into_strings(client: FlaskClient) -> None:
    r = create(client, config={"connector.class": "FileStreamSource", "tasks.max": 1, "x.enable": True, "y": 1.5})
    assert r.status_code == 201
    config = r.get_json()["config"]
    assert (config["tasks.max"], config["x.enable"], config["y"]) == ("1", "true", "1.5")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"config": SOURCE_CONFIG}, '"name"'),
        ({"name": "x"}, '"config"'),
        ({"name": "x", "config": None}, '"config"'),
        ({"name": 7, "config": SOURCE_CONFIG}, '"name"'),
        ({"name": "   ", "config": SOURCE_CONFIG}, "must not be empty"),
        ({"name": "x", "config": ["a"]}, "JSON object"),
        ({"name": "x", "config": {"a": {"b": 1}}}, "'a'"),
        ({"name": "x", "config": {"a": None}}, "'a'"),
        ({"name": "x", "config": SOURCE_CONFIG, "initial_state": "SLEEPING"}, "initial_state"),
        ([1, 2], "JSON object"),
    ],
)
def test_create_rejects_bad_requests_with_400(client: FlaskClient, body: Any, fragment: str) -> None:
    assert_error(client.post("/connectors", json=body), 400, fragment)


def test_create_name_mismatch_with_config_name_is_400(client: FlaskClient) -> None:
    r = create(client, name="a", config={**SOURCE_CONFIG, "name": "b"})
    assert_error(r, 400, "Connector name configuration (b) doesn't match connector name in the URL (a)")


def test_create_invalid_config_is_the_herders_400(client: FlaskClient) -> None:
    r = create(client, config={"tasks.max": "1"})
    assert_error(r, 400, "Connector configuration is invalid and contains the following 1 error(s)", "connector.class")


def test_create_existing_is_409(client: FlaskClient) -> None:
    assert create(client).status_code == 201
    assert_error(create(client), 409, "already exists")


@pytest.mark.parametrize(
    ("given", "expected"),
    [("RUNNING", TargetState.STARTED), ("paused", TargetState.PAUSED), ("STOPPED", TargetState.STOPPED), (None, None)],
)
def test_create_passes_initial_state(
    client: FlaskClient, fake_herder: FakeHerder, given: str | None, expected: TargetState | None
) -> None:
    assert create(client, initial_state=given).status_code == 201
    assert fake_herder.calls[-1][-1] is expected


# --- reading and listing ------------------------------------------------------------------------
def test_list_connectors_plain_and_with_trailing_slash(client: FlaskClient) -> None:
    assert client.get("/connectors").get_json() == []
    create(client, "b")
    create(client, "a")
    assert client.get("/connectors").get_json() == ["a", "b"]
    assert client.get("/connectors/").get_json() == ["a", "b"]


def test_list_connectors_expand_status_info_and_both(client: FlaskClient) -> None:
    create(client, "src")
    status = client.get("/connectors?expand=status").get_json()
    assert list(status) == ["src"] and list(status["src"]) == ["status"]
    assert status["src"]["status"]["connector"] == {"state": "RUNNING", "worker_id": WORKER_ID}
    info = client.get("/connectors?expand=info").get_json()
    assert list(info["src"]) == ["info"] and info["src"]["info"]["type"] == "source"
    both = client.get("/connectors?expand=status&expand=info").get_json()
    assert set(both["src"]) == {"status", "info"}
    assert both["src"]["info"]["tasks"] == [{"connector": "src", "task": 0}, {"connector": "src", "task": 1}]
    assert client.get("/connectors?expand=bogus").get_json() == {"src": {}}


def test_get_connector_config_status_tasks(client: FlaskClient) -> None:
    create(client, "src", {**SOURCE_CONFIG, "db.password": "secret"})
    info = client.get("/connectors/src").get_json()
    assert info["name"] == "src" and info["type"] == "source"
    assert client.get("/connectors/src/config").get_json()["db.password"] == "[hidden]"
    status = client.get("/connectors/src/status").get_json()
    assert status == {
        "name": "src",
        "connector": {"state": "RUNNING", "worker_id": WORKER_ID},
        "tasks": [
            {"id": 0, "state": "RUNNING", "worker_id": WORKER_ID},
            {"id": 1, "state": "RUNNING", "worker_id": WORKER_ID},
        ],
        "type": "source",
    }
    tasks = client.get("/connectors/src/tasks").get_json()
    assert [t["id"] for t in tasks] == [{"connector": "src", "task": 0}, {"connector": "src", "task": 1}]
    assert tasks[0]["config"]["task.class"] == "FileStreamSourceTask"


def test_task_status_with_trace_when_failed(client: FlaskClient, fake_herder: FakeHerder) -> None:
    create(client)
    fake_herder.fail_task("src", 1)
    assert client.get("/connectors/src/tasks/0/status").get_json() == {"id": 0, "state": "RUNNING", "worker_id": WORKER_ID}
    failed = client.get("/connectors/src/tasks/1/status").get_json()
    assert failed["state"] == "FAILED" and failed["trace"]
    assert_error(client.get("/connectors/src/tasks/7/status"), 404, "src-7")


def test_task_metrics_come_from_the_worker_that_runs_the_task(client: FlaskClient) -> None:
    create(client)
    assert client.get("/connectors/src/tasks/1/metrics").get_json() == {"id": 1, "worker_id": WORKER_ID, "metrics": {}}
    assert_error(client.get("/connectors/src/tasks/7/metrics"), 404, "src-7")


@pytest.mark.parametrize(
    "path",
    ["/connectors/nope", "/connectors/nope/config", "/connectors/nope/status", "/connectors/nope/tasks",
     "/connectors/nope/tasks/0/status", "/connectors/nope/tasks/0/metrics", "/connectors/nope/topics",
     "/connectors/nope/offsets"],
)
def test_unknown_connector_is_404(client: FlaskClient, path: str) -> None:
    assert_error(client.get(path), 404, "nope")


# --- config PUT / PATCH ---------------------------------------------------------------------------
def test_put_config_creates_201_then_updates_200(client: FlaskClient, fake_herder: FakeHerder) -> None:
    r = client.put("/connectors/src/config", json=SOURCE_CONFIG)
    assert r.status_code == 201 and r.headers["Location"] == "http://localhost/connectors/src"
    assert r.get_json()["config"]["name"] == "src"
    assert fake_herder.calls[-1][3] is True  # allow_replace
    r = client.put("/connectors/src/config", json={**SOURCE_CONFIG, "tasks.max": "1"})
    assert r.status_code == 200 and "Location" not in r.headers
    assert r.get_json()["tasks"] == [{"connector": "src", "task": 0}]


def test_put_config_name_mismatch_is_400(client: FlaskClient) -> None:
    r = client.put("/connectors/y/config", json={**SOURCE_CONFIG, "name": "x"})
    assert_error(r, 400, "Connector name configuration (x) doesn't match connector name in the URL (y)")


def test_put_config_needs_an_object(client: FlaskClient) -> None:
    assert_error(client.put("/connectors/y/config", json=["a"]), 400, "JSON object")


def test_patch_config_sets_and_null_removes(client: FlaskClient) -> None:
    create(client, config={**SOURCE_CONFIG, "extra": "1"})
    r = client.patch("/connectors/src/config", json={"extra": None, "topic": "u", "tasks.max": 1})
    assert r.status_code == 200
    config = r.get_json()["config"]
    assert "extra" not in config
    assert config["topic"] == "u" and config["tasks.max"] == "1"
    assert client.get("/connectors/src/config").get_json() == config


def test_patch_config_of_unknown_connector_is_404(client: FlaskClient) -> None:
    assert_error(client.patch("/connectors/nope/config", json={"a": "b"}), 404)


def test_patch_config_name_mismatch_is_400(client: FlaskClient) -> None:
    create(client)
    assert_error(client.patch("/connectors/src/config", json={"name": "other"}), 400, "doesn't match")


# --- lifecycle ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "status", "connector_state", "task_states"),
    [
        ("", 204, None, None),
        ("?includeTasks=false&onlyFailed=false", 204, None, None),
        ("?includeTasks=true", 202, "RESTARTING", ["RESTARTING", "RESTARTING"]),
        ("?includeTasks=True&onlyFailed=true", 202, "RUNNING", ["RUNNING", "RESTARTING"]),
        ("?onlyFailed=true", 202, "RUNNING", ["RUNNING", "FAILED"]),
    ],
)
def test_restart_matrix(
    client: FlaskClient,
    fake_herder: FakeHerder,
    query: str,
    status: int,
    connector_state: str | None,
    task_states: list[str] | None,
) -> None:
    create(client)
    fake_herder.fail_task("src", 1)
    r = client.post(f"/connectors/src/restart{query}")
    assert r.status_code == status
    if status == 204:
        assert r.get_data() == b"" and "Content-Type" not in r.headers
        return
    body = r.get_json()
    assert body["name"] == "src" and body["type"] == "source"
    assert body["connector"]["state"] == connector_state
    assert [t["state"] for t in body["tasks"]] == task_states


def test_restart_rejects_non_boolean_flags(client: FlaskClient) -> None:
    create(client)
    assert_error(client.post("/connectors/src/restart?includeTasks=yes"), 400, "includeTasks")


def test_restart_unknown_connector_is_404(client: FlaskClient) -> None:
    assert_error(client.post("/connectors/nope/restart"), 404)


def test_pause_resume_stop(client: FlaskClient, fake_herder: FakeHerder) -> None:
    create(client)
    r = client.put("/connectors/src/pause")
    assert r.status_code == 202 and r.get_data() == b""
    assert fake_herder.target_state("src") is TargetState.PAUSED
    assert client.put("/connectors/src/pause").status_code == 202  # idempotent
    assert client.put("/connectors/src/resume").status_code == 202
    assert fake_herder.target_state("src") is TargetState.STARTED
    r = client.put("/connectors/src/stop")
    assert r.status_code == 204 and r.get_data() == b""
    status = client.get("/connectors/src/status").get_json()
    assert status["connector"]["state"] == "STOPPED" and status["tasks"] == []
    assert client.put("/connectors/src/resume").status_code == 202
    assert len(client.get("/connectors/src/status").get_json()["tasks"]) == 2


@pytest.mark.parametrize("action", ["pause", "resume", "stop"])
def test_lifecycle_of_unknown_connector_is_404(client: FlaskClient, action: str) -> None:
    assert_error(client.put(f"/connectors/nope/{action}"), 404)


def test_task_restart_is_204(client: FlaskClient, fake_herder: FakeHerder) -> None:
    create(client)
    fake_herder.fail_task("src", 0)
    r = client.post("/connectors/src/tasks/0/restart")
    assert r.status_code == 204 and r.get_data() == b""
    assert client.get("/connectors/src/tasks/0/status").get_json()["state"] == "RUNNING"
    assert_error(client.post("/connectors/src/tasks/9/restart"), 404)


def test_delete_is_204_then_404(client: FlaskClient) -> None:
    create(client)
    r = client.delete("/connectors/src")
    assert r.status_code == 204 and r.get_data() == b""
    assert_error(client.delete("/connectors/src"), 404)
    assert client.get("/connectors").get_json() == []


# --- topics --------------------------------------------------------------------------------------------
def test_topics_and_reset(client: FlaskClient, fake_herder: FakeHerder) -> None:
    create(client)
    fake_herder.add_topic("src", "b")
    fake_herder.add_topic("src", "a")
    assert client.get("/connectors/src/topics").get_json() == {"src": {"topics": ["a", "b"]}}
    r = client.put("/connectors/src/topics/reset")
    assert r.status_code == 202 and r.get_data() == b""
    assert client.get("/connectors/src/topics").get_json() == {"src": {"topics": []}}


def test_topics_forbidden_when_tracking_disabled(fake_herder: FakeHerder) -> None:
    from rest import create_app

    client = create_app(fake_herder, {"topic.tracking.enable": "false"}).test_client()
    assert_error(client.get("/connectors/src/topics"), 403, "topic.tracking.enable")
    client = create_app(fake_herder, {"topic.tracking.allow.reset": False}).test_client()
    assert_error(client.put("/connectors/src/topics/reset"), 403, "topic.tracking.allow.reset")


# --- offsets --------------------------------------------------------------------------------------------
OFFSETS = {"offsets": [{"partition": {"filename": "/tmp/in.txt"}, "offset": {"position": 42}}]}


def test_offsets_get_patch_delete_when_stopped(client: FlaskClient) -> None:
    create(client)
    assert client.get("/connectors/src/offsets").get_json() == {"offsets": []}
    assert_error(client.patch("/connectors/src/offsets", json=OFFSETS), 400, "STOPPED")
    assert_error(client.delete("/connectors/src/offsets"), 400, "STOPPED")
    client.put("/connectors/src/stop")
    r = client.patch("/connectors/src/offsets", json=OFFSETS)
    assert r.status_code == 200
    assert r.get_json() == {"message": "The offsets for this connector have been altered successfully"}
    assert client.get("/connectors/src/offsets").get_json() == OFFSETS
    reset_one = {"offsets": [{"partition": {"filename": "/tmp/in.txt"}, "offset": None}]}
    assert client.patch("/connectors/src/offsets", json=reset_one).status_code == 200
    assert client.get("/connectors/src/offsets").get_json() == {"offsets": []}
    # as in Kafka Connect, an entry without "offset" resets its partition like "offset": null
    assert client.patch("/connectors/src/offsets", json=OFFSETS).status_code == 200
    reset_by_omission = {"offsets": [{"partition": {"filename": "/tmp/in.txt"}}]}
    assert client.patch("/connectors/src/offsets", json=reset_by_omission).status_code == 200
    assert client.get("/connectors/src/offsets").get_json() == {"offsets": []}
    r = client.delete("/connectors/src/offsets")
    assert r.status_code == 200 and "reset" in r.get_json()["message"]


def test_sink_offsets_shape_is_checked_by_the_herder(client: FlaskClient) -> None:
    create(client, "snk", SINK_CONFIG, initial_state="STOPPED")
    bad = {"offsets": [{"partition": {"topic": "t"}, "offset": {"kafka_offset": 5}}]}
    assert_error(client.patch("/connectors/snk/offsets", json=bad), 400, "kafka_topic")
    good = {"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 5}}]}
    assert client.patch("/connectors/snk/offsets", json=good).status_code == 200


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, '"offsets"'),
        ({"offsets": []}, '"offsets"'),
        ({"offsets": {"a": 1}}, '"offsets"'),
        ({"offsets": [1]}, "offsets[0]"),
        ({"offsets": [{"offset": {"p": 1}}]}, "offsets[0].partition"),
        ({"offsets": [{"partition": "x", "offset": {"p": 1}}]}, "offsets[0].partition"),
        ({"offsets": [{"partition": {"f": 1}, "ofset": {"p": 1}}]}, "ofset"),
        ({"offsets": [{"partition": {"f": 1}, "offset": 3}]}, "offsets[0].offset"),
    ],
)
def test_offsets_patch_body_validation(client: FlaskClient, body: dict[str, Any], fragment: str) -> None:
    create(client, initial_state="STOPPED")
    assert_error(client.patch("/connectors/src/offsets", json=body), 400, fragment)


# --- plugins ---------------------------------------------------------------------------------------------
def test_connector_plugins_default_and_connectors_only_false(client: FlaskClient) -> None:
    plugins = client.get("/connector-plugins").get_json()
    assert plugins == [{"class": SINK, "type": "sink", "version": "0.1.0"},
                       {"class": SOURCE, "type": "source", "version": "0.1.0"}]
    everything = client.get("/connector-plugins?connectorsOnly=false").get_json()
    assert {p["type"] for p in everything} == {
        "source", "sink", "converter", "header_converter", "transformation", "predicate"}
    assert client.get("/connector-plugins/?connectorsOnly=TRUE").get_json() == plugins
    assert_error(client.get("/connector-plugins?connectorsOnly=maybe"), 400, "connectorsOnly")


def test_plugin_config_by_alias_and_unknown(client: FlaskClient) -> None:
    r = client.get("/connector-plugins/FileStreamSource/config")
    assert r.status_code == 200
    definitions = r.get_json()
    assert definitions[0]["name"] == "name" and set(definitions[0]) >= {"type", "required", "default_value"}
    assert_error(client.get("/connector-plugins/Nope/config"), 404, "Nope")


def test_validate_returns_200_with_errors_counted(client: FlaskClient) -> None:
    r = client.put("/connector-plugins/FileStreamSource/config/validate",
                   json={"connector.class": SOURCE, "tasks.max": "0"})
    assert r.status_code == 200
    body = r.get_json()
    assert set(body) == {"name", "error_count", "groups", "configs"}
    assert body["name"] == SOURCE and body["groups"] == ["Common"]
    assert body["error_count"] == 2  # tasks.max out of range, name missing
    tasks_max = next(c for c in body["configs"] if c["definition"]["name"] == "tasks.max")
    assert tasks_max["value"]["errors"] and tasks_max["value"]["value"] == "0"
    assert set(tasks_max["definition"]) == {"name", "type", "required", "default_value", "importance",
                                            "documentation", "group", "order", "width", "display_name", "dependents"}
    assert set(tasks_max["value"]) == {"name", "value", "recommended_values", "errors", "visible"}


@pytest.mark.parametrize(
    ("path_plugin", "connector_class", "status"),
    [
        ("FileStreamSource", SOURCE, 200),
        ("FileStreamSourceConnector", SOURCE, 200),
        ("FileStreamSource", "FileStreamSource", 200),
        (SOURCE, "FileStreamSourceConnector", 400),
        ("FileStreamSink", SOURCE, 400),
        ("FileStreamSource", SINK, 400),
    ],
)
def test_validate_connector_class_must_match_the_path(
    client: FlaskClient, path_plugin: str, connector_class: str, status: int
) -> None:
    r = client.put(f"/connector-plugins/{path_plugin}/config/validate", json={"connector.class": connector_class})
    assert r.status_code == status
    if status == 400:
        assert_error(r, 400, connector_class, path_plugin)


# --- errors -----------------------------------------------------------------------------------------------
def test_malformed_json_is_400_naming_the_problem(client: FlaskClient) -> None:
    r = client.post("/connectors", data='{"name": "x",', content_type="application/json")
    assert_error(r, 400, "not valid JSON", "line 1")
    assert_error(client.put("/connectors/x/config", data=b"\xff\xfe", content_type="application/json"), 400, "UTF-8")
    assert_error(client.put("/connectors/x/config", data="", content_type="application/json"), 400, "empty")
    assert_error(client.put("/connectors/x/config", data="NaN", content_type="application/json"), 400, "NaN")


def test_unknown_route_and_method_are_json(client: FlaskClient) -> None:
    assert_error(client.get("/nowhere"), 404, "/nowhere")
    r = client.delete("/connectors")
    assert_error(r, 405, "DELETE", "GET", "POST")
    assert "POST" in r.headers["Allow"]


def test_encoded_slash_in_path_is_400(client: FlaskClient) -> None:
    assert_error(client.get("/connectors/a%2Fb"), 400, "%2F")


@pytest.mark.parametrize(
    ("error", "status"),
    [(ConflictError("rebalance in progress"), 409), (HerderError("request timed out"), 500)],
)
def test_herder_errors_map_to_their_status(
    client: FlaskClient, fake_herder: FakeHerder, monkeypatch: pytest.MonkeyPatch, error: HerderError, status: int
) -> None:
    def fail(*_: Any) -> None:
        raise error

    monkeypatch.setattr(fake_herder, "connectors", fail)
    assert_error(client.get("/connectors"), status, error.message)


def test_unexpected_exception_is_500_with_short_message_and_logged_trace(
    client: FlaskClient, fake_herder: FakeHerder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def fail(*_: Any) -> None:
        raise RuntimeError("secret detail /etc/passwd")

    monkeypatch.setattr(fake_herder, "connectors", fail)
    r = client.get("/connectors")
    assert_error(r, 500, "worker log")
    assert "secret" not in r.get_data(as_text=True)
    record = next(rec for rec in caplog.records if rec.name == "rest.app")
    assert record.exc_info is not None and "secret detail" in str(record.exc_info[1])


def test_options_and_empty_answers_are_never_html(client: FlaskClient) -> None:
    r = client.open("/connectors", method="OPTIONS")
    assert r.status_code == 200 and "Content-Type" not in r.headers
    create(client)
    assert "text/html" not in r.headers.get("Content-Type", "")
    assert "Content-Type" not in client.put("/connectors/src/pause").headers


def test_writes_while_the_worker_is_starting_are_a_retryable_503(client: FlaskClient, fake_herder: FakeHerder) -> None:
    fake_herder.ready = False
    r = create(client)
    assert_error(r, 503, "still starting up")
    assert r.headers["Retry-After"] == "5"
    assert_error(client.put("/connectors/src/pause"), 503, "still starting up")
    assert_error(client.delete("/connectors/src"), 503, "still starting up")
    # reads too (issue #36: a client waiting for GET / must not then be refused a write), /health aside
    for path in ("/", "/connectors", "/connectors?expand=status", "/connector-plugins", "/admin/loggers"):
        r = client.get(path)
        assert_error(r, 503, "still starting up")
        assert r.headers["Retry-After"] == "5", path
    r = client.get("/health")
    assert r.status_code == 503 and r.get_json()["status"] == "starting" and "Retry-After" not in r.headers
    fake_herder.ready = True
    assert client.get("/").status_code == 200
    assert create(client).status_code == 201
