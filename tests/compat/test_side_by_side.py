"""The same REST requests sent to Apache Kafka Connect 4.1 (Java) and to Headrace, answers compared.

One Java standalone worker and one Headrace standalone worker run on the session broker for the whole
module. A script of requests (create, duplicates, bad bodies, list and expand, status, tasks, config
PUT/PATCH, pause/resume/stop/restart with their query parameters, offsets, plugins, validation, loggers,
topics, delete) goes to both, step by step; each step's status codes, reason phrases and JSON key structure must match,
values aside (versions, worker ids, paths and messages differ by nature). Differences Headrace intends
are listed with their reasons in tests/compat/known_differences.py; any other difference fails, and so
does a listed one that no longer shows.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from services.kafka import KafkaService
from services.kafka_connect import JavaConnectService
from tests.compat.known_differences import KNOWN_DIFFERENCES, KnownDifference
from tests.support import RestWorker, connect_standalone, wait_until, write_properties

pytestmark = pytest.mark.timeout(300)

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


@attrs.define
class Side:
    """One worker under test, with the names and files its connectors use."""

    label: str
    url: str
    prefix: str  # connector names and topics of this side start with it; the other side uses its own
    folder: Path
    client: httpx.Client = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.client = httpx.Client(base_url=self.url, timeout=60)

    def fill(self, text: str) -> str:
        return text.replace("{p}", self.prefix).replace("{dir}", str(self.folder))

    def fill_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.fill(value)
        if isinstance(value, dict):
            return {self.fill(k): self.fill_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.fill_value(v) for v in value]
        return value

    def get_json(self, path: str) -> Any:
        r = self.client.get(self.fill(path))
        return r.json() if r.status_code == 200 else None


@attrs.frozen
class Step:
    """One request. ``body`` is sent as JSON (placeholders ``{p}`` and ``{dir}`` filled per side) unless
    ``raw`` is given with its ``content_type``; ``before`` waits for a condition on each side first;
    ``view`` picks what is compared out of the body; ``check`` compares values (Java's body, Headrace's)."""

    id: str
    method: str
    path: str
    body: Any = None
    raw: bytes | None = None
    content_type: str | None = None
    before: Callable[[Side], bool] | None = None
    view: Callable[[Any], Any] | None = None
    check: Callable[[Any, Any], None] | None = None


def connector_state(name: str, state: str, tasks: int | None = None) -> Callable[[Side], bool]:
    def reached(side: Side) -> bool:
        st = side.get_json(f"/connectors/{{p}}{name}/status")
        if not st or st["connector"]["state"] != state:
            return False
        return tasks is None or [t["state"] for t in st["tasks"]] == [state] * tasks

    return reached


def has_offsets(name: str) -> Callable[[Side], bool]:
    def committed(side: Side) -> bool:
        body = side.get_json(f"/connectors/{{p}}{name}/offsets")
        return bool(body and body["offsets"])

    return committed


def root_logger_only(body: Any) -> Any:
    # Logger names are the implementation's own (Java packages, Python modules); root is common ground.
    return {"root": body["root"]} if isinstance(body, dict) and "root" in body else body


def kafkas_plugins_are_listed(java: Any, headrace: Any) -> None:
    ours = {(p["class"], p["type"]) for p in headrace}
    missing = sorted({(p["class"], p["type"]) for p in java} - ours)
    assert not missing, f"Kafka's plugins missing from Headrace's GET /connector-plugins: {missing}"


def same_config_keys(java: Any, headrace: Any) -> None:
    assert sorted(java) == sorted(headrace)


def validation_summary(body: Any) -> Any:
    # Only what the step is about: Kafka Connect 4.1 also shows each converter's effective class where
    # Headrace shows null (see docs/guide/rest-api.md, "Checked against Apache Kafka Connect 4.1")
    return {k: body[k] for k in ("name", "error_count", "groups")} if isinstance(body, dict) else body


def same_validation_name_and_groups(java: Any, headrace: Any) -> None:
    # Kafka Connect names the ConfigInfos after the connector.class as sent (not the connector's name), and
    # lists the groups of the keys it reports in the order their definitions come.
    differences = [f"{key}: Java {java[key]!r}, Headrace {headrace[key]!r}"
                   for key in ("name", "groups") if headrace[key] != java[key]]
    assert not differences, "; ".join(differences)


SOURCE = {"connector.class": "FileStreamSource", "tasks.max": "1", "file": "{dir}/in.txt", "topic": "{p}lines"}
SINK = {"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
        "file": "{dir}/out.txt", "topics": "{p}lines"}
CREATE = {"name": "{p}src", "config": SOURCE}

SCRIPT: tuple[Step, ...] = (
    Step("server info", "GET", "/"),
    Step("list, empty", "GET", "/connectors"),
    Step("create source", "POST", "/connectors", CREATE),
    Step("create duplicate", "POST", "/connectors", CREATE),
    Step("create, text/plain body", "POST", "/connectors", raw=json.dumps(CREATE).encode(),
         content_type="text/plain"),
    Step("create, form body", "POST", "/connectors", raw=b"name=x", content_type="application/x-www-form-urlencoded"),
    Step("create, config missing", "POST", "/connectors", {"name": "{p}noconfig"}),
    Step("create, name missing", "POST", "/connectors", {"config": SOURCE}),
    Step("create, invalid JSON", "POST", "/connectors", raw=b'{"name": ', content_type="application/json"),
    Step("create, JSON array", "POST", "/connectors", []),
    Step("create, unknown class", "POST", "/connectors",
         {"name": "{p}bad", "config": {"connector.class": "no.such.Connector"}}),
    Step("create sink, paused", "POST", "/connectors", {"name": "{p}snk", "config": SINK, "initial_state": "PAUSED"}),
    Step("list", "GET", "/connectors", check=lambda j, h: None),
    Step("status", "GET", "/connectors/{p}src/status", before=connector_state("src", "RUNNING", 1)),
    Step("list ?expand=status", "GET", "/connectors?expand=status"),
    Step("list ?expand=info", "GET", "/connectors?expand=info"),
    Step("list ?expand=status&expand=info", "GET", "/connectors?expand=status&expand=info"),
    Step("info", "GET", "/connectors/{p}src"),
    Step("config", "GET", "/connectors/{p}src/config", check=same_config_keys),
    Step("tasks", "GET", "/connectors/{p}src/tasks"),
    Step("task status", "GET", "/connectors/{p}src/tasks/0/status"),
    Step("unknown task status", "GET", "/connectors/{p}src/tasks/7/status"),
    Step("unknown connector", "GET", "/connectors/{p}nope/status"),
    Step("topics", "GET", "/connectors/{p}src/topics"),
    Step("config PUT, update", "PUT", "/connectors/{p}src/config", {**SOURCE, "tasks.max": "1"}),
    Step("config PUT, create", "PUT", "/connectors/{p}src2/config", SOURCE),
    Step("config PUT, name mismatch", "PUT", "/connectors/{p}src2/config", {**SOURCE, "name": "other"}),
    Step("config PATCH", "PATCH", "/connectors/{p}src2/config", {"tasks.max": "1"}),
    Step("delete second", "DELETE", "/connectors/{p}src2"),
    Step("pause", "PUT", "/connectors/{p}src/pause"),
    Step("status, paused", "GET", "/connectors/{p}src/status", before=connector_state("src", "PAUSED", 1)),
    Step("resume", "PUT", "/connectors/{p}src/resume"),
    Step("restart", "POST", "/connectors/{p}src/restart", before=connector_state("src", "RUNNING", 1)),
    Step("restart ?includeTasks=true&onlyFailed=false", "POST",
         "/connectors/{p}src/restart?includeTasks=true&onlyFailed=false"),
    Step("restart ?includeTasks=true&onlyFailed=true", "POST",
         "/connectors/{p}src/restart?includeTasks=true&onlyFailed=true", before=connector_state("src", "RUNNING", 1)),
    Step("restart with a malformed includeTasks", "POST", "/connectors/{p}src/restart?includeTasks=yes",
         before=connector_state("src", "RUNNING", 1)),
    Step("task restart", "POST", "/connectors/{p}src/tasks/0/restart", before=connector_state("src", "RUNNING", 1)),
    Step("offsets while running", "PATCH", "/connectors/{p}src/offsets",
         {"offsets": [{"partition": {"filename": "{dir}/in.txt"}, "offset": {"position": 0}}]},
         before=has_offsets("src")),
    Step("stop", "PUT", "/connectors/{p}src/stop", before=connector_state("src", "RUNNING", 1)),
    Step("status, stopped", "GET", "/connectors/{p}src/status", before=connector_state("src", "STOPPED")),
    Step("offsets GET, source", "GET", "/connectors/{p}src/offsets"),
    Step("offsets PATCH, source, position not a number", "PATCH", "/connectors/{p}src/offsets",
         {"offsets": [{"partition": {"filename": "{dir}/in.txt"}, "offset": {"position": "ten"}}]}),
    Step("offsets PATCH, source, partition without filename", "PATCH", "/connectors/{p}src/offsets",
         {"offsets": [{"partition": {"file": "{dir}/in.txt"}, "offset": {"position": 0}}]}),
    Step("offsets PATCH, source", "PATCH", "/connectors/{p}src/offsets",
         {"offsets": [{"partition": {"filename": "{dir}/in.txt"}, "offset": {"position": 0}}]}),
    # Kafka Connect reads an entry without "offset" as "offset": null, which resets that partition
    Step("offsets PATCH, source, offset missing", "PATCH", "/connectors/{p}src/offsets",
         {"offsets": [{"partition": {"filename": "{dir}/in.txt"}}]}),
    Step("offsets PATCH, source, offset key misspelt", "PATCH", "/connectors/{p}src/offsets",
         {"offsets": [{"partition": {"filename": "{dir}/in.txt"}, "ofset": {"position": 0}}]}),
    Step("offsets GET, source after the partition's reset", "GET", "/connectors/{p}src/offsets"),
    Step("offsets DELETE, source", "DELETE", "/connectors/{p}src/offsets"),
    Step("offsets GET, sink", "GET", "/connectors/{p}snk/offsets"),
    Step("resume the sink created paused", "PUT", "/connectors/{p}snk/resume"),
    Step("status, sink resumed", "GET", "/connectors/{p}snk/status", before=connector_state("snk", "RUNNING", 1)),
    Step("pause a stopped connector", "PUT", "/connectors/{p}src/pause"),
    Step("status, paused after stop", "GET", "/connectors/{p}src/status", before=connector_state("src", "PAUSED")),
    Step("resume after pause after stop", "PUT", "/connectors/{p}src/resume"),
    Step("status, resumed", "GET", "/connectors/{p}src/status", before=connector_state("src", "RUNNING", 1)),
    Step("connector plugins", "GET", "/connector-plugins", check=kafkas_plugins_are_listed),
    Step("connector plugins ?connectorsOnly=false", "GET", "/connector-plugins?connectorsOnly=false",
         check=kafkas_plugins_are_listed),
    Step("plugin config", "GET", "/connector-plugins/FileStreamSourceConnector/config"),
    Step("unknown plugin config", "GET", "/connector-plugins/NoSuchConnector/config"),
    Step("validate, valid", "PUT", "/connector-plugins/FileStreamSourceConnector/config/validate",
         {**SOURCE, "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector"},
         check=same_validation_name_and_groups),
    Step("validate, with a connector name", "PUT", "/connector-plugins/FileStreamSourceConnector/config/validate",
         {**SOURCE, "name": "v1", "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector"},
         check=same_validation_name_and_groups),
    Step("validate, sink", "PUT", "/connector-plugins/FileStreamSinkConnector/config/validate",
         {**SINK, "name": "v1"}, check=same_validation_name_and_groups, view=validation_summary),
    Step("validate, with a transform and a predicate", "PUT",
         "/connector-plugins/FileStreamSourceConnector/config/validate",
         {**SOURCE, "connector.class": "FileStreamSource", "transforms": "c",
          "transforms.c.type": "org.apache.kafka.connect.transforms.Cast$Value", "transforms.c.spec": "int32",
          "transforms.c.predicate": "t", "predicates": "t",
          "predicates.t.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone"},
         check=same_validation_name_and_groups),
    Step("validate, invalid", "PUT", "/connector-plugins/FileStreamSourceConnector/config/validate",
         {"connector.class": "FileStreamSource", "tasks.max": "x"}, check=same_validation_name_and_groups),
    Step("loggers", "GET", "/admin/loggers", view=root_logger_only),
    Step("logger root", "GET", "/admin/loggers/root"),
    Step("logger set", "PUT", "/admin/loggers/org.apache.kafka.connect.runtime.WorkerSourceTask",
         {"level": "DEBUG"}, view=lambda body: body if not isinstance(body, list) else ["<logger>"]),
    Step("logger bad level", "PUT", "/admin/loggers/root", {"level": "LOUD"}),
    Step("topics reset", "PUT", "/connectors/{p}src/topics/reset"),
    Step("stop sink", "PUT", "/connectors/{p}snk/stop"),
    Step("offsets PATCH, sink", "PATCH", "/connectors/{p}snk/offsets",
         {"offsets": [{"partition": {"kafka_topic": "{p}lines", "kafka_partition": 0}, "offset": {"kafka_offset": 2}}]},
         before=connector_state("snk", "STOPPED")),
    Step("offsets GET, sink after PATCH", "GET", "/connectors/{p}snk/offsets"),
    Step("offsets PATCH, sink, negative offset", "PATCH", "/connectors/{p}snk/offsets",
         {"offsets": [{"partition": {"kafka_topic": "{p}lines", "kafka_partition": 0}, "offset": {"kafka_offset": -2}}]}),
    Step("offsets PATCH, sink, offset missing", "PATCH", "/connectors/{p}snk/offsets",
         {"offsets": [{"partition": {"kafka_topic": "{p}lines", "kafka_partition": 0}}]}),
    Step("offsets GET, sink after the partition's reset", "GET", "/connectors/{p}snk/offsets"),
    Step("offsets DELETE, sink", "DELETE", "/connectors/{p}snk/offsets"),
    Step("delete", "DELETE", "/connectors/{p}src"),
    Step("delete sink", "DELETE", "/connectors/{p}snk"),
    Step("delete again", "DELETE", "/connectors/{p}src"),
    Step("list, after delete", "GET", "/connectors"),
)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


def key_paths(value: Any, prefix: str, path: str = "") -> set[str]:
    """The JSON key structure of ``value``: one ``path:kind`` per leaf, list items merged under ``[]``,
    this side's connector-name prefix replaced by ``<name>`` in keys."""
    if isinstance(value, dict):
        if not value:
            return {f"{path}:{{}}"}
        out: set[str] = set()
        for key, item in value.items():
            name = f"<name>{key[len(prefix):]}" if key.startswith(prefix) else key
            out |= key_paths(item, prefix, f"{path}.{name}" if path else name)
        return out
    if isinstance(value, list):
        if not value:
            return {f"{path}:[]"}
        return set().union(*(key_paths(item, prefix, f"{path}[]") for item in value))
    return {f"{path}:{_kind(value)}"}


