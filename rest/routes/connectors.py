"""``/connectors``: create, inspect, reconfigure, control and delete connectors, and their offsets."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from flask import Blueprint, Response, current_app, request

from connect.runtime.herder import (
    ConnectorOffset,
    ConnectorTaskId,
    InternalRequestSignature,
    NotFoundError,
    NotLeaderError,
    TargetState,
)
from rest.access_log import printable
from rest.auth import INTERNAL_ALGORITHM_HEADER as ALGORITHM_HEADER
from rest.auth import INTERNAL_SIGNATURE_HEADER as SIGNATURE_HEADER
from rest.context import CONFIG_KEY, current_herder, setting_bool
from rest.forwarding import forward_to_leader
from rest.json_provider import OrjsonProvider
from rest.parsing import bool_param, json_body, json_object_body, string_map
from rest.readiness import STARTING_MESSAGE, STARTING_RETRY_AFTER_S
from rest.responses import RestError, empty_response, error_response, json_response
from rest.status_listing import EncodedStatusListing

__all__ = ["bp"]

log = logging.getLogger(__name__)

bp = Blueprint("connectors", __name__)

STATUS_LISTING_KEY = "headrace.status_listing"


@bp.record_once
def _keep_encoded_statuses(state: Any) -> None:
    state.app.extensions[STATUS_LISTING_KEY] = EncodedStatusListing()

_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@bp.before_request
def refuse_writes_while_starting() -> Response | None:
    # Until the herder has read its config (from the config topic on Kafka) a write could act on a stale
    # view and used to end in a 500; clients get a retryable 503 instead, as from Kafka Connect's /health.
    if request.method not in _WRITE_METHODS or current_herder().is_ready():
        return None
    response = error_response(503, STARTING_MESSAGE)
    response.headers["Retry-After"] = str(STARTING_RETRY_AFTER_S)
    return response


# The REST values of initial_state name what the user sees (RUNNING), not the stored target state.
_INITIAL_STATES = {"RUNNING": TargetState.STARTED, "PAUSED": TargetState.PAUSED, "STOPPED": TargetState.STOPPED}


def _location(name: str) -> str:
    return f"{request.host_url}connectors/{quote(name, safe='')}"


def _check_name(url_name: str, included: Any) -> None:
    if included is not None and included != url_name:
        raise RestError(
            400, f"Connector name configuration ({included}) doesn't match connector name in the URL ({url_name})"
        )


def _check_and_put_name(url_name: str, config: dict[str, Any]) -> None:
    _check_name(url_name, config.get("name"))
    config["name"] = url_name


def _initial_state(value: Any) -> TargetState | None:
    if value is None:
        return None
    state = _INITIAL_STATES.get(value.upper()) if isinstance(value, str) else None
    if state is None:
        raise RestError(400, f"initial_state must be one of RUNNING, PAUSED or STOPPED, not {value!r}")
    return state


@bp.get("/connectors")
def list_connectors() -> Response:
    herder = current_herder()
    if "expand" not in request.args:
        return json_response(herder.connectors())
    expansions = request.args.getlist("expand")
    # gathered once for all connectors: per connector, a listing of hundreds would pay it hundreds of times
    with_status = "status" in expansions
    statuses = herder.connector_status_bodies() if with_status else {}
    if expansions == ["status"]:
        listing: EncodedStatusListing = current_app.extensions[STATUS_LISTING_KEY]
        return current_app.response_class(listing.encode(herder.connectors(), statuses),
                                          mimetype=OrjsonProvider.mimetype)
    out: dict[str, dict[str, Any]] = {}
    for name in herder.connectors():
        if with_status and name not in statuses:
            continue  # created or deleted while the listing was made
        entry: dict[str, Any] = {}
        try:
            for expansion in expansions:
                if expansion == "status":
                    entry["status"] = statuses[name]
                elif expansion == "info":
                    entry["info"] = herder.connector_info(name).to_json()
                else:
                    log.info("Ignoring unknown expansion type %s", printable(expansion))
        except NotFoundError:
            # Deleted between listing and looking it up: it is simply no longer there.
            continue
        out[name] = entry
    return json_response(out)


@bp.post("/connectors")
def create_connector() -> Response:
    body = json_object_body("The connector creation request")
    name = body.get("name")
    if not isinstance(name, str):
        raise RestError(400, "The connector creation request needs \"name\", a string")
    name = name.strip()
    if not name:
        raise RestError(400, "The connector name must not be empty")
    if body.get("config") is None:
        raise RestError(400, "The connector creation request needs \"config\", an object of connector properties")
    config = string_map(body["config"], "The connector config", allow_null=False)
    initial_state = _initial_state(body.get("initial_state"))
    _check_and_put_name(name, config)
    _, info = current_herder().put_connector_config(name, config, allow_replace=False, initial_state=initial_state)
    response = json_response(info.to_json(), 201)
    response.headers["Location"] = _location(name)
    return response


@bp.get("/connectors/<connector>")
def get_connector(connector: str) -> Response:
    return json_response(current_herder().connector_info(connector).to_json())


@bp.delete("/connectors/<connector>")
def delete_connector(connector: str) -> Response:
    current_herder().delete_connector(connector)
    return empty_response(204)


@bp.get("/connectors/<connector>/config")
def get_connector_config(connector: str) -> Response:
    return json_response(current_herder().connector_config(connector))


@bp.put("/connectors/<connector>/config")
def put_connector_config(connector: str) -> Response:
    config = string_map(json_object_body("The connector config"), "The connector config", allow_null=False)
    _check_and_put_name(connector, config)
    created, info = current_herder().put_connector_config(connector, config, allow_replace=True)
    if not created:
        return json_response(info.to_json())
    response = json_response(info.to_json(), 201)
    response.headers["Location"] = _location(connector)
    return response


@bp.patch("/connectors/<connector>/config")
def patch_connector_config(connector: str) -> Response:
    patch = string_map(json_object_body("The connector config patch"), "The connector config patch", allow_null=True)
    _check_name(connector, patch.get("name"))
    return json_response(current_herder().patch_connector_config(connector, patch).to_json())


@bp.get("/connectors/<connector>/status")
def get_connector_status(connector: str) -> Response:
    return json_response(current_herder().connector_status_body(connector))


@bp.post("/connectors/<connector>/restart")
def restart_connector(connector: str) -> Response:
    include_tasks = bool_param("includeTasks", False)
    only_failed = bool_param("onlyFailed", False)
    herder = current_herder()
    state = herder.restart_connector(connector, include_tasks, only_failed)
    if not include_tasks and not only_failed:
        return empty_response(204)
    if state is None:
        state = herder.connector_status(connector)
    return json_response(state.to_json(), 202)


@bp.put("/connectors/<connector>/pause")
def pause_connector(connector: str) -> Response:
    current_herder().pause_connector(connector)
    return empty_response(202)


@bp.put("/connectors/<connector>/resume")
def resume_connector(connector: str) -> Response:
    current_herder().resume_connector(connector)
    return empty_response(202)


@bp.put("/connectors/<connector>/stop")
def stop_connector(connector: str) -> Response:
    current_herder().stop_connector(connector)
    return empty_response(204)


@bp.get("/connectors/<connector>/tasks")
def get_task_configs(connector: str) -> Response:
    return json_response([t.to_json() for t in current_herder().task_configs(connector)])


@bp.post("/connectors/<connector>/tasks")
def put_task_configs(connector: str) -> Response:
    """Internal: a worker hands the leader the task configs of a connector it runs (signed, KIP-507)."""
    body = json_body()
    if not isinstance(body, list) or not all(isinstance(c, dict) for c in body):
        raise RestError(400, "Task configs must be a JSON array of objects")
    configs = [string_map(c, f"task config {i}", allow_null=False) for i, c in enumerate(body)]
    signature = InternalRequestSignature(request.get_data(cache=True), request.headers.get(ALGORITHM_HEADER),
                                         request.headers.get(SIGNATURE_HEADER))
    current_herder().put_task_configs(connector, configs, signature)
    return empty_response(204)


@bp.put("/connectors/<connector>/fence")
def fence_zombies(connector: str) -> Response:
    """Internal: a worker asks the leader to fence a connector's earlier exactly-once tasks (signed, KIP-618)."""
    signature = InternalRequestSignature(request.get_data(cache=True), request.headers.get(ALGORITHM_HEADER),
                                         request.headers.get(SIGNATURE_HEADER))
    current_herder().fence_zombies(connector, signature)
    return empty_response(204)


