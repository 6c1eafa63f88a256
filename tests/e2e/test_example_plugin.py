"""The example plugin (examples/headrace-example-plugin) in a real standalone worker, as its author would run it.

Discovery goes through the ``headrace.plugins`` entry point, which needs the plugin's installed metadata.
CI installs the example (``pip install -e examples/headrace-example-plugin`` in scripts/install.sh) and the
worker finds it as any user's worker would. Where it is not installed (a checkout set up before that line),
the test installs it for the worker alone: a ``*.dist-info`` directory with the entry points read from the
example's ``pyproject.toml`` (what pip writes for it), on the worker's PYTHONPATH together with the
example's ``src/``; nothing is installed into the interpreter running the tests.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest

from connect.runtime.properties import load_config_file
from tests.support import (
    REPO,
    RestWorker,
    connect_standalone,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(240)

EXAMPLE = REPO / "examples" / "headrace-example-plugin"
SOURCE_CONFIG = EXAMPLE / "config" / "word-source.properties"
SINK_CONFIG = EXAMPLE / "config" / "text-file-sink.properties"
SOURCE_CLASS = "headrace_example.source.WordSourceConnector"
SINK_CLASS = "headrace_example.sink.TextFileSinkConnector"
TRANSFORM_CLASS = "headrace_example.transform.PrefixValue"
LINE = re.compile(r"(\d+) word:(\w+)")


def _project() -> dict:
    with open(EXAMPLE / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]


def _installed() -> bool:
    try:
        importlib.metadata.distribution(_project()["name"])
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _install_for_worker(site: Path) -> str:
    """The example's metadata, as an installer writes it, in ``site``; the PYTHONPATH that finds it."""
    project = _project()
    dist_info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (dist_info / "top_level.txt").write_text("headrace_example\n")
    (dist_info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in entries.items()) + "\n"
        for group, entries in project["entry-points"].items()))
    return os.pathsep.join(filter(None, [str(site), str(EXAMPLE / "src"), os.environ.get("PYTHONPATH")]))


@pytest.fixture
def example_installed(tmp_path_factory, monkeypatch) -> None:
    """The example plugin discoverable by the workers this test starts (they inherit the environment)."""
    if not _installed():
        monkeypatch.setenv("PYTHONPATH", _install_for_worker(tmp_path_factory.mktemp("site")))


def _connector_config(path: Path, **changes: str) -> dict[str, str]:
    return {**load_config_file(path), **changes}


def _lines(path: Path) -> list[tuple[int, str]]:
    if not path.exists():
        return []
    matches = [LINE.fullmatch(line) for line in path.read_text().splitlines()]
    assert all(matches), f"unexpected lines in {path}: {path.read_text()[:500]!r}"
    return [(int(m.group(1)), m.group(2)) for m in matches if m]


def _words_of(keys: set[int]) -> dict[int, str]:
    words = load_config_file(SOURCE_CONFIG)["words"].split(",")
    return {key: words[key % len(words)] for key in keys}


def test_the_examples_own_unit_tests_pass():
    # run as its author runs them, with the example's own pytest settings (its src/ on the path)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE)],
                          cwd=EXAMPLE, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\b(\d+) passed\b", done.stdout) and " failed" not in done.stdout, done.stdout[-2000:]


def test_shipped_connector_files_run_and_a_restart_resumes_from_the_offsets(example_installed, tmp_path):
    out = tmp_path / "example-words.txt"
    source = write_properties(tmp_path / "word-source.properties", _connector_config(SOURCE_CONFIG))
    sink = write_properties(tmp_path / "text-file-sink.properties", _connector_config(SINK_CONFIG, file=str(out)))
    worker = worker_properties(tmp_path)

    first = connect_standalone(tmp_path, worker, source, sink)
    try:
        wait_until(lambda: len(_lines(out)) >= 20 or not first.alive(), 90, what="20 lines from the first run")
        assert first.alive(), first.log()
    finally:
        assert first.terminate() == 0, first.log()
    before = _lines(out)
    assert "WordSourceTask of connector word-source producing into example-words from record 0" in first.log()

    second = connect_standalone(tmp_path, worker, source, sink)
    try:
        wait_until(lambda: len(_lines(out)) >= len(before) + 20 or not second.alive(), 90,
                   what="20 more lines after the restart")
        assert second.alive(), second.log()
    finally:
        assert second.terminate() == 0, second.log()
    resumed_at = re.findall(r"WordSourceTask of connector word-source producing into example-words from record (\d+)",
                            second.log())
    assert resumed_at and int(resumed_at[-1]) > 0, second.log()

    lines = _lines(out)
    keys = {key for key, _ in lines}
    # the sequence went on where it stopped: no number missing, and it did not start over from 0
    assert keys == set(range(max(keys) + 1))
    assert [key for key, _ in lines].count(0) == 1
    assert max(keys) >= int(resumed_at[-1]) + 19
    # every line has the word the source makes for its number, after the transform's prefix
    assert dict(lines) == _words_of(keys)


def test_over_rest_the_plugins_are_listed_validated_and_run(example_installed, tmp_path):
    out = tmp_path / "example-words.txt"
    worker = RestWorker(tmp_path).start()
    try:
        with worker.http() as http:
            listed = http.get("/connector-plugins").json()
            by_class = {p["class"]: p for p in listed}
            assert by_class[SOURCE_CLASS]["type"] == "source", listed
            assert by_class[SINK_CLASS]["type"] == "sink", listed
            assert by_class[SOURCE_CLASS]["version"] == _project()["version"]
            everything = http.get("/connector-plugins", params={"connectorsOnly": "false"}).json()
            assert {"class": TRANSFORM_CLASS, "type": "transformation"}.items() <= {
                p["class"]: p for p in everything}[TRANSFORM_CLASS].items()

            _check_validation(http)

            for path, changes in ((SINK_CONFIG, {"file": str(out)}), (SOURCE_CONFIG, {})):
                config = _connector_config(path, **changes)
                created = http.post("/connectors", json={"name": config["name"], "config": config})
                assert created.status_code == 201, created.text
            wait_until(lambda: len(_lines(out)) >= 20, 90, what="20 lines written by the sink")
            for name in ("word-source", "text-file-sink"):
                status = http.get(f"/connectors/{name}/status").json()
                assert status["connector"]["state"] == "RUNNING", status
                assert [t["state"] for t in status["tasks"]] == ["RUNNING"], status
    finally:
        worker.stop()
    lines = _lines(out)
    keys = {key for key, _ in lines}
    assert keys == set(range(max(keys) + 1)) and dict(lines) == _words_of(keys)


def _check_validation(http: httpx.Client) -> None:
    good = _connector_config(SOURCE_CONFIG)
    answer = http.put("/connector-plugins/WordSource/config/validate", json=good)
    assert answer.status_code == 200 and answer.json()["error_count"] == 0, answer.text

    bad = {**good, "words": "hello,,world", "batch.size": "0"}
    answer = http.put("/connector-plugins/WordSource/config/validate", json=bad)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"] if c["value"]["errors"]}
    assert body["error_count"] == 2, errors
    assert "A word cannot be empty" in errors["words"][0]
    assert "at least 1" in errors["batch.size"][0]

    sink = {**_connector_config(SINK_CONFIG), "line.format": "{value} {colour}"}
    answer = http.put("/connector-plugins/TextFileSink/config/validate", json=sink).json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in answer["configs"] if c["value"]["errors"]}
    assert answer["error_count"] == 1 and "Unknown field {colour}" in errors["line.format"][0], errors
