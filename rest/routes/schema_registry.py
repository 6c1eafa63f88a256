"""Confluent Schema Registry's REST API over a ``SchemaRegistry`` (connect.schema_registry.api).

Mounted at ``/schema-registry`` in a worker's REST server and at ``/`` by ``headrace schema-registry``.
Bodies and answers are ``application/vnd.schemaregistry.v1+json``; errors are Confluent's
``{"error_code": <code>, "message": ...}`` with its codes (40401 subject not found, 42201 invalid schema, ...).
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, Response, current_app, request

from connect.schema_registry.api import Compatibility, Mode, SchemaRegistry, SchemaRegistryError
from rest.errors import registry_status_of
from rest.parsing import bool_param, json_object_body
from rest.responses import RestError, json_response

__all__ = ["MEDIA_TYPE", "REGISTRY_KEY", "bp"]

log = logging.getLogger(__name__)

REGISTRY_KEY = "headrace.schema_registry"
MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"

bp = Blueprint("schema_registry", __name__)


def _registry() -> SchemaRegistry:
    registry: SchemaRegistry | None = current_app.extensions.get(REGISTRY_KEY)
    if registry is None:
        raise SchemaRegistryError(40401, "This worker runs no schema registry")
    return registry


def _answer(body: object, status: int = 200) -> Response:
    response = json_response(body, status)
    response.mimetype = MEDIA_TYPE
    return response


@bp.errorhandler(SchemaRegistryError)
def _registry_error(e: SchemaRegistryError) -> Response:
    return _answer({"error_code": e.error_code, "message": e.message}, registry_status_of(e))


@bp.errorhandler(RestError)
def _rest_error(e: RestError) -> Response:
    return _answer({"error_code": e.status, "message": e.message}, e.status)


def _schema_body() -> tuple[str, str, list[Any], int | None, int | None]:
    body = json_object_body("The schema request")
    schema = body.get("schema")
    if not isinstance(schema, str):
        raise SchemaRegistryError(42201, "Invalid schema: the request needs \"schema\", the schema as a "
                                  "JSON string")
    references = body.get("references") or []
    if not isinstance(references, list):
        raise SchemaRegistryError(42201, "Invalid schema: \"references\" must be a list")
    schema_id = body.get("id")
    version = body.get("version")
    for name, value in (("id", schema_id), ("version", version)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise SchemaRegistryError(42202 if name == "version" else 42205,
                                      f"\"{name}\" must be a positive number, not {value!r}")
    return schema, str(body.get("schemaType") or "AVRO"), references, schema_id, version


def _schema_id(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise SchemaRegistryError(40403, f"Schema {raw!r} not found: ids are numbers") from None


# --- root and schemas ----------------------------------------------------------------------------------
@bp.get("/")
def root() -> Response:
    return _answer({})


@bp.get("/schemas/types")
def schema_types() -> Response:
    return _answer(["AVRO"])


@bp.get("/schemas/ids/<raw_id>")
def schema_by_id(raw_id: str) -> Response:
    found = _registry().schema_by_id(_schema_id(raw_id), request.args.get("subject"))
    body: dict[str, object] = {"schema": found.schema}
    if found.schema_type != "AVRO":
        body["schemaType"] = found.schema_type
    return _answer(body)


@bp.get("/schemas/ids/<raw_id>/schema")
def raw_schema_by_id(raw_id: str) -> Response:
    found = _registry().schema_by_id(_schema_id(raw_id), request.args.get("subject"))
    return _answer_raw(found.schema)


@bp.get("/schemas/ids/<raw_id>/subjects")
def subjects_of_id(raw_id: str) -> Response:
    usage = _registry().ids_usage(_schema_id(raw_id), bool_param("deleted", False))
    return _answer(sorted({subject for subject, _ in usage}))


@bp.get("/schemas/ids/<raw_id>/versions")
def versions_of_id(raw_id: str) -> Response:
    usage = _registry().ids_usage(_schema_id(raw_id), bool_param("deleted", False))
    return _answer([{"subject": subject, "version": version} for subject, version in usage])


def _answer_raw(schema: str) -> Response:
    response = Response(schema, status=200)
    response.mimetype = MEDIA_TYPE
    return response


# --- subjects -----------------------------------------------------------------------------------------
@bp.get("/subjects")
def list_subjects() -> Response:
    return _answer(_registry().subjects(bool_param("deleted", False), request.args.get("subjectPrefix", "")))


@bp.get("/subjects/<subject>/versions")
def list_versions(subject: str) -> Response:
    return _answer(_registry().versions(subject, bool_param("deleted", False)))


@bp.get("/subjects/<subject>/versions/<version>")
def get_version(subject: str, version: str) -> Response:
    return _answer(_registry().version(subject, version, bool_param("deleted", False)).to_json())


@bp.get("/subjects/<subject>/versions/<version>/schema")
def get_version_schema(subject: str, version: str) -> Response:
    return _answer_raw(_registry().version(subject, version, bool_param("deleted", False)).schema)


@bp.get("/subjects/<subject>/versions/<version>/referencedby")
def referenced_by(subject: str, version: str) -> Response:
    _registry().version(subject, version, True)
    return _answer([])  # schema references are not supported, so nothing refers to anything


@bp.post("/subjects/<subject>/versions")
def register(subject: str) -> Response:
    schema, schema_type, references, schema_id, version = _schema_body()
    registered = _registry().register(subject, schema, schema_type, references, schema_id, version)
    # only the id, as Confluent 7 answers: a client caches the schema it sent under it
    return _answer({"id": registered.id})


@bp.post("/subjects/<subject>")
def lookup(subject: str) -> Response:
    schema, schema_type, _, _, _ = _schema_body()
    return _answer(_registry().lookup(subject, schema, schema_type, bool_param("deleted", False)).to_json())


@bp.delete("/subjects/<subject>")
def delete_subject(subject: str) -> Response:
    return _answer(_registry().delete_subject(subject, bool_param("permanent", False)))


@bp.delete("/subjects/<subject>/versions/<version>")
def delete_version(subject: str, version: str) -> Response:
    return _answer(_registry().delete_version(subject, version, bool_param("permanent", False)))


# --- compatibility ---------------------------------------------------------------------------------------
def _compatibility_answer(problems: list[str]) -> Response:
    body: dict[str, object] = {"is_compatible": not problems}
    if bool_param("verbose", False):
        body["messages"] = problems
    return _answer(body)


@bp.post("/compatibility/subjects/<subject>/versions/<version>")
def check_against_version(subject: str, version: str) -> Response:
    schema, schema_type, _, _, _ = _schema_body()
    return _compatibility_answer(_registry().check_compatibility(subject, version, schema, schema_type))


@bp.post("/compatibility/subjects/<subject>/versions")
def check_against_subject(subject: str) -> Response:
    schema, schema_type, _, _, _ = _schema_body()
    return _compatibility_answer(_registry().check_compatibility(subject, None, schema, schema_type))


# --- config and mode ---------------------------------------------------------------------------------------
@bp.get("/config", defaults={"subject": None})
@bp.get("/config/<subject>")
def get_config(subject: str | None) -> Response:
    level = _registry().compatibility(subject, bool_param("defaultToGlobal", False))
    return _answer({"compatibilityLevel": level.value})


@bp.put("/config", defaults={"subject": None})
@bp.put("/config/<subject>")
def put_config(subject: str | None) -> Response:
    body = json_object_body("The config request")
    level = Compatibility.parse(body.get("compatibility", body.get("compatibilityLevel")))
    _registry().set_compatibility(subject, level)
    return _answer({"compatibility": level.value})


@bp.delete("/config", defaults={"subject": None})
@bp.delete("/config/<subject>")
def delete_config(subject: str | None) -> Response:
    return _answer({"compatibilityLevel": _registry().delete_compatibility(subject).value})


@bp.get("/mode", defaults={"subject": None})
@bp.get("/mode/<subject>")
def get_mode(subject: str | None) -> Response:
    return _answer({"mode": _registry().mode(subject, bool_param("defaultToGlobal", False)).value})


@bp.put("/mode", defaults={"subject": None})
@bp.put("/mode/<subject>")
def put_mode(subject: str | None) -> Response:
    body = json_object_body("The mode request")
    mode = Mode.parse(body.get("mode"))
    _registry().set_mode(subject, mode, bool_param("force", False))
    return _answer({"mode": mode.value})


@bp.delete("/mode", defaults={"subject": None})
@bp.delete("/mode/<subject>")
def delete_mode(subject: str | None) -> Response:
    return _answer({"mode": _registry().delete_mode(subject).value})
