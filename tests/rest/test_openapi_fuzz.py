"""Property-based run of rest/openapi.json against a live server: no 5xx, and every answer
conforms to the document (status codes, content types, headers, body schemas).

The server comes from the ``rest_base_url`` fixture (a RestServer over a FakeHerder, or a real
worker when HEADRACE_TEST_REST_URL is set), so the same run checks either. Examples are bounded
and derandomized, so a run is the same every time.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance
from schemathesis.config import SchemathesisConfig
from schemathesis.core.parameters import ParameterLocation

import rest

SPEC = Path(rest.__file__).resolve().parent / "openapi.json"

# Operations whose body is a connector config or offsets: whether a schema-valid body is also a
# valid config (a known plugin, a STOPPED connector, ...) is the herder's call, so a 400 there is
# a correct answer to schema-valid data and the positive-acceptance check does not apply.
SEMANTICALLY_VALIDATED = {
    "POST /connectors",
    "PUT /connectors/{connector}/config",
    "PATCH /connectors/{connector}/config",
    "PATCH /connectors/{connector}/offsets",
    "DELETE /connectors/{connector}/offsets",
    "PUT /connector-plugins/{plugin}/config/validate",
}

SEEDED = ("fuzz-source", "fuzz-sink")
PLUGINS = ("FileStreamSource", "FileStreamSinkConnector")

# schemathesis.pytest.from_fixture would take the base URL from a fixture too, but it relies on a
# pytest internal that pytest 9 no longer has; the URL is passed per call instead.
schema = schemathesis.openapi.from_path(SPEC, config=SchemathesisConfig(seed=20241123))
schema.config.update(request_timeout=30)


@pytest.fixture(scope="module", autouse=True)
def restore_logging_levels() -> Iterator[None]:
    """PUT /admin/loggers changes this process's levels when the server runs in-process."""
    loggers = [lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    saved = [(lg, lg.level) for lg in [logging.getLogger(), *loggers]]
    yield
    for lg, level in saved:
        lg.setLevel(level)


@pytest.fixture(scope="module")
def seeded_base_url(rest_base_url: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The server, with a source and a sink connector for the steered cases to reach."""
    data = tmp_path_factory.mktemp("fuzz")
    (data / "in.txt").write_text("hello\n")
    configs = {
        "fuzz-source": {"connector.class": "FileStreamSource", "tasks.max": "1",
                        "file": str(data / "in.txt"), "topic": "fuzz-topic"},
        "fuzz-sink": {"connector.class": "FileStreamSink", "tasks.max": "1",
                      "file": str(data / "out.txt"), "topics": "fuzz-topic"},
    }
    for name, config in configs.items():
        r = httpx.post(f"{rest_base_url}/connectors", json={"name": name, "config": config}, timeout=30)
        assert r.status_code in (201, 409), r.text
    return rest_base_url


def _pick(value: Any, choices: tuple[str, ...]) -> str | None:
    """Deterministically send two cases in three to a known name, the rest keep their random one."""
    slot = zlib.crc32(repr(value).encode()) % (len(choices) + 1)
    return choices[slot] if slot < len(choices) else None


def steer(case: schemathesis.Case) -> None:
    """Point generated cases at things that exist, so fuzzing gets past 404 to the real handlers."""
    label = case.operation.label
    params = case.path_parameters or {}
    if "connector" in params and label != "DELETE /connectors/{connector}":
        params["connector"] = _pick(params["connector"], SEEDED) or params["connector"]
    if "plugin" in params:
        params["plugin"] = _pick(params["plugin"], PLUGINS) or params["plugin"]
    if "logger" in params:
        params["logger"] = "root" if case.method == "GET" else "headrace.fuzz"
    body = case.body
    if (
        label == "POST /connectors"
        and isinstance(body, dict)
        and isinstance(body.get("config"), dict)
        and not case.meta.is_negative_at(ParameterLocation.BODY)
        and _pick(body.get("name"), ("valid",))
    ):
        body["config"].update({"connector.class": "FileStreamSource", "tasks.max": "1", "topic": "fuzz-topic"})


@schema.parametrize()
@settings(max_examples=20, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@pytest.mark.timeout(120)
def test_api_conforms_to_openapi(case: schemathesis.Case, seeded_base_url: str) -> None:
    steer(case)
    excluded = [positive_data_acceptance] if case.operation.label in SEMANTICALLY_VALIDATED else []
    case.call_and_validate(base_url=seeded_base_url, excluded_checks=excluded)
