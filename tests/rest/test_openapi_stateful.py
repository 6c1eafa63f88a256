"""Schemathesis's stateful mode against a real ``connect-standalone`` with basic authentication on.

The state machine follows the links schemathesis infers from rest/openapi.json (a connector created by
POST /connectors is then read, reconfigured, paused, restarted, stopped, deleted, ...), every call
authenticated, and checks each answer: never a 5xx, and every answer as the document describes it.
Bounded and derandomized, so a run is short and the same every time.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import bcrypt
import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error, positive_data_acceptance

from tests.rest.test_openapi_fuzz import SEMANTICALLY_VALIDATED, SPEC, steer
from tests.support import connect_standalone, free_port, wait_until, worker_properties

KAFKA_BASIC_AUTH = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
AUTHORIZATION = "Basic " + base64.b64encode(b"fuzzer:fuzz-secret").decode()

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def authenticated_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    work = tmp_path_factory.mktemp("stateful")
    users = work / "users.properties"
    users.write_text(f"fuzzer={bcrypt.hashpw(b'fuzz-secret', bcrypt.gensalt(rounds=4)).decode()}\n")
    port = free_port()
    props = worker_properties(work, port, **{"rest.extension.classes": KAFKA_BASIC_AUTH,
                                             "rest.basic.auth.credentials.file": users})
    proc = connect_standalone(work, props)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{url}/health", headers={"Authorization": AUTHORIZATION}, timeout=1).status_code == 200
        except httpx.HTTPError:
            return not proc.alive()

    try:
        wait_until(ready, 60, what="authenticated connect-standalone")
        assert proc.alive(), proc.log()
        assert httpx.get(f"{url}/connectors", timeout=10).status_code == 401
        (work / "in.txt").write_text("hello\n")
        reset_connectors(url, work)
        yield url, work
    finally:
        code = proc.terminate()
    log = proc.log()
    assert code == 0, log[-5000:]
    assert "Traceback" not in log, log[-5000:]
    answers = re.findall(r'"(\w+) (\S+) HTTP/1\.1" (\d{3}) ', log)
    server_errors = [a for a in answers if a[2].startswith("5") and not (a[1] == "/health" and a[2] == "503")]
    assert answers and not server_errors, server_errors


def reset_connectors(url: str, work: Path) -> None:
    """Back to the two seeded connectors, RUNNING: each scenario starts from the same state, which
    Hypothesis needs to replay a failing one."""
    configs = {
        "fuzz-source": {"connector.class": "FileStreamSource", "file": str(work / "in.txt"), "topic": "fuzz-topic"},
        "fuzz-sink": {"connector.class": "FileStreamSink", "file": str(work / "out.txt"), "topics": "fuzz-topic"},
    }
    with httpx.Client(base_url=url, headers={"Authorization": AUTHORIZATION}, timeout=30) as c:
        for name in c.get("/connectors").json():
            if name not in configs:
                assert c.delete(f"/connectors/{quote(name, safe='')}").status_code in (204, 404)
        for name, config in configs.items():
            r = c.put(f"/connectors/{name}/config", json=config)
            assert r.status_code in (200, 201), r.text
            assert c.put(f"/connectors/{name}/resume").status_code == 202


@pytest.mark.slow  # several seconds of a real worker: kept out of the fast suite
def test_stateful_run_has_no_server_errors(authenticated_worker: tuple[str, Path]) -> None:
    url, work = authenticated_worker
    schema = schemathesis.openapi.from_path(SPEC)
    schema.config.update(request_timeout=30)

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            reset_connectors(url, work)

        def before_call(self, case: schemathesis.Case) -> None:
            steer(case)

        def after_call(self, response: Any, case: schemathesis.Case) -> None:
            statuses.append((case.operation.label, response.status_code))

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"base_url": url, "headers": {"Authorization": AUTHORIZATION}}

        def validate_response(self, response: Any, case: schemathesis.Case, **kwargs: Any) -> None:
            excluded = [positive_data_acceptance] if case.operation.label in SEMANTICALLY_VALIDATED else []
            case.validate_response(response, additional_checks=[not_a_server_error], excluded_checks=excluded,
                                   transport_kwargs=kwargs)

    statuses: list[tuple[str, int]] = []
    Workflow.run(settings=settings(max_examples=12, stateful_step_count=10, derandomize=True, deadline=None,
                                   database=None, suppress_health_check=list(HealthCheck),
                                   phases=[Phase.explicit, Phase.generate]))
    # The run went past authentication and created connectors, so the later steps reached real handlers.
    assert len(statuses) > 60 and any(code == 201 for _, code in statuses), statuses
    assert not any(code == 401 or code >= 500 for _, code in statuses)
