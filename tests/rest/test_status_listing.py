"""The encoded status listing: the same bytes as encoding the listing whole, each body encoded once."""

from __future__ import annotations

import orjson

from rest.json_provider import encode_json
from rest.status_listing import EncodedStatusListing


def _body(state: str, records: int) -> dict:
    return {"name": "x", "connector": {"state": state, "worker_id": "w:1"},
            "tasks": [{"id": 0, "state": state, "worker_id": "w:1", "metrics": {"records_read": records}}],
            "type": "sink"}


def _whole(names, bodies) -> bytes:
    return orjson.dumps({n: {"status": bodies[n]} for n in names if n in bodies})


def test_the_listing_equals_the_listing_encoded_whole_with_names_that_need_escaping():
    names = ["plain", 'quo"te', "back\\slash", "new\nline", "ünï", "tab\t"]
    bodies = {n: _body("RUNNING", i) for i, n in enumerate(names)}
    listing = EncodedStatusListing()
    out = listing.encode(names, bodies)
    assert out == _whole(names, bodies)
    assert list(orjson.loads(out)) == names  # in the order asked for
    assert listing.encode([], {}) == b"{}"


def test_a_body_is_encoded_again_only_when_it_is_a_new_object(monkeypatch):
    bodies = {"a": _body("RUNNING", 1), "b": _body("RUNNING", 2)}
    listing = EncodedStatusListing()
    expected = listing.encode(["a", "b"], bodies)
    calls = []
    real = encode_json
    monkeypatch.setattr("rest.status_listing.encode_json", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert listing.encode(["a", "b"], bodies) == expected
    assert calls == []  # nothing new: joined from the kept bytes
    bodies = {**bodies, "b": _body("FAILED", 2)}  # a change is a new body
    out = listing.encode(["a", "b"], bodies)
    assert len(calls) == 1 and orjson.loads(out)["b"]["status"]["connector"]["state"] == "FAILED"


def test_names_without_a_body_are_left_out_and_deleted_ones_forgotten():
    listing = EncodedStatusListing()
    bodies = {n: _body("RUNNING", 0) for n in ("a", "b", "c")}
    listing.encode(["a", "b", "c"], bodies)
    assert len(listing) == 3
    del bodies["b"]
    assert orjson.loads(listing.encode(["a", "b", "c"], bodies)).keys() == {"a", "c"}
    assert len(listing) == 2


def test_the_same_bodies_and_names_give_the_same_bytes_without_a_join():
    listing = EncodedStatusListing()
    bodies = {n: _body("RUNNING", 0) for n in ("a", "b")}
    first = listing.encode(["a", "b"], bodies)
    assert listing.encode(["a", "b"], bodies) is first
    assert orjson.loads(listing.encode(["b"], bodies)).keys() == {"b"}  # other names: joined again
    again = {**bodies}  # a new listing from the herder, equal or not, is joined again
    assert listing.encode(["a", "b"], again) == first
    assert listing.encode(["a", "b"], again) is listing.encode(["a", "b"], again)
