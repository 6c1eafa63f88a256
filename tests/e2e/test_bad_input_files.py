"""Bad worker, connector and offsets files: one ERROR line naming the file and the reason, no traceback."""

from __future__ import annotations

import json

import pytest

from tests.support import run_cli, worker_properties

pytestmark = pytest.mark.timeout(120)


def _one_error_line(res) -> str:
    err = res.stderr.decode()
    assert res.returncode != 0, err
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, err
    return errors[0]


@pytest.mark.parametrize("content, expect", [
    (b"name=bad\nconnector.class=FileStreamSource\ntopic=t\nfile=\\u12\n", ["line 4", "\\u"]),
    (b"\xef\xbb\xbfname=bad\nconnector.class=FileStreamSource\ntopic=t\n", ["BOM"]),
])
def test_unparseable_connector_properties(tmp_path, content, expect):
    conn = tmp_path / "bad.properties"
    conn.write_bytes(content)
    line = _one_error_line(run_cli(["connect-standalone", str(worker_properties(tmp_path)), str(conn)],
                                   cwd=tmp_path))
    assert "bad.properties" in line, line
    for word in expect:
        assert word in line, line


def test_bom_in_worker_properties_is_named(tmp_path):
    cfg = worker_properties(tmp_path)
    cfg.write_bytes(b"\xef\xbb\xbf" + cfg.read_bytes())
    line = _one_error_line(run_cli(["connect-standalone", str(cfg)], cwd=tmp_path))
    assert "worker.properties" in line and "byte order mark" in line, line


def test_json_connector_file_with_two_names_is_refused(tmp_path):
    conn = tmp_path / "conn.json"
    conn.write_text(json.dumps({"name": "outer", "config": {"name": "inner", "connector.class": "FileStreamSource",
                                                            "topic": "t", "file": "in.txt"}}))
    line = _one_error_line(run_cli(["connect-standalone", str(worker_properties(tmp_path)), str(conn)],
                                   cwd=tmp_path))
    assert "conn.json" in line and "inner" in line and "outer" in line, line


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b'{"version": 1, "offsets": {"x": 1}}'])
def test_malformed_offsets_file(tmp_path, content):
    (tmp_path / "connect.offsets").write_bytes(content)
    line = _one_error_line(run_cli(["connect-standalone", str(worker_properties(tmp_path))], cwd=tmp_path))
    assert "connect.offsets" in line and "offset file" in line, line
