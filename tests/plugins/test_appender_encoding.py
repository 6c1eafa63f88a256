"""The appender's shipper-side shortcuts give what the plain code gives: the cached timestamp text, and the
event of a record with and without extra fields."""

from __future__ import annotations

import logging

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from connect.api.log_event import iso_timestamp
from connect.appender.handler import HeadraceHandler, IsoStamps


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=4e9, allow_nan=False) | st.integers(0, 4 * 10**9).map(float)
                | st.sampled_from([1.9999995, 1.0000005, 2.5e-7, 1_700_000_000.9999996]), min_size=1, max_size=20))
def test_iso_stamps_are_iso_timestamp(times: list[float]) -> None:
    stamps = IsoStamps()
    for t in sorted(times) + times:  # in order (the cache's case) and out of it
        assert stamps(t) == iso_timestamp(t), t


def test_events_of_records_with_and_without_extra_fields() -> None:
    handler = HeadraceHandler("http://127.0.0.1:9/", service_name="shop")
    try:
        plain = logging.LogRecord("app.db", logging.INFO, "db.py", 42, "hello %s", ("x",), None, "connect")
        extra = logging.makeLogRecord({**vars(plain), "seq": 7, "user": "ada"})
        formatted = logging.makeLogRecord({**vars(plain)})
        logging.Formatter("%(asctime)s %(message)s").format(formatted)  # sets message and asctime
        events = [orjson.loads(handler._encode((r, r.getMessage(), {"req": "r1"})))
                  for r in (plain, extra, formatted)]
    finally:
        handler.close()
    assert "labels" not in events[0] and "labels" not in events[2]
    assert events[1]["labels"] == {"seq": 7, "user": "ada"}
    first = events[0]
    assert first["@timestamp"] == iso_timestamp(plain.created) and first["message"] == "hello x"
    assert first["log"] == {"level": "INFO", "logger": "app.db",
                            "origin": {"file": {"name": "db.py", "line": 42}, "function": "connect"}}
    assert first["host"]["hostname"] and first["service"] == {"name": "shop"} and first["context"] == {"req": "r1"}
    assert [e["event"]["sequence"] for e in events] == [1, 2, 3]
