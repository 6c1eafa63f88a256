"""TcpJsonSource: JSON log events over TCP, one per line or NUL-terminated (Log4j 2's SocketAppender with
JsonTemplateLayout, ``eventDelimiter`` and/or ``nullEventDelimiterEnabled``; GELF over TCP; Logstash's
``json_lines``).

Each frame (ending at ``\\n`` or ``\\0``) becomes one record of the log event schema. A frame that is not a
JSON object is kept, not dropped: its text (bytes that are not UTF-8 as U+FFFD) is the event's
``message`` and ``event.original``, and the record carries a ``headrace.parse.error`` header saying why.

Delivery is at most once: TCP gives the sender no acknowledgement (see ``plugins/ingest/_stream.py``).
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from connect.api import ConnectHeaders, SourceRecord
from connect.api.log_event import LOG_EVENT_SCHEMA, LogEventError, from_mapping
from plugins.ingest._common import IngestConnector, base_config
from plugins.ingest._stream import DelimitedFramer, Framer, StreamSourceTask, stream_config

__all__ = ["TcpJsonSourceConnector", "TcpJsonSourceTask", "PARSE_ERROR_HEADER"]

PARSE_ERROR_HEADER = "headrace.parse.error"

CONFIG_DEF = stream_config(base_config(("tcp",), "tcp://127.0.0.1:4560", "JSON log events"))


def raw_event_record(topic: str, frame: bytes, reason: str, now_ms: int) -> SourceRecord:
    """A frame that could not be parsed, kept whole with the reason in a header."""
    text = frame.decode("utf-8", "replace")
    event = from_mapping({"message": text, "event": {"original": text}})
    headers = ConnectHeaders().add_string(PARSE_ERROR_HEADER, reason)
    return SourceRecord(None, None, topic, None, None, None, LOG_EVENT_SCHEMA, event, now_ms, headers)


class TcpJsonSourceTask(StreamSourceTask):
    KIND = "TcpJsonSource"
    SCHEMES = ("tcp",)
    CONFIG = CONFIG_DEF

    def framer(self) -> Framer:
        return DelimitedFramer(self.max_event_bytes, b"\n\0")

    def records(self, frame: bytes, peer: str) -> list[SourceRecord]:
        now = int(time.time() * 1000)
        frame = frame.rstrip(b"\r")
        if not frame.strip():
            return []
        reason: str
        try:
            obj: Any = orjson.loads(frame)
            event = from_mapping(obj)
        except orjson.JSONDecodeError as exc:
            try:
                frame.decode("utf-8")
                reason = f"not JSON: {exc.msg} at column {exc.colno}"
            except UnicodeDecodeError as bad:
                reason = f"invalid UTF-8 at byte {bad.start}"
        except LogEventError as exc:
            reason = str(exc)
        else:
            return [SourceRecord(None, None, self.topic, None, None, None, LOG_EVENT_SCHEMA, event, now)]
        self.counters.add("kept_unparsed")
        self.warn.warning("%s kept a frame from %s it could not parse (%s) with header %s", self.name, peer, reason,
                          PARSE_ERROR_HEADER)
        return [raw_event_record(self.topic, frame, reason, now)]


class TcpJsonSourceConnector(IngestConnector):
    """JSON log events over TCP (newline- or NUL-delimited) into a topic."""

    CONFIG = CONFIG_DEF
    TASK = TcpJsonSourceTask
