"""Log ingestion sources: HTTP, TCP JSON and syslog listeners that write log events (connect.api.log_event)."""

from plugins.ingest.http import HttpSourceConnector, HttpSourceTask

__all__ = ["HttpSourceConnector", "HttpSourceTask"]
