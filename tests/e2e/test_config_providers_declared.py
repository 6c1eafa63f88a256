"""Config providers exist only when the worker config names them, as in Kafka Connect, and the docs say so.

The README's REST section once said ``${file:...}``, ``${env:...}`` and ``${directory:...}`` work without
``config.providers``, while the code and the Security section say they do not. Kafka Connect leaves a reference
to a provider it does not have as written; so does Headrace, which these tests show on a real worker.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import REPO, RestWorker, line_count, wait_until

pytestmark = pytest.mark.timeout(240)

SECRET = "tag-from-the-secrets-file-93e1"


@pytest.mark.parametrize("providers", ["", "file"], ids=["no-config-providers", "config-providers-file"])
def test_a_file_reference_is_resolved_only_when_config_providers_names_file(tmp_path: Path, providers: str) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"tag={SECRET}\n")
    reference = f"${{file:{secrets}:tag}}"
    source_in, sink_out = tmp_path / "in.txt", tmp_path / "out.txt"
    source_in.write_text("hello\n")
    extra = {"config.providers": providers} if providers else {}
    worker = RestWorker(tmp_path, **extra).start()
    try:
        with worker.http() as client:
            assert client.post("/connectors", json={"name": "src", "config": {
                "connector.class": "FileStreamSource", "file": str(source_in), "topic": "lines"}}).status_code == 201
            # the reference travels into every record, so the sink's file shows what the task was given
            answer = client.post("/connectors", json={"name": "snk", "config": {
                "connector.class": "FileStreamSink", "file": str(sink_out), "topics": "lines",
                "transforms": "hoist,tag",
                "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
                "transforms.hoist.field": "line",
                "transforms.tag.type": "org.apache.kafka.connect.transforms.InsertField$Value",
                "transforms.tag.static.field": "tag", "transforms.tag.static.value": reference}})
            assert answer.status_code == 201, answer.text
            wait_until(lambda: line_count(sink_out) == 1, 60, what="the record in the sink's file")
            # stored and shown as written either way
            assert client.get("/connectors/snk/config").json()["transforms.tag.static.value"] == reference
    finally:
        log = worker.stop()
    written = sink_out.read_text()
    if providers:
        assert SECRET in written and reference not in written, written
    else:
        assert reference in written and SECRET not in written, written
    assert SECRET not in log


def _paragraphs_about_config_providers(page: str) -> list[str]:
    """Every paragraph or list item that starts with the bold "Config providers." lead, and every section under a
    "Config providers" heading (up to the next heading)."""
    led = re.finditer(r"^[ \t]*(?:- )?\*\*Config providers\.\*\*.*?(?=\n\s*\n|\n- |\n\*\*)", page,
                      re.MULTILINE | re.DOTALL)
    headed = re.finditer(r"^#+ Config providers\n.*?(?=\n#)", page, re.MULTILINE | re.DOTALL)
    return [m.group(0) for m in (*led, *headed)]


def test_the_docs_say_in_every_section_that_providers_need_config_providers() -> None:
    pages = [REPO / "docs" / "guide" / "rest-api.md", REPO / "docs" / "operations" / "security.md"]
    paragraphs = [p for page in pages for p in _paragraphs_about_config_providers(page.read_text())]
    assert len(paragraphs) >= 2, "the REST API guide and the Security page each describe config providers"
    for text in paragraphs:
        flat = " ".join(text.split())
        assert "without declaring" not in flat and "work without" not in flat, flat
        assert "config.providers=file,env,directory" in flat, flat