@bp.get("/connectors/<connector>/tasks/<int:task>/status")
def get_task_status(connector: str, task: int) -> Response:
    return json_response(current_herder().task_status(ConnectorTaskId(connector, task)).to_json())


# How long a worker waits for the worker running a task to answer for its counters. They are a read for a
# dashboard: a worker cut off or hung makes a prompt 503 naming it, not a request held for a rebalance's length.
TASK_METRICS_FORWARD_TIMEOUT_S = 5.0


@bp.get("/connectors/<connector>/tasks/<int:task>/metrics")
def get_task_metrics(connector: str, task: int) -> Response:
    """Headrace extension: a task's counters from the worker that runs it, whichever worker is asked."""
    task_id = ConnectorTaskId(connector, task)
    try:
        return json_response(current_herder().task_metrics(task_id))
    except NotLeaderError as e:
        return forward_to_leader(e, timeout=TASK_METRICS_FORWARD_TIMEOUT_S,
                                 target=f"the worker that runs task {task_id}", unreachable_status=503)


@bp.post("/connectors/<connector>/tasks/<int:task>/restart")
def restart_task(connector: str, task: int) -> Response:
    current_herder().restart_task(ConnectorTaskId(connector, task))
    return empty_response(204)


def _require_topic_tracking(reset: bool) -> None:
    config = current_app.extensions[CONFIG_KEY]
    if not setting_bool(config, "topic.tracking.enable", True):
        raise RestError(403, "Topic tracking is disabled on this worker (topic.tracking.enable=false)")
    if reset and not setting_bool(config, "topic.tracking.allow.reset", True):
        raise RestError(403, "Resetting tracked topics is disabled on this worker (topic.tracking.allow.reset=false)")