def _covered(path: str, allowed: tuple[str, ...]) -> bool:
    """Whether ``path`` is, or lies below, a key path of ``allowed`` (matched at any depth)."""
    bare = path.split(":", 1)[0]
    return any(re.search(rf"(^|[.\]])\.?{re.escape(a)}($|[.\[])", bare) for a in allowed)


def _applicable(step: Step) -> list[KnownDifference]:
    return [d for d in KNOWN_DIFFERENCES
            if d.step == "*" or d.step == step.id or (isinstance(d.step, tuple) and step.id in d.step)]


def _send(side: Side, step: Step) -> tuple[int, Any, str]:
    if step.before is not None:
        wait_until(lambda: step.before(side), 60, interval=0.3, what=f"{side.label}: before '{step.id}'")
    headers = {"Accept": "application/json"}
    if step.raw is not None:
        content = step.raw
        headers["Content-Type"] = step.content_type or "application/octet-stream"
    elif step.body is not None:
        content = json.dumps(side.fill_value(step.body)).encode()
        headers["Content-Type"] = "application/json"
    else:
        content = None
    r = side.client.request(step.method, side.fill(step.path), content=content, headers=headers)
    try:
        body = r.json() if r.content else None
    except ValueError:
        body = r.text
    return r.status_code, body, r.reason_phrase


