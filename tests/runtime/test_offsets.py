import json

from connect.runtime.offsets import FileOffsetStore, offset_key


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