@bp.get("/connectors/<connector>/topics")
def get_active_topics(connector: str) -> Response:
    _require_topic_tracking(reset=False)
    topics = current_herder().connector_active_topics(connector)
    return json_response({connector: {"topics": list(topics)}})


@bp.put("/connectors/<connector>/topics/reset")
def reset_active_topics(connector: str) -> Response:
    _require_topic_tracking(reset=True)
    current_herder().reset_connector_active_topics(connector)
    return empty_response(202)


@bp.get("/connectors/<connector>/offsets")
def get_offsets(connector: str) -> Response:
    offsets = current_herder().connector_offsets(connector)
    return json_response({"offsets": [o.to_json() for o in offsets]})


def _parse_offsets(body: dict[str, Any]) -> list[ConnectorOffset]:
    entries = body.get("offsets")
    if not isinstance(entries, list) or not entries:
        raise RestError(400, "The request body needs \"offsets\", a non-empty array of {\"partition\", \"offset\"} objects")
    parsed = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise RestError(400, f"offsets[{i}] must be an object with \"partition\" and \"offset\"")
        partition = entry.get("partition")
        if not isinstance(partition, dict):
            raise RestError(400, f"offsets[{i}].partition must be an object")
        # A key beside "partition" and "offset" is most likely "offset" misspelt: read as a missing offset it
        # would reset the partition, so it is refused rather than ignored.
        unknown = sorted(set(entry) - {"partition", "offset"})
        if unknown:
            raise RestError(400, f"offsets[{i}] has unknown key(s) {', '.join(unknown)}; an entry has only "
                                 "\"partition\" and \"offset\"")
        # As in Kafka Connect, an entry without "offset" means "offset": null: reset that partition.
        offset = entry.get("offset")
        if offset is not None and not isinstance(offset, dict):
            raise RestError(400, f"offsets[{i}].offset must be an object, or null to reset the partition")
        parsed.append(ConnectorOffset(partition=partition, offset=offset))
    return parsed


@bp.patch("/connectors/<connector>/offsets")
def alter_offsets(connector: str) -> Response:
    offsets = _parse_offsets(json_object_body("The offsets request"))
    return json_response({"message": current_herder().alter_connector_offsets(connector, offsets)})


@bp.delete("/connectors/<connector>/offsets")
def reset_offsets(connector: str) -> Response:
    return json_response({"message": current_herder().reset_connector_offsets(connector)})