def compare(step: Step, java: Side, headrace: Side, seen: set[int]) -> list[str]:
    """Problems with one step: differences that no entry of KNOWN_DIFFERENCES explains."""
    j_status, j_body, j_reason = _send(java, step)
    h_status, h_body, h_reason = _send(headrace, step)
    known = _applicable(step)
    problems = []
    if j_status != h_status:
        match = [d for d in known if (d.java_status, d.headrace_status) == (j_status, h_status)]
        if match:
            seen.add(id(match[0]))
        else:
            problems.append(f"status: Java {j_status}, Headrace {h_status}; Java said {j_body!r}, "
                            f"Headrace said {h_body!r}")
    # Bodies are compared where both answered alike; a known status difference has its own bodies.
    if j_status == h_status and j_reason != h_reason:
        problems.append(f"reason phrase: Java {j_status} {j_reason!r}, Headrace {h_status} {h_reason!r}")
    if j_status == h_status:
        view = step.view or (lambda body: body)
        j_paths = key_paths(view(j_body), java.prefix)
        h_paths = key_paths(view(h_body), headrace.prefix)
        for only, paths, side_attr in (("Headrace", h_paths - j_paths, "headrace_only"),
                                       ("Java", j_paths - h_paths, "java_only")):
            for path in sorted(paths):
                match = [d for d in known if _covered(path, getattr(d, side_attr))]
                if match:
                    seen.update(id(d) for d in match)
                else:
                    problems.append(f"only {only} sends {path}")
        if step.check is not None and j_status == 200:
            try:
                step.check(j_body, h_body)
            except AssertionError as e:
                problems.append(f"values: {e}")
    return [f"[{step.id}] {step.method} {step.path}: {p}" for p in problems]


