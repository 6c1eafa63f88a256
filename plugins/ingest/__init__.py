"""Log ingestion sources: HTTP, TCP JSON and syslog listeners that write log events (connect.api.log_event)."""

from plugins.ingest.http import HttpSourceConnector, HttpSourceTask
from plugins.ingest.syslog import SyslogSourceConnector, SyslogSourceTask
from plugins.ingest.tcp_json import TcpJsonSourceConnector, TcpJsonSourceTask

__all__ = [
    "HttpSourceConnector",
    "HttpSourceTask",
    "SyslogSourceConnector",
    "SyslogSourceTask",
    "TcpJsonSourceConnector",
    "TcpJsonSourceTask",
]
