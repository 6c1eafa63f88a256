"""The FileStream connectors: a file (or stdin) into a topic, and topics into a file (or stdout)."""

from plugins.file.sink import FileStreamSinkConnector, FileStreamSinkTask
from plugins.file.source import FileStreamSourceConnector, FileStreamSourceTask

__all__ = [
    "FileStreamSinkConnector",
    "FileStreamSinkTask",
    "FileStreamSourceConnector",
    "FileStreamSourceTask",
]
