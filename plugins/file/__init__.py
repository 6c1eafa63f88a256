"""The FileStream connectors: a file (or stdin) into a topic, and topics into a file (or stdout)."""

from connect.api.version import distribution_version
from plugins.file.sink import FileStreamSinkConnector, FileStreamSinkTask
from plugins.file.source import FileStreamSourceConnector, FileStreamSourceTask

__version__ = distribution_version(__name__)

__all__ = [
    "FileStreamSinkConnector",
    "FileStreamSinkTask",
    "FileStreamSourceConnector",
    "FileStreamSourceTask",
]
