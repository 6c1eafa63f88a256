import json

import pytest

from connect.runtime.properties import ConfigFileError, load_config_file, parse_properties


def test_java_properties_syntax():
    text = (
        "# comment\n"
        "! another comment\n"
        "a=1\n"
        "b : two\n"
        "c three\n"
        "d=line one \\\n"
        "    continued\n"
        "e=tab\\there\\u00e9\n"
        "key\\ with\\ spaces=value\n"
        "empty=\n"
        "  leading = spaces  \n"
    )
    props = parse_properties(text)
    assert props["a"] == "1"
    assert props["b"] == "two"
    assert props["c"] == "three"
    assert props["d"] == "line one continued"
    assert props["e"] == "tab\there\u00e9"
    assert props["key with spaces"] == "value"
    assert props["empty"] == ""
    assert props["leading"] == "spaces  "


def test_json_connector_file_rest_shape(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "x", "config": {"connector.class": "FileStreamSink", "tasks.max": 2,
                                                        "errors.log.enable": True}}))
    props = load_config_file(path)
    assert props == {"name": "x", "connector.class": "FileStreamSink", "tasks.max": "2", "errors.log.enable": "true"}


def test_json_flat_map(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "y", "connector.class": "FileStreamSource"}))
    assert load_config_file(path)["name"] == "y"


def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(ConfigFileError) as err:
        load_config_file(tmp_path / "nope.properties")
    assert "nope.properties" in str(err.value)


def test_bad_json_names_the_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(ConfigFileError) as err:
        load_config_file(path)
    assert "bad.json" in str(err.value) and "invalid JSON" in str(err.value)
