import json

import pytest

from connect.runtime.storage.offsets import FileOffsetStore, OffsetFileError, offset_key


def test_offset_key_matches_kafka_connect_format():
    assert offset_key("src", {"filename": "test.txt"}) == '["src",{"filename":"test.txt"}]'


def test_file_store_round_trip_and_reset(tmp_path):
    path = tmp_path / "connect.offsets"
    store = FileOffsetStore(path)
    store.start()
    store.put("a", [({"filename": "x"}, {"position": 10}), ({"filename": "y"}, {"position": 3})])
    store.put("b", [({"filename": "x"}, {"position": 99})])
    reopened = FileOffsetStore(path)
    reopened.start()
    assert reopened.get("a", {"filename": "x"}) == {"position": 10}
    assert sorted(p["filename"] for p, _ in reopened.connector_offsets("a")) == ["x", "y"]
    reopened.reset("a")
    assert reopened.connector_offsets("a") == []
    assert reopened.get("b", {"filename": "x"}) == {"position": 99}
    assert json.loads(path.read_text())["version"] == 1
    assert not (tmp_path / "connect.offsets.tmp").exists()


@pytest.mark.parametrize("content, reason", [
    ("not json", "not valid JSON"),
    ("[1, 2]", "not a JSON object of offsets"),
    ('{"version": 1, "offsets": 5}', "not a JSON object of offsets"),
    ('{"version": 1, "offsets": {"k": "v"}}', "entry 'k'"),
    ('{"version": 1, "offsets": {"[\\"c\\", {}]": 7}}', "is not an offset"),
    (b"\xff\xfe{}", "not valid JSON"),
])
def test_malformed_offset_file_is_one_error_naming_the_file(tmp_path, content, reason):
    path = tmp_path / "connect.offsets"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(OffsetFileError) as err:
        FileOffsetStore(path).start()
    assert str(path) in str(err.value) and reason in str(err.value), str(err.value)


def test_offset_file_is_owner_only(tmp_path):
    store = FileOffsetStore(tmp_path / "connect.offsets")
    store.start()
    store.put("a", [({"f": "x"}, {"p": 1})])
    assert (tmp_path / "connect.offsets").stat().st_mode & 0o777 == 0o600
