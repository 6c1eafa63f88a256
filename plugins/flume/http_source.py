"""FlumeHttpSource: Flume's HTTP source with its JSONHandler, events kept as Flume events.

A POST's body is a JSON array of ``{"headers": {"name": "value", ...}, "body": "text"}`` (Flume's
JSONHandler format). Each element becomes one record, as FlumeAvroSource makes them: the headers become the
record's headers (strings), the body its value (the text's UTF-8 bytes), and a ``timestamp`` header of epoch
milliseconds the record's timestamp. So the sinks of a Flume agent config see Flume's events, where
HttpSource (which also reads this format) would make log events of them.

Answers, as HttpSource's: 200 once the log has every event of the request, 400 naming the bad element, 503
with ``Retry-After`` when the log is full or slow (Flume answers 503 for a full channel too).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson

from connect.api import ConnectHeaders, Schema, SourceRecord
from plugins.ingest._common import AcknowledgesRecords, IngestConnector, Ticket
from plugins.ingest.http import (
    CONFIG_DEF,
    BadInput,
    HttpSourceTask,
    TooManyEvents,
    events_bytes,
    json_tree_bytes,
)

__all__ = ["FlumeHttpSourceConnector", "FlumeHttpSourceTask", "parse_flume_events"]


def parse_flume_events(body: bytes, topic: str, max_event_bytes: int, max_events: int = 0,
                       reserve: Callable[[int], None] | None = None) -> list[SourceRecord]:
    """The records of a JSONHandler body; raises BadInput naming the first element that is not an event, and
    TooManyEvents for more than ``max_events`` (0: any number), counted before any record is made. ``reserve``
    is called with the estimated memory of the parsed JSON, then of the records, before each is made."""
    if reserve is not None:
        reserve(json_tree_bytes(body))
    try:
        items = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"line {exc.lineno}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(items, list):
        raise BadInput("the body is not a JSON array of Flume events [{\"headers\": {...}, \"body\": \"...\"}]")
    if max_events and len(items) > max_events:
        raise TooManyEvents(max_events)
    if reserve is not None:
        reserve(events_bytes(len(items), body))
    now = int(time.time() * 1000)
    string_schema = Schema.OPTIONAL_STRING_SCHEMA
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not set(item) <= {"headers", "body"}:
            raise BadInput(f"element {i}: a Flume event is an object with only headers and body")
        fields = item.get("headers") or {}
        text = item.get("body")
        if text is None:
            text = ""
        if not isinstance(fields, dict) or not all(isinstance(v, str) for v in fields.values()):
            raise BadInput(f"element {i}: headers must be an object of strings")
        if not isinstance(text, str):
            raise BadInput(f"element {i}: body must be a string")
        value = text.encode("utf-8")
        if len(value) > max_event_bytes:
            raise BadInput(f"element {i}: the body is {len(value)} bytes, more than max.event.bytes={max_event_bytes}")
        headers = ConnectHeaders()
        for k, v in fields.items():
            headers.add(k, v, string_schema)
        stamp = fields.get("timestamp")
        timestamp = int(stamp) if stamp and stamp.isascii() and stamp.isdigit() and len(stamp) < 19 else now
        out.append(SourceRecord(None, None, topic, None, None, None, Schema.BYTES_SCHEMA, value, timestamp, headers))
    return out


class FlumeHttpSourceTask(AcknowledgesRecords, HttpSourceTask):
    KIND = "FlumeHttpSource"

    def parse(self, body: bytes, reserve: Callable[[int], None] | None = None) -> list[Any]:
        return parse_flume_events(body, self.topic, self.max_event_bytes, self.max_request_events, reserve)

    def enqueue(self, events: list[Any], ticket: Ticket) -> bool:
        return self.offer(events, ticket)


class FlumeHttpSourceConnector(IngestConnector):
    """Flume's HTTP source (JSONHandler): POSTed Flume events, with their headers, into a topic."""

    CONFIG = CONFIG_DEF
    TASK = FlumeHttpSourceTask
