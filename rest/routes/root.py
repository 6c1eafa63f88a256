"""``GET /`` (server info), ``GET /health`` and ``GET /openapi.json``."""

from __future__ import annotations

import functools
from pathlib import Path

from flask import Blueprint, Response

from rest.context import current_herder
from rest.readiness import STARTING_MESSAGE
from rest.responses import json_response
from rest.server_info import commit_id, project_version

__all__ = ["OPENAPI_PATH", "STARTING_MESSAGE", "bp"]

OPENAPI_PATH = Path(__file__).resolve().parent.parent / "openapi.json"

HEALTHY_MESSAGE = "Worker has completed startup and is ready to handle requests."

bp = Blueprint("root", __name__)


@bp.get("/")
def server_info() -> Response:
    herder = current_herder()
    return json_response(
        {"version": project_version(), "commit": commit_id(), "kafka_cluster_id": herder.kafka_cluster_id()}
    )


@bp.get("/health")
def health() -> Response:
    herder = current_herder()
    if not herder.is_ready():
        return json_response({"status": "starting", "message": STARTING_MESSAGE}, 503)
    problem = herder.health_problem()
    if problem is not None:
        return json_response({"status": "unhealthy", "message": problem}, 500)
    return json_response({"status": "healthy", "message": HEALTHY_MESSAGE})


@functools.cache
def _openapi_document() -> bytes:
    return OPENAPI_PATH.read_bytes()


@bp.get("/openapi.json")
def openapi() -> Response:
    return Response(_openapi_document(), mimetype="application/json")
