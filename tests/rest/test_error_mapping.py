"""The error trees (#39 item 4): the runtime's errors say what happened, only rest/ knows HTTP statuses."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

import connect.api.errors as sdk_errors
from connect.api.errors import AlreadyExistsException, ConnectException, NotFoundException
from connect.runtime import herder
from connect.runtime.herder import (
    AlreadyExistsError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    HerderError,
    NotFoundError,
    NotLeaderError,
    PayloadTooLargeError,
    ServiceUnavailableError,
)
from connect.schema_registry.api import SchemaRegistryError
from rest.errors import registry_status_of, status_of
from tests.rest.rest_fake_herder import FakeHerder

# what Kafka Connect's REST API answers for each (and what Headrace answered before the mapping moved to rest/)
EXPECTED_STATUS = [
    (HerderError("x"), 500),
    (BadRequestError("x"), 400),
    (NotFoundError("x"), 404),
    (AlreadyExistsError("x"), 409),
    (ConflictError("x"), 409),
    (ForbiddenError("x"), 403),
    (ServiceUnavailableError("x"), 503),
    (PayloadTooLargeError("x"), 413),
]


def _herder_error_classes() -> list[type[HerderError]]:
    return [c for c in vars(herder).values() if isinstance(c, type) and issubclass(c, HerderError)]


def test_runtime_errors_carry_no_http_status() -> None:
    for cls in _herder_error_classes():
        assert not hasattr(cls, "status"), f"{cls.__name__} carries an HTTP status; only rest/ maps statuses"


def test_herder_errors_are_connect_exceptions_as_in_kafka() -> None:
    assert issubclass(HerderError, ConnectException)
    assert issubclass(NotFoundError, NotFoundException)
    assert issubclass(AlreadyExistsError, AlreadyExistsException)


@pytest.mark.parametrize(("error", "status"), EXPECTED_STATUS, ids=lambda v: type(v).__name__)
def test_rest_maps_each_herder_error_to_its_status(error: HerderError, status: int) -> None:
    assert status_of(error) == status


def test_every_herder_error_has_a_status_in_rest() -> None:
    # a new subclass falls back on its parent's status; this names the classes the table was written for
    mapped = {type(error) for error, _ in EXPECTED_STATUS} | {NotLeaderError}
    assert set(_herder_error_classes()) == mapped


@pytest.mark.parametrize(("error", "status"), EXPECTED_STATUS, ids=lambda v: type(v).__name__)
def test_response_status_and_body_unchanged(client: FlaskClient, fake_herder: FakeHerder,
                                            monkeypatch: pytest.MonkeyPatch, error: HerderError, status: int) -> None:
    def fail(*_: Any) -> None:
        raise error

    monkeypatch.setattr(fake_herder, "connectors", fail)
    response = client.get("/connectors")
    assert response.status_code == status
    assert response.get_json() == {"error_code": status, "message": "x"}


def test_sdk_keeps_only_exceptions_something_raises_or_kafka_plugins_use() -> None:
    # Kafka's SchemaProjector and its sink-context checks have no counterpart here, so nothing raises these
    assert not hasattr(sdk_errors, "SchemaProjectorException")
    assert not hasattr(sdk_errors, "IllegalWorkerStateException")


@pytest.mark.parametrize(("error_code", "status"), [(40401, 404), (40409, 404), (409, 409), (42201, 422),
                                                    (50001, 500), (50003, 503)])
def test_registry_errors_name_confluents_code_and_rest_answers_its_status(error_code: int, status: int) -> None:
    error = SchemaRegistryError(error_code, "x")
    assert not hasattr(error, "status")
    assert registry_status_of(error) == status