@pytest.fixture(scope="module")
def sides(kafka: KafkaService, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    java_dir = tmp_path_factory.mktemp("java-side")
    headrace_dir = tmp_path_factory.mktemp("headrace-side")
    for folder in (java_dir, headrace_dir):
        (folder / "in.txt").write_text("".join(f"line {i}\n" for i in range(5)))
    java = JavaConnectService(kafka.bootstrap_servers, mode="standalone", work_dir=java_dir / "worker")
    headrace = RestWorker(
        headrace_dir,
        bootstrap_servers=kafka.bootstrap_servers,
        config_storage_topic=f"headrace-compat-configs-{headrace_dir.name}",
        key_converter=JSON_CONVERTER,
        value_converter=JSON_CONVERTER,
    )
    java.start()
    try:
        headrace.start()
        try:
            yield (Side("Java", java.rest_url, "j-", java_dir), Side("Headrace", headrace.url, "h-", headrace_dir))
        finally:
            headrace.stop()
    finally:
        java.cleanup()


def test_the_same_requests_get_the_same_answers_from_java_kafka_connect_and_headrace(
    sides: tuple[Side, Side],
) -> None:
    java, headrace = sides
    seen: set[int] = set()
    problems: list[str] = []
    for step in SCRIPT:
        problems.extend(compare(step, java, headrace, seen))
    stale = [d for d in KNOWN_DIFFERENCES if id(d) not in seen]
    report = problems + [f"known difference no longer seen: {d.step}: {d.reason}" for d in stale]
    assert not report, "\n".join(report)


# --- the start-up window (issue #36) ------------------------------------------------------------------


@attrs.define
class StartUp:
    """What a client saw of one worker's start, polling from the moment the process was spawned."""

    label: str
    root_codes: list[int] = attrs.Factory(list)  # GET / answers before the first 200
    root_retry_after: list[str | None] = attrs.Factory(list)
    health: list[tuple[int, Any]] = attrs.Factory(list)  # /health answers before GET / answered 200
    write_after_root: int | None = None  # the POST sent right after the first GET / 200


def _watch_start(label: str, url: str, alive: Callable[[], bool], probe: dict[str, Any]) -> StartUp:
    """Polls ``GET /`` and ``/health`` as a client waiting for the worker, then writes once ``GET /`` says 200."""
    seen = StartUp(label)
    with httpx.Client(base_url=url, timeout=30) as client:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert alive(), f"{label} exited during start-up"
            try:
                root = client.get("/", headers={"Accept": "application/json"})
            except httpx.TransportError:
                time.sleep(0.02)  # not listening yet
                continue
            if root.status_code == 200:
                seen.write_after_root = client.post("/connectors", json=probe).status_code
                return seen
            seen.root_codes.append(root.status_code)
            seen.root_retry_after.append(root.headers.get("Retry-After"))
            try:
                health = client.get("/health")
                seen.health.append((health.status_code, health.json() if health.status_code != 404 else None))
            except (httpx.TransportError, ValueError):
                pass
            time.sleep(0.05)
    raise AssertionError(f"{label} did not answer GET / with 200 within 180 s")


def test_a_starting_worker_answers_get_root_only_once_it_takes_writes_as_java_does(
    kafka: KafkaService, tmp_path: Path,
) -> None:
    """Kafka Connect 4.1 answers ``GET /`` only once the worker can take requests (before that Jetty answers
    404, its resources not yet registered), so a client that waits for ``GET /`` and then writes succeeds.
    Headrace must keep the same promise; it answers the window with 503 and ``Retry-After`` instead of 404,
    and ``/health`` (KIP-1017) with its starting body. Both start with a FileStreamSource on their command
    line, which a standalone worker starts before it is ready."""
    sides: dict[str, StartUp] = {}
    for folder in ("java", "headrace"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "in.txt").write_text("one\ntwo\n")

    def connector_file(folder: str, prefix: str) -> Path:
        return write_properties(tmp_path / folder / "src.properties", {
            "name": f"{prefix}start-src", "connector.class": "FileStreamSource", "tasks.max": "1",
            "file": tmp_path / folder / "in.txt", "topic": f"{prefix}start-lines"})

    def probe(folder: str, prefix: str) -> dict[str, Any]:
        return {"name": f"{prefix}start-probe", "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
            "file": str(tmp_path / folder / "out.txt"), "topics": f"{prefix}start-lines"}}

    java = JavaConnectService(kafka.bootstrap_servers, mode="standalone", work_dir=tmp_path / "java" / "worker",
                              connector_files=[connector_file("java", "j-")])
    # start() returns once Java is ready; meanwhile this thread polls it as a client would
    starter = threading.Thread(target=java.start, name="java-connect-start", daemon=True)
    starter.start()
    try:
        sides["Java"] = _watch_start("Java", java.rest_url, lambda: starter.is_alive() or java.is_running(),
                                     probe("java", "j-"))
        starter.join(120)
    finally:
        java.cleanup()

    headrace = RestWorker(tmp_path / "headrace", bootstrap_servers=kafka.bootstrap_servers,
                          config_storage_topic=f"headrace-compat-start-{tmp_path.name}",
                          key_converter=JSON_CONVERTER, value_converter=JSON_CONVERTER)
    proc = connect_standalone(tmp_path / "headrace", headrace.cfg, connector_file("headrace", "h-"))
    try:
        sides["Headrace"] = _watch_start("Headrace", headrace.url, proc.alive, probe("headrace", "h-"))
    finally:
        assert proc.terminate() == 0, proc.log()

    print("\n".join(f"{s.label}: GET / before 200: {dict(Counter(s.root_codes))}; /health meanwhile: "
                    f"{dict(Counter(code for code, _ in s.health))}; write after GET / 200: {s.write_after_root}"
                    for s in sides.values()))
    for side in sides.values():
        assert side.write_after_root == 201, f"{side.label}: GET / answered 200, then a POST got {side.write_after_root}"
        for i, (code, body) in enumerate(side.health):
            # KIP-1017 on both: 503 with the starting body (or Jetty's 404 before Java registers its resources);
            # the last look may already find it healthy (Java's /health can be ready a moment before its GET /)
            last = i == len(side.health) - 1
            assert (code == 404 or (code == 503 and body["status"] == "starting")
                    or (last and code == 200 and body["status"] == "healthy")), (side.label, code, body)
    assert set(sides["Java"].root_codes) <= {404, 503}, sides["Java"].root_codes
    assert set(sides["Headrace"].root_codes) <= {503}, sides["Headrace"].root_codes
    assert all(v is not None and v.isdigit() for v in sides["Headrace"].root_retry_after), sides["Headrace"]
    java_health = [body for code, body in sides["Java"].health if code == 503]
    headrace_health = [body for code, body in sides["Headrace"].health if code == 503]
    if java_health and headrace_health:
        assert key_paths(java_health[0], "") == key_paths(headrace_health[0], "")
