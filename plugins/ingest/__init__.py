"""Log ingestion sources: HTTP, TCP JSON and syslog listeners and a tail of many files, that write log events (connect.api.log_event)."""

from plugins.ingest.http import HttpSourceConnector, HttpSourceTask
from plugins.ingest.syslog import SyslogSourceConnector, SyslogSourceTask
from plugins.ingest.taildir import TailDirSourceConnector, TailDirSourceTask
from plugins.ingest.tcp_json import TcpJsonSourceConnector, TcpJsonSourceTask

__all__ = [
    "HttpSourceConnector",
    "HttpSourceTask",
    "SyslogSourceConnector",
    "SyslogSourceTask",
    "TailDirSourceConnector",
    "TailDirSourceTask",
    "TcpJsonSourceConnector",
    "TcpJsonSourceTask",
]
